"""Errors antsim raises. Library code raises; only ``antsim.cli.main`` turns them into exit codes.

``AntsimError`` and its subclasses are *user* errors (bad spec, bad file, bad argument): the CLI prints
their one-line message and exits with status 2. Anything else is an internal error (status 1).
"""

from __future__ import annotations

from typing import Any

_MISSING = object()


class AntsimError(Exception):
    """A user error: its message is one line that names the file, key and value at fault.

    The message speaks the library's terms (``storage URL 'x': not an RDB URL``). ``subject`` names the
    input it is about when that input came from no file or key (``"storage"``, ``"baseline"``); a front
    end that took the input from a flag adds the flag's name (``antsim.cli`` maps subjects to flags).
    """

    def __init__(self, *args: object, subject: str | None = None) -> None:
        super().__init__(*args)
        self.subject = subject  # kept through pickling (BaseException pickles __dict__): worker errors keep it


class SpecError(AntsimError):
    """An invalid spec file or value.

    Args:
        file: The file the value came from (or a description such as ``"<arguments>"``).
        key: Dotted key path of the offending value (``"pe_array.F"``); empty for whole-file errors.
        message: What rule was broken.
        value: The value received; omitted from the message when not given.
    """

    def __init__(self, file: str, key: str, message: str, value: Any = _MISSING) -> None:
        self.file, self.key, self.rule, self.value = str(file), key, message, value
        where = f"{self.file}: {key}: " if key else f"{self.file}: "
        got = "" if value is _MISSING else f"; got {value!r}"
        super().__init__(f"{where}{message}{got}".replace("\n", " "))

    def __reduce__(self) -> tuple[Any, ...]:
        # BaseException pickles as cls(*self.args), i.e. the one-line message alone, which this constructor
        # cannot take: a worker process raising a SpecError would then fail to send it back.
        args = (self.file, self.key, self.rule) if self.value is _MISSING else (self.file, self.key, self.rule,
                                                                               self.value)
        return (type(self), args, self.__dict__)


class WorkloadError(AntsimError):
    """An invalid layer, network name, layers CSV or tensors file."""


class MappingError(AntsimError):
    """A workload that cannot be mapped onto the given architecture (e.g. a buffer too small)."""


class MissingExtraError(AntsimError):
    """An optional dependency (PyTorch, psycopg) is not installed."""
