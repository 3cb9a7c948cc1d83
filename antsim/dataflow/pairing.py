"""Pairing cells: which stationary fiber meets which streamed fiber, in which chunk, on which PE.

A *cell* is one (chunk, PE, stationary fiber, stride group): the PE forms every pair of the fiber's
I-vectors with the matching streamed fiber's F-vectors. Cells exist for every non-empty stationary
fiber and every output-channel group whose streamed block holds a non-zero; a cell whose streamed fiber
the fetch filter emptied forms no pairs but still counts toward ``total`` through the unfiltered count.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields

import numpy as np

from antsim.dataflow.fibers import StreamedOperand, Vectors
from antsim.dataflow.tiling import StrideClasses, Tiling
from antsim.phases import PhaseProblem


@dataclass(frozen=True)
class Cells:
    """Per-cell arrays (all shape (n_cells,), int64).

    Attributes:
        slot: ``chunk · n_pes + pe`` (the PhaseWork row-major index). i0, n_i: first I-vector and
        I-vector count. f0, n_f: first F-vector and F-vector count (0 when the streamed fiber is
        empty). nnz_s: stationary non-zeros. nnz_t: streamed non-zeros delivered (after the fetch
        filter). nnz_t_all: streamed non-zeros before the filter (for ``total``). stream_key: the
        streamed block and stride class the cell pairs with (ascending = the order the block is streamed
        within its chunk).
    """

    slot: np.ndarray
    i0: np.ndarray
    n_i: np.ndarray
    f0: np.ndarray
    n_f: np.ndarray
    nnz_s: np.ndarray
    nnz_t: np.ndarray
    nnz_t_all: np.ndarray
    stream_key: np.ndarray

    @property
    def n_pairs(self) -> np.ndarray:
        return self.n_i * self.n_f


def _decode_stationary(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses, keys: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rest, cls = np.divmod(keys, classes.n_stationary)
    rest, pe = np.divmod(rest, tiling.n_pes)
    Cs = problem.stationary_shape[1] if problem.channel_matched else 1
    n, ch = np.divmod(rest, Cs)
    return n, ch, pe, cls


def _walk_order(stationary_class: np.ndarray, classes: StrideClasses, n_groups: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stationary fiber, group g and streamed class of every cell in the order a PE walks them: fiber-major
    (a PE walks its fiber through all groups), then g, then the streamed classes its class pairs with, in
    ``classes.groups`` order. Built by counting, without a sort."""
    partners = [[b for a, b in classes.groups if a == cls] for cls in range(classes.n_stationary)]
    n_partners = np.array([len(p) for p in partners], np.int64)
    table = np.zeros((classes.n_stationary, max(1, int(n_partners.max()))), np.int64)
    for cls, p in enumerate(partners):
        table[cls, :len(p)] = p
    per_fiber = n_partners[stationary_class]
    cells = per_fiber * n_groups
    fiber = np.repeat(np.arange(len(stationary_class), dtype=np.int64), cells)
    rank = np.arange(len(fiber), dtype=np.int64) - np.repeat(np.cumsum(cells) - cells, cells)
    group, pair = np.divmod(rank, per_fiber[fiber])
    return fiber, group, table[stationary_class[fiber], pair]


# Cells built per batch of stationary fibers (their expansion over groups and stride partners): it bounds
# the temporaries, not results. [choice] 2^22 cells ≈ 300 MB of int64 temporaries at most.
_CELL_BATCH = 1 << 22


def make_cells(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses, stationary: Vectors,
               streamed: StreamedOperand) -> Cells:
    """All pairing cells of the phase, ordered by stationary fiber, then stride group, then group g — less the
    inert ones, whose streamed block holds no non-zero even before the fetch filter: they form no pair, add
    nothing to ``total`` and read nothing (an SCNN FC layer's 8-weight blocks at density 0.1 are 43 % empty)."""
    image, channel, pe, stationary_class = _decode_stationary(problem, tiling, classes, stationary.fiber_keys)
    per_fiber = np.array([sum(1 for a, _ in classes.groups if a == cls) for cls in range(classes.n_stationary)],
                         np.int64)[stationary_class] * tiling.n_groups
    ends = np.cumsum(per_fiber)
    parts, first = [], 0
    while first < len(per_fiber):
        last = max(first + 1, int(np.searchsorted(ends, (ends[first] - per_fiber[first]) + _CELL_BATCH, "right")))
        fibers = slice(first, last)
        batch = _FiberBatch(first, image[fibers], channel[fibers], pe[fibers], stationary_class[fibers])
        parts.append(_cells_of(problem, tiling, classes, stationary, streamed, batch))
        first = last
    if len(parts) <= 1:
        return parts[0] if parts else _cells_of(problem, tiling, classes, stationary, streamed,
                                                 _FiberBatch(0, image, channel, pe, stationary_class))
    return Cells(*(np.concatenate([getattr(part, f.name) for part in parts]) for f in fields(Cells)))


