"""Progress of long library calls, as a hook the caller passes in (the library never draws on its own).

A ``Progress`` wraps the iterable a call walks and yields the same items (``tqdm`` is one); a call that
takes ``progress: Progress | bool`` reads ``True`` as ``tqdm_bar`` on stderr and ``False`` as none.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from tqdm import tqdm

T = TypeVar("T")
Progress = Callable[[Iterable[Any]], Iterable[Any]]


def tqdm_bar(items: Iterable[T], total: int | None = None, desc: str = "", unit: str = "it") -> Iterator[T]:
    """A tqdm progress bar on stderr (stdout stays for results), cleared when done."""
    yield from tqdm(items, total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True,
                    mininterval=0.5, leave=False)


def track(items: Iterable[T], progress: Progress | bool, total: int | None = None, desc: str = "",
          unit: str = "it") -> Iterable[T]:
    """``items`` through the caller's hook: unchanged (False), a tqdm bar (True) or ``progress(items)``."""
    if progress is False:
        return items
    if progress is True:
        return tqdm_bar(items, total=total, desc=desc, unit=unit)
    return progress(items)
