"""RCP anticipation policies at operand-vector granularity.

* ``none`` — every candidate pair is issued (SCNN).
* ``ant`` — a pair is issued only if, in every spatial dimension, the interval of integer outputs its
  two coordinate bounding boxes can reach (``DimMap.reach``) meets the valid window; otherwise all
  its products are RCPs and it is skipped. Pairs mixing valid products and RCPs are issued whole.
* ``oracle`` — every RCP removed at product granularity; the valid products of a (chunk, PE) are
  packed densely into ``ceil(valid / (F·I))`` pairs (a bound no real unit reaches: it even packs
  products of different vector pairs together).

The fetch filter (``anticipation.fetch_filter``, applied with ``ant`` and ``oracle`` only — ``none``
is SCNN's broadcast) is upstream of this: it removes streamed rows before vectors are formed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from antsim.dataflow.context import MappingContext
from antsim.dataflow.fibers import Vectors
from antsim.dataflow.pairing import PAIR_BATCH, Cells, PairBatch, expand_cells
from antsim.phases import PhaseProblem
from antsim.vocabulary import POLICIES as POLICIES  # re-exported: the policies this module implements
from antsim.vocabulary import Policy


def screen(problem: PhaseProblem, stationary: Vectors, streamed: Vectors, pairs: PairBatch) -> np.ndarray:
    """True for pairs the ANT unit issues (their reachable output box meets the valid window)."""
    ok = np.ones(len(pairs.f), bool)
    for d, dim in enumerate(problem.dims):
        out_lo, out_hi = dim.reach(stationary.box[2 * d, pairs.i], stationary.box[2 * d + 1, pairs.i],
                                   streamed.box[2 * d, pairs.f], streamed.box[2 * d + 1, pairs.f])
        ok &= out_lo <= out_hi
    return ok


@dataclass(frozen=True)
class PairCounts:
    """Vector-level work per slot (``chunk · n_pes + pe``), each shape (n_slots,), int64."""

    candidate_pairs: np.ndarray
    issued_pairs: np.ndarray
    issued_products: np.ndarray
    stationary_reads: np.ndarray
    cell_issued_pairs: np.ndarray | None = None  # per cell (``none`` / ``ant``); None when packed per slot


def _bincount(slot: np.ndarray, weights: np.ndarray | None, n_slots: int) -> np.ndarray:
    out = np.bincount(slot, weights=weights, minlength=n_slots)
    return np.rint(out).astype(np.int64)


def count_pairs(context: MappingContext, policy: Policy) -> PairCounts:
    """Candidate/issued pairs, issued products and stationary reads per slot for ``none`` and ``ant``
    (exact at vector level; ``oracle`` is finished by ``oracle_counts`` once valid products are known)."""
    cells, n_slots = context.cells, context.n_slots
    candidate = _bincount(cells.slot, cells.n_pairs, n_slots)
    if policy != "ant":
        return PairCounts(candidate, candidate, _bincount(cells.slot, cells.nnz_s * cells.nnz_t, n_slots),
                          _bincount(cells.slot, cells.n_f * cells.nnz_s, n_slots), cells.n_pairs.copy())
    stationary, streamed = context.stationary, context.streamed_vectors
    per_cell = np.zeros(len(cells.slot), np.int64)
    pairs = np.zeros(n_slots, np.int64)
    products = np.zeros(n_slots, np.int64)
    reads = np.zeros(n_slots, np.int64)
    for batch in _candidate_batches(cells):  # sums: the order pairs are counted in does not matter
        issued = _issued(context.problem, stationary, streamed, batch)
        cell = batch.cell[issued]
        slot = cells.slot[cell]
        size_i = stationary.vec_size[batch.i[issued]]
        pairs += np.bincount(slot, minlength=n_slots)
        per_cell += np.bincount(cell, minlength=len(per_cell))
        products += _bincount(slot, size_i * streamed.vec_size[batch.f[issued]], n_slots)
        reads += _bincount(slot, size_i, n_slots)
    return PairCounts(candidate, pairs, products, reads, per_cell)


def _issued(problem: PhaseProblem, stationary: Vectors, streamed: Vectors, pairs: PairBatch) -> np.ndarray:
    """``screen`` computed in place on one temporary per bound: ``DimMap.reach``'s numerators ``α·y + β·u + γ``
    (``u_min`` / ``u_max`` as ``reach`` orders them), with no multiply for unit coefficients and no division for
    δ = 1 — the same integers as ``screen``."""
    ok = np.ones(len(pairs.f), bool)
    for d, dim in enumerate(problem.dims):
        u_lo, u_hi = streamed.box[2 * d], streamed.box[2 * d + 1]
        lo = dim.numerator_into(stationary.box[2 * d][pairs.i], (u_lo if dim.beta >= 0 else u_hi)[pairs.f])
        hi = dim.numerator_into(stationary.box[2 * d + 1][pairs.i], (u_hi if dim.beta >= 0 else u_lo)[pairs.f])
        if dim.delta != 1:  # o_lo = ceil(lo / δ), o_hi = floor(hi / δ)
            np.negative(lo, out=lo)
            np.floor_divide(lo, dim.delta, out=lo)
            np.negative(lo, out=lo)
            np.floor_divide(hi, dim.delta, out=hi)
        np.maximum(lo, 0, out=lo)
        np.minimum(hi, dim.extent - 1, out=hi)
        ok &= lo <= hi
    return ok


def _candidate_batches(cells: Cells, max_pairs: int = PAIR_BATCH) -> Iterator[PairBatch]:
    """Every candidate pair of ``cells`` in batches of ≤ ~``max_pairs``: first the cells with one I-vector (most
    of them: their pairs are a run of F-vectors, no division), then the others (``expand_cells``)."""
    single = cells.n_i == 1
    for group in (np.flatnonzero(single), np.flatnonzero(~single)):
        counts = cells.n_pairs[group]
        ends = np.cumsum(counts)
        start = 0
        while start < len(group):
            stop = max(start + 1, int(np.searchsorted(ends, (ends[start - 1] if start else 0) + max_pairs, "right")))
            ids, n = group[start:stop], counts[start:stop]
            if single[ids[0]]:
                rank = np.cumsum(n) - n
                yield PairBatch(np.repeat(ids, n), np.arange(int(n.sum()), dtype=np.int64) +
                                np.repeat(cells.f0[ids] - rank, n), np.repeat(cells.i0[ids], n))
            else:
                yield expand_cells(cells, ids, n)
            start = stop


def oracle_counts(candidate: np.ndarray, valid: np.ndarray, F: int, I: int) -> PairCounts:
    """Oracle: issued products = valid ones, packed into ``ceil(valid / (F·I))`` full pairs per slot,
    each reading a full I-vector."""
    issued = -(-valid // (F * I))
    return PairCounts(candidate, issued, valid.copy(), issued * I)
