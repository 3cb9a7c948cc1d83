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
from antsim.dataflow.pairing import PAIR_BATCH, Cells, PairBatch
from antsim.dataflow.tiling import StrideClasses
from antsim.phases import PhaseProblem
from antsim.vocabulary import POLICIES as POLICIES  # re-exported: the policies this module implements
from antsim.vocabulary import Policy


def screen(problem: PhaseProblem, stationary: Vectors, streamed: Vectors, pairs: PairBatch) -> np.ndarray:
    """True for pairs the ANT unit issues (their reachable output box, ``DimMap.reach``, meets the valid window),
    computed in place (``_issued``: the same integers as ``reach``, a third of its passes)."""
    return _issued(problem, stationary, streamed, pairs.i, pairs.f)


def screen_pairs(context: MappingContext, pairs: PairBatch) -> np.ndarray:
    """``screen`` of ``context``'s operands: True without a look at the boxes for the pairs whose I-vector
    ``count_pairs`` proved to pass with every F-vector its fetch set delivers (``_passing_vectors``), the others
    looked up in the table ``count_pairs`` built for this very context when it did (the joint table, else the
    per-dimension ones; ``MappingContext.derived``: the bank-conflict sample screens right after it)."""
    passing = context.derived.get(_PASSING)
    if passing is None:
        return _looked_up(context, pairs)
    verdict = passing[pairs.i]
    rest = np.flatnonzero(~verdict)
    if len(rest):
        verdict[rest] = _looked_up(context, PairBatch(pairs.cell[rest], pairs.f[rest], pairs.i[rest]))
    return verdict


def _looked_up(context: MappingContext, pairs: PairBatch) -> np.ndarray:
    """``screen`` of ``pairs`` through the joint table or the per-dimension tables ``count_pairs`` left on
    ``context``, else computed in place."""
    table = context.derived.get(_JOINT_TABLE)
    if table is not None:
        return table.issued(pairs)
    tables = context.derived.get(_DIM_TABLES)
    if tables is not None:
        return tables.issued(pairs.i, pairs.f)
    return screen(context.problem, context.stationary, context.streamed_vectors, pairs)


_JOINT_TABLE = "anticipation.joint_screen_table"
_DIM_TABLES = "anticipation.dim_screen_tables"
_PASSING = "anticipation.passing_vectors"


@dataclass(frozen=True)
class PairCounts:
    """Vector-level work per slot (``chunk · n_pes + pe``), each shape (n_slots,), int64."""

    candidate_pairs: np.ndarray
    issued_pairs: np.ndarray
    issued_products: np.ndarray
    stationary_reads: np.ndarray
    cell_issued_pairs: np.ndarray | None = None  # per cell (``none`` / ``ant``); None when packed per slot


def _slot_sums(slot: np.ndarray, weights: np.ndarray, n_slots: int) -> np.ndarray:
    """Per slot, the sum of ``weights`` (int64) over its cells: ``np.add.at`` on int64 — exact, and faster than a
    float ``np.bincount`` (no conversion to float64, no scan of the slots for their range); weights of another dtype
    would take its slow casting path, so they are made int64 first."""
    out = np.zeros(n_slots, np.int64)
    np.add.at(out, slot, weights.astype(np.int64, copy=False))
    return out


def count_pairs(context: MappingContext, policy: Policy) -> PairCounts:
    """Candidate/issued pairs, issued products and stationary reads per slot for ``none`` and ``ant``
    (exact at vector level; ``oracle`` is finished by ``oracle_counts`` once valid products are known).

    ``none`` issues every pair: a cell's products are ``nnz_s · nnz_t`` and its stationary reads ``nnz_s · n_f``
    (each F-vector meets every I-vector of the fiber once). ``ant`` issues those less what its screen skips, counted
    on the cells some pair of which it skips only (``_failing_cells``: a few per cent of ResNet-18's 3×3 fprop and
    dgrad cells); every pair of the others issues."""
    cells, n_slots = context.cells, context.n_slots
    n_pairs = cells.n_pairs  # a fresh int64 array: also the per-cell count ``none`` issues (and ``ant``'s base)
    candidate = _slot_sums(cells.slot, n_pairs, n_slots)
    products = _slot_sums(cells.slot, np.multiply(cells.nnz_s, cells.nnz_t, dtype=np.int64), n_slots)
    reads = _slot_sums(cells.slot, np.multiply(cells.nnz_s, cells.n_f, dtype=np.int64), n_slots)
    if policy != "ant":
        return PairCounts(candidate, candidate, products, reads, n_pairs)
    screened, issued_pairs, skipped = _screened_cells(context)
    slot = cells.slot[screened]
    n_pairs[screened] = issued_pairs
    return PairCounts(candidate, candidate - _slot_sums(slot, skipped.pairs, n_slots),
                      products - _slot_sums(slot, skipped.products, n_slots),
                      reads - _slot_sums(slot, skipped.reads, n_slots), n_pairs)


