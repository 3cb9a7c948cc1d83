"""The ``exact`` path: enumerate every product of every issued vector pair.

Products are expanded with numpy, their output coordinates computed from the operands'
coordinates (``DimMap.output``), valid ones scatter-added into the phase output, and accumulator
bank conflicts counted exactly: a valid product goes to the bank its accumulator entry hashes to
(``antsim.dataflow.banks``); invalid products never reach a bank. A pair takes ``max(1, largest bank
load)`` cycles, so it adds ``max(1, maxload) − 1`` conflict cycles. Oracle packs each (chunk, PE)'s valid products, in
enumeration order, into groups of F·I and applies the same rule per group. With bank FIFOs
(``accumulators.queue_depth`` > 0) each slot's pairs (or groups), in enumeration order, run through the
backlog recurrence of ``antsim.dataflow.banks.BankQueues`` instead, its final drain included.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from antsim.dataflow.anticipation import screen_pairs
from antsim.dataflow.banks import BankMap, BankQueues, bank_loads, column_max_load_extra, max_load_extra
from antsim.dataflow.context import MappingContext
from antsim.dataflow.fibers import Vectors
from antsim.dataflow.footprint import Footprint
from antsim.dataflow.pairing import Cells, PairBatch, iter_pairs
from antsim.dataflow.tiling import Tiling, output_window
from antsim.phases import DimMap, PhaseProblem
from antsim.vocabulary import Policy

# Pairs per expansion batch of the exact path. It bounds memory, not results (batches only cut the
# enumeration): a batch expands to ≤ 2^15 · F·I products (524,288 at F = I = 4), each carried through
# ~10 int64/float64 temporaries — some 40 MB per batch, small next to the operands of a large layer.
_EXACT_PAIRS = 1 << 15

# Candidate pairs the fast path hashes to banks per (layer, phase): below it every pair is taken and the
# fast conflicts equal exact's (tests/dataflow/test_exact.py); above it a systematic 1-in-step sample.
# 2^15 keeps sampling to ~0.1 s a phase; measured error of the sampled estimates: +9 % on a 1-in-6 scnn
# wgrad and +0.4–1.5 % on a sampled oracle layer (BENCHMARKS.md, "Fast vs exact").
_CONFLICT_SAMPLE_PAIRS = 1 << 15


@dataclass(frozen=True)
class ExactResult:
    """Functional output, output footprint and bank-conflict cycles per slot."""

    output: np.ndarray
    footprint: Footprint
    conflict_cycles: np.ndarray


class ConflictEstimate(NamedTuple):
    """Bank-conflict cycles per slot and the sampling step they came from (1: every pair, exact)."""

    cycles: np.ndarray
    sample_step: int


@dataclass
class _Products:
    """Valid products of one batch: slot, output linear index, bank, pair id (batch-global)."""

    slot: np.ndarray
    out: np.ndarray
    bank: np.ndarray
    pair: np.ndarray


def _expand_products(stationary: Vectors, streamed: Vectors, pairs: PairBatch
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pair index, stationary element, streamed element) of every product of ``pairs``: int32 when every
    index fits (half the memory traffic of the per-product arrays that follow), int64 otherwise."""
    size_f, size_i = streamed.vec_size[pairs.f], stationary.vec_size[pairs.i]
    count = size_f * size_i
    total = int(count.sum())
    narrow = max(total, len(stationary.sp1), len(streamed.sp1)) < np.iinfo(np.int32).max
    index = np.int32 if narrow else np.int64
    count = count.astype(index)
    pair = np.repeat(np.arange(len(pairs.f), dtype=index), count)
    local = np.arange(total, dtype=index) - np.repeat(np.cumsum(count, dtype=index) - count, count)
    along_f, along_i = np.divmod(local, np.repeat(size_i.astype(index), count))
    return (pair, np.repeat(stationary.vec_start[pairs.i].astype(index), count) + along_i,
            np.repeat(streamed.vec_start[pairs.f].astype(index), count) + along_f)


class _Enumerator:
    """Enumerates the valid products of pair batches of one mapping (and scatters them into its output)."""

    def __init__(self, context: MappingContext, scatter: bool = True) -> None:
        problem = context.problem
        self.context, self.scatter = context, scatter
        self.out_rows, self.out_cols = problem.output_shape[2:]
        self.out_size = int(np.prod(problem.output_shape))
        self.output = np.zeros(self.out_size if scatter else 0)
        self.windows = output_window(problem, context.tiling) if problem.output_is_plane else None

    def batch(self, pairs: PairBatch, pair_base: int) -> _Products:
        """Scatter the valid products of ``pairs`` into the output; return their bookkeeping (``out``
        left empty when the enumerator does not scatter: the bank-conflict samples read slot and bank)."""
        problem, stationary, streamed = self.context.problem, self.context.stationary, self.context.streamed_vectors
        pair, s_elem, t_elem = _expand_products(stationary, streamed, pairs)
        out_row, row_ok = problem.dims[0].output(stationary.sp1[s_elem], streamed.sp1[t_elem])
        keep = np.flatnonzero(row_ok)  # the columns of products already out of range are never computed
        pair, s_elem, t_elem, out_row = pair[keep], s_elem[keep], t_elem[keep], out_row[keep]
        out_col, col_ok = problem.dims[1].output(stationary.sp2[s_elem], streamed.sp2[t_elem])
        keep = np.flatnonzero(col_ok)
        pair, s_elem, t_elem, out_row, out_col = pair[keep], s_elem[keep], t_elem[keep], out_row[keep], out_col[keep]
        out_channel = streamed.chan[t_elem]
        pair_slot = self.context.cells.slot[pairs.cell]
        if self.scatter:
            lead = stationary.image[s_elem] if problem.output_is_plane else out_channel
            second = out_channel if problem.output_is_plane else stationary.chan[s_elem]
            out = ((lead * problem.output_shape[1] + second) * self.out_rows + out_row) * self.out_cols + out_col
            weights = stationary.value[s_elem] * streamed.value[t_elem]
            self.output += np.bincount(out, weights=weights, minlength=self.out_size)
        else:
            out = np.zeros(0, np.int64)
        bank = self._bank(pair, pair_slot, out_channel, s_elem, out_row, out_col)
        return _Products(pair_slot[pair], out, bank, np.add(pair, pair_base, dtype=np.int64))

    def _bank(self, pair: np.ndarray, pair_slot: np.ndarray, out_channel: np.ndarray, s_elem: np.ndarray,
              out_row: np.ndarray, out_col: np.ndarray) -> np.ndarray:
        """Bank of each product (``pair``: its pair in the batch, ``pair_slot``: each pair's slot)."""
        tiling = self.context.tiling
        k_local = out_channel % tiling.kc
        if self.windows is None:
            channel = self.context.stationary.chan[s_elem]
            entry = (channel * self.out_rows + out_row) * self.out_cols + out_col
            per_channel = self.context.problem.output_shape[1] * self.out_rows * self.out_cols
        else:  # the window origin is per PE, so per pair: one offset gathered per product
            origin_y, origin_x, win_h, win_w = self.windows
            pe = pair_slot % tiling.n_pes
            entry = out_row * win_w + out_col - (origin_y[pe] * win_w + origin_x[pe])[pair]
            per_channel = win_h * win_w
        return self.context.banks.bank(k_local, entry, per_channel)


