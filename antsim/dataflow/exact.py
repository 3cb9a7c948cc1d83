"""The ``exact`` path: enumerate every product of every issued vector pair.

Products are expanded with numpy, their output coordinates computed from the operands'
coordinates (``DimMap.output``), valid ones scatter-added into the phase output, and accumulator
bank conflicts counted exactly: a valid product goes to the bank its accumulator entry hashes to
(``antsim.dataflow.banks``); invalid products never reach a bank. A pair takes ``max(1, largest bank
load)`` cycles, so it adds ``max(1, maxload) − 1`` conflict cycles. Oracle packs each (chunk, PE)'s valid products, in
enumeration order, into groups of F·I and applies the same rule per group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from antsim.dataflow.anticipation import screen
from antsim.dataflow.banks import BankMap
from antsim.dataflow.fibers import Vectors
from antsim.dataflow.footprint import Footprint
from antsim.dataflow.pairing import Cells, PairBatch, iter_pairs
from antsim.dataflow.tiling import Tiling
from antsim.phases import PhaseProblem

_EXACT_PAIRS = 1 << 15  # pairs per expansion batch (bounds memory: products ≤ batch · F · I)


@dataclass(frozen=True)
class ExactResult:
    """Functional output, output footprint and bank-conflict cycles per slot."""

    output: np.ndarray
    footprint: Footprint
    conflict_cycles: np.ndarray


@dataclass
class _Products:
    """Valid products of one batch: slot, output linear index, bank, pair id (batch-global)."""

    slot: np.ndarray
    out: np.ndarray
    bank: np.ndarray
    pair: np.ndarray


def _windows(problem: PhaseProblem, tiling: Tiling) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Per PE the origin of its reachable output window and the (uniform) window size."""
    U, V = problem.streamed_shape[3:]
    y_lo, y_hi = tiling.row_extents()
    x_lo, x_hi = tiling.col_extents()
    o1_lo, o1_hi = problem.dims[0].reach(y_lo, y_hi, np.zeros_like(y_lo), np.full_like(y_lo, U - 1))
    o2_lo, o2_hi = problem.dims[1].reach(x_lo, x_hi, np.zeros_like(x_lo), np.full_like(x_lo, V - 1))
    win_h = int(max(1, (o1_hi - o1_lo + 1).max()))
    win_w = int(max(1, (o2_hi - o2_lo + 1).max()))
    origin_y = np.repeat(o1_lo, tiling.cols)
    origin_x = np.tile(o2_lo, tiling.rows)
    return origin_y, origin_x, win_h, win_w


