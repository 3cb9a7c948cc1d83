"""Reuse across design points: stage results keyed by exactly what they read.

A sweep, a study or ``compare`` maps the same layers with the same operands onto many designs, and
several stages of the mapping depend on few of a design's parameters: the output footprint of a phase
(valid products, halo and held outputs per chunk and PE) reads only the operands' non-zero masks, the
phase geometry, the PE grid, the output-channel group, the stride phases and the batch tiles — not F,
I, the banks, the policy, buffers, clock or DRAM. ``StageCache`` memoises such a stage under a key made
of *every* input it reads (frozen geometry dataclasses by value, arrays by a digest of their bytes,
shape and dtype), so a hit is the result a cold run would compute. Cached arrays are made read-only:
a caller that tried to change one in place would raise instead of corrupting later hits.

``tests/dataflow/test_reuse.py`` changes each parameter in turn and compares every field with a cold
run; ``disabled()`` turns every cache off (the reference for those tests and for benchmarks).

``kept_geometry`` is the second kind: a small LRU memo of a build that reads only geometry (frozen dataclasses
and tuples, hashed by value), such as the footprints' tap links. ``clear_all`` empties those too and
``disabled()`` bypasses them, so a cold benchmark pays every build.
"""

from __future__ import annotations

import functools
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import fields, is_dataclass
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

_ENABLED = [True]


def array_digest(array: np.ndarray) -> tuple[bytes, tuple[int, ...], str]:
    """Content key of an array: a 128-bit BLAKE2b digest of its bytes, with its shape and dtype."""
    data = np.ascontiguousarray(array)
    if data.dtype == bool:
        data = np.packbits(data)
    return hashlib.blake2b(data.tobytes(), digest_size=16).digest(), tuple(array.shape), str(array.dtype)


def _nbytes(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if is_dataclass(value):
        return sum(_nbytes(getattr(value, f.name)) for f in fields(value))
    return 64


def _frozen(value: T) -> T:
    """``value`` with its arrays read-only (dataclasses field by field)."""
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
        return value
    if is_dataclass(value) and not isinstance(value, type):
        for f in fields(value):
            _frozen(getattr(value, f.name))
    return value


class StageCache:
    """A least-recently-used memo of one stage, bounded by the bytes of the arrays it holds.

    Args:
        name: The stage (for the statistics).
        max_bytes: Evict the least recently used results beyond this many array bytes.
    """

    def __init__(self, name: str, max_bytes: int) -> None:
        self.name = name
        self.max_bytes = max_bytes
        self.entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self.held_bytes = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The result under ``key``, computing (and keeping) it on a miss; ``compute`` when disabled."""
        if not _ENABLED[0]:
            return compute()
        if key in self.entries:
            self.entries.move_to_end(key)
            self.hits += 1
            return self.entries[key][0]
        self.misses += 1
        value = _frozen(compute())
        size = _nbytes(value)
        if size <= self.max_bytes:
            self.entries[key] = (value, size)
            self.held_bytes += size
            while self.held_bytes > self.max_bytes:
                _, (_, dropped) = self.entries.popitem(last=False)
                self.held_bytes -= dropped
        return value

    def get_keyed(self, key_of: Callable[[], Hashable], compute: Callable[[], T]) -> T:
        """``get`` with a key built only when the cache is on (content digests cost a pass over the arrays)."""
        return self.get(key_of(), compute) if _ENABLED[0] else compute()

    def clear(self) -> None:
        self.entries.clear()
        self.held_bytes = 0
        self.hits = self.misses = 0


# Footprints: per-slot int64 arrays, ~0.1–1 MB per (layer, phase) at batch 16: 256 MB holds a few networks.
FOOTPRINTS = StageCache("footprint", 256 << 20)
CACHES = (FOOTPRINTS,)


@contextmanager
def disabled() -> Iterator[None]:
    """Run without any stage cache (every stage computed cold)."""
    previous = _ENABLED[0]
    _ENABLED[0] = False
    try:
        yield
    finally:
        _ENABLED[0] = previous


def clear_all() -> None:
    """Empty every stage cache and every kept geometry."""
    for cache in CACHES:
        cache.clear()
    for clear in _GEOMETRY_CLEARS:
        clear()


_GEOMETRY_CLEARS: list[Callable[[], None]] = []


def kept_geometry(maxsize: int) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator: keep the last ``maxsize`` results of a build whose arguments are all hashable geometry (the
    key is every argument, so a hit is what the build returns); bypassed under ``disabled()``, emptied by
    ``clear_all()``."""
    def wrap(build: Callable[..., T]) -> Callable[..., T]:
        kept = functools.lru_cache(maxsize=maxsize)(build)
        _GEOMETRY_CLEARS.append(kept.cache_clear)

        @functools.wraps(build)
        def call(*args: Any) -> T:
            return kept(*args) if _ENABLED[0] else build(*args)

        return call

    return wrap