@dataclass(frozen=True)
class _CellSums:
    """Per cell (int64): vector pairs, the products they form and the stationary values they read."""

    pairs: np.ndarray
    products: np.ndarray
    reads: np.ndarray


def _screened_cells(context: MappingContext) -> tuple[np.ndarray, np.ndarray, _CellSums]:
    """The cells ``ant`` screens pair by pair, the pairs each issues and the products and stationary reads of the
    pairs it skips. Only cells with F-vectors whose stationary fiber holds an I-vector not proved to pass with every
    F-vector of its fetch set (``_passing_vectors``) can skip a pair; none is left on ResNet-18 CIFAR's 8×8 and 4×4
    planes, whose boxes are then never read. A phase of single-I cells only (fprop, dgrad past ResNet-18's first
    stage) looks its pairs up in the joint table, on the cells whose I-vector fails some streamed box present
    (``_ScreenTable.screened``); the others (wgrad's multi-I cells, mixes) on the cells that hold a failing pair
    (``_failing_cells``), in the per-dimension tables. The table is left on the context for ``screen_pairs``."""
    cells = context.cells
    live = cells.n_f > 0
    passing = _passing_vectors(context)
    if passing is not None:
        context.derived[_PASSING] = passing
        live &= _fiber_or((~passing).astype(np.uint64), context.stationary)[cells.i0] != 0
    candidates = np.flatnonzero(live)
    if not len(candidates):
        none = np.zeros(0, np.int64)
        return none, none, _CellSums(none, none, none)
    single_only = int(cells.n_i.max()) == 1
    table = _ScreenTable.of(context.problem, context.stationary, context.streamed_vectors) if single_only else None
    if table is not None:
        context.derived[_JOINT_TABLE] = table
        runs = candidates[table.screened(cells.i0[candidates])]
        if len(runs) > len(context.streamed_vectors.vec_size) // _VECTORS_PER_RUN:  # the masks' F-vector pass pays
            runs = table.holding_failed(cells, runs, context.streamed_vectors)
        return _single_screened(context, _Verdict(context, table=table), runs)
    tables = _DimTables.of(context.problem, context.stationary, context.streamed_vectors)
    if tables is not None:
        context.derived[_DIM_TABLES] = tables
    screened = _failing_cells(context, tables, candidates)
    issued = _multi_sums(context, _Verdict(context, per_dim=tables), screened)
    nnz_s = cells.nnz_s[screened].astype(np.int64)
    n_f = cells.n_f[screened]
    n_pairs = np.multiply(cells.n_i[screened], n_f, dtype=np.int64)
    return screened, issued.pairs, _CellSums(n_pairs - issued.pairs, nnz_s * cells.nnz_t[screened] - issued.products,
                                             nnz_s * n_f - issued.reads)