# Offset added to the row term of a padded slot (an F- or I-vector narrower than its grid): its output row
# lands ≥ 2^29 − |the other term| > every extent, so the slot is never a valid product; both padded stay at
# ≈ 2^30. [choice] Any value above twice the largest coordinate term whose double stays below 2^31 (int32).
_PADDED_SLOT = 1 << 29

# Pairs per product grid of the conflict sample. [choice] Speed only: 2^13 pairs × 16 slots of int32 keep a
# grid's temporaries near the L2 cache (−10 % against 2^15 on a ResNet-18 step's samples); results do not
# depend on it.
_GRID_PAIRS = 1 << 13

# Padding slots a width's pairs may add to ride in the next wider width's grid rather than take one of their
# own. [choice] Speed only: a grid's fixed cost is some 30 numpy calls to build and up to 63 comparators to
# sort; merging saved ~10 % of a ResNet-18 CIFAR step's sample, alike for 2^12–2^18 (docs/conflict_sample.md).
# Results do not depend on it (padded slots are never valid).
_MERGE_SLOTS = 1 << 14


@dataclass(frozen=True)
class _SlotGrid:
    """The product slots of sampled pairs whose I-vectors hold ``w`` elements, as (F', w, pairs) arrays —
    F' the widest F-vector, the pairs along the last axis so every numpy call runs over whole rows: whether
    each slot is a valid product, and its bank."""

    valid: np.ndarray
    bank: np.ndarray


class _OperandSlots(NamedTuple):
    """Per (element slot, vector) of one operand's vectors, int32: its term of the output row and column
    (streamed: β·u, β·v, a padded slot's row ``_PADDED_SLOT`` beyond; stationary: α·y + γ, α·x + γ), its
    part of the accumulator entry when the entry splits into one part per operand (no dimension divides,
    δ = 1; else None), and its own term besides (streamed: the local output channel; stationary: wgrad's
    channel block ``ch · R · S``, None for plane outputs)."""

    row: np.ndarray
    col: np.ndarray
    entry: np.ndarray | None
    other: np.ndarray | None

    def take(self, vectors: np.ndarray, width: int) -> _OperandSlots:
        """The first ``width`` slots of the vectors at positions ``vectors`` of this table."""
        def pick(table: np.ndarray) -> np.ndarray:
            return np.take(table[:width], vectors, axis=1)

        return _OperandSlots(pick(self.row), pick(self.col), None if self.entry is None else pick(self.entry),
                             None if self.other is None else pick(self.other))


def _entry_layout(context: MappingContext) -> tuple[int, int, np.ndarray | None]:
    """Entries per output row and per channel of a PE's accumulator region, and per PE minus the linear
    index of its window origin, int32 (plane outputs; None for wgrad)."""
    problem, tiling = context.problem, context.tiling
    if problem.output_is_plane:
        origin_y, origin_x, win_h, win_w = output_window(problem, tiling)
        return win_w, win_h * win_w, -(origin_y * win_w + origin_x).astype(np.int32)
    out_rows, out_cols = problem.output_shape[2:]
    return out_cols, problem.output_shape[1] * out_rows * out_cols, None