@dataclass(frozen=True)
class _FiberBatch:
    """Consecutive stationary fibers ``first, first + 1, …`` with each one's image, channel, PE and stride class."""

    first: int
    image: np.ndarray
    channel: np.ndarray
    pe: np.ndarray
    stationary_class: np.ndarray


def _cells_of(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses, stationary: Vectors,
              streamed: StreamedOperand, batch: _FiberBatch) -> Cells:
    """The non-inert cells of the stationary fibers of ``batch``."""
    image, channel, pe, stationary_class, offset = (batch.image, batch.channel, batch.pe, batch.stationary_class,
                                                    batch.first)
    Nt, Ct = problem.streamed_shape[:2]
    local, group, b_class_of = _walk_order(stationary_class, classes, tiling.n_groups)
    streamed_image = image[local] if Nt > 1 else np.zeros_like(local)
    streamed_channel = channel[local] if Ct > 1 else np.zeros_like(local)
    block = (streamed_image * Ct + streamed_channel) * tiling.n_groups + group
    nnz_t_all = streamed.unfiltered_nnz[block, b_class_of]
    live = nnz_t_all > 0
    if not live.all():
        local, group, b_class_of, block, nnz_t_all = (a[live] for a in (local, group, b_class_of, block, nnz_t_all))
    fiber = local + offset
    fetch_set = streamed.layout.set_of_pe[pe[local]]
    idx, found = streamed.vectors.fiber_index(streamed.layout.key(block, b_class_of, fetch_set))
    vectors = streamed.vectors
    slot = (image[local] * tiling.n_groups + group) * tiling.n_pes + pe[local]
    return Cells(
        slot=slot.astype(np.int64), i0=stationary.fiber_vec0[fiber], n_i=stationary.fiber_nvec[fiber],
        f0=np.where(found, vectors.fiber_vec0[idx] if len(vectors.fiber_keys) else 0, 0),
        n_f=np.where(found, vectors.fiber_nvec[idx] if len(vectors.fiber_keys) else 0, 0),
        nnz_s=stationary.fiber_nnz[fiber],
        nnz_t=np.where(found, vectors.fiber_nnz[idx] if len(vectors.fiber_keys) else 0, 0),
        nnz_t_all=nnz_t_all,
        stream_key=(block * classes.n_streamed + b_class_of).astype(np.int64),
    )


# Candidate pairs per batch of ``iter_pairs`` (the ANT screen's pair counts): it bounds memory, not
# results — ~10 int64 temporaries per pair, some 80 MB per batch of 2^20.
PAIR_BATCH = 1 << 20


@dataclass(frozen=True)
class PairBatch:
    """Candidate vector pairs of a run of cells: ``cell`` (index into Cells), ``f`` and ``i`` (vector ids)."""

    cell: np.ndarray
    f: np.ndarray
    i: np.ndarray


def iter_pairs(cells: Cells, max_pairs: int = PAIR_BATCH) -> Iterator[PairBatch]:
    """Every candidate (F-vector, I-vector) pair, in cell order, in batches of ≤ ~``max_pairs``."""
    counts = cells.n_pairs
    ends = np.cumsum(counts)
    start = 0
    while start < len(counts):
        base = ends[start - 1] if start else 0
        stop = int(np.searchsorted(ends, base + max_pairs, side="right"))
        stop = max(stop, start + 1)
        yield expand_cells(cells, np.arange(start, stop), counts[start:stop])
        start = stop


def expand_cells(cells: Cells, cell_ids: np.ndarray, counts: np.ndarray) -> PairBatch:
    """The candidate pairs of the cells ``cell_ids`` (``counts``: their ``n_pairs``), cell by cell, F-major."""
    total = int(counts.sum())
    cell = np.repeat(cell_ids, counts)
    offsets = np.repeat(np.cumsum(counts) - counts, counts)
    local = np.arange(total) - offsets
    n_i = cells.n_i[cell]
    f_local, i_local = np.divmod(local, np.maximum(n_i, 1))
    return PairBatch(cell, cells.f0[cell] + f_local, cells.i0[cell] + i_local)
