"""Run every shell example of the README, in order, in a fresh copy of the repository; fail on a non-zero exit.

Usage: .venv/bin/python scripts/check_readme_examples.py [--readme README.md] [--with-top] [--worktree]
                                                         [--timeout S] [--keep]

The examples are the lines of the README's fenced ```bash blocks (a trailing ``\\`` joins lines; ``#``
comments are left to bash). They run one after another with ``bash -e -c`` in one temporary copy of the
repository, so each may read what the earlier ones wrote, exactly as a reader running them in order would:

- the copy is ``git archive HEAD`` (what a fresh clone holds), or the tracked files of the working tree
  with ``--worktree``;
- ``antsim`` is this interpreter's console script (its folder first on PATH) importing the copy's package
  (``PYTHONPATH`` = the copy), so the copy's code is what runs;
- absolute ``/tmp/...`` paths in the examples are moved under the check's own temporary folder (printed),
  so an earlier tour left in ``/tmp`` neither breaks nor helps the check, and nothing outside it is written;
- the two long top commands (``bash scripts/main.sh``, ``bash scripts/test.sh``: minutes each, and they
  build a ``.venv``) are skipped unless ``--with-top``.

Prints one line per example (status, seconds, command) and, for the first failure, the tail of its output;
exits 1 when an example fails, 0 when all pass.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LONG_COMMANDS = ("bash scripts/main.sh", "bash scripts/test.sh")
_FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True)
class Example:
    """One shell line of the README and where it is."""

    line: int
    command: str


def bash_examples(text: str) -> list[Example]:
    """The commands of the ```bash blocks of ``text``, in order (continuation lines joined, blanks dropped)."""
    examples: list[Example] = []
    language: str | None = None
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        fence = _FENCE.match(raw.strip())
        if fence:
            language = fence.group(1) if language is None else None
            continue
        if language not in ("bash", "sh", "shell", "console"):
            continue
        if not pending:
            start = number
        stripped = raw.rstrip()
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        command = (pending + stripped).strip()
        pending = ""
        if command and not command.startswith("#"):
            examples.append(Example(start, command))
    return examples


def relocate_tmp(command: str, root: Path) -> str:
    """``/tmp/x`` → ``<root>/tmp/x`` (word-initial absolute /tmp paths only)."""
    return re.sub(r"(?<![\w./-])/tmp/", f"{root}/tmp/", command)


def fresh_copy(target: Path, worktree: bool) -> None:
    """The repository as a fresh clone holds it (HEAD), or its working tree's tracked files."""
    target.mkdir(parents=True)
    if not worktree:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", "HEAD"], check=True,
                                 capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(target, filter="data")
        return
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], check=True, capture_output=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def run_examples(examples: list[Example], copy: Path, root: Path, timeout_s: float, source: str = "README.md") -> int:
    """Run them in order in ``copy``; the number that failed (the run stops at the first failure)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(copy), "MPLBACKEND": "Agg"}
    (root / "tmp").mkdir(exist_ok=True)
    for example in examples:
        command = relocate_tmp(example.command, root)
        start = time.time()
        try:
            done = subprocess.run(["bash", "-e", "-c", command], cwd=copy, env=env, capture_output=True, text=True,
                                  timeout=timeout_s)
            status, output = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            status, output = 124, f"timed out after {timeout_s:.0f} s\n{exc.stdout or ''}{exc.stderr or ''}"
        took = time.time() - start
        print(f"{'ok  ' if status == 0 else 'FAIL'} {took:7.1f} s  {source}:{example.line}  {command}", flush=True)
        if status != 0:
            tail = "\n".join(str(output).splitlines()[-25:])
            print(f"--- exit status {status}; last lines of its output:\n{tail}", flush=True)
            return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", type=Path, default=REPO / "README.md")
    parser.add_argument("--with-top", action="store_true", help="also run bash scripts/main.sh and scripts/test.sh")
    parser.add_argument("--worktree", action="store_true", help="copy the working tree's tracked files, not HEAD")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per example (default 900)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy (its path is printed)")
    args = parser.parse_args(argv)
    examples = bash_examples(args.readme.read_text(encoding="utf-8"))
    skipped = [e for e in examples if not args.with_top and e.command.split("#")[0].strip() in LONG_COMMANDS]
    chosen = [e for e in examples if e not in skipped]
    root = Path(tempfile.mkdtemp(prefix="antsim-readme-"))
    copy = root / "repo"
    try:
        fresh_copy(copy, args.worktree)
        print(f"{len(chosen)} README examples in {copy} ({'working tree' if args.worktree else 'HEAD'});"
              f" /tmp/ paths under {root}/tmp/" + (f"; skipped (--with-top runs them): "
                                                   f"{', '.join(e.command.split('#')[0].strip() for e in skipped)}"
                                                   if skipped else ""), flush=True)
        failed = run_examples(chosen, copy, root, args.timeout, args.readme.name)
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print("all README examples ran" if not failed else "a README example failed (above)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
