"""Pairing cells: which stationary fiber meets which streamed fiber, in which chunk, on which PE.

A *cell* is one (chunk, PE, stationary fiber, stride group): the PE forms every pair of the fiber's
I-vectors with the matching streamed fiber's F-vectors. Cells exist for every non-empty stationary
fiber and every output-channel group whose streamed block holds a non-zero; a cell whose streamed fiber
the fetch filter emptied forms no pairs but still counts toward ``total`` through the unfiltered count.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields, replace

import numpy as np

from antsim.dataflow.fibers import StreamedOperand, Vectors
from antsim.dataflow.tiling import StrideClasses, Tiling
from antsim.phases import PhaseProblem


@dataclass(frozen=True)
class Cells:
    """Per-cell arrays (all shape (n_cells,); int64, or int32 where ``cell_dtypes`` proves the values fit).

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
        """Candidate vector pairs of each cell (int64 whatever the fields' dtype)."""
        return np.multiply(self.n_i, self.n_f, dtype=np.int64)


def _decode_stationary(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses, keys: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rest, cls = np.divmod(keys, classes.n_stationary)
    rest, pe = np.divmod(rest, tiling.n_pes)
    Cs = problem.stationary_shape[1] if problem.channel_matched else 1
    n, ch = np.divmod(rest, Cs)
    return n, ch, pe, cls


def _partner_table(classes: StrideClasses) -> tuple[np.ndarray, np.ndarray]:
    """Per stationary class, how many streamed classes it pairs with, and which (row ``cls``, in
    ``classes.groups`` order; 0-padded)."""
    partners = [[b for a, b in classes.groups if a == cls] for cls in range(classes.n_stationary)]
    n_partners = np.array([len(p) for p in partners], np.int64)
    table = np.zeros((classes.n_stationary, max(1, int(n_partners.max()))), np.int64)
    for cls, p in enumerate(partners):
        table[cls, :len(p)] = p
    return n_partners, table


def _walk_order(stationary_class: np.ndarray, classes: StrideClasses, n_groups: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cells per stationary fiber, and group g and streamed class of every cell in the order a PE walks them:
    fiber-major (a PE walks its fiber through all groups), then g, then the streamed classes its class pairs
    with, in ``classes.groups`` order. Built by counting, without a sort (and without a division when every
    fiber's class has as many partners: the walk is then the same for every fiber)."""
    n_partners, table = _partner_table(classes)
    per_fiber = n_partners[stationary_class]
    cells = per_fiber * n_groups
    if len(per_fiber) and per_fiber.min() == per_fiber.max():
        n_fibers, width = len(per_fiber), int(per_fiber[0])
        shape = (n_fibers, n_groups, width)  # each a broadcast copied once (no per-cell index arrays), writable
        group = np.array(np.broadcast_to(np.arange(n_groups, dtype=np.int64)[None, :, None], shape)).reshape(-1)
        partner = np.array(np.broadcast_to(table[stationary_class, :width][:, None, :], shape)).reshape(-1)
        return cells, group, partner
    fiber = np.repeat(np.arange(len(stationary_class), dtype=np.int64), cells)
    rank = np.arange(len(fiber), dtype=np.int64) - np.repeat(np.cumsum(cells) - cells, cells)
    group, pair = np.divmod(rank, per_fiber[fiber])
    return cells, group, table[stationary_class[fiber], pair]


# Cells built per batch of stationary fibers (their expansion over groups and stride partners): it bounds
# the temporaries, not results. [choice] 2^20 cells ≈ 90 MB of int64 temporaries at most (2^22 had held
# ≈ 400 MB beside the cells of ResNet-50 layer4.0.downsample on the dense design, docs/memory.md).
_CELL_BATCH = 1 << 20


def make_cells(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses, stationary: Vectors,
               streamed: StreamedOperand) -> Cells:
    """All pairing cells of the phase, ordered by stationary fiber, then stride group, then group g — less the
    inert ones, whose streamed block holds no non-zero even before the fetch filter: they form no pair, add
    nothing to ``total`` and read nothing (an SCNN FC layer's 8-weight blocks at density 0.1 are 43 % empty)."""
    image, channel, pe, stationary_class = _decode_stationary(problem, tiling, classes, stationary.fiber_keys)
    per_fiber = np.array([sum(1 for a, _ in classes.groups if a == cls) for cls in range(classes.n_stationary)],
                         np.int64)[stationary_class] * tiling.n_groups
    ends = np.cumsum(per_fiber)
    dtypes = cell_dtypes(stationary, streamed)
    index = _StreamedIndex.of(streamed, dtypes)
    capacity = int(ends[-1]) if len(ends) else 0
    columns = _Columns(capacity, dtypes, index, index.group_rows(tiling.n_groups, classes, dtypes, capacity))
    # The per-fiber terms in the cells' widths before they are gathered over the cells (half the bytes moved when
    # int32; the same values: ``cell_dtypes`` bounds them).
    stationary = replace(stationary, fiber_vec0=stationary.fiber_vec0.astype(dtypes["i0"]),
                         fiber_nvec=stationary.fiber_nvec.astype(dtypes["n_i"]),
                         fiber_nnz=stationary.fiber_nnz.astype(dtypes["nnz_s"]))
    first = 0
    while first < len(per_fiber):
        last = max(first + 1, int(np.searchsorted(ends, (ends[first] - per_fiber[first]) + _CELL_BATCH, "right")))
        fibers = slice(first, last)
        batch = _FiberBatch(first, image[fibers], channel[fibers], pe[fibers], stationary_class[fibers])
        _fill_cells(problem, tiling, classes, stationary, batch, columns)
        first = last
    return columns.cells()


# Largest value an int32 cell field may hold. The count fields are multiplied pairwise by the accounting
# (``n_pairs = n_i · n_f``, ``nnz_s · nnz_t``, ``n_f · nnz_s``), so they are narrowed only when the product of
# any two of them fits too: every count ≤ 46,340 (46,340² < 2^31).
_INT32_MAX = np.iinfo(np.int32).max
_INT32_COUNT_MAX = 46_340
_VECTOR_ID_FIELDS = ("i0", "f0")
_COUNT_FIELDS = ("n_i", "n_f", "nnz_s", "nnz_t", "nnz_t_all")


def _largest(values: np.ndarray) -> int:
    return int(values.max()) if values.size else 0


def cell_dtypes(stationary: Vectors, streamed: StreamedOperand) -> dict[str, np.dtype]:
    """The dtype of each ``Cells`` field: int32 where a bound on every value proves it fits, else int64 (slot and
    stream_key are always int64: the accounting forms chunk- and key-sized products of them).

    The bounds are the arrays the cells are gathered from: ``i0`` and ``f0`` are vector ids (< the vectors of the
    operand, or 0), ``n_i``, ``nnz_s`` come from the stationary fibers, ``n_f``, ``nnz_t`` from the streamed fibers
    and ``nnz_t_all`` from the unfiltered block counts (or are 0).
    """
    vectors = streamed.vectors
    ids = max(len(stationary.vec_size), len(vectors.vec_size))
    counts = max(_largest(stationary.fiber_nvec), _largest(stationary.fiber_nnz), _largest(vectors.fiber_nvec),
                 _largest(vectors.fiber_nnz), _largest(streamed.unfiltered_nnz))
    dtypes: dict[str, np.dtype] = {f.name: np.dtype(np.int64) for f in fields(Cells)}
    if ids <= _INT32_MAX:
        dtypes.update({name: np.dtype(np.int32) for name in _VECTOR_ID_FIELDS})
    if counts <= _INT32_COUNT_MAX:
        dtypes.update({name: np.dtype(np.int32) for name in _COUNT_FIELDS})
    return dtypes


class _Columns:
    """The fields of ``Cells`` preallocated at the cells before the inert ones are dropped (``capacity``), in the
    dtypes ``cell_dtypes`` proved wide enough, filled batch by batch in place (``reserve``, ``commit``) and shrunk to
    the cells kept: the cells are held once, with no per-batch copy of them beside (and untouched pages of the
    capacity are never resident). ``index`` finds the streamed fiber of each cell."""

    def __init__(self, capacity: int, dtypes: dict[str, np.dtype], index: _StreamedIndex,
                 rows: dict[str, np.ndarray] | None = None) -> None:
        self.capacity, self.index, self.rows = capacity, index, rows
        self.filled = 0
        self.arrays = {name: np.empty(capacity, dtype) for name, dtype in dtypes.items()}

    def reserve(self, n: int) -> dict[str, np.ndarray]:
        """Views of the next ``n`` rows of every field (room the batch's cells, live or not, always have)."""
        return {name: column[self.filled:self.filled + n] for name, column in self.arrays.items()}

    def commit(self, n: int) -> None:
        """The next ``n`` rows hold cells."""
        self.filled += n

    def cells(self) -> Cells:
        for column in self.arrays.values():
            if self.filled < self.capacity:
                column.resize(self.filled, refcheck=False)  # realloc: the tail is returned, no copy is held
        return Cells(**self.arrays)


def _gather_into(out: np.ndarray, values: np.ndarray, index: np.ndarray) -> None:
    """``out[:] = values[index]`` without a temporary when the dtypes agree (int64 ``index``, in range)."""
    if values.dtype == out.dtype:
        np.take(values, index, out=out, mode="clip")  # "clip": unbuffered; every index is in range anyway
    else:
        out[...] = values[index]  # narrowed within the bound ``cell_dtypes`` proved


@dataclass(frozen=True)
class _FiberBatch:
    """Consecutive stationary fibers ``first, first + 1, …`` with each one's image, channel, PE and stride class."""

    first: int
    image: np.ndarray
    channel: np.ndarray
    pe: np.ndarray
    stationary_class: np.ndarray


def _fill_cells(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses, stationary: Vectors,
                batch: _FiberBatch, columns: _Columns) -> None:
    """The non-inert cells of the stationary fibers of ``batch``, written into the next rows of ``columns`` (their
    streamed fibers found through ``columns.index``): each fiber's terms spread over its cells (``_Spread``),
    straight into the fields."""
    index = columns.index
    Nt, Ct = problem.streamed_shape[:2]
    G, n_pes = tiling.n_groups, tiling.n_pes
    base = ((batch.image if Nt > 1 else 0) * Ct + (batch.channel if Ct > 1 else 0))
    base = np.broadcast_to(base, batch.image.shape).astype(np.int64)
    if columns.rows is not None and _one_partner(classes, batch.stationary_class):
        _fill_by_rows(tiling, classes, stationary, batch, base, columns)
        return
    block_of_fiber = base * G
    spread, out = _stream_keys(classes, G, batch.stationary_class, block_of_fiber, columns)
    _gather_into(out["nnz_t_all"], index.streamed.unfiltered_nnz.ravel(), out["stream_key"])
    live = out["nnz_t_all"] > 0
    if not live.all():  # the live cells moved to the front of the rows reserved
        keep = np.flatnonzero(live)
        spread = spread.kept(keep, len(batch.image))
        for name in ("stream_key", "nnz_t_all"):
            out[name][:len(keep)] = out[name][keep]
        out = {name: column[:len(keep)] for name, column in out.items()}
    columns.commit(len(out["slot"]))
    fibers = slice(batch.first, batch.first + len(batch.image))
    spread.slot(out["slot"], (batch.image * G) * n_pes + batch.pe.astype(np.int64), n_pes)
    for name, values in (("i0", stationary.fiber_vec0[fibers]), ("n_i", stationary.fiber_nvec[fibers]),
                         ("nnz_s", stationary.fiber_nnz[fibers])):
        spread.fields(out[name], values)
    key = out["stream_key"] * index.streamed.layout.n_sets
    spread.add(key, index.streamed.layout.set_of_pe[batch.pe])
    index.fill(key, out)  # the streamed fiber key: ((block · n_classes + class) · n_sets + fetch set)


def _one_partner(classes: StrideClasses, stationary_class: np.ndarray) -> bool:
    """Whether every fiber's class pairs with exactly one streamed class."""
    n_partners = _partner_table(classes)[0][stationary_class]
    return bool(len(n_partners)) and n_partners.min() == n_partners.max() == 1


def _fill_by_rows(tiling: Tiling, classes: StrideClasses, stationary: Vectors, batch: _FiberBatch, base: np.ndarray,
                  columns: _Columns) -> None:
    """``_fill_cells`` where each fiber pairs with one streamed class: a fiber's cells are its G groups, and its
    streamed fibers' terms (unfiltered non-zeros, first F-vector, F-vectors, non-zeros) one row of ``columns.rows``
    (``_StreamedIndex.group_rows``), copied whole; the fiber's own terms are broadcast over the row. The inert
    cells are then dropped from every field (the live ones keep their order)."""
    assert columns.rows is not None
    index, G, n_pes = columns.index, tiling.n_groups, tiling.n_pes
    layout = index.streamed.layout
    partner = _partner_table(classes)[1][batch.stationary_class, 0]
    out = columns.reserve(len(base) * G)
    box = {name: column.reshape(len(base), G) for name, column in out.items()}
    row = (base * classes.n_streamed + partner) * layout.n_sets + layout.set_of_pe[batch.pe]
    for name, table in columns.rows.items():
        np.take(table, row, axis=0, out=box[name], mode="clip")  # "clip": unbuffered; every row is in range anyway
    groups = np.arange(G, dtype=np.int64)
    np.add((base * G * classes.n_streamed + partner)[:, None], (groups * classes.n_streamed)[None, :],
           out=box["stream_key"])
    np.add(((batch.image * G) * n_pes + batch.pe.astype(np.int64))[:, None], (groups * n_pes)[None, :],
           out=box["slot"])
    fibers = slice(batch.first, batch.first + len(base))
    for name, values in (("i0", stationary.fiber_vec0[fibers]), ("n_i", stationary.fiber_nvec[fibers]),
                         ("nnz_s", stationary.fiber_nnz[fibers])):
        np.copyto(box[name], values[:, None])
    live = out["nnz_t_all"] > 0
    if live.all():
        columns.commit(len(live))
        return
    keep = np.flatnonzero(live)
    for column in out.values():
        column[:len(keep)] = column[keep]
    columns.commit(len(keep))


def _stream_keys(classes: StrideClasses, n_groups: int, stationary_class: np.ndarray, block_of_fiber: np.ndarray,
                 columns: _Columns) -> tuple[_Spread, dict[str, np.ndarray]]:
    """Every cell's ``stream_key`` ((block · G + g) · n_classes + streamed class) written into the rows reserved for
    the batch's cells (all of them, inert ones too), and how the fibers' terms spread over those rows. When every
    fiber's class has as many partners, the cells form a (fiber, g, partner) box: broadcasts, with no per-cell index;
    else the walk order (``_walk_order``) and a gather per field."""
    n_partners, partners = _partner_table(classes)
    widths = n_partners[stationary_class]
    if len(widths) and widths.min() == widths.max():
        shape = (len(widths), n_groups, int(widths[0]))
        out = columns.reserve(int(np.prod(shape)))
        keys = out["stream_key"].reshape(shape)
        np.add((block_of_fiber * classes.n_streamed)[:, None, None],
               (np.arange(n_groups, dtype=np.int64) * classes.n_streamed)[None, :, None], out=keys)
        keys += partners[stationary_class, :shape[2]][:, None, :]
        return _Spread(shape=shape), out
    cells, group, b_class_of = _walk_order(stationary_class, classes, n_groups)
    fiber_of_cell = np.repeat(np.arange(len(cells), dtype=np.int64), cells)
    out = columns.reserve(len(fiber_of_cell))
    stream_key = out["stream_key"]
    _gather_into(stream_key, block_of_fiber, fiber_of_cell)
    stream_key += group
    stream_key *= classes.n_streamed
    stream_key += b_class_of
    return _Spread(fiber_of_cell=fiber_of_cell, group=group), out


@dataclass(frozen=True)
class _Spread:
    """How each fiber's terms reach its cells: a broadcast over the (fiber, g, partner) box ``shape`` of every cell, or
    a gather by each cell's fiber (``fiber_of_cell``, with its group ``group``)."""

    shape: tuple[int, int, int] | None = None
    fiber_of_cell: np.ndarray | None = None
    group: np.ndarray | None = None

    def kept(self, keep: np.ndarray, n_fibers: int) -> _Spread:
        """The spread to the cells ``keep`` (positions among the batch's cells) only: always a gather."""
        if self.shape is not None:
            _, n_groups, width = self.shape
            fiber, rest = np.divmod(keep, n_groups * width)
            return _Spread(fiber_of_cell=fiber, group=rest // width)
        assert self.fiber_of_cell is not None and self.group is not None
        return _Spread(fiber_of_cell=self.fiber_of_cell[keep], group=self.group[keep])

    def fields(self, out: np.ndarray, per_fiber: np.ndarray) -> None:
        """``out``: each cell's fiber's value."""
        if self.shape is not None:
            np.copyto(out.reshape(self.shape), per_fiber[:, None, None])
        else:
            assert self.fiber_of_cell is not None
            _gather_into(out, per_fiber, self.fiber_of_cell)

    def add(self, out: np.ndarray, per_fiber: np.ndarray) -> None:
        """``out`` plus each cell's fiber's value, in place."""
        if self.shape is not None:
            out.reshape(self.shape)[...] += per_fiber[:, None, None]
        else:
            out += per_fiber[self.fiber_of_cell]

    def slot(self, out: np.ndarray, base: np.ndarray, n_pes: int) -> None:
        """``out``: each cell's fiber's ``base`` (image · G · n_pes + pe) plus its group times ``n_pes``."""
        if self.shape is not None:
            np.add(base[:, None, None], (np.arange(self.shape[1], dtype=np.int64) * n_pes)[None, :, None],
                   out=out.reshape(self.shape))
        else:
            assert self.fiber_of_cell is not None and self.group is not None
            _gather_into(out, base, self.fiber_of_cell)
            out += self.group * n_pes


@dataclass(frozen=True)
class _StreamedIndex:
    """Where each streamed fiber key lies in ``streamed.vectors.fiber_keys``: a lookup table over the key space when
    it is at most ``_KEY_TABLE_PER_FIBER`` entries per fiber (one gather per cell; int32 positions, half the table to
    fill), else a binary search. The table sends a key without a fiber to a zero fiber appended past the last
    (``padded``: first F-vector, F-vector count, non-zeros, in the cells' dtypes), so its lookups are plain gathers."""

    streamed: StreamedOperand
    position: np.ndarray | None
    padded: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @classmethod
    def of(cls, streamed: StreamedOperand, dtypes: dict[str, np.dtype]) -> _StreamedIndex:
        layout, vectors = streamed.layout, streamed.vectors
        keys = vectors.fiber_keys
        key_space = layout.n_blocks * layout.n_classes * layout.n_sets
        if key_space > _KEY_TABLE_PER_FIBER * len(keys) + (1 << 16):
            return cls(streamed, None)
        position = np.full(key_space, len(keys), np.int32 if len(keys) < _INT32_MAX else np.int64)
        position[keys] = np.arange(len(keys))
        padded = tuple(np.append(values, 0).astype(dtypes[name]) for name, values in (
            ("f0", vectors.fiber_vec0), ("n_f", vectors.fiber_nvec), ("nnz_t", vectors.fiber_nnz)))
        return cls(streamed, position, padded)  # type: ignore[arg-type]  # three arrays

    def group_rows(self, n_groups: int, classes: StrideClasses, dtypes: dict[str, np.dtype], n_cells: int
                   ) -> dict[str, np.ndarray] | None:
        """Per (streamed image-channel, class, fetch set) row ``(base · n_classes + class) · n_sets + set``, the terms
        of the streamed fibers of its ``n_groups`` groups: unfiltered non-zeros, first F-vector, F-vectors and
        non-zeros (0 where the fetch filter emptied the fiber), (rows, G) in the cells' dtypes — the values
        ``fill`` and the unfiltered counts give, laid out so a cell's G groups are one row. None when the key space
        is larger than ``n_cells`` (the tables would cost more than the cells' lookups) or has no table."""
        layout = self.streamed.layout
        key_space = layout.n_blocks * layout.n_classes * layout.n_sets
        if self.position is None or self.padded is None or key_space > _ROW_KEYS_PER_CELL * n_cells or \
                classes.n_streamed != layout.n_classes:
            return None
        n_base, n_classes, n_sets = layout.n_blocks // n_groups, layout.n_classes, layout.n_sets
        by_group = self.position.reshape(n_base, n_groups, n_classes, n_sets).transpose(0, 2, 3, 1)
        position = by_group.reshape(-1, n_groups).astype(np.int64)
        rows = {name: values[position] for name, values in zip(("f0", "n_f", "nnz_t"), self.padded, strict=True)}
        unfiltered = self.streamed.unfiltered_nnz.reshape(n_base, n_groups, n_classes).transpose(0, 2, 1)
        rows["nnz_t_all"] = np.repeat(unfiltered.astype(dtypes["nnz_t_all"]), n_sets, axis=1).reshape(-1, n_groups)
        return rows

    def fill(self, keys: np.ndarray, out: dict[str, np.ndarray]) -> None:
        """First F-vector, F-vector count and non-zeros of each key's fiber (0 where the fetch filter emptied it)
        into ``out``'s ``f0``, ``n_f``, ``nnz_t``."""
        vectors = self.streamed.vectors
        if not len(vectors.fiber_keys):
            for name in ("f0", "n_f", "nnz_t"):
                out[name][...] = 0
        elif self.position is not None and self.padded is not None:
            idx = self.position[keys].astype(np.int64)  # once: three gathers by an int32 index would each convert it
            for name, values in zip(("f0", "n_f", "nnz_t"), self.padded, strict=True):
                _gather_into(out[name], values, idx)
        else:
            idx, found = vectors.fiber_index(keys)
            for name, values in (("f0", vectors.fiber_vec0), ("n_f", vectors.fiber_nvec), ("nnz_t", vectors.fiber_nnz)):
                out[name][...] = np.where(found, values[idx], 0)


# Streamed fiber keys per cell up to which ``_StreamedIndex.group_rows`` lays the streamed terms out in rows of the
# groups (a pass per field over the key space, then one row copied per stationary fiber) instead of looking each
# cell up. Speed only: both give the same fields (tests/dataflow/test_pairing.py). [choice] Measured here (one core,
# CPU time, best of 7, every make_cells call of a batch-1 ResNet-18 CIFAR step): SCNN's fprop / dgrad / wgrad cells
# 27.2 / 21.9 / 6.5 → 23.4 / 16.8 / 5.1 ms (0.02–0.2 keys per cell); ANT's deeper layers have 1.3–10 keys per cell
# (its fetch sets) and keep the lookups.
_ROW_KEYS_PER_CELL = 1


# Streamed-fiber lookup table entries per fiber up to which ``_StreamedIndex`` takes a table (8 bytes an entry)
# rather than a binary search of every cell's key. Speed only. [choice]
_KEY_TABLE_PER_FIBER = 16


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
