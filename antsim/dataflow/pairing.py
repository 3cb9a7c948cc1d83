"""Pairing cells: which stationary fiber meets which streamed fiber, in which chunk, on which PE.

A *cell* is one (chunk, PE, stationary fiber, stride group): the PE forms every pair of the fiber's
I-vectors with the matching streamed fiber's F-vectors. Cells exist for every non-empty stationary
fiber and every output-channel group; a cell whose streamed fiber is empty (or filtered away) forms
no pairs but still counts toward ``total`` through the unfiltered streamed count.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

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


def make_cells(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses, stat: Vectors,
               streamed: StreamedOperand) -> Cells:
    """All pairing cells of the phase, ordered by stationary fiber, then stride group, then group g."""
    n, ch, pe, a = _decode_stationary(problem, tiling, classes, stat.fiber_keys)
    Nt, Ct = problem.streamed_shape[:2]
    fib, grp, b = [], [], []
    for a_g, b_g in classes.groups:
        sel = np.nonzero(a == a_g)[0]
        for g in range(tiling.n_groups):
            fib.append(sel)
            grp.append(np.full(len(sel), g))
            b.append(np.full(len(sel), b_g))
    fib_i, g_arr, b_arr = (np.concatenate(x) if x else np.zeros(0, np.int64) for x in (fib, grp, b))
    order = np.lexsort((g_arr, fib_i))  # fiber-major: a PE walks its fiber through all groups
    fib_i, g_arr, b_arr = fib_i[order], g_arr[order], b_arr[order]
    nt = n[fib_i] if Nt > 1 else np.zeros_like(fib_i)
    ct = ch[fib_i] if Ct > 1 else np.zeros_like(fib_i)
    block = (nt * Ct + ct) * tiling.n_groups + g_arr
    fetch_set = streamed.layout.set_of_pe[pe[fib_i]]
    idx, found = streamed.vectors.fiber_index(streamed.layout.key(block, b_arr, fetch_set))
    tv = streamed.vectors
    slot = (n[fib_i] * tiling.n_groups + g_arr) * tiling.n_pes + pe[fib_i]
    return Cells(
        slot=slot.astype(np.int64), i0=stat.fiber_vec0[fib_i], n_i=stat.fiber_nvec[fib_i],
        f0=np.where(found, tv.fiber_vec0[idx] if len(tv.fiber_keys) else 0, 0),
        n_f=np.where(found, tv.fiber_nvec[idx] if len(tv.fiber_keys) else 0, 0),
        nnz_s=stat.fiber_nnz[fib_i],
        nnz_t=np.where(found, tv.fiber_nnz[idx] if len(tv.fiber_keys) else 0, 0),
        nnz_t_all=streamed.unfiltered_nnz[block, b_arr],
        stream_key=(block * classes.n_streamed + b_arr).astype(np.int64),
    )


@dataclass(frozen=True)
class PairBatch:
    """Candidate vector pairs of a run of cells: ``cell`` (index into Cells), ``f`` and ``i`` (vector ids)."""

    cell: np.ndarray
    f: np.ndarray
    i: np.ndarray


def iter_pairs(cells: Cells, max_pairs: int = 1 << 20) -> Iterator[PairBatch]:
    """Every candidate (F-vector, I-vector) pair, in cell order, in batches of ≤ ~``max_pairs``."""
    counts = cells.n_pairs
    ends = np.cumsum(counts)
    start = 0
    while start < len(counts):
        base = ends[start - 1] if start else 0
        stop = int(np.searchsorted(ends, base + max_pairs, side="right"))
        stop = max(stop, start + 1)
        yield _expand(cells, np.arange(start, stop), counts[start:stop])
        start = stop


def _expand(cells: Cells, cell_ids: np.ndarray, counts: np.ndarray) -> PairBatch:
    total = int(counts.sum())
    cell = np.repeat(cell_ids, counts)
    offsets = np.repeat(np.cumsum(counts) - counts, counts)
    local = np.arange(total) - offsets
    n_i = cells.n_i[cell]
    f_local, i_local = np.divmod(local, np.maximum(n_i, 1))
    return PairBatch(cell, cells.f0[cell] + f_local, cells.i0[cell] + i_local)