def _element_slots(vectors: Vectors, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Element index of every slot of the vectors ``ids`` (widest-vector × len(ids); a padded slot points
    at a real element, clipped to the last) and whether the slot is padding."""
    size = vectors.vec_size[ids]
    lanes = np.arange(int(size.max(initial=1)))[:, None]
    element = vectors.vec_start[ids] + lanes
    if len(ids) and int(element[-1].max()) >= len(vectors.sp1):
        np.minimum(element, max(0, len(vectors.sp1) - 1), out=element)
    return element, lanes >= size


def _gather32(values: np.ndarray, element: np.ndarray) -> np.ndarray:
    """``values[element]`` as int32 (a fresh array). From an int32 copy of ``values`` when the slots are at
    least half as many as the values: a gather of int32 moves half the bytes of one of int64 and needs no
    narrowing pass after it (0.18 against 0.32 ms for 120,000 slots of 250,000 values), which pays for the
    copy (0.05 ms); else gathered, then narrowed."""
    if values.dtype != np.int32 and 2 * element.size >= len(values):
        values = values.astype(np.int32)
    return values[element].astype(np.int32, copy=False)


def _streamed_slots(context: MappingContext, ids: np.ndarray, row_width: int) -> _OperandSlots:
    """The streamed terms of the F-vectors ``ids`` (F', len(ids))."""
    streamed, (row_dim, col_dim), kc = context.streamed_vectors, context.problem.dims, context.tiling.kc
    element, padded = _element_slots(streamed, ids)
    row = _gather32(streamed.sp1, element)
    row *= np.int32(row_dim.beta)
    col = _gather32(streamed.sp2, element)
    col *= np.int32(col_dim.beta)
    k_local = _gather32(streamed.chan, element)
    if kc & (kc - 1):
        k_local %= np.int32(kc)
    else:  # channels are non-negative: the mask is the remainder
        k_local &= np.int32(kc - 1)
    entry = None
    if row_dim.delta == 1 and col_dim.delta == 1:
        entry = row * np.int32(row_width)
        entry += col
    row += padded * np.int32(_PADDED_SLOT)  # arithmetic: a masked add runs 10× slower
    return _OperandSlots(row, col, entry, k_local)


def _stationary_slots(context: MappingContext, ids: np.ndarray, row_width: int) -> _OperandSlots:
    """The stationary terms of the I-vectors ``ids`` (I', len(ids)); a padded slot's row term lies
    ``_PADDED_SLOT`` beyond, so a grid wider than its I-vector never finds it valid."""
    problem, stationary = context.problem, context.stationary
    row_dim, col_dim = problem.dims
    element, padded = _element_slots(stationary, ids)
    row = _gather32(stationary.sp1, element)
    row *= np.int32(row_dim.alpha)
    row += np.int32(row_dim.gamma)
    col = _gather32(stationary.sp2, element)
    col *= np.int32(col_dim.alpha)
    col += np.int32(col_dim.gamma)
    block = None
    if not problem.output_is_plane:  # wgrad: the stationary channel's block of R·S entries
        block = _gather32(stationary.chan, element)
        block *= np.int32(problem.output_shape[2] * row_width)
    entry = None
    if row_dim.delta == 1 and col_dim.delta == 1:
        entry = row * np.int32(row_width)
        entry += col
        if block is not None:
            entry += block
    row += padded * np.int32(_PADDED_SLOT)  # arithmetic: a masked add runs 10× slower
    return _OperandSlots(row, col, entry, block)


def _dim_output(dim: DimMap, numerator: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``DimMap.output`` on an int32 numerator α·y + β·u + γ: output coordinate and validity."""
    if dim.delta == 1:
        return numerator, numerator.view(np.uint32) < dim.extent
    o, rest = np.divmod(numerator, np.int32(dim.delta))
    return o, (rest == 0) & (o.view(np.uint32) < dim.extent)


def _width_grid(context: MappingContext, streamed: _OperandSlots, stationary: _OperandSlots,
                window_term: np.ndarray | None, row_width: int, per_channel: int) -> tuple[np.ndarray, np.ndarray]:
    """Validity and bank of every product slot (F', w, pairs) of pairs with these streamed (F', pairs)
    and stationary (w, pairs) slots; ``window_term``: per pair, minus its PE window's origin index."""
    row_dim, col_dim = context.problem.dims
    out_row, valid = _dim_output(row_dim, stationary.row[None] + streamed.row[:, None])
    out_col, col_ok = _dim_output(col_dim, stationary.col[None] + streamed.col[:, None])
    valid &= col_ok
    if streamed.entry is not None and stationary.entry is not None:
        stationary_entry = stationary.entry if window_term is None else stationary.entry + window_term
        entry = stationary_entry[None] + streamed.entry[:, None]
    else:
        entry = out_row * np.int32(row_width)
        entry += out_col
        if window_term is not None:
            entry += window_term
        if stationary.other is not None:
            entry += stationary.other[None]
    if context.banks.hash == "xor":  # an invalid slot's entry may be negative, which the XOR fold never ends on
        entry *= valid
    k_local = streamed.other
    assert k_local is not None  # streamed slots always carry their local output channel
    return valid, context.banks.bank(k_local[:, None], entry, per_channel)


class _PairTables(NamedTuple):
    """The slot terms of both operands for a batch of sampled pairs, built once and shared by the pairs'
    screens and grids: each operand's table (``_OperandSlots``, slots × columns), the size of each column's
    vector, each pair's column (``f_at``, ``i_at``), and the entry layout (``_entry_layout``: entries per
    output row and per channel, per PE minus its window origin index or None)."""

    streamed: _OperandSlots
    f_size: np.ndarray
    f_at: np.ndarray
    stationary: _OperandSlots
    i_size: np.ndarray
    i_at: np.ndarray
    row_width: int
    per_channel: int
    pe_window: np.ndarray | None


def _table_columns(vectors: Vectors, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The vectors a per-vector table of an operand is built for, and each id's column in it: every vector
    of the operand when it has fewer vectors than ids are asked for (the sampled pairs share them), else
    the ids themselves."""
    if len(vectors.vec_start) < len(ids):
        return np.arange(len(vectors.vec_start)), ids
    return ids, np.arange(len(ids))


def _pair_tables(context: MappingContext, pairs: PairBatch) -> _PairTables:
    """Both operands' slot tables for ``pairs``."""
    row_width, per_channel, pe_window = _entry_layout(context)
    f_columns, f_at = _table_columns(context.streamed_vectors, pairs.f)
    i_columns, i_at = _table_columns(context.stationary, pairs.i)
    return _PairTables(_streamed_slots(context, f_columns, row_width), context.streamed_vectors.vec_size[f_columns],
                       f_at, _stationary_slots(context, i_columns, row_width), context.stationary.vec_size[i_columns],
                       i_at, row_width, per_channel, pe_window)


def _distinct_columns(keys: np.ndarray, size: np.ndarray, bound: int) -> np.ndarray:
    """Per column of ``keys`` (slots, n; every key in [0, ``bound``)): whether its first ``size`` entries are
    pairwise distinct. Keys below 64 are one bit each of a word: the column's bits, OR-ed, count ``size``
    set bits exactly when no two of them are equal."""
    lanes = np.arange(len(keys))[:, None]
    if bound <= 64:
        word = np.uint32 if bound <= 32 else np.uint64
        bits = np.left_shift(word(1), keys.astype(word))
        bits *= lanes < size  # padded slots set no bit
        return np.bitwise_count(np.bitwise_or.reduce(bits, axis=0)) == size
    keys = np.where(lanes < size, keys, -1 - lanes)  # a padded slot gets a negative key of its own
    if len(keys) > 8:  # pairwise comparisons grow as slots²: sort instead
        ordered = np.sort(keys, axis=0)
        return ~(ordered[1:] == ordered[:-1]).any(axis=0)
    distinct = np.ones(keys.shape[1], bool)
    for a in range(len(keys)):
        for b in range(a + 1, len(keys)):
            distinct &= keys[a] != keys[b]
    return distinct


def _remainder(values: np.ndarray, divisor: int) -> np.ndarray:
    """``values mod divisor`` (floor mod, non-negative), int32: a mask when the divisor is a power of two —
    two's complement makes it the floor mod of negative values too."""
    if divisor & (divisor - 1):
        return values % np.int32(divisor)
    return values & np.int32(divisor - 1)


# Whether a pair may conflict, indexed by 4 · (its F-vector's code) + its I-vector's code: F code = (banks
# apart) + 2 · (slices apart), I code = (one element) + 2 · (stationary parts apart mod banks/slices).
_MAY_CONFLICT = np.array([not ((i & 1 and f & 1) or (not i & 1 and f & 2 and i & 2))
                          for f in range(4) for i in range(4)])


def _may_conflict(context: MappingContext, pairs: PairBatch, tables: _PairTables) -> np.ndarray:
    """Per pair: False where it provably puts at most one valid product on each bank, so that its conflict
    cycles are 0 without enumerating it; True elsewhere. Under the ``sliced`` hash a product's bank is
    (its streamed channel's slice, its accumulator entry mod banks/slices), and with no dividing dimension
    (δ = 1) the entry is a stationary part plus a streamed part plus the pair's window term. So the banks of
    a pair's products are all distinct when (one stationary element) its streamed elements' (slice, streamed
    part mod banks/slices) are distinct — their slices alone when δ > 1 — or (several) its streamed elements'
    slices are distinct and its stationary parts are distinct mod banks/slices (a distinctness the common
    window shift keeps). Each condition is a property of one vector, decided once per table column. Other
    hashes: every pair may conflict."""
    bank_map, streamed, stationary = context.banks, tables.streamed, tables.stationary
    if bank_map.hash != "sliced" or len(pairs.f) == 0:
        return np.ones(len(pairs.f), bool)
    per_slice = bank_map.banks // bank_map.slices
    assert streamed.other is not None  # streamed slots always carry their local output channel
    part = _remainder(streamed.other, bank_map.slices)
    slices_apart = _distinct_columns(part, tables.f_size, bank_map.slices)
    single = tables.i_size == 1
    if streamed.entry is None or stationary.entry is None:  # a dimension divides (δ > 1): no split entry
        return ~(slices_apart[tables.f_at] & single[tables.i_at])
    part *= np.int32(per_slice)
    part += _remainder(streamed.entry, per_slice)
    f_code = _distinct_columns(part, tables.f_size, bank_map.banks).view(np.uint8) + 2 * slices_apart.view(np.uint8)
    i_code = single.view(np.uint8) + 2 * _distinct_columns(_remainder(stationary.entry, per_slice), tables.i_size,
                                                           per_slice).view(np.uint8)
    code = f_code[tables.f_at] * np.uint8(4)
    code += i_code[tables.i_at]
    return _MAY_CONFLICT[code]


def _width_spans(size_i: np.ndarray, f_slots: int) -> list[tuple[int, int, int]]:
    """(first, end, width) of the runs of ``size_i`` (sorted I-vector widths) that share one grid: each
    width's pairs join the next wider width's grid while the padding that adds (pairs × F' × the width
    step) stays within ``_MERGE_SLOTS``."""
    bounds = np.searchsorted(size_i, np.arange(1, int(size_i.max(initial=0)) + 2))
    widths = [w for w in range(1, len(bounds)) if bounds[w] > bounds[w - 1]]
    spans, first = [], int(bounds[0])
    for at, width in enumerate(widths):
        end = int(bounds[width])
        if at + 1 < len(widths) and (end - first) * f_slots * (widths[at + 1] - width) <= _MERGE_SLOTS:
            continue  # a few narrow pairs ride in the wider grid (their extra I-slots are padding: never valid)
        spans.append((first, end, width))
        first = end
    return spans


def _product_grids(context: MappingContext, pairs: PairBatch, tables: _PairTables, chosen: np.ndarray
                   ) -> Iterator[tuple[np.ndarray, _SlotGrid]]:
    """The product slots of the pairs at positions ``chosen`` of ``pairs`` as ``_SlotGrid``s of ≤
    ``_GRID_PAIRS`` pairs whose I-vectors have one width (or a few narrower ones, ``_width_spans``), each
    with the positions in ``pairs`` of its pairs. Which products are valid and the bank of each are those of
    ``_Enumerator.batch`` (same maps and hash), laid out as dense (F', w, pairs) grids without a per-product
    gather; padded slots are never valid."""
    size_i = tables.i_size[tables.i_at[chosen]].astype(np.uint8 if len(tables.stationary.row) < 256 else np.int64)
    by_width = np.argsort(size_i, kind="stable")  # a radix sort on narrow widths
    order, size_i = chosen[by_width], size_i[by_width]
    f_at, i_at = tables.f_at[order], tables.i_at[order]
    window_term = None  # per pair, minus its PE window's origin index: gathered for the chosen pairs only
    if tables.pe_window is not None:
        window_term = tables.pe_window[context.cells.slot[pairs.cell[order]] % context.tiling.n_pes]
    f_slots = len(tables.streamed.row)
    for first, end, width in _width_spans(size_i, f_slots):
        for lo in range(first, end, _GRID_PAIRS):
            hi = min(lo + _GRID_PAIRS, end)
            valid, bank = _width_grid(context, tables.streamed.take(f_at[lo:hi], f_slots),
                                      tables.stationary.take(i_at[lo:hi], width),
                                      None if window_term is None else window_term[lo:hi], tables.row_width,
                                      tables.per_channel)
            yield order[lo:hi], _SlotGrid(valid, bank)


def _subset(pairs: PairBatch, chosen: np.ndarray) -> PairBatch:
    """The pairs at positions (or where the mask) ``chosen``."""
    return PairBatch(pairs.cell[chosen], pairs.f[chosen], pairs.i[chosen])


def _screened(context: MappingContext, pairs: PairBatch, chosen: np.ndarray, screened: bool) -> np.ndarray:
    """The positions ``chosen`` less, when ``screened``, those whose pair the ANT screen proves holds no valid
    product: such a pair writes no bank, so it conflicts nowhere (most of SCNN's wgrad sample)."""
    if not screened:
        return chosen
    return chosen[screen_pairs(context, _subset(pairs, chosen))]


def _gridded_extra(context: MappingContext, pairs: PairBatch, screened: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per pair that gets a grid, its position in ``pairs`` and max(1, largest bank load of its valid products) − 1
    (``max_load_extra`` of its enumerated products, counted on their product grids); every other pair's is 0 —
    those ``_may_conflict`` clears and, when ``screened``, those the screen drops (``_screened``)."""
    tables = _pair_tables(context, pairs)
    loaded = _screened(context, pairs, np.flatnonzero(_may_conflict(context, pairs, tables)), screened)
    positions, extras = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for at, grid in _product_grids(context, pairs, tables, loaded):
        slots, width, n = grid.bank.shape
        positions.append(at)
        extras.append(column_max_load_extra(grid.bank.reshape(slots * width, n),
                                            grid.valid.reshape(slots * width, n), context.banks.banks))
    return np.concatenate(positions), np.concatenate(extras)


def _pair_loads(context: MappingContext, pairs: PairBatch) -> np.ndarray:
    """Valid products per (pair, bank), (pairs, banks) int32 (``bank_loads`` of the pairs' products)."""
    banks, n = context.banks.banks, len(pairs.f)
    keys = []
    for at, grid in _product_grids(context, pairs, _pair_tables(context, pairs), np.arange(n)):
        key = grid.bank.astype(np.int64) + (at * banks + 1)  # 1 + pair · banks + bank of a valid product, else 0
        key *= grid.valid
        keys.append(key.ravel())
    counts = np.bincount(np.concatenate(keys), minlength=n * banks + 1) if keys else np.zeros(n * banks + 1)
    return counts[1:].reshape(n, banks).astype(np.int32)


def run_exact(context: MappingContext, policy: Policy) -> ExactResult:
    """Enumerate the products of the issued pairs (all candidate pairs for ``oracle``, which then packs
    each slot's valid products into groups of F·I)."""
    n_slots, banks, depth = context.n_slots, context.banks.banks, context.banks.queue_depth
    enumerator = _Enumerator(context)
    conflicts = np.zeros(n_slots, np.int64)
    queues = BankQueues(n_slots, banks, depth)
    kept: list[_Products] = []
    pair_base = 0
    for pairs in _issued_batches(context, screened=policy == "ant"):
        products = enumerator.batch(pairs, pair_base)
        pair_slot = context.cells.slot[pairs.cell]
        if policy != "oracle" and depth:
            queues.feed(pair_slot, bank_loads(products.pair - pair_base, products.bank, banks, len(pairs.f)))
        elif policy != "oracle":
            extra = max_load_extra(products.pair - pair_base, products.bank, banks, len(pairs.f))
            conflicts += np.bincount(pair_slot, weights=extra, minlength=n_slots).astype(np.int64)
        pair_base += len(pairs.f)
        kept.append(products)
    every = _Products(*(np.concatenate([getattr(p, a) for p in kept]) if kept else np.zeros(0, np.int64)
                        for a in ("slot", "out", "bank", "pair")))
    if policy == "oracle":
        conflicts = _oracle_conflicts(every, context.banks, context.group_size, n_slots)
    elif depth:
        conflicts = queues.stalls + queues.drain()
    footprint = _footprint(context, every)
    return ExactResult(enumerator.output.reshape(context.problem.output_shape), footprint, conflicts)


# Pseudo-count of the shrinkage: a slot's sampled conflict rate is averaged with the phase-wide rate as if
# the phase had contributed 16 sampled pairs (or packed groups) to it, so a slot with few sampled pairs
# does not read 0 or a multiple of the step. [choice] One slot's worth of a typical sample at F·I = 16;
# tests/dataflow/test_exact.py checks the shrunk per-PE error is below the raw sample's.
_PRIOR_PAIRS = 16.0


def _pairs_at(cells: Cells, picks: np.ndarray) -> PairBatch:
    """The candidate pairs at global indices ``picks`` (cell order, then F-vector, then I-vector)."""
    counts = cells.n_pairs
    ends = np.cumsum(counts)
    cell = np.searchsorted(ends, picks, side="right")
    f_local, i_local = np.divmod(picks - (ends[cell] - counts[cell]), np.maximum(cells.n_i[cell], 1))
    return PairBatch(cell, cells.f0[cell] + f_local, cells.i0[cell] + i_local)


def _pairs_every(cells: Cells, first: int, step: int) -> PairBatch:
    """``_pairs_at(cells, np.arange(first, total, step))`` without a search: a systematic sample puts
    ``ceil((end − first) / step)`` picks below a cell's end, so each cell's picks are counted in closed form
    and each pick's cell read off their running count; int32 arithmetic when every candidate-pair index
    fits (else int64)."""
    n_i, n_f = cells.n_i, cells.n_f
    bound = int(n_i.max(initial=0)) * int(n_f.max(initial=0)) * len(n_i)  # ≥ the candidate pairs
    index = np.int32 if bound < np.iinfo(np.int32).max else np.int64
    counts: np.ndarray = np.multiply(n_i, n_f, dtype=index)
    ends: np.ndarray = np.cumsum(counts, dtype=index)
    total = int(ends[-1]) if len(ends) else 0
    below = ends + (step - 1 - first)  # picks before each cell's end: ceil((end − first) / step), ≥ 0
    np.maximum(below, 0, out=below)
    below //= step
    pick = np.arange(first, total, step, dtype=index)
    # The cell of pick k: the cells whose ends hold at most k picks (a count, not ``np.repeat``, whose
    # per-cell step cost 9× more on 83,000 cells of which most hold no pick).
    cell = np.cumsum(np.bincount(below, minlength=len(pick) + 1)[:len(pick)], dtype=index)
    ends -= counts  # each cell's first candidate-pair index
    if int(n_i.max(initial=0)) <= 1:  # one I-vector per cell (most fprop/dgrad cells): f = f0 + pick − start
        return PairBatch(cell, pick + (cells.f0 - ends)[cell], cells.i0.astype(index, copy=False)[cell])
    f_local, i_local = np.divmod(pick - ends[cell], np.maximum(n_i.astype(index, copy=False)[cell], 1))
    return PairBatch(cell, cells.f0.astype(index, copy=False)[cell] + f_local,
                     cells.i0.astype(index, copy=False)[cell] + i_local)


def _shrunk(extra_sum: np.ndarray, sample_slot: np.ndarray, n_slots: int, issued_pairs: np.ndarray) -> np.ndarray:
    """Per slot: its issued pairs times its sampled conflicts per sample (``sample_slot``: the slot of each
    sampled pair or group) shrunk toward the phase-wide rate with weight ``_PRIOR_PAIRS``."""
    sampled = np.bincount(sample_slot, minlength=n_slots)
    pooled = extra_sum.sum() / max(1, len(sample_slot))
    rate = (extra_sum + _PRIOR_PAIRS * pooled) / (sampled + _PRIOR_PAIRS)
    return np.rint(rate * issued_pairs).astype(np.int64)


# Consecutive candidate pairs per run of the sample when the banks queue (``queue_depth`` > 0): a FIFO's
# backlog carries from pair to pair, and neighbouring pairs of a cell share their F-vector and meet
# neighbouring I-vectors, so they pile onto the same banks; a 1-in-step sample of single pairs reads
# such a run as independent pairs (−90 % of the stall cycles of a 64→64 56² layer at density 0.85,
# docs/accumulator_banks.md §2). [choice] Runs of 256 within the same 2^15-pair budget (128 runs): on that
# layer runs of 16 / 64 / 256 / 1024 / 4096 read −1.16 / −0.41 / +0.25 / −0.87 / −0.61 % of its cycles.
_QUEUE_RUN = 256


def _sample_step(total: int, budget: int) -> int:
    """The sampling step of ``total`` candidate pairs under ``budget``: ceil(total / budget), at least 1."""
    return max(1, -(-total // budget))


def _sample_picks(total: int, budget: int, run: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Global indices of the sampled candidate pairs, the run each belongs to, and the sampling step:
    a systematic 1-in-step sample (``run`` 1, or every pair when they fit the budget), else
    ``budget // run`` runs of ``run`` consecutive pairs at evenly spaced positions."""
    step = _sample_step(total, budget)
    if step == 1 or run <= 1:
        picks = np.arange(step // 2, total, step, dtype=np.int64)
        return picks, np.zeros(len(picks), np.int64), step
    n_runs = max(1, budget // run)
    first = np.clip(((np.arange(n_runs) + 0.5) * (total / n_runs)).astype(np.int64) - run // 2, 0, total - run)
    return (first[:, None] + np.arange(run)).ravel(), np.repeat(np.arange(n_runs), run), step


def _sampled_pairs(cells: Cells, budget: int, queued: bool) -> tuple[PairBatch, np.ndarray, int]:
    """The sampled candidate pairs of ``_sample_picks`` (runs when ``queued``), the run of each (empty
    when not ``queued``: only the bank queues read it) and the sampling step."""
    total = int(cells.n_pairs.sum())
    step = _sample_step(total, budget)
    if queued and step > 1:  # runs of consecutive pairs
        picks, run, step = _sample_picks(total, budget, _QUEUE_RUN)
        return _pairs_at(cells, picks), run, step
    pairs = _pairs_every(cells, step // 2, step)  # a systematic 1-in-step sample
    return pairs, np.zeros(len(pairs.f) if queued else 0, np.int64), step


def _screen_pays(context: MappingContext, policy: Policy) -> bool:
    """Whether to screen the sampled pairs before their grids under ``none`` (``ant`` has screened them
    already). Speed only: a pair the screen drops holds no valid product, so its grid would count 0 anyway.
    [choice] Only for wgrad, whose samples the screen cuts to 6–30 % on a ResNet-18 CIFAR step; fprop's and
    dgrad's keep ≥ 95 %, where the screen costs more than the grids it saves."""
    return policy != "ant" and not context.problem.output_is_plane


def sampled_conflicts(context: MappingContext, policy: Policy, budget: int = _CONFLICT_SAMPLE_PAIRS,
                      issued_pairs: np.ndarray | None = None) -> ConflictEstimate:
    """Bank-conflict cycles per slot from a sample of the candidate pairs.

    ``step = ceil(candidates / budget)``; every pair is taken when the step is 1, which makes the result
    exact. Unbuffered banks (``queue_depth`` 0) take a systematic 1-in-step sample; queued banks take
    runs of ``_QUEUE_RUN`` consecutive pairs, each run a sequence of its own through the bank FIFOs. Each
    sampled issued pair's products are enumerated and hashed as in ``run_exact``. With a step above 1 a
    slot's cycles are its issued pairs (``issued_pairs``, exact) times its sampled conflict rate shrunk
    toward the phase-wide rate (weight ``_PRIOR_PAIRS`` pairs), which keeps slots with few sampled pairs
    from reading 0 or a multiple of the step; without ``issued_pairs`` the sample is scaled by the step.
    """
    cells, n_slots = context.cells, context.n_slots
    banks, depth = context.banks.banks, context.banks.queue_depth
    pairs, run, sample_step = _sampled_pairs(cells, budget, depth > 0)
    if policy == "ant":  # ANT issues only the pairs its screen keeps
        reachable = screen_pairs(context, pairs)
        pairs, run = _subset(pairs, reachable), run[reachable] if depth else run
    slot = cells.slot[pairs.cell]
    drain = np.zeros(n_slots, np.int64)
    if depth:  # every (run, slot) its own sequence; a slot's last backlog drains only when every pair is taken
        loads = np.zeros((len(pairs.f), banks), np.int32)
        enumerated = _screened(context, pairs, np.arange(len(pairs.f)), _screen_pays(context, policy))
        loads[enumerated] = _pair_loads(context, _subset(pairs, enumerated))
        sequence_key, sequence = np.unique(run * n_slots + slot, return_inverse=True)
        queues = BankQueues(len(sequence_key), banks, depth)
        queues.feed(sequence.ravel(), loads)
        extra_sum = np.bincount(sequence_key % n_slots, weights=queues.stalls, minlength=n_slots)
        if sample_step == 1:  # one sequence per slot
            drain[sequence_key] = queues.drain()
    else:
        at, extra = _gridded_extra(context, pairs, _screen_pays(context, policy))  # every other pair: 0
        extra_sum = np.bincount(slot[at], weights=extra, minlength=n_slots).astype(np.float64)
    if sample_step == 1 or issued_pairs is None:
        return ConflictEstimate(np.rint(extra_sum * sample_step).astype(np.int64) + drain, sample_step)
    return ConflictEstimate(_shrunk(extra_sum, slot, n_slots, issued_pairs) + drain, sample_step)


def _geometry_classes(problem: PhaseProblem, tiling: Tiling) -> np.ndarray:
    """Per PE, a class id shared by the PEs whose tiles have the same size and the same distance to the
    plane's borders, capped at the kernel's reach (interior, edge and corner tiles): on uniform operands
    their enumerations, and so their packed groups' conflicts, look alike. The reach is the smaller of
    the output extent and the streamed extent of the dimension (R for fprop, dgrad and wgrad alike)."""
    keys = []
    extents = (tiling.row_extents(), tiling.col_extents())
    for d, (lo, hi) in enumerate(extents):
        dim, size, n_u = problem.dims[d], tiling.plane[d], problem.streamed_shape[3 + d]
        margin = max(1, min(dim.extent, n_u))
        keys.append(np.column_stack([np.minimum(lo, margin), np.minimum(size - 1 - hi, margin), hi - lo]))
    _, row_class = np.unique(keys[0], axis=0, return_inverse=True)
    _, col_class = np.unique(keys[1], axis=0, return_inverse=True)
    pe = np.arange(tiling.n_pes)
    pe_class = row_class.ravel()[pe // tiling.cols] * (col_class.max() + 1) + col_class.ravel()[pe % tiling.cols]
    return np.unique(pe_class, return_inverse=True)[1].ravel()


def _prefix_picks(cells: Cells, length: np.ndarray) -> np.ndarray:
    """Global candidate-pair indices of the first ``length[slot]`` pairs of every slot, in enumeration order."""
    counts = cells.n_pairs
    order = np.argsort(cells.slot, kind="stable")  # a slot's cells in enumeration order
    sorted_counts = counts[order]
    running = np.cumsum(sorted_counts) - sorted_counts
    slot_sorted = cells.slot[order]
    before = np.zeros(len(counts), np.int64)
    before[order] = running - running[np.searchsorted(slot_sorted, slot_sorted, side="left")]
    take = np.clip(length[cells.slot] - before, 0, counts)
    cell_start = np.cumsum(counts) - counts
    return np.repeat(cell_start - np.cumsum(take) + take, take) + np.arange(int(take.sum()), dtype=np.int64)


# Most candidate pairs the oracle's estimate enumerates to measure one whole slot of every geometry class
# when that needs more than the usual budget (dense operands: slots of 10^4 pairs, up to ~10 classes).
# [choice] 2^18 = 8× ``_CONFLICT_SAMPLE_PAIRS``: ~1 s a phase on the largest ResNet-18 layers at density 1.0;
# past it the classes' samples are cut to prefixes (BENCHMARKS.md, "ant_oracle fast vs exact").
_ORACLE_MAX_PAIRS = 1 << 18


def _sampled_lengths(slot_class: np.ndarray, slot_pairs: np.ndarray, budget: int) -> np.ndarray:
    """Pairs to enumerate from the start of each slot: whole slots, taken per class in an order that
    spreads over chunks and PEs, until the class's share of the budget is spent. The share is at least
    one whole slot of the class as long as the phase's total stays within ``_ORACLE_MAX_PAIRS``; past
    that, each class's first slot is cut to an equal share of it."""
    n_classes = int(slot_class.max()) + 1
    # Slots of a class in a scattered order (index × the prime 7919 mod the slot count), so a class's first
    # whole slots come from different chunks and PEs rather than the first chunk's. [choice] Any multiplier
    # coprime to the slot count; ties (a count that 7919 divides) fall back to the index order.
    rank = (np.arange(len(slot_class)) * 7919) % max(1, len(slot_class))
    order = np.lexsort((rank, slot_class))
    pairs_sorted, class_sorted = slot_pairs[order], slot_class[order]
    class_start = np.searchsorted(class_sorted, class_sorted, side="left")
    first = np.arange(len(order)) == class_start
    one_each = int(pairs_sorted[first].sum())
    if one_each <= max(budget, _ORACLE_MAX_PAIRS):
        share = np.maximum(budget // n_classes, pairs_sorted[first])[np.cumsum(first) - 1]
    else:
        share = np.full(len(order), max(1, _ORACLE_MAX_PAIRS // n_classes))
    running = np.cumsum(pairs_sorted)
    before = running - pairs_sorted - (running - pairs_sorted)[class_start]
    length = np.zeros(len(slot_class), np.int64)
    length[order] = np.where(before + pairs_sorted <= share, pairs_sorted, np.where(first, share, 0))
    return np.minimum(length, slot_pairs)


def sampled_oracle_conflicts(context: MappingContext, issued_pairs: np.ndarray,
                             budget: int = _CONFLICT_SAMPLE_PAIRS) -> ConflictEstimate:
    """Oracle bank-conflict cycles per slot from slots enumerated from their first pair.

    The oracle packs a slot's valid products, in enumeration order, into groups of F·I
    (``_oracle_conflicts``), so where a group boundary falls depends on every earlier pair of the slot: a
    sample cut inside a slot would have to guess that phase (a guess made the busiest PE's conflicts 2–3×
    exact's on dense operands). Slots are therefore enumerated from their start, whole where the budget
    allows, chosen per geometry class of their PE (``_geometry_classes``: tile size and reach) so that
    interior, edge and corner PEs are all measured (``_sampled_lengths``). A slot enumerated whole keeps its
    exact conflicts (a budget that covers every pair reproduces ``run_exact``); every other slot gets its
    packed pairs (``issued_pairs`` = ceil(valid / F·I)) times its class's conflicts per full packed group,
    shrunk toward the phase-wide rate (weight ``_PRIOR_PAIRS`` groups).
    """
    cells, n_slots, tiling = context.cells, context.n_slots, context.tiling
    slot_pairs = np.bincount(cells.slot, weights=cells.n_pairs, minlength=n_slots).astype(np.int64)
    slot_class = _geometry_classes(context.problem, tiling)[np.arange(n_slots) % tiling.n_pes]
    length = _sampled_lengths(slot_class, slot_pairs, budget)
    pairs = _pairs_at(cells, _prefix_picks(cells, length))
    # The ANT screen is conservative: pairs it drops hold no valid product, so dropping them first
    # leaves the valid products and their order unchanged.
    keep = screen_pairs(context, pairs)
    products = _Enumerator(context, scatter=False).batch(PairBatch(pairs.cell[keep], pairs.f[keep], pairs.i[keep]), 0)
    whole = length >= slot_pairs
    extra, groups = _prefix_conflicts(products, context, whole)
    n_classes = int(slot_class.max()) + 1
    class_extra = np.bincount(slot_class, weights=extra, minlength=n_classes)
    class_groups = np.bincount(slot_class, weights=groups, minlength=n_classes)
    pooled = extra.sum() / max(1.0, groups.sum())
    rate = (class_extra + _PRIOR_PAIRS * pooled) / (class_groups + _PRIOR_PAIRS)
    estimate = np.where(whole, extra, rate[slot_class] * issued_pairs)
    sample_step = max(1, -(-int(slot_pairs.sum()) // max(1, len(pairs.f))))
    return ConflictEstimate(np.rint(estimate).astype(np.int64), sample_step)


def _prefix_conflicts(products: _Products, context: MappingContext, whole: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Per slot, the conflict cycles of its prefix's valid products packed F·I per group from the slot's
    start, and the groups counted: every group of a slot enumerated whole, full groups only elsewhere
    (a prefix's last group is cut short by the sample, not by the slot)."""
    n_slots, group_size = context.n_slots, context.group_size
    order = np.argsort(products.slot, kind="stable")
    slot, bank = products.slot[order], products.bank[order]
    position = np.arange(len(slot)) - np.searchsorted(slot, slot, side="left")
    valid = np.bincount(slot, minlength=n_slots)
    keep = whole[slot] | (position < (valid // group_size * group_size)[slot])
    slot, bank, position = slot[keep], bank[keep], position[keep]
    group_key, group = np.unique(slot * (len(slot) + 1) + position // group_size, return_inverse=True)
    group_slot = group_key // (len(slot) + 1)
    groups = np.bincount(group_slot, minlength=n_slots).astype(np.float64)
    if context.banks.queue_depth:  # a cut prefix's backlog is not the slot's last: only whole slots drain
        stalls, drain = _queued_groups(group, bank, group_slot, context.banks, n_slots)
        return (stalls + np.where(whole, drain, 0)).astype(np.float64), groups
    extra = max_load_extra(group, bank, context.banks.banks, len(group_key))
    return np.bincount(group_slot, weights=extra, minlength=n_slots), groups


def _issued_batches(context: MappingContext, screened: bool) -> Iterator[PairBatch]:
    """The candidate pairs in batches of ≤ ~``_EXACT_PAIRS``, less those the ANT screen drops when ``screened``."""
    for pairs in iter_pairs(context.cells, _EXACT_PAIRS):
        if screened:
            keep = screen_pairs(context, pairs)
            pairs = PairBatch(pairs.cell[keep], pairs.f[keep], pairs.i[keep])
        yield pairs


def _oracle_conflicts(products: _Products, bank_map: BankMap, group_size: int, n_slots: int) -> np.ndarray:
    """Per slot, the conflict cycles of its valid products packed in enumeration order into groups of F·I."""
    order = np.argsort(products.slot, kind="stable")
    slot, bank = products.slot[order], products.bank[order]
    first = np.searchsorted(slot, slot, side="left")
    group_in_slot = (np.arange(len(slot)) - first) // group_size
    group_key, group = np.unique(slot * (len(slot) + 1) + group_in_slot, return_inverse=True)
    group_slot = group_key // (len(slot) + 1)
    if bank_map.queue_depth:
        stalls, drain = _queued_groups(group, bank, group_slot, bank_map, n_slots)
        return stalls + drain
    extra = max_load_extra(group, bank, bank_map.banks, len(group_key))
    return np.bincount(group_slot, weights=extra, minlength=n_slots).astype(np.int64)


# Packed groups fed to the bank queues per call: bounds the (groups × banks) load table to 2^15 · banks
# int32 (4 MB at 32 banks). [choice] Memory, not results: the queues carry their backlogs across calls.
_QUEUE_GROUPS = 1 << 15


def _queued_groups(group: np.ndarray, bank: np.ndarray, group_slot: np.ndarray, bank_map: BankMap,
                   n_slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Per slot, the stall cycles of its packed groups through the bank FIFOs and its final drain.
    ``group`` (per product, non-decreasing) numbers the groups in each slot's sequence order."""
    queues = BankQueues(n_slots, bank_map.banks, bank_map.queue_depth)
    n_groups = len(group_slot)
    for first in range(0, n_groups, _QUEUE_GROUPS):
        last = min(first + _QUEUE_GROUPS, n_groups)
        lo, hi = np.searchsorted(group, [first, last])
        queues.feed(group_slot[first:last], bank_loads(group[lo:hi] - first, bank[lo:hi], bank_map.banks,
                                                       last - first))
    return queues.stalls, queues.drain()


def _footprint(context: MappingContext, products: _Products) -> Footprint:
    """Valid products, distinct held and halo outputs per slot and outputs written per chunk, counted
    from the enumerated valid products."""
    problem, tiling, n_slots = context.problem, context.tiling, context.n_slots
    n_pes = tiling.n_pes
    valid = np.bincount(products.slot, minlength=n_slots).astype(np.int64)
    size = int(np.prod(problem.output_shape))
    distinct = np.unique(products.slot * size + products.out)
    held_slot, held_out = np.divmod(distinct, size)
    partial = np.bincount(held_slot, minlength=n_slots).astype(np.int64)
    if problem.output_is_plane:
        O1, O2 = problem.output_shape[2:]
        position = held_out % (O1 * O2)
        halo_mask = tiling.pe_of_output().ravel()[position] != held_slot % n_pes
        halo = np.bincount(held_slot[halo_mask], minlength=n_slots).astype(np.int64)
    else:
        halo = np.zeros(n_slots, np.int64)
    chunks = np.unique((held_slot // n_pes) * size + held_out) // size
    out_values = np.bincount(chunks, minlength=tiling.n_chunks).astype(np.int64)
    return Footprint(valid, partial, halo, out_values)


__all__ = ["ConflictEstimate", "ExactResult", "run_exact", "sampled_conflicts", "sampled_oracle_conflicts"]