def _passing_vectors(context: MappingContext) -> np.ndarray | None:
    """Per I-vector: True when it passes the screen with every F-vector its PE's fetch set can deliver — None where
    the layout records no fetch-set reach (``StreamedLayout.row_pat``) or a streamed axis is longer than a mask.

    ``DimMap.reach`` only grows with the boxes (their numerators' range widens), and every element of a set's
    F-vectors lies in a row and a column the set receives, of a streamed stride class the I-vector's class pairs
    with: an I-vector whose box reaches a valid output with each such single row (and column) passes with every box
    built of them. With the fetch filter this is its test on the PE's tile applied to the I-vector's box, so where a
    tile is one position (ResNet-18 CIFAR's 8×8 and 4×4 planes on 8×8 PEs) every I-vector passes. Per dimension, the
    rows a box misses and the rows each (set pattern, stationary class) may deliver are bits of one uint64."""
    layout, stationary, classes = context.streamed.layout, context.stationary, context.classes
    if layout.row_pat is None or layout.col_pat is None or max(layout.row_pat.shape[1],
                                                                 layout.col_pat.shape[1]) > _MASK_BITS:
        return None
    keys = stationary.fiber_keys
    fiber_set = layout.set_of_pe[keys // classes.n_stationary % context.tiling.n_pes]
    fiber_class = keys % classes.n_stationary
    n_cols = len(layout.col_pat)
    missing = np.zeros(len(stationary.vec_size), np.uint64)
    for d, (patterns, pattern_of) in enumerate(((layout.row_pat, fiber_set // n_cols),
                                                (layout.col_pat, fiber_set % n_cols))):
        n_y, n_u = context.problem.stationary_shape[2 + d], patterns.shape[1]
        bit = np.left_shift(np.uint64(1), np.arange(n_u, dtype=np.uint64))
        kept = (patterns[:, None, :] & _partner_phases(classes, d, n_u)[None, :, :]).reshape(-1, n_u)
        may_deliver = (kept * bit).sum(axis=1, dtype=np.uint64)  # distinct bits: the sum is the OR
        code = stationary.box[2 * d] * n_y
        code += stationary.box[2 * d + 1]
        intervals, interval_of = _unique_codes(code, n_y * n_y)
        y_lo, y_hi = np.divmod(intervals, n_y)
        u = np.arange(n_u)
        o_lo, o_hi = context.problem.dims[d].reach(y_lo[:, None], y_hi[:, None], u[None, :], u[None, :])
        missed = ((o_lo > o_hi) * bit).sum(axis=1, dtype=np.uint64)  # per interval: the rows it reaches nothing with
        combo = pattern_of * classes.n_stationary
        combo += fiber_class
        delivered = np.repeat(may_deliver[combo], stationary.fiber_nvec)  # stationary vectors lie in fiber order
        delivered &= missed[interval_of]
        missing |= delivered
    return missing == 0


def _partner_phases(classes: StrideClasses, d: int, n_u: int) -> np.ndarray:
    """(stationary class, streamed coordinate along dimension ``d``): whether a coordinate lies in the stride phase of
    some streamed class the stationary class pairs with."""
    m = classes.mt[d]
    phase_of = [b // classes.mt[1] if d == 0 else b % classes.mt[1] for b in range(classes.n_streamed)]
    out = np.zeros((classes.n_stationary, n_u), bool)
    for a, b in classes.groups:
        out[a] |= np.arange(n_u) % m == phase_of[b]
    return out


def _single_screened(context: MappingContext, verdict: _Verdict, rest: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, _CellSums]:
    """The single-I cells ``rest`` (each with F-vectors), the pairs each issues and what it skips: its pairs read its
    one I-vector of nnz_s elements."""
    cells = context.cells
    n_f = cells.n_f[rest]
    pairs, streamed = verdict.run_sums(cells.i0[rest], cells.f0[rest], n_f)
    nnz_s = cells.nnz_s[rest].astype(np.int64)
    skipped_pairs = n_f - pairs
    return rest, pairs, _CellSums(skipped_pairs, nnz_s * (cells.nnz_t[rest] - streamed), nnz_s * skipped_pairs)


def _failing_cells(context: MappingContext, tables: _DimTables | None, candidates: np.ndarray) -> np.ndarray:
    """The cells of ``candidates`` (each with F-vectors) that may hold a pair the screen skips: exactly those that do
    when the intervals some stationary box fails fit one 64-bit mask (``_FailMasks``) — a pair fails iff it fails in
    some dimension, so a cell holds a failing pair iff its stationary fiber's failed intervals meet its streamed
    fiber's intervals in some dimension —, else those whose stationary fiber fails some interval present; without
    tables, all of them."""
    cells = context.cells
    masks = None if tables is None else _FailMasks.of(tables, context.stationary, context.streamed_vectors)
    if masks is None:
        return candidates
    fails = masks.fiber_fails[cells.i0[candidates]]  # per cell: the intervals its stationary fiber fails (0 for most)
    kept = np.flatnonzero(fails != 0)  # a bool's nonzero: faster than the uint64's
    candidates, fails = candidates[kept], fails[kept]
    if masks.held is not None:
        candidates = candidates[_runs_holding(masks.held, context.streamed_vectors, cells.f0[candidates],
                                              cells.n_f[candidates], fails)]
    return candidates


def _runs_holding(held: np.ndarray, streamed: Vectors, f0: np.ndarray, n_f: np.ndarray, fails: np.ndarray
                  ) -> np.ndarray:
    """Per run (the ``n_f`` F-vectors from ``f0``): whether one of its F-vectors holds an interval of ``fails``: looked
    up per streamed fiber (``_held_at_starts``) when the runs outnumber the fibers and their first F-vectors name
    them, else OR-ed run by run (``_holds_failed``)."""
    fiber_held = _held_at_starts(held, streamed) if len(f0) > len(streamed.fiber_nvec) else None
    if fiber_held is None:
        return _holds_failed(held, f0, n_f, fails)
    found = fiber_held[f0]
    found &= fails
    return found != 0


def _holds_failed(held: np.ndarray, f0: np.ndarray, n_f: np.ndarray, fails: np.ndarray) -> np.ndarray:
    """Per run (the ``n_f`` F-vectors from ``f0``): whether one of its F-vectors holds an interval of ``fails`` (its
    ``held`` mask meets it) — for an empty run, whether F-vector ``f0`` does. Column by column, as
    ``_Verdict.run_sums`` walks runs; a run longer than ``_COLUMN_PASSES`` is taken as holding one (it is screened
    pair by pair all the same)."""
    mask, longer = _or_over_runs(held, f0.astype(np.int64), n_f)
    mask &= fails
    out = mask != 0
    out[longer] = True
    return out


def _or_over_runs(held: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per run (``lengths`` entries of ``held`` from ``starts``), the OR of its first ``_COLUMN_PASSES`` entries
    (an empty run reads its start), column by column; and the runs longer than that (whose OR is partial)."""
    mask = held[starts]
    active = np.flatnonzero(lengths > 1)
    for k in range(1, _COLUMN_PASSES):
        if not len(active):
            break
        mask[active] |= held[starts[active] + k]
        active = active[lengths[active] > k + 1]
    return mask, active


def _multi_sums(context: MappingContext, verdict: _Verdict, multi: np.ndarray) -> _CellSums:
    """Issued pairs, products and stationary reads of the multi-I cells ``multi``: each cell is ``n_i`` runs (one
    I-vector with the cell's F-vectors), screened run by run; a run's products are its I-vector's size times the
    streamed non-zeros of its issued pairs, its reads that size per issued pair."""
    cells, sizes = context.cells, context.stationary.vec_size
    pairs, products, reads = (np.zeros(len(multi), np.int64) for _ in range(3))
    for part in _chunks(cells.n_i[multi], PAIR_BATCH):
        ids = multi[part]
        n_i = cells.n_i[ids].astype(np.int64)
        ends = np.cumsum(n_i)
        i = np.arange(int(ends[-1]), dtype=np.int64)
        i += np.repeat(cells.i0[ids] - (ends - n_i), n_i)
        issued, streamed = verdict.run_sums(i, np.repeat(cells.f0[ids], n_i), np.repeat(cells.n_f[ids], n_i))
        size_i = sizes[i].astype(np.int64)
        pairs[part] = _run_sums(issued, ends)
        products[part] = _run_sums(size_i * streamed, ends)
        reads[part] = _run_sums(size_i * issued, ends)
    return _CellSums(pairs, products, reads)


def _dense_unique(codes: np.ndarray, n_codes: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` for codes in ``0..n_codes − 1``, by counting (no sort)."""
    present = np.bincount(codes, minlength=n_codes) > 0
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present), rank[codes]


def _unique_codes(codes: np.ndarray, n_codes: int) -> tuple[np.ndarray, np.ndarray]:
    """``_dense_unique`` where its count over the code space is small, else a sort: a GEMM laid out as a 1×K plane
    (vgg16 ``classifier.0``, K = 25088) has K² interval codes, and counting over them took 10 GB and 42 s."""
    if n_codes <= _COUNTED_CODES:
        return _dense_unique(codes, n_codes)
    values, inverse = np.unique(codes, return_inverse=True)
    return values, inverse.ravel()


def _chunks(counts: np.ndarray, max_pairs: int) -> Iterator[slice]:
    """Consecutive runs of ``counts`` (each ≥ 1) summing to ≤ ~``max_pairs`` (at least one entry each)."""
    ends = np.cumsum(counts)
    start = 0
    while start < len(counts):
        stop = max(start + 1, int(np.searchsorted(ends, (ends[start - 1] if start else 0) + max_pairs, "right")))
        yield slice(start, stop)
        start = stop


class _Verdict:
    """The screen's verdict on (I-vector, F-vector) pairs: looked up in the joint table (``table``) or the
    per-dimension tables (``per_dim``) when given, else computed in place (``_issued``) — the same booleans each way."""

    def __init__(self, context: MappingContext, table: _ScreenTable | None = None, per_dim: _DimTables | None = None
                 ) -> None:
        self.context, self.table, self.per_dim = context, table, per_dim
        self.sizes = np.asarray(context.streamed_vectors.vec_size, dtype=np.int64)
        # Per I-vector (a few thousand), not per run: each run's row offset is then one gather.
        self.row_offset = None if table is None else table.row * table.issued_table.shape[1]
        self.flat_table = None if table is None else table.issued_table.ravel()

    def run_sums(self, i: np.ndarray, f0: np.ndarray, n_f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Issued pairs and the streamed non-zeros they hold, per run (I-vector ``i`` with the ``n_f`` ≥ 1 F-vectors
        from ``f0``), int64. Column by column: the k-th F-vector of every run longer than k at
        once — runs are short (one or two F-vectors on ResNet-18), so each pair is gathered once, with no per-pair
        index arithmetic; the F-vectors past ``_COLUMN_PASSES`` of longer runs are expanded pair by pair (a bound on
        the passes)."""
        sizes = self.sizes
        f = f0.astype(np.int64)  # once: each gather by an int32 index would convert it again
        row = self._rows(i)
        ok = self.issued(row, f)  # the first column: every run
        issued, streamed = ok.astype(np.int64), sizes[f]
        streamed *= ok
        active = np.flatnonzero(n_f > 1)
        f, row = f[active] + 1, row[active]
        for k in range(2, _COLUMN_PASSES + 1):
            if not len(active):
                return issued, streamed
            ok = self.issued(row, f)
            issued[active] += ok
            streamed[active] += np.where(ok, sizes[f], 0)
            longer = n_f[active] > k
            active, f, row = active[longer], f[longer] + 1, row[longer]
        tail = n_f[active].astype(np.int64) - _COLUMN_PASSES
        for part in _chunks(tail, PAIR_BATCH):
            ends = np.cumsum(tail[part])
            pair_f = np.arange(int(ends[-1]), dtype=np.int64)
            pair_f += np.repeat(f[part] - (ends - tail[part]), tail[part])
            ok = self.issued(np.repeat(row[part], tail[part]), pair_f)
            issued[active[part]] += _run_sums(ok, ends)
            streamed[active[part]] += _run_sums(np.where(ok, sizes[pair_f], 0), ends)
        return issued, streamed

    def _rows(self, i: np.ndarray) -> np.ndarray:
        """Each I-vector's offset into the joint table (its row times the row length), or the I-vector without one."""
        if self.row_offset is None:
            return i.astype(np.int64, copy=False)  # only read (gathered by), never written
        return self.row_offset[i]

    def issued(self, row: np.ndarray, f: np.ndarray) -> np.ndarray:
        """The verdict on the pairs (``_rows`` of the I-vector, F-vector ``f``)."""
        if self.table is not None and self.flat_table is not None:
            flat = self.table.code[f]
            flat += row
            return self.flat_table[flat]
        if self.per_dim is not None:
            return self.per_dim.issued(row, f)
        context = self.context
        return _issued(context.problem, context.stationary, context.streamed_vectors, row, f)


# F-vectors of a run screened column by column (``_Verdict.run_sums``) before the rest of longer runs are expanded pair
# by pair: it bounds the Python-level passes when a few runs are long (wgrad's dY fibers at high density). Speed only.
# [choice] ResNet-18 CIFAR's single-I runs hold ≤ 5 F-vectors, its wgrad runs ≤ 12.
_COLUMN_PASSES = 16


def _run_sums(values: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Sums of ``values`` over consecutive non-empty runs ending (exclusive) at ``ends`` (int64); ~3× faster than
    ``np.add.reduceat`` on runs of one or two."""
    running = np.cumsum(values, dtype=np.int64)[ends - 1]
    running[1:] -= running[:-1].copy()
    return running


# Entries up to which ``_ScreenTable`` tabulates the screen over every (stationary box, streamed box) class pair
# (one byte each), and ``_DimTables`` over the intervals present, all dimensions together; beyond it the bounds are
# computed pair by pair (``_issued``). Speed and memory only: the same integers either way. [choice] 2^22 bytes = 4 MB.
_SCREEN_TABLE_ENTRIES = 1 << 22
# Streamed interval code spaces (``lo · n_u + hi``) up to which ``_DimTables`` gives every code a column (codes with
# lo > hi, which no F-vector has, included) rather than numbering the codes present. Speed only: the same verdicts.
# [choice] axes up to 8 wide (64 codes): a 3×3 kernel's 9, wgrad's 8×8 and 4×4 dY planes; on a 32×32 plane (1024
# codes) most are absent and the few present are numbered.
_DIRECT_CODES = 1 << 6
# Code spaces up to which ``_unique_codes`` counts (a bincount of that length) rather than sorts. [choice] as above.
_COUNTED_CODES = _SCREEN_TABLE_ENTRIES


@dataclass(frozen=True)
class _ScreenTable:
    """The ANT screen as a lookup table: a pair's verdict depends only on its two boxes, so ``issued[row, code]``
    holds it for every distinct stationary box (``row`` of each I-vector) and every streamed box
    ``((u_lo·U + u_hi)·V + v_lo)·V + v_hi`` (``code`` of each F-vector), computed by ``DimMap.reach`` as
    ``screen`` computes it pair by pair."""

    row: np.ndarray
    code: np.ndarray
    issued_table: np.ndarray

    @classmethod
    def of(cls, problem: PhaseProblem, stationary: Vectors, streamed: Vectors) -> _ScreenTable | None:
        """The table, or None when it would exceed ``_SCREEN_TABLE_ENTRIES``."""
        per_dim = []
        for d in range(len(problem.dims)):
            n_y, n_u = problem.stationary_shape[2 + d], problem.streamed_shape[3 + d]
            per_dim.append((*_dense_unique(stationary.box[2 * d] * n_y + stationary.box[2 * d + 1], n_y * n_y), n_y,
                            n_u))
        n_rows = len(per_dim[0][0]) * len(per_dim[1][0])
        if n_rows * (per_dim[0][3] * per_dim[1][3]) ** 2 > _SCREEN_TABLE_ENTRIES:
            return None
        verdicts = []
        for dim, (distinct, _, n_y, n_u) in zip(problem.dims, per_dim, strict=True):
            y_lo, y_hi = np.divmod(distinct, n_y)
            u_lo, u_hi = np.divmod(np.arange(n_u * n_u), n_u)
            o_lo, o_hi = dim.reach(y_lo[:, None], y_hi[:, None], u_lo[None, :], u_hi[None, :])
            verdicts.append(o_lo <= o_hi)  # (distinct stationary interval, streamed interval code)
        (rows0, rows1), (codes0, codes1) = (v.shape[0] for v in verdicts), (v.shape[1] for v in verdicts)
        # Both factors spread over the joint code axis first, so the outer product's inner loop runs over all
        # codes0 · codes1 codes (not codes1 alone: ten times slower on 3×3 kernels).
        spread0, spread1 = np.repeat(verdicts[0], codes1, axis=1), np.tile(verdicts[1], (1, codes0))
        table = (spread0[:, None, :] & spread1[None, :, :]).reshape(rows0 * rows1, codes0 * codes1)
        n_v = problem.streamed_shape[4]
        code = streamed.box[0] * problem.streamed_shape[3]
        code += streamed.box[1]
        code *= n_v * n_v
        code += streamed.box[2] * n_v
        code += streamed.box[3]
        return cls(per_dim[0][1] * rows1 + per_dim[1][1], code, table)

    def issued(self, pairs: PairBatch) -> np.ndarray:
        """The screen's verdict on each pair (``screen``'s)."""
        flat = self.row[pairs.i] * self.issued_table.shape[1]
        flat += self.code[pairs.f]
        return self.issued_table.ravel()[flat]

    def screened(self, i0: np.ndarray) -> np.ndarray:
        """Per cell (first I-vector ``i0``): False when that I-vector's box passes every streamed box some F-vector
        has — all the pairs of a single-I cell then issue, with no need to screen them (``holding_failed`` narrows
        the rest down to the cells whose own fiber holds a box their I-vector fails)."""
        present = self.present()
        seen = self.issued_table if len(present) == self.issued_table.shape[1] else self.issued_table[:, present]
        fails_some = ~np.asarray(seen.all(axis=1))
        return fails_some[self.row][i0]  # per I-vector, then per cell: one gather per cell

    def present(self) -> np.ndarray:
        """The streamed box codes some F-vector has."""
        return np.flatnonzero(np.bincount(self.code, minlength=self.issued_table.shape[1]))

    def holding_failed(self, cells: Cells, runs: np.ndarray, streamed: Vectors) -> np.ndarray:
        """The single-I cells of ``runs`` (each with F-vectors) whose streamed fiber holds a box their I-vector fails:
        exactly those with a pair the screen skips, found by 64-bit masks over the failed boxes present (per I-vector
        the boxes it fails, per F-vector the one it has, ``_runs_holding``) — or ``runs`` itself where the failed
        boxes exceed the bits."""
        present = self.present()
        fail = ~self.issued_table[:, present]
        failing = np.flatnonzero(fail.any(axis=0))
        if len(failing) > _MASK_BITS:
            return runs
        code_bit = np.zeros(self.issued_table.shape[1], np.uint64)
        code_bit[present[failing]] = np.left_shift(np.uint64(1), np.arange(len(failing), dtype=np.uint64))
        row_fails = (fail[:, failing] * code_bit[present[failing]]).sum(axis=1, dtype=np.uint64)  # distinct bits: OR
        return runs[_runs_holding(code_bit[self.code], streamed, cells.f0[runs], cells.n_f[runs],
                                  row_fails[self.row][cells.i0[runs]])]


@dataclass(frozen=True)
class _DimTables:
    """The screen factored by dimension: a pair issues iff in every dimension d its stationary interval reaches its
    streamed interval, ``verdict[d][row[d][i] + col[d][f]]`` over the distinct intervals present (``row[d]``: each
    I-vector's row offset, ``col[d]``: each F-vector's column among the ``n_cols[d]`` streamed intervals present),
    computed by ``DimMap.reach`` as ``screen`` computes it — two lookups per pair instead of the bounds recomputed in
    place."""

    row: tuple[np.ndarray, ...]
    col: tuple[np.ndarray, ...]
    verdict: tuple[np.ndarray, ...]
    n_cols: tuple[int, ...]

    @classmethod
    def of(cls, problem: PhaseProblem, stationary: Vectors, streamed: Vectors) -> _DimTables | None:
        """The tables, or None when they would exceed ``_SCREEN_TABLE_ENTRIES`` together."""
        parts = []
        for d in range(len(problem.dims)):
            n_y, n_u = problem.stationary_shape[2 + d], problem.streamed_shape[3 + d]
            rows = _unique_codes(stationary.box[2 * d] * n_y + stationary.box[2 * d + 1], n_y * n_y)
            codes = streamed.box[2 * d] * n_u
            codes += streamed.box[2 * d + 1]
            # Few interval codes (a kernel's): every code its own column, with no numbering of the F-vectors' codes.
            cols = (np.arange(n_u * n_u), codes) if n_u * n_u <= _DIRECT_CODES else _unique_codes(codes, n_u * n_u)
            parts.append((rows, cols, n_y, n_u))
        if sum(len(rows[0]) * len(cols[0]) for rows, cols, _, _ in parts) > _SCREEN_TABLE_ENTRIES:
            return None
        row, col, verdict = [], [], []
        for dim, ((y_codes, row_of), (u_codes, col_of), n_y, n_u) in zip(problem.dims, parts, strict=True):
            y_lo, y_hi = np.divmod(y_codes, n_y)
            u_lo, u_hi = np.divmod(u_codes, n_u)
            o_lo, o_hi = dim.reach(y_lo[:, None], y_hi[:, None], u_lo[None, :], u_hi[None, :])
            verdict.append((o_lo <= o_hi).ravel())
            row.append(row_of * len(u_codes))
            col.append(col_of)
        return cls(tuple(row), tuple(col), tuple(verdict), tuple(len(cols[0]) for _, cols, _, _ in parts))

    def issued(self, i: np.ndarray, f: np.ndarray) -> np.ndarray:
        """The verdict on the pairs (I-vector ``i``, F-vector ``f``)."""
        ok = self.verdict[0][self.row[0][i] + self.col[0][f]]
        for row, col, verdict in zip(self.row[1:], self.col[1:], self.verdict[1:], strict=True):
            ok &= verdict[row[i] + col[f]]
        return ok


# Bits of a ``_FailMasks`` / ``_ScreenTable.holding_failed`` mask: one uint64.
_MASK_BITS = 64
# F-vectors per single-I cell to screen above which ``_screened_cells`` screens those cells pair by pair rather than
# first narrowing them down by masks (a pass over every F-vector). Speed only: the same counts either way. [choice]
# ResNet-18 CIFAR fprop / dgrad: screening a cell's pairs costs about what eight F-vectors' masks do.
_VECTORS_PER_RUN = 8


@dataclass(frozen=True)
class _FailMasks:
    """Where the screen can skip, as 64-bit masks over the streamed intervals present that some stationary interval
    fails (bit ``offset[d] + k``: the k-th such interval of dimension d): per vector that starts a stationary fiber
    (elsewhere 0), the intervals some I-vector of the fiber fails (``fiber_fails``), per F-vector the intervals it
    holds (``held``). With more such intervals than bits, ``fiber_fails`` is 1 where the fiber fails any interval
    present and ``held`` None: the cells screened are then those whose stationary fiber fails some interval."""

    fiber_fails: np.ndarray
    held: np.ndarray | None

    @classmethod
    def of(cls, tables: _DimTables, stationary: Vectors, streamed: Vectors) -> _FailMasks:
        fails = [~verdict.reshape(-1, n_cols) for verdict, n_cols in zip(tables.verdict, tables.n_cols, strict=True)]
        if sum(int(fail.any(axis=0).sum()) for fail in fails) > _MASK_BITS:  # too many: only the intervals present
            fails = [fail & (np.bincount(col_of, minlength=fail.shape[1]) > 0)
                     for fail, col_of in zip(fails, tables.col, strict=True)]
        failing = [np.flatnonzero(fail.any(axis=0)) for fail in fails]
        rows = [row // max(n_cols, 1) for row, n_cols in zip(tables.row, tables.n_cols, strict=True)]
        vector_fails = np.zeros(len(stationary.vec_size), np.uint64)
        if sum(len(cols) for cols in failing) > _MASK_BITS:
            for fail, row_of in zip(fails, rows, strict=True):
                vector_fails |= np.asarray(fail.any(axis=1))[row_of].astype(np.uint64)
            return cls(_fiber_or(vector_fails, stationary), None)
        held = np.zeros(len(streamed.vec_size), np.uint64)
        offset = 0
        for fail, row_of, cols, col_of in zip(fails, rows, failing, tables.col, strict=True):
            col_bit = np.zeros(fail.shape[1], np.uint64)
            col_bit[cols] = np.left_shift(np.uint64(1), np.arange(offset, offset + len(cols), dtype=np.uint64))
            offset += len(cols)
            vector_fails |= (fail * col_bit).sum(axis=1, dtype=np.uint64)[row_of]  # distinct bits: the sum is the OR
            held |= col_bit[col_of]
        return cls(_fiber_or(vector_fails, stationary), held)


def _fiber_or(vector_masks: np.ndarray, vectors: Vectors) -> np.ndarray:
    """Per vector, the OR of ``vector_masks`` over the non-empty fiber that starts at it (0 where none starts)."""
    out = np.zeros(len(vector_masks), np.uint64)
    some = vectors.fiber_nvec > 0
    starts, counts = vectors.fiber_vec0[some].astype(np.int64), vectors.fiber_nvec[some].astype(np.int64)
    if not len(starts):
        return out
    if int(counts.max()) == 1:  # every fiber one vector: its own mask
        out[starts] = vector_masks[starts]
        return out
    ends = starts + counts
    if np.array_equal(starts[1:], ends[:-1]):  # consecutive runs, in order (stationary fibers): one reduceat
        out[starts] = np.bitwise_or.reduceat(vector_masks[:ends[-1]], starts)
        return out
    order = np.argsort(starts, kind="stable")  # in order, so the gaps between fibers are reduced once
    bounds = np.empty(2 * len(starts), np.int64)
    bounds[0::2], bounds[1::2] = starts[order], ends[order]
    padded = np.append(vector_masks, np.uint64(0))  # a fiber that ends at the last vector: its end is an index too
    out[starts[order]] = np.bitwise_or.reduceat(padded, bounds)[0::2]
    return out


def _held_at_starts(held: np.ndarray, streamed: Vectors) -> np.ndarray | None:
    """Per F-vector, the OR of ``held`` over the streamed fiber that starts at it (column by column over the fibers,
    which are short), or None where fibers that start at one F-vector (they may share vectors) hold different
    intervals, or some fiber is longer than ``_COLUMN_PASSES``."""
    some = streamed.fiber_nvec > 0  # cells of empty fibers are dropped whatever they read
    starts, counts = streamed.fiber_vec0[some].astype(np.int64), streamed.fiber_nvec[some]
    if not len(starts) or int(counts.max()) > _COLUMN_PASSES:
        return None
    fiber_held, _ = _or_over_runs(held, starts, counts)  # every fiber fits: its OR is whole
    at_start = np.zeros(len(held), np.uint64)
    at_start[starts] = fiber_held
    return at_start if np.array_equal(at_start[starts], fiber_held) else None


def _issued(problem: PhaseProblem, stationary: Vectors, streamed: Vectors, i: np.ndarray, f: np.ndarray) -> np.ndarray:
    """``screen`` computed in place on one temporary per bound: ``DimMap.reach``'s numerators ``α·y + β·u + γ``
    (``u_min`` / ``u_max`` as ``reach`` orders them), with no multiply for unit coefficients and no division for
    δ = 1 — the same integers as ``screen``."""
    ok = np.ones(len(f), bool)
    for d, dim in enumerate(problem.dims):
        u_lo, u_hi = streamed.box[2 * d], streamed.box[2 * d + 1]
        lo = dim.numerator_into(_int64(stationary.box[2 * d][i]), (u_lo if dim.beta >= 0 else u_hi)[f])
        hi = dim.numerator_into(_int64(stationary.box[2 * d + 1][i]), (u_hi if dim.beta >= 0 else u_lo)[f])
        if dim.delta != 1:  # o_lo = ceil(lo / δ), o_hi = floor(hi / δ)
            np.negative(lo, out=lo)
            np.floor_divide(lo, dim.delta, out=lo)
            np.negative(lo, out=lo)
            np.floor_divide(hi, dim.delta, out=hi)
        np.maximum(lo, 0, out=lo)
        np.minimum(hi, dim.extent - 1, out=hi)
        ok &= lo <= hi
    return ok


def _int64(gathered: np.ndarray) -> np.ndarray:
    """A freshly gathered array as int64 (itself when it is already): ``numerator_into`` works in place on it."""
    return gathered.astype(np.int64, copy=False)


def oracle_counts(candidate: np.ndarray, valid: np.ndarray, F: int, I: int) -> PairCounts:
    """Oracle: issued products = valid ones, packed into ``ceil(valid / (F·I))`` full pairs per slot,
    each reading a full I-vector."""
    issued = -(-valid // (F * I))
    return PairCounts(candidate, issued, valid.copy(), issued * I)
