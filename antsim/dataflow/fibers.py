"""Compressed fibers and operand vectors.

A *fiber* is the coordinate-sorted list of non-zeros a PE walks for one pairing step; a *vector* is a
run of at most ``width`` consecutive non-zeros of one fiber (I for the stationary operand, F for the
streamed one) — what the F×I multiplier array takes per cycle. Every vector carries the bounding box
of its spatial coordinates, which is all the ANT screen looks at (CSR-like format, docs/sources.md §1.5).

Stationary fibers: ``(n, ch, pe, class)`` — the non-zeros of one channel of the PE's tile, ordered
``(y, x)``; for wgrad (no channel matching) ``(n, pe, class)`` ordered ``(ch, y, x)``.
Streamed fibers: ``(block, class, fetch set)`` — block = (image or 0, channel or 0, output-channel
group), ordered ``(u, v, ko)`` (``mapping.streamed_order: channel_inner``, the default: an F-vector
spans output channels, so its products never meet at one output) or ``(ko, u, v)`` (``spatial_inner``).
With the fetch filter on, fetch sets are per PE: using the row
pointers (rows ``u``) and the sorted column indices within a row (columns ``v``, a binary search
per row), the fetcher delivers to each PE only the streamed non-zeros whose row *and* column can
reach that PE's tile (interval test on the tile extent); PEs with the same reach share a set. Without the
filter there is one fetch set: SCNN broadcasts the whole block to every PE. The sets do not hold copies:
a vector is a run of an element store (the non-zeros once, plus one copy per column pattern that cuts
some), so a fiber a set keeps whole shares the unfiltered fiber's vectors and a row-cut fiber is a run
of its column copy; ``Vectors.vec_start`` may point anywhere in that store.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from antsim.dataflow.options import MappingOptions
from antsim.dataflow.tiling import StrideClasses, Tiling
from antsim.phases import PhaseProblem


@dataclass(frozen=True)
class Vectors:
    """Vectors of one operand and the elements they hold.

    Attributes:
        fiber_keys: sorted distinct fiber keys (nf,). fiber_vec0 / fiber_nvec / fiber_nnz: first
            vector, vector count and non-zero count of each fiber (nf,); streamed fibers may share vectors.
        vec_start, vec_size: first element and element count of each vector (nv,): a run of the element
            arrays (stationary: in vector order; streamed: runs may overlap — see the module docstring).
        box: (4, nv) inclusive bounding box ``lo1, hi1, lo2, hi2`` of the vectors' spatial coordinates.
        sp1, sp2: element spatial coordinates (y, x stationary; u, v streamed).
        chan: element channel (stationary ``ch``; streamed output channel ``ko``).
        image: element image index (stationary ``n``; streamed 0 unless per-image).
        value: element values (float64).
    """

    fiber_keys: np.ndarray
    fiber_vec0: np.ndarray
    fiber_nvec: np.ndarray
    fiber_nnz: np.ndarray
    vec_start: np.ndarray
    vec_size: np.ndarray
    box: np.ndarray
    sp1: np.ndarray
    sp2: np.ndarray
    chan: np.ndarray
    image: np.ndarray
    value: np.ndarray

    def fiber_index(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Position of each key in ``fiber_keys`` and whether it is present."""
        idx = np.searchsorted(self.fiber_keys, keys)
        idx_c = np.minimum(idx, max(len(self.fiber_keys) - 1, 0))
        found = (idx < len(self.fiber_keys)) & (self.fiber_keys[idx_c] == keys) if len(self.fiber_keys) else \
            np.zeros(len(keys), bool)
        return idx_c, found


@dataclass(frozen=True)
class Elements:
    """Per-element coordinates and values of one operand, in fiber order (the element half of ``Vectors``).

    Attributes:
        sp1, sp2: spatial coordinates (y, x stationary; u, v streamed). chan: channel (stationary ``ch``;
        streamed output channel). image: image index. value: the values (float64).
    """

    sp1: np.ndarray
    sp2: np.ndarray
    chan: np.ndarray
    image: np.ndarray
    value: np.ndarray


