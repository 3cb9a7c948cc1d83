"""The ``antsim`` command: a dispatcher over small command modules.

Each command lives in ``antsim/cli/<name>.py`` and defines ``HELP`` (one line), ``add_arguments(parser)``
and ``run(args) -> int``. ``main`` alone turns an ``AntsimError`` into one line on stderr and exit
status 2, and any other exception (an internal error) into one line, a hint and exit status 1;
``--debug`` shows the traceback instead. A command may define ``FLAGS`` (an error's ``subject`` → the flag
that gave that input, or a ``{message}`` template where the flag is the remedy): ``main`` adds the flag to
such an error's message, which speaks the library's terms.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Mapping, Sequence

from antsim.errors import AntsimError

_COMMANDS: dict[str, str] = {
    "zoo": "antsim.cli.zoo",
    "simulate": "antsim.cli.simulate",
    "gpu": "antsim.cli.gpu",
    "compare": "antsim.cli.compare",
    "report": "antsim.cli.report",
    "sweep": "antsim.cli.sweep",
    "capture": "antsim.cli.capture",
    "measure": "antsim.cli.measure",
}


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line (exit 2) instead of usage + message."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    from antsim import __version__

    parser = _Parser(prog="antsim", description="Design-space explorer for sparse-training accelerators.")
    parser.add_argument("--version", action="version", version=f"antsim {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module_name in _COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:  # command not built yet
                continue
            raise
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(_run=module.run, _flags=getattr(module, "FLAGS", {}))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``antsim`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args._run(args) or 0)
    except AntsimError as exc:
        if args.debug:
            raise
        message = " ".join(str(exc).split("\n"))  # a user error is one line, whatever its parts held
        sys.stderr.write(f"antsim {args.command}: error: {with_flag(message, exc, args._flags)}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("antsim: interrupted\n")
        return 130
    except BrokenPipeError:  # the reader went away (``antsim zoo | head``): stop quietly, as cat does
        _silence_stdout()
        return 141
    except Exception as exc:  # an internal error: one line and the way to see more, never a bare traceback
        if args.debug:
            raise
        what = str(exc).splitlines()[0] if str(exc) else ""
        sys.stderr.write(f"antsim {args.command}: internal error: {type(exc).__name__}"
                         f"{': ' + what if what else ''} (rerun with 'antsim --debug {args.command} ...'"
                         " for the traceback)\n")
        return 1


def with_flag(message: str, exc: AntsimError, flags: Mapping[str, str]) -> str:
    """``message`` naming the flag of ``exc.subject``: ``--flag: message``, or the command's template filled."""
    flag = flags.get(getattr(exc, "subject", None) or "")
    if flag is None:
        return message
    return flag.replace("{message}", message) if "{message}" in flag else f"{flag}: {message}"


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not raise on the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