def _expand_products(cells: Cells, stat: Vectors, streamed: Vectors, cell: np.ndarray, f: np.ndarray,
                     i: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pair index, stationary element, streamed element) of every product of the given pairs."""
    size_f, size_i = streamed.vec_size[f], stat.vec_size[i]
    count = size_f * size_i
    pair = np.repeat(np.arange(len(f)), count)
    local = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    a, b = np.divmod(local, size_i[pair])
    return pair, stat.vec_start[i][pair] + b, streamed.vec_start[f][pair] + a


class _Enumerator:
    """Holds the per-phase constants the product enumeration needs."""

    def __init__(self, problem: PhaseProblem, tiling: Tiling, banks: BankMap, scatter: bool = True) -> None:
        self.problem, self.tiling, self.banks, self.scatter = problem, tiling, banks, scatter
        self.O1, self.O2 = problem.output_shape[2:]
        self.out_size = int(np.prod(problem.output_shape))
        self.output = np.zeros(self.out_size if scatter else 0)
        self.windows = _windows(problem, tiling) if problem.output_is_plane else None

    def batch(self, cells: Cells, stat: Vectors, streamed: Vectors, cell: np.ndarray, f: np.ndarray,
              i: np.ndarray, pair_base: int) -> _Products:
        """Scatter the valid products of pairs (cell, f, i) into the output; return their bookkeeping."""
        pair, se, te = _expand_products(cells, stat, streamed, cell, f, i)
        o1, ok1 = self.problem.dims[0].output(stat.sp1[se], streamed.sp1[te])
        o2, ok2 = self.problem.dims[1].output(stat.sp2[se], streamed.sp2[te])
        ok = ok1 & ok2
        pair, se, te, o1, o2 = pair[ok], se[ok], te[ok], o1[ok], o2[ok]
        ko = streamed.chan[te]
        lead = stat.image[se] if self.problem.output_is_plane else ko
        second = ko if self.problem.output_is_plane else stat.chan[se]
        out = ((lead * self.problem.output_shape[1] + second) * self.O1 + o1) * self.O2 + o2
        if self.scatter:
            self.output += np.bincount(out, weights=stat.value[se] * streamed.value[te], minlength=self.out_size)
        slot = cells.slot[cell[pair]]
        return _Products(slot, out, self._bank(slot, ko, stat.chan[se], o1, o2), pair + pair_base)

    def _bank(self, slot: np.ndarray, ko: np.ndarray, ch: np.ndarray, o1: np.ndarray, o2: np.ndarray
              ) -> np.ndarray:
        k_local = ko % self.tiling.kc
        if self.windows is None:
            entry = (ch * self.O1 + o1) * self.O2 + o2
            per_channel = self.problem.output_shape[1] * self.O1 * self.O2
        else:
            origin_y, origin_x, win_h, win_w = self.windows
            pe = slot % self.tiling.n_pes
            entry = (o1 - origin_y[pe]) * win_w + (o2 - origin_x[pe])
            per_channel = win_h * win_w
        return self.banks.bank(k_local, entry, per_channel)


def _max_load_extra(group: np.ndarray, bank: np.ndarray, banks: int, n_groups: int) -> np.ndarray:
    """Per group id: max(1, largest number of products to one bank) − 1 (0 for empty groups)."""
    keys = np.sort(group * banks + bank)
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if len(keys) else keys
    counts = np.diff(np.append(starts, len(keys)))
    keys = keys[starts]
    worst = np.zeros(n_groups, np.int64)
    np.maximum.at(worst, keys // banks, counts)
    return np.maximum(worst - 1, 0)


def run_exact(policy: str, problem: PhaseProblem, tiling: Tiling, cells: Cells, stat: Vectors,
              streamed: Vectors, banks: BankMap, group_size: int) -> ExactResult:
    """Enumerate products of the issued pairs (all candidate pairs for ``oracle``).

    Args:
        banks: the PE's accumulator banks and hash. group_size: F·I (oracle packing).
    """
    n_slots = tiling.n_chunks * tiling.n_pes
    enum = _Enumerator(problem, tiling, banks)
    conflicts = np.zeros(n_slots, np.int64)
    kept: list[_Products] = []
    pair_base = 0
    screen_policy = "ant" if policy == "ant" else "none"
    for batch, mask in _batches(screen_policy, problem, cells, stat, streamed):
        cell, f, i = batch.cell[mask], batch.f[mask], batch.i[mask]
        prods = enum.batch(cells, stat, streamed, cell, f, i, pair_base)
        if policy != "oracle":
            extra = _max_load_extra(prods.pair - pair_base, prods.bank, banks.banks, len(f))
            conflicts += np.bincount(cells.slot[cell], weights=extra, minlength=n_slots).astype(np.int64)
        pair_base += len(f)
        kept.append(prods)
    allp = _Products(*(np.concatenate([getattr(p, a) for p in kept]) if kept else np.zeros(0, np.int64)
                       for a in ("slot", "out", "bank", "pair")))
    if policy == "oracle":
        conflicts = _oracle_conflicts(allp, banks.banks, group_size, n_slots)
    footprint = _footprint(problem, tiling, allp, n_slots)
    return ExactResult(enum.output.reshape(problem.output_shape), footprint, conflicts)


_PRIOR_PAIRS = 16.0  # weight (in sampled pairs) of the phase-wide conflict rate in each slot's estimate


def sampled_conflicts(policy: str, problem: PhaseProblem, tiling: Tiling, cells: Cells, stat: Vectors,
                      streamed: Vectors, banks: BankMap, budget: int = 1 << 15,
                      issued_pairs: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Bank-conflict cycles per slot from a systematic 1-in-m sample of the candidate pairs.

    ``m = ceil(candidates / budget)``; every pair is taken when m = 1, which makes the result exact.
    Each sampled issued pair's products are enumerated and hashed as in ``run_exact``. With m > 1 a
    slot's cycles are its issued pairs (``issued_pairs``, exact) times its sampled conflict rate shrunk
    toward the phase-wide rate (weight ``_PRIOR_PAIRS`` pairs), which keeps slots with few sampled
    pairs from reading 0 or a multiple of m; without ``issued_pairs`` the sample is scaled by m.

    Returns:
        (conflict cycles per slot, m).
    """
    counts = cells.n_pairs
    n_slots = tiling.n_chunks * tiling.n_pes
    total = int(counts.sum())
    m = max(1, -(-total // budget))
    picks = np.arange(m // 2, total, m, dtype=np.int64)
    ends = np.cumsum(counts)
    cell = np.searchsorted(ends, picks, side="right")
    f_local, i_local = np.divmod(picks - (ends[cell] - counts[cell]), np.maximum(cells.n_i[cell], 1))
    batch = PairBatch(cell, cells.f0[cell] + f_local, cells.i0[cell] + i_local)
    if policy == "ant":
        keep = screen(problem, stat, streamed, batch)
        batch = PairBatch(batch.cell[keep], batch.f[keep], batch.i[keep])
    prods = _Enumerator(problem, tiling, banks, scatter=False).batch(cells, stat, streamed, batch.cell, batch.f,
                                                                     batch.i, 0)
    extra = _max_load_extra(prods.pair, prods.bank, banks.banks, len(batch.f))
    slot = cells.slot[batch.cell]
    extra_sum = np.bincount(slot, weights=extra, minlength=n_slots)
    if m == 1 or issued_pairs is None:
        return np.rint(extra_sum * m).astype(np.int64), m
    sampled = np.bincount(slot, minlength=n_slots)
    pooled = extra_sum.sum() / max(1, len(slot))
    rate = (extra_sum + _PRIOR_PAIRS * pooled) / (sampled + _PRIOR_PAIRS)
    return np.rint(rate * issued_pairs).astype(np.int64), m


_ORACLE_RUN = 64  # consecutive candidate pairs per sampled run (oracle packs valid products across pairs)


def _sample_picks(total: int, budget: int, run: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Global candidate-pair indices of a systematic sample of runs of ``run`` consecutive pairs.

    Returns (pair indices, run id of each, m) with m = ceil(total / budget); every pair (one run) when
    m = 1.
    """
    m = max(1, -(-total // budget))
    if m == 1:
        return np.arange(total, dtype=np.int64), np.zeros(total, np.int64), 1
    stride = m * run
    starts = np.arange((stride - run) // 2, total, stride, dtype=np.int64)
    picks = (starts[:, None] + np.arange(run, dtype=np.int64)[None, :]).ravel()
    run_id = np.repeat(np.arange(len(starts), dtype=np.int64), run)
    keep = picks < total
    return picks[keep], run_id[keep], m


def sampled_oracle_conflicts(problem: PhaseProblem, tiling: Tiling, cells: Cells, stat: Vectors,
                             streamed: Vectors, banks: BankMap, group_size: int, issued_pairs: np.ndarray,
                             budget: int = 1 << 15, run: int = _ORACLE_RUN,
                             valid_products: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Oracle bank-conflict cycles per slot from systematic runs of consecutive candidate pairs.

    The oracle packs a slot's valid products, in enumeration order, into groups of ``group_size``
    (F·I) — ``_oracle_conflicts``. Here the candidate pairs of ``m = ceil(candidates / budget)``
    -spaced runs of ``run`` consecutive pairs are enumerated (valid products hashed as in
    ``run_exact``) and each (run, slot) segment's valid products are packed the same way. With m = 1
    the single run is every pair, so the result equals ``run_exact``'s. With m > 1 only full groups
    count (a run's trailing partial group is an artefact of the cut); a slot's cycles are its packed
    pairs (``issued_pairs`` = ceil(valid / F·I)) times its sampled conflicts per group shrunk toward
    the phase-wide rate (weight ``_PRIOR_PAIRS`` groups). Where ``exact`` puts a group boundary inside a
    segment depends on how many valid products the slot packed before it: with ``valid_products`` (per
    slot) that count is estimated as the slot's candidate pairs before the segment times its valid
    products per candidate pair — exact for dense operands (every pair a full group: no boundary falls
    inside a pair) — else a seeded random phase.

    Returns:
        (conflict cycles per slot, m).
    """
    n_slots = tiling.n_chunks * tiling.n_pes
    counts = cells.n_pairs
    picks, run_id, m = _sample_picks(int(counts.sum()), budget, run)
    ends = np.cumsum(counts)
    cell = np.searchsorted(ends, picks, side="right")
    f_local, i_local = np.divmod(picks - (ends[cell] - counts[cell]), np.maximum(cells.n_i[cell], 1))
    batch = PairBatch(cell, cells.f0[cell] + f_local, cells.i0[cell] + i_local)
    # The ANT screen is conservative: pairs it drops hold no valid product, so dropping them first
    # leaves the valid products and their order unchanged.
    keep = screen(problem, stat, streamed, batch)
    prods = _Enumerator(problem, tiling, banks, scatter=False).batch(
        cells, stat, streamed, batch.cell[keep], batch.f[keep], batch.i[keep], 0)
    segment = run_id[keep][prods.pair] * n_slots + prods.slot
    order = np.argsort(segment, kind="stable")
    segment, bank = segment[order], prods.bank[order]
    first = np.searchsorted(segment, segment, side="left")
    position = np.arange(len(segment)) - first
    if m > 1:
        before = None if valid_products is None else _valid_before(
            cells, picks[keep][prods.pair][order], cell[keep][prods.pair][order], segment, n_slots, valid_products)
        position, full = _phase_shift(segment, first, position, group_size, before)
        segment, bank, position = segment[full], bank[full], position[full]
    in_group = position // group_size
    group_key, group = np.unique(segment * (len(segment) + 1) + in_group, return_inverse=True)
    extra = _max_load_extra(group, bank, banks.banks, len(group_key))
    group_slot = (group_key // (len(segment) + 1)) % n_slots
    extra_sum = np.bincount(group_slot, weights=extra, minlength=n_slots)
    if m == 1:
        return np.rint(extra_sum).astype(np.int64), 1
    sampled = np.bincount(group_slot, minlength=n_slots)
    pooled = extra_sum.sum() / max(1, len(group_slot))
    rate = (extra_sum + _PRIOR_PAIRS * pooled) / (sampled + _PRIOR_PAIRS)
    return np.rint(rate * issued_pairs).astype(np.int64), m


_PHASE_SEED = 20240601


def _valid_before(cells: Cells, pick: np.ndarray, cell: np.ndarray, segment: np.ndarray, n_slots: int,
                  valid_products: np.ndarray) -> np.ndarray:
    """Per segment (sorted keys), the estimated valid products its slot packed before the segment:
    the slot's candidate pairs before the segment's first pair × the slot's valid products per pair."""
    keys, start = np.unique(segment, return_index=True)
    counts = cells.n_pairs
    order = np.argsort(cells.slot, kind="stable")  # a slot's pairs in enumeration (cell) order
    prefix = np.zeros(len(counts), np.int64)
    sorted_counts = counts[order]
    running = np.cumsum(sorted_counts) - sorted_counts
    slot_sorted = cells.slot[order]
    slot_first = np.searchsorted(slot_sorted, slot_sorted, side="left")
    prefix[order] = running - running[slot_first]
    first_cell = cell[start]
    cell_start = np.cumsum(counts) - counts
    pairs_before = prefix[first_cell] + (pick[start] - cell_start[first_cell])
    slot = keys % n_slots
    candidates = np.bincount(cells.slot, weights=counts, minlength=n_slots)
    rate = np.divide(valid_products, candidates, out=np.zeros(n_slots), where=candidates > 0)
    return np.rint(pairs_before * rate[slot]).astype(np.int64)


def _phase_shift(segment: np.ndarray, first: np.ndarray, position: np.ndarray, group_size: int,
                 before: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Put each segment's group boundaries where ``exact``'s would fall; keep full groups only.

    A segment starts at a cell boundary (or a run cut), whereas ``exact``'s group boundaries fall
    wherever the slot's earlier valid products leave them: at ``(−before) mod group_size`` when the
    count ``before`` is known (per segment, sorted keys), else at a seeded random phase (packing from
    the segment start would make groups hold products of one cell more often than they do — measured
    ~5 % fewer conflicts on a 128→128 32×32 fprop).
    """
    keys, start_of_key = np.unique(segment, return_index=True)
    if before is None:
        phase = np.random.default_rng(_PHASE_SEED).integers(0, group_size, len(keys))
    else:
        phase = (-before) % group_size
    shift = phase[np.searchsorted(keys, segment)]
    seg_len = np.searchsorted(segment, segment, side="right") - first
    shifted = position - shift
    full = (shifted >= 0) & (shifted < (seg_len - shift) // group_size * group_size)
    return shifted, full


def _batches(policy: str, problem: PhaseProblem, cells: Cells, stat: Vectors, streamed: Vectors):
    for batch in iter_pairs(cells, _EXACT_PAIRS):
        mask = screen(problem, stat, streamed, batch) if policy == "ant" else np.ones(len(batch.f), bool)
        yield batch, mask


def _oracle_conflicts(p: _Products, banks: int, group_size: int, n_slots: int) -> np.ndarray:
    order = np.argsort(p.slot, kind="stable")
    slot, bank = p.slot[order], p.bank[order]
    first = np.searchsorted(slot, slot, side="left")
    group_in_slot = (np.arange(len(slot)) - first) // group_size
    group_key, group = np.unique(slot * (len(slot) + 1) + group_in_slot, return_inverse=True)
    extra = _max_load_extra(group, bank, banks, len(group_key))
    return np.bincount(group_key // (len(slot) + 1), weights=extra, minlength=n_slots).astype(np.int64)


def _footprint(problem: PhaseProblem, tiling: Tiling, p: _Products, n_slots: int) -> Footprint:
    npe = tiling.n_pes
    valid = np.bincount(p.slot, minlength=n_slots).astype(np.int64)
    size = int(np.prod(problem.output_shape))
    distinct = np.unique(p.slot * size + p.out)
    d_slot, d_out = np.divmod(distinct, size)
    partial = np.bincount(d_slot, minlength=n_slots).astype(np.int64)
    if problem.output_is_plane:
        O1, O2 = problem.output_shape[2:]
        o = d_out % (O1 * O2)
        halo_mask = tiling.pe_of_output().ravel()[o] != d_slot % npe
        halo = np.bincount(d_slot[halo_mask], minlength=n_slots).astype(np.int64)
    else:
        halo = np.zeros(n_slots, np.int64)
    chunks = np.unique((d_slot // npe) * size + d_out) // size
    out_values = np.bincount(chunks, minlength=tiling.n_chunks).astype(np.int64)
    return Footprint(valid, partial, halo, out_values)


__all__ = ["ExactResult", "run_exact", "sampled_conflicts", "sampled_oracle_conflicts"]