def pack_vectors(fiber: np.ndarray, elements: Elements, width: int) -> Vectors:
    """Cut fibers into vectors of ≤ ``width`` consecutive elements.

    Args:
        fiber: fiber key of each element, sorted ascending (elements already in fiber order).
        elements: per-element coordinates and values in the same order.
        width: vector width (F or I).
    """
    new_fiber = np.ones(len(fiber), bool)
    np.not_equal(fiber[1:], fiber[:-1], out=new_fiber[1:])
    fiber_start = np.flatnonzero(new_fiber)
    del new_fiber
    fiber_nnz = np.diff(np.append(fiber_start, len(fiber)))
    vec0, nvec, vec_start, vec_size = cut_segments(fiber_nnz, width)
    return Vectors(fiber[fiber_start].astype(np.int64), vec0, nvec, fiber_nnz.astype(np.int64), vec_start, vec_size,
                   _boxes(elements.sp1, elements.sp2, vec_start), elements.sp1, elements.sp2, elements.chan,
                   elements.image, elements.value)


def cut_segments(lengths: np.ndarray, width: int, starts: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Vectors of ≤ ``width`` consecutive elements of segments of ``lengths`` elements from ``starts``
    (default: the segments laid end to end).

    Returns:
        first vector and vector count of each segment; first element and size of each vector (int64).
        Work is per segment and per vector, not per element.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    nvec = -(-lengths // width)
    vec0 = np.cumsum(nvec) - nvec
    seg_start = np.cumsum(lengths) - lengths if starts is None else np.asarray(starts, dtype=np.int64)
    # Vector i of segment s starts at seg_start[s] + (i − vec0[s]) · width: i · width plus one offset per segment.
    along = np.arange(int(nvec.sum()), dtype=np.int64)
    along *= width
    along += np.repeat(seg_start - vec0 * width, nvec)
    vec_size = np.repeat(seg_start + lengths, nvec)
    vec_size -= along
    np.minimum(vec_size, width, out=vec_size)
    return vec0, nvec, along, vec_size


def _boxes(sp1: np.ndarray, sp2: np.ndarray, vec_start: np.ndarray) -> np.ndarray:
    if len(vec_start) == 0:
        return np.zeros((4, 0), dtype=np.int64)
    return np.stack([np.minimum.reduceat(sp1, vec_start), np.maximum.reduceat(sp1, vec_start),
                     np.minimum.reduceat(sp2, vec_start), np.maximum.reduceat(sp2, vec_start)])


def nonzero_mask(array: np.ndarray, dense: bool) -> np.ndarray:
    """Which elements the mapping treats as non-zeros (all of them on a dense design)."""
    return np.ones(array.shape, bool) if dense else array != 0


def _used_stationary(classes: StrideClasses, stationary_tensor: np.ndarray, dense: bool
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Coordinates ``n, ch, y, x`` and stride class of the stationary non-zeros that pair with something."""
    n, ch, y, x = np.nonzero(nonzero_mask(stationary_tensor, dense))
    cls = classes.stationary_class(y, x)
    used = np.isin(cls, [a for a, _ in classes.groups])
    return n[used], ch[used], y[used], x[used], cls[used]


def stationary_counts(tiling: Tiling, classes: StrideClasses, stationary_tensor: np.ndarray) -> np.ndarray:
    """(N, n_pes) stationary non-zeros of each image's tile on each PE (what ``stationary_vectors``
    would hold), without building the vectors: per position, its non-zero channels, summed over each PE's
    positions in a stride class that pairs with something."""
    n_images, _, Ys, Xs = stationary_tensor.shape
    y, x = (a.ravel() for a in np.meshgrid(np.arange(Ys), np.arange(Xs), indexing="ij"))
    used = np.flatnonzero(np.isin(classes.stationary_class(y, x), [a for a, _ in classes.groups]))
    pe = tiling.pe_of_stationary().ravel()[used]
    order = np.argsort(pe, kind="stable")
    pes, start = np.unique(pe[order], return_index=True)
    per_position = np.count_nonzero(stationary_tensor, axis=1).reshape(n_images, Ys * Xs)
    counts = np.zeros((n_images, tiling.n_pes), np.int64)
    if len(pes):
        counts[:, pes] = np.add.reduceat(per_position[:, used[order]], start, axis=1)
    return counts


def stationary_vectors(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses, stationary_tensor: np.ndarray,
                       dense: bool, width: int) -> Vectors:
    """I-vectors of the stationary plane (N, Cs, Ys, Xs), fibers as in the module docstring.

    Elements in stride classes that pair with nothing are dropped (never loaded).
    """
    n, ch, y, x, cls = _used_stationary(classes, stationary_tensor, dense)
    pe = tiling.pe_of_stationary()[y, x]
    Cs = problem.stationary_shape[1] if problem.channel_matched else 1
    ch_key = ch if problem.channel_matched else np.zeros_like(ch)
    fiber = ((n * Cs + ch_key) * tiling.n_pes + pe) * classes.n_stationary + cls
    order = np.argsort(fiber, kind="stable")
    values = np.asarray(stationary_tensor, dtype=np.float64)[n, ch, y, x]
    return pack_vectors(fiber[order], Elements(y[order], x[order], ch[order], n[order], values[order]), width)


@dataclass(frozen=True)
class StreamedLayout:
    """How streamed fiber keys decode: ``((block·n_classes + class)·n_sets + fetch set)``, block =
    ``(nt·Ct + ct)·n_groups + g``; ``set_of_pe[pe]`` is the fetch set feeding each PE (all 0 unfiltered)."""

    n_blocks: int
    n_classes: int
    n_sets: int
    set_of_pe: np.ndarray

    def key(self, block: np.ndarray, cls: np.ndarray, fetch_set: np.ndarray) -> np.ndarray:
        # Built in place on one int64 copy: a dense design keys ~10^7 elements, ~100 MB per temporary.
        out = np.array(block, dtype=np.int64)
        out *= self.n_classes
        out += cls
        out *= self.n_sets
        out += fetch_set
        return out


@dataclass(frozen=True)
class StreamedOperand:
    """F-vectors of the streamed operand plus the per-block counts the accounting needs.

    Attributes:
        vectors: F-vectors after the fetch filter. layout: key layout.
        unfiltered_nnz: non-zeros per (block, class) before filtering, shape (n_blocks, n_classes).
        fetched_nnz: non-zeros per block that at least one PE row receives (DRAM reads), (n_blocks,).
    """

    vectors: Vectors
    layout: StreamedLayout
    unfiltered_nnz: np.ndarray
    fetched_nnz: np.ndarray


def reach_tables(problem: PhaseProblem, tiling: Tiling) -> tuple[np.ndarray, np.ndarray]:
    """``rows[i, u]``: streamed row ``u`` can land a valid output from PE row ``i``'s tiles;
    ``cols[j, v]`` likewise for PE column ``j`` (interval tests on the tile extent — conservative)."""
    out = []
    for dim, (lo, hi), n_u in ((problem.dims[0], tiling.row_extents(), problem.streamed_shape[3]),
                               (problem.dims[1], tiling.col_extents(), problem.streamed_shape[4])):
        u = np.arange(n_u)
        o_lo, o_hi = dim.reach(lo[:, None], hi[:, None], u[None, :], u[None, :])
        out.append((o_lo <= o_hi) & (lo <= hi)[:, None])
    return out[0], out[1]


def _reach_patterns(problem: PhaseProblem, tiling: Tiling) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct row and column reach patterns of the PE grid and the fetch set of each PE
    (set ``a · n_col_patterns + b`` for row pattern a, column pattern b)."""
    rows, cols = reach_tables(problem, tiling)
    row_pat, row_cls = np.unique(rows, axis=0, return_inverse=True)
    col_pat, col_cls = np.unique(cols, axis=0, return_inverse=True)
    pe = np.arange(tiling.n_pes)
    set_of_pe = row_cls.ravel()[pe // tiling.cols] * len(col_pat) + col_cls.ravel()[pe % tiling.cols]
    return row_pat, col_pat, set_of_pe.astype(np.int64)


@dataclass(frozen=True)
class _BaseFibers:
    """The streamed non-zeros sorted once into their unfiltered fibers ``(block, class)``, each fiber in the
    streamed order; ``fiber`` is each element's ``block · n_classes + class`` (ascending), ``run_start`` and
    ``run_length`` the first element and size of each non-empty fiber."""

    fiber: np.ndarray
    u: np.ndarray
    v: np.ndarray
    out_channel: np.ndarray
    image: np.ndarray
    value: np.ndarray
    run_start: np.ndarray
    run_length: np.ndarray


def _base_fibers(tiling: Tiling, classes: StrideClasses, streamed_tensor: np.ndarray, options: MappingOptions
                 ) -> _BaseFibers:
    """The streamed non-zeros of (Nt, Ct, Ko, U, V) in unfiltered fiber order, without a sort: the non-zero
    mask, padded with zeros to whole output-channel groups and whole stride phases, is laid out as
    (Nt, Ct, G, phase_u, phase_v, U', V', Kc) — (…, Kc, U', V') for ``spatial_inner`` — whose C order is
    block, class, then (u, v, ko) (or (ko, u, v)) within the fiber."""
    Nt, Ct, n_ko, n_u, n_v = streamed_tensor.shape
    (mh, mw), kc, n_groups = classes.mt, tiling.kc, tiling.n_groups
    rows, cols = -(-n_u // mh), -(-n_v // mw)
    mask = nonzero_mask(streamed_tensor, options.dense)
    if mask.shape != (Nt, Ct, n_groups * kc, rows * mh, cols * mw):
        padded = np.zeros((Nt, Ct, n_groups * kc, rows * mh, cols * mw), bool)
        padded[:, :, :n_ko, :n_u, :n_v] = mask
        mask = padded
    grid = mask.reshape(Nt, Ct, n_groups, kc, rows, mh, cols, mw)
    axes = (0, 1, 2, 5, 7, 4, 6, 3) if options.channel_inner else (0, 1, 2, 5, 7, 3, 4, 6)
    fiber, rest = np.divmod(np.flatnonzero(grid.transpose(axes)), rows * cols * kc)
    del mask, grid
    # Within a fiber, (u', v', ko) of each position from three small tables instead of per-element divisions;
    # the block and class terms once per distinct fiber, repeated over its run (fibers come sorted).
    position = np.arange(rows * cols * kc)
    if options.channel_inner:
        u_of, rest_of = np.divmod(position, cols * kc)
        v_of, k_of = np.divmod(rest_of, kc)
    else:
        k_of, rest_of = np.divmod(position, rows * cols)
        u_of, v_of = np.divmod(rest_of, cols)
    starts, lengths = _runs(fiber)
    block, cls = np.divmod(fiber[starts], classes.n_streamed)
    image_channel, group = np.divmod(block, n_groups)
    u = u_of[rest]
    u *= mh
    u += np.repeat(cls // mw, lengths)
    v = v_of[rest]
    v *= mw
    v += np.repeat(cls % mw, lengths)
    out_channel = k_of[rest]
    out_channel += np.repeat(group * kc, lengths)
    image = np.repeat(image_channel // Ct, lengths)
    image_channel = np.repeat(image_channel, lengths)
    return _BaseFibers(fiber, u, v, out_channel, image, _values_at(streamed_tensor, image_channel, out_channel, u, v),
                       starts, lengths)


def _values_at(tensor: np.ndarray, image_channel: np.ndarray, out_channel: np.ndarray, u: np.ndarray, v: np.ndarray
               ) -> np.ndarray:
    """``tensor[n, c, ko, u, v]`` as float64 for ``image_channel = n · Ct + c``: one flat take when the tensor is
    C-contiguous (~4× faster than a 5-index gather), else the gather (no copy of a transposed view)."""
    Ct, n_ko, n_u, n_v = tensor.shape[1:]
    if not tensor.flags.c_contiguous:
        image, channel = np.divmod(image_channel, Ct)
        return np.asarray(tensor[image, channel, out_channel, u, v], dtype=np.float64)
    flat = (image_channel * n_ko + out_channel) * n_u
    flat += u
    flat *= n_v
    flat += v
    return np.asarray(tensor.ravel()[flat], dtype=np.float64)


@dataclass(frozen=True)
class _SetPieces:
    """Where each fetch set's fibers lie. A set's fiber is its unfiltered fiber filtered by the set's reach,
    in the same order: a set that keeps every element shares the unfiltered fiber's vectors; otherwise its
    fiber is a run of consecutive elements of the element store, which holds the base elements, one copy of
    them per column pattern that cuts some (a row pattern that is an interval keeps consecutive elements of
    a fiber ordered (u, v, ko)), and copies of what the other row patterns keep (``spatial_inner``, or
    a row pattern with a hole).

    Attributes:
        key: streamed fiber key of every non-empty (base fiber, set), ascending — see ``StreamedLayout``.
        nnz: its non-zeros. whole: the base fiber it keeps whole (sharing its vectors), or −1.
        start: first element (in the store) of its run when not whole.
        store: base-order element index of every element of the store; None when the store is the base.
    """

    key: np.ndarray
    nnz: np.ndarray
    whole: np.ndarray
    start: np.ndarray
    store: np.ndarray | None


def _runs(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First index and length of each run of equal values in ``sorted_keys``."""
    if len(sorted_keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    start = np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1])))
    return start, np.diff(np.append(start, len(sorted_keys)))


def _interval(pattern: np.ndarray) -> tuple[int, int] | None:
    """``(lo, hi)`` when the True entries of ``pattern`` are exactly ``lo..hi``, else None."""
    true = np.flatnonzero(pattern)
    return (int(true[0]), int(true[-1])) if len(true) and true[-1] - true[0] + 1 == len(true) else None


class _Store:
    """The element store under construction: base-order element indices, appended piece by piece."""

    def __init__(self, n_base: int) -> None:
        self.parts: list[np.ndarray] = [np.arange(n_base, dtype=np.int64)]
        self.size = n_base

    def append(self, elements: np.ndarray) -> int:
        """Append ``elements``; return where they start in the store."""
        self.parts.append(elements)
        self.size += len(elements)
        return self.size - len(elements)


def _row_table(fiber: np.ndarray, u: np.ndarray, n_fibers: int, n_u: int) -> np.ndarray:
    """(n_fibers, n_u + 1): per base fiber, where in a column selection (elements with fibers ``fiber`` and
    rows ``u``, ordered by fiber, then u first) its first element with row ≥ r lies, for r = 0..n_u."""
    table = np.zeros((n_fibers, n_u + 1), np.int64)
    np.cumsum(np.bincount(fiber * n_u + u, minlength=n_fibers * n_u).reshape(n_fibers, n_u), axis=1,
              out=table[:, 1:])
    table += (np.cumsum(table[:, -1]) - table[:, -1])[:, None]
    return table


def _filtered_runs(base: _BaseFibers, column: np.ndarray, row: np.ndarray, store: _Store
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per fiber of a column selection, its elements whose row ``row`` keeps, copied into the store (the
    general case: any order, any row pattern). Returns fiber, first element in the store, count."""
    kept = column[row[base.u[column]]]
    start, count = _runs(base.fiber[kept])
    return base.fiber[kept[start]], store.append(kept) + start, count


def _set_pieces(base: _BaseFibers, unfiltered: np.ndarray, row_pat: np.ndarray, col_pat: np.ndarray,
                channel_inner: bool) -> _SetPieces:
    """Each fetch set ``a · n_col_patterns + b``'s fibers (row pattern a on ``u``, column pattern b on ``v``):
    one column selection per column pattern (the base itself when it cuts nothing), then per row pattern
    the run of each fiber of that selection whose rows it keeps — consecutive when the fibers are ordered
    (u, v, ko) and the row pattern is an interval (``_row_table``), else copied (``_filtered_runs``)."""
    n_u, n_fibers = row_pat.shape[1], len(unfiltered)
    store = _Store(len(base.fiber))
    pieces = _PieceTable(len(row_pat) * len(col_pat), n_fibers, len(base.fiber))
    for b in range(len(col_pat)):
        in_column = col_pat[b, base.v]
        table: np.ndarray | None = None
        if in_column.all():
            column, offset = None, 0
        else:
            column = np.flatnonzero(in_column)
            offset = store.append(column)
        for a in range(len(row_pat)):
            rows = _interval(row_pat[a]) if channel_inner else None
            if rows is None:
                fiber, first, count = _filtered_runs(base, store.parts[0] if column is None else column,
                                                     row_pat[a], store)
                pieces.add(a * len(col_pat) + b, count, first, fiber)
                continue
            if table is None:
                table = _row_table(*((base.fiber, base.u) if column is None else
                                     (base.fiber[column], base.u[column])), n_fibers, n_u)
            first = table[:, rows[0]]
            pieces.add(a * len(col_pat) + b, table[:, rows[1] + 1] - first, first + offset)
    key, nnz, first = pieces.assemble()
    fiber = key // pieces.n_sets
    return _SetPieces(key, nnz, np.where(nnz == unfiltered[fiber], fiber, -1), first,
                      np.concatenate(store.parts) if len(store.parts) > 1 else None)


# Fetch-set fibers per streamed non-zero up to which ``_PieceTable`` lays (base fiber, set) counts out as dense
# (n_fibers × n_sets) tables (one pass, no sort); sparser layouts (many empty fibers) collect each set's
# non-empty fibers and merge them by a sort. Speed and memory only: the same arrays. [choice] 8 × 16 bytes per
# element at most (and 2^16 (fiber, set) cells whatever the elements).
_DENSE_PIECES_PER_ELEMENT = 8
_DENSE_PIECES_MIN = 1 << 16


class _PieceTable:
    """The (set fiber) pieces of ``_set_pieces`` under construction: per fetch set, the count and first store
    element of each base fiber's kept run, for every base fiber or for the listed ones."""

    def __init__(self, n_sets: int, n_fibers: int, n_elements: int) -> None:
        self.n_sets = n_sets
        self.dense = n_sets * n_fibers <= _DENSE_PIECES_PER_ELEMENT * n_elements + _DENSE_PIECES_MIN
        if self.dense:
            self.nnz = np.zeros((n_fibers, n_sets), np.int64)
            self.first = np.zeros((n_fibers, n_sets), np.int64)
        self.pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, fetch_set: int, count: np.ndarray, first: np.ndarray, fiber: np.ndarray | None = None) -> None:
        """Set ``fetch_set``'s runs: ``count`` elements from ``first`` for the base fibers ``fiber`` (default:
        every base fiber, empty runs included)."""
        if self.dense:
            where = slice(None) if fiber is None else fiber
            self.nnz[where, fetch_set], self.first[where, fetch_set] = count, first
            return
        if fiber is None:
            fiber = np.flatnonzero(count)
            count, first = count[fiber], first[fiber]
        self.pieces.append((fiber * self.n_sets + fetch_set, count, first))

    def assemble(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Key ``fiber · n_sets + set``, count and first store element of every non-empty set fiber, by key."""
        if self.dense:
            key = np.flatnonzero(self.nnz)
            return key, self.nnz.ravel()[key], self.first.ravel()[key]
        if not self.pieces:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        key, nnz, first = (np.concatenate(x).astype(np.int64, copy=False) for x in zip(*self.pieces, strict=True))
        order = np.argsort(key, kind="stable")  # the sets' keys are each ascending: a merge of sorted runs
        return key[order], nnz[order], first[order]


def streamed_vectors(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses, streamed_tensor: np.ndarray,
                     options: MappingOptions, width: int) -> StreamedOperand:
    """F-vectors of the canonical streamed operand (Nt, Ct, Ko, U, V) under ``options`` (``dense``: every
    element a non-zero; ``fetch_filter``; ``channel_inner``: fibers ordered (u, v, ko)).

    The non-zeros are laid out once in unfiltered fiber order (``_base_fibers``), not copied per fetch set:
    a set's fiber that keeps every element of its unfiltered fiber points at that fiber's vectors, and
    the others are runs of an element store that adds one copy per cutting column pattern
    (``_set_pieces``). Every PE sees the vectors it saw when each set held its own sorted copy
    (``tests/dataflow/test_fibers.py`` compares them with that representation).
    """
    Nt, Ct = streamed_tensor.shape[:2]
    n_blocks, n_classes = Nt * Ct * tiling.n_groups, classes.n_streamed
    base = _base_fibers(tiling, classes, streamed_tensor, options)
    unfiltered = np.zeros(n_blocks * n_classes, np.int64)
    unfiltered[base.fiber[base.run_start]] = base.run_length
    if options.fetch_filter:
        row_pat, col_pat, set_of_pe = _reach_patterns(problem, tiling)
        reached = np.asarray(row_pat.any(axis=0))[base.u] & np.asarray(col_pat.any(axis=0))[base.v]  # some set gets it
        fetched = np.bincount(base.fiber[reached] // n_classes, minlength=n_blocks)
    else:
        row_pat, col_pat = np.ones((1, streamed_tensor.shape[3]), bool), np.ones((1, streamed_tensor.shape[4]), bool)
        set_of_pe = np.zeros(tiling.n_pes, np.int64)
        fetched = np.bincount(base.fiber // n_classes, minlength=n_blocks)
    layout = StreamedLayout(n_blocks, n_classes, len(row_pat) * len(col_pat), set_of_pe)
    pieces = _set_pieces(base, unfiltered, row_pat, col_pat, options.channel_inner)
    vectors = _shared_vectors(base, pieces, width, options.channel_inner)
    return StreamedOperand(vectors, layout, unfiltered.reshape(n_blocks, n_classes), fetched.astype(np.int64))


def _shared_vectors(base: _BaseFibers, sets: _SetPieces, width: int, channel_inner: bool) -> Vectors:
    """The vectors of the base fibers some set keeps whole, then of every other set fiber (a run of the
    element store); each set key's fiber table points at its vectors."""
    starts, lengths = base.run_start, base.run_length
    kept_whole = np.zeros(int(base.fiber[-1]) + 1 if len(base.fiber) else 0, bool)  # per base fiber id
    kept_whole[sets.whole[sets.whole >= 0]] = True
    run_of_fiber = np.full(len(kept_whole), -1, np.int64)
    run_of_fiber[base.fiber[starts]] = np.arange(len(starts))
    run = run_of_fiber[np.flatnonzero(kept_whole)]  # base runs shared, ascending
    own = sets.whole < 0
    vec0, nvec, vec_start, vec_size = cut_segments(np.concatenate((lengths[run], sets.nnz[own])), width,
                                                   np.concatenate((starts[run], sets.start[own])))
    shared_rank = np.cumsum(kept_whole) - 1
    segment = np.where(own, len(run) + np.cumsum(own) - 1, shared_rank[np.maximum(sets.whole, 0)])
    sp1, sp2, chan, image, value = base.u, base.v, base.out_channel, base.image, base.value
    if sets.store is not None:
        sp1, sp2, chan, value = (a[sets.store] for a in (sp1, sp2, chan, value))
        # One image (weights, or a batch of one): every element's image is 0, no gather needed.
        image = image[sets.store] if image.any() else np.zeros(len(sets.store), image.dtype)
    return Vectors(sets.key, vec0[segment], nvec[segment], sets.nnz, vec_start, vec_size,
                   _vector_boxes(sp1, sp2, vec_start, vec_size, width, channel_inner), sp1, sp2, chan, image, value)


def _vector_boxes(sp1: np.ndarray, sp2: np.ndarray, vec_start: np.ndarray, vec_size: np.ndarray, width: int,
                  sp1_ascending: bool) -> np.ndarray:
    """``_boxes`` for vectors anywhere in the element arrays (runs of ``vec_size`` from ``vec_start``): min and
    max over each vector's element ``j`` (its last element where ``j`` is past its end), one gather per
    ``j < width``; with ``sp1_ascending`` (fibers ordered (u, v, ko)) sp1's are its first and last elements."""
    last = vec_start + vec_size - 1
    box = np.empty((4, len(vec_start)), np.int64)
    box[0], box[2] = sp1[vec_start], sp2[vec_start]
    box[1], box[3] = (sp1[last] if sp1_ascending else box[0]), box[2]
    looped = ((2, sp2),) if sp1_ascending else ((0, sp1), (2, sp2))
    for j in range(1, width):
        at = np.minimum(vec_start + j, last)
        for row, coordinate in looped:
            element = coordinate[at]
            np.minimum(box[row], element, out=box[row])
            np.maximum(box[row + 1], element, out=box[row + 1])
    return box


def dense_streamed_fibers(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses, width: int,
                          fetch_filter: bool) -> StreamedOperand:
    """The streamed operand of a dense design at fiber level, without building its elements.

    A dense design counts every element of the streamed operand (Nt, Ct, Ko, U, V) as a non-zero, so a fiber
    (block, class, fetch set) holds every ``(u, v)`` of its class that reaches its set, for every output
    channel of its group: its size is a count over the ``U × V`` grid times the group's channels, and its
    F-vectors number ``ceil(size / width)`` (vectors are runs of consecutive elements of one fiber).
    That is all the fast dense accounting reads (cells, pair counts, deliveries, DRAM reads); the
    returned vectors hold no elements, vector boxes or values — the ``exact`` path builds them.
    """
    Nt, Ct, Ko, U, V = problem.streamed_shape
    u, v = (a.ravel() for a in np.meshgrid(np.arange(U), np.arange(V), indexing="ij"))
    cls = classes.streamed_class(u, v)
    n_cls = classes.n_streamed
    if fetch_filter:
        row_pat, col_pat, set_of_pe = _reach_patterns(problem, tiling)
        member = (row_pat[:, None, u] & col_pat[None, :, v]).reshape(-1, len(u))  # (set, position)
    else:
        member, set_of_pe = np.ones((1, len(u)), bool), np.zeros(tiling.n_pes, np.int64)
    n_sets = len(member)
    per_set = np.stack([np.bincount(cls[in_set], minlength=n_cls) for in_set in member], axis=1)  # (class, set)
    group_sizes = np.array([len(range(Ko)[tiling.group_slice(g, Ko)]) for g in range(tiling.n_groups)])
    per_block_group = np.tile(group_sizes, Nt * Ct)  # block = (nt·Ct + ct)·G + g
    n_blocks = len(per_block_group)
    nnz = per_block_group[:, None, None] * per_set[None, :, :]  # (block, class, set)
    keys = np.flatnonzero(nnz.ravel() > 0).astype(np.int64)  # ((block·n_cls + cls)·n_sets + set), ascending
    fiber_nnz = nnz.ravel()[keys].astype(np.int64)
    fiber_nvec = -(-fiber_nnz // width)
    empty = np.zeros(0, np.int64)
    vectors = Vectors(keys, np.cumsum(fiber_nvec) - fiber_nvec, fiber_nvec, fiber_nnz, empty, empty,
                      np.zeros((4, 0), np.int64), empty, empty, empty, empty, np.zeros(0))
    layout = StreamedLayout(n_blocks, n_cls, n_sets, set_of_pe)
    unfiltered = per_block_group[:, None] * np.bincount(cls, minlength=n_cls)[None, :]
    fetched = per_block_group * int(member.any(axis=0).sum())
    return StreamedOperand(vectors, layout, unfiltered.astype(np.int64), fetched.astype(np.int64))
