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
filter there is one fetch set: SCNN broadcasts the whole block to every PE. A vector is a run of an
element store (the non-zeros of the unfiltered fibers some set keeps whole, once, plus a copy of what each
set that cuts a channel keeps of it), so a set that keeps a channel whole shares its unfiltered fibers'
vectors; ``Vectors.vec_start`` may point anywhere in that store. Given the stationary vectors, only the
fibers some stationary fiber pairs with are built; ``StreamedOperand.delivered_nnz`` still counts every
fiber.
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
        delivered_nnz: non-zeros each fetch set receives of each block, (n_blocks, n_sets) — over every fiber,
            also those ``vectors`` leaves out because no stationary fiber pairs with them.
    """

    vectors: Vectors
    layout: StreamedLayout
    unfiltered_nnz: np.ndarray
    fetched_nnz: np.ndarray
    delivered_nnz: np.ndarray


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
    row_pat, row_cls = _unique_rows(rows)
    col_pat, col_cls = _unique_rows(cols)
    pe = np.arange(tiling.n_pes)
    set_of_pe = row_cls.ravel()[pe // tiling.cols] * len(col_pat) + col_cls.ravel()[pe % tiling.cols]
    return row_pat, col_pat, set_of_pe.astype(np.int64)


def _unique_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(table, axis=0, return_inverse=True)`` for a boolean table of a few rows (a PE grid's row or
    column reach patterns): rows compared as byte strings, whose order is numpy's row order for booleans
    (False < True, column by column); ~10× faster than the structured sort on tables this small."""
    keys = [row.tobytes() for row in np.ascontiguousarray(table, dtype=bool)]
    distinct = sorted(set(keys))
    rank = {key: index for index, key in enumerate(distinct)}
    inverse = np.array([rank[key] for key in keys], dtype=np.int64)
    return table[[keys.index(key) for key in distinct]].astype(bool), inverse


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
    """The streamed non-zeros of (Nt, Ct, Ko, U, V) in unfiltered fiber order, without a sort: the tensor,
    padded with zeros to whole output-channel groups and whole stride phases, is copied once laid out as
    (Nt, Ct, G, phase_u, phase_v, U', V', Kc) — (…, Kc, U', V') for ``spatial_inner`` — whose C order is
    block, class, then (u, v, ko) (or (ko, u, v)) within the fiber; its non-zeros and their values are read
    from that copy (a dense design takes every element of the unpadded tensor)."""
    Nt, Ct, n_ko, n_u, n_v = streamed_tensor.shape
    (mh, mw), kc, n_groups = classes.mt, tiling.kc, tiling.n_groups
    rows, cols = -(-n_u // mh), -(-n_v // mw)
    axes = (0, 1, 2, 5, 7, 4, 6, 3) if options.channel_inner else (0, 1, 2, 5, 7, 3, 4, 6)
    laid_out = _fiber_layout(np.asarray(streamed_tensor), (n_groups, kc, rows, mh, cols, mw), axes)
    if options.dense:
        element = np.flatnonzero(_fiber_layout(np.ones(streamed_tensor.shape, bool), (n_groups, kc, rows, mh, cols,
                                                                                    mw), axes))
    else:
        element = np.flatnonzero(laid_out != 0)  # ~2× faster than a nonzero scan of floats
    value = laid_out[element].astype(np.float64)
    del laid_out
    # ``divmod`` by the fiber length: a floor division (numpy's divide-by-scalar path) and a multiply-subtract,
    # ~2× faster than ``np.divmod``'s per-element one; the same integers (the indices are non-negative).
    fiber = element // (rows * cols * kc)
    rest = fiber * (rows * cols * kc)
    np.subtract(element, rest, out=rest)
    del element
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
    v = v_of[rest]
    if mh > 1:  # one stride phase per dimension: every class offset is 0
        u *= mh
        u += np.repeat(cls // mw, lengths)
    if mw > 1:
        v *= mw
        v += np.repeat(cls % mw, lengths)
    out_channel = k_of[rest]
    out_channel += np.repeat(group * kc, lengths)
    image = np.repeat(image_channel // Ct, lengths) if Nt > 1 else np.zeros(len(fiber), np.int64)
    return _BaseFibers(fiber, u, v, out_channel, image, value, starts, lengths)


def _fiber_layout(tensor: np.ndarray, split: tuple[int, ...], axes: tuple[int, ...]) -> np.ndarray:
    """``tensor`` (Nt, Ct, Ko, U, V), zero-padded to ``G·Kc × U'·mh × V'·mw`` (``split`` = G, Kc, U', mh, V', mw),
    its axes split and reordered by ``axes``, as one flat C-ordered copy."""
    n_groups, kc, rows, mh, cols, mw = split
    Nt, Ct, n_ko, n_u, n_v = tensor.shape
    if tensor.shape != (Nt, Ct, n_groups * kc, rows * mh, cols * mw):
        padded = np.zeros((Nt, Ct, n_groups * kc, rows * mh, cols * mw), tensor.dtype)
        padded[:, :, :n_ko, :n_u, :n_v] = tensor
        tensor = padded
    return np.ascontiguousarray(tensor.reshape(Nt, Ct, n_groups, kc, rows, mh, cols, mw).transpose(axes)).ravel()


def _runs(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First index and length of each run of equal values in ``sorted_keys``."""
    if len(sorted_keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    start = np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1])))
    return start, np.diff(np.append(start, len(sorted_keys)))


def _concatenated_ranges(first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """``first[k], …, first[k] + count[k] − 1`` for every k, end to end (int64)."""
    along = np.arange(int(count.sum()), dtype=np.int64)
    along += np.repeat(first - (np.cumsum(count) - count), count)
    return along


@dataclass(frozen=True)
class _Reach:
    """Which streamed positions ``u · V + v`` each fetch set receives (``member``, (n_sets, U·V)), from the row and
    column reach patterns."""

    member: np.ndarray
    row_pat: np.ndarray
    col_pat: np.ndarray

    @classmethod
    def of(cls, row_pat: np.ndarray, col_pat: np.ndarray) -> _Reach:
        n_u, n_v = row_pat.shape[1], col_pat.shape[1]
        member = (row_pat[:, None, :, None] & col_pat[None, :, None, :]).reshape(-1, n_u * n_v)
        return cls(member, row_pat, col_pat)

    def row_intervals(self) -> np.ndarray:
        """(n_row_patterns, 2): ``lo, hi + 1`` of each row pattern whose rows are exactly ``lo..hi``, else −1."""
        out = np.full((len(self.row_pat), 2), -1, np.int64)
        for a, pattern in enumerate(self.row_pat):
            true = np.flatnonzero(pattern)
            if len(true) and true[-1] - true[0] + 1 == len(true):
                out[a] = true[0], true[-1] + 1
        return out

    def position(self, base: _BaseFibers) -> np.ndarray:
        """Each base element's position ``u · V + v``."""
        position = base.u * self.col_pat.shape[1]
        position += base.v
        return position

    def counts(self, base: _BaseFibers, n_blocks: int, n_classes: int) -> np.ndarray:
        """(n_blocks, U·V): the non-zeros of each block at each position."""
        n_positions = self.member.shape[1]
        key = np.repeat(base.fiber[base.run_start] // n_classes * n_positions, base.run_length)
        key += self.position(base)
        return np.bincount(key, minlength=n_blocks * n_positions).reshape(n_blocks, n_positions)

    def per_set(self, counts: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """``counts`` (rows × positions) summed over the positions each set keeps (``keep``: (n_sets, U·V)),
        (rows, n_sets): a float64 product, exact for integer sums below 2^53 (no product when every set keeps
        every position, or none)."""
        if not keep.any():
            return np.zeros((len(counts), len(keep)), np.int64)
        if keep.all():
            return np.repeat(counts.sum(axis=1, dtype=np.int64)[:, None], len(keep), axis=1)
        return np.rint(counts.astype(np.float64) @ keep.T.astype(np.float64)).astype(np.int64)


def _wanted_pairs(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses, stationary: Vectors | None,
                  set_of_pe: np.ndarray, n_sets: int) -> np.ndarray:
    """(Nt·Ct, n_sets): True where a stationary fiber can pair with the streamed image-channel ``nt · Ct + ct`` on a
    PE of the set — the blocks of every cell ``pairing.make_cells`` builds (all of them without ``stationary``)."""
    Nt, Ct = problem.streamed_shape[:2]
    if stationary is None:
        return np.ones((Nt * Ct, n_sets), bool)
    rest, pe = np.divmod(stationary.fiber_keys // classes.n_stationary, tiling.n_pes)
    image, channel = np.divmod(rest, problem.stationary_shape[1] if problem.channel_matched else 1)
    image_channel = (image if Nt > 1 else 0) * Ct + (channel if Ct > 1 else 0)
    wanted = np.zeros((Nt * Ct, n_sets), bool)
    wanted[image_channel, set_of_pe[pe]] = True
    return wanted


@dataclass(frozen=True)
class _Segments:
    """The runs of the element store that hold fibers: ``start`` and ``length`` of each (store elements), the
    fiber ``key`` of every fiber and the ``segment`` holding it (several keys may share one), and ``store``: the
    base-order index of each store element (the base fibers some set keeps whole, then the copies; None when the
    store is the base itself)."""

    start: np.ndarray
    length: np.ndarray
    key: np.ndarray
    segment: np.ndarray
    store: np.ndarray | None


def _segments(base: _BaseFibers, reach: _Reach, wanted: np.ndarray, cuts: np.ndarray, fibers_per_channel: int,
              channel_inner: bool) -> _Segments:
    """Each wanted (image-channel, set)'s fibers: its base fibers themselves when the set keeps every position
    they hold (shared by every such set), else (``cuts``: (image-channel, set) pairs where the set misses a
    position the channel holds) a copy of the elements the set keeps, in base order."""
    image_channel, fetch_set = np.nonzero(wanted)
    n_sets = len(reach.member)
    bounds = np.arange(len(wanted) + 1, dtype=np.int64) * fibers_per_channel
    run_fiber = base.fiber[base.run_start]
    run_bound = np.searchsorted(run_fiber, bounds)
    element_bound = np.searchsorted(base.fiber, bounds)
    cut = cuts[image_channel, fetch_set]
    # Whole: every base fiber of the channel, shared; the vectors of a base fiber are cut once.
    whole_runs = run_bound[image_channel[~cut] + 1] - run_bound[image_channel[~cut]]
    run = _concatenated_ranges(run_bound[image_channel[~cut]], whole_runs)
    used = np.zeros(len(run_fiber), bool)
    used[run] = True
    whole_key = run_fiber[run] * n_sets + np.repeat(fetch_set[~cut], whole_runs)
    # Cut: the channel's elements at the positions the set keeps, copied (runs of equal keys are its fibers).
    element, element_key = _kept_elements(base, reach, image_channel[cut], fetch_set[cut],
                                          (element_bound, run_bound), channel_inner)
    seg_start, seg_length = _runs(element_key)
    used_runs = np.flatnonzero(used)
    used_length = base.run_length[used_runs]
    if len(used_runs) == len(run_fiber) and not len(element):  # every base fiber, nothing copied: the base itself
        store, whole_start = None, base.run_start
    else:  # the base fibers some set keeps whole, then the copies
        store = np.concatenate((_concatenated_ranges(base.run_start[used_runs], used_length), element))
        whole_start = np.cumsum(used_length) - used_length
    return _Segments(np.concatenate((whole_start, seg_start + int(used_length.sum()))),
                     np.concatenate((used_length, seg_length)), np.concatenate((whole_key, element_key[seg_start])),
                     np.concatenate(((np.cumsum(used) - 1)[run], len(used_runs) + np.arange(len(seg_start)))), store)


def _kept_elements(base: _BaseFibers, reach: _Reach, image_channel: np.ndarray, fetch_set: np.ndarray,
                   bounds: tuple[np.ndarray, np.ndarray], channel_inner: bool) -> tuple[np.ndarray, np.ndarray]:
    """The base elements each (image-channel, fetch set) pair keeps and their fiber keys (``base fiber · n_sets +
    set``), pair by pair in base order. With fibers ordered (u, v, ko) and a row pattern that is an interval, a
    fiber's kept rows are one run (``_row_starts``) whose columns are tested; otherwise every element of the
    channel is tested. The candidates are tested a block of pairs at a time (``_item_blocks``): only the kept
    elements and their keys grow with the operand (a channel is a candidate once per set that cuts it)."""
    element_bound, run_bound = bounds
    rows = reach.row_intervals()[fetch_set // len(reach.col_pat)]
    by_rows = rows[:, 0] >= 0 if channel_inner else np.zeros(len(fetch_set), bool)
    parts = []
    if by_rows.any():
        parts.extend(_kept_by_rows(base, reach, image_channel[by_rows], fetch_set[by_rows], run_bound))
    others = np.flatnonzero(~by_rows)
    if len(others):
        parts.extend(_kept_by_position(base, reach, image_channel[others], fetch_set[others], element_bound))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate([e for e, _ in parts]), np.concatenate([k for _, k in parts])


def _kept_by_rows(base: _BaseFibers, reach: _Reach, image_channel: np.ndarray, fetch_set: np.ndarray,
                  run_bound: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """``_kept_elements`` of the pairs ``(image_channel, fetch_set)`` (fibers ordered (u, v, ko), the sets' row
    patterns intervals): per base fiber (run) of each pair, the run of its kept rows, columns tested; blocks of
    runs, in order."""
    n_sets, n_col_patterns, n_v = len(reach.member), len(reach.col_pat), reach.col_pat.shape[1]
    rows = reach.row_intervals()[fetch_set // n_col_patterns]
    starts = _row_starts(base, reach.row_pat.shape[1])
    runs = run_bound[image_channel + 1] - run_bound[image_channel]
    run = _concatenated_ranges(run_bound[image_channel], runs)
    pair_of_run = np.repeat(np.arange(len(fetch_set)), runs)
    first = starts[run, rows[pair_of_run, 0]]
    count = starts[run, rows[pair_of_run, 1]] - first
    del starts
    parts = []
    for lo, hi in _item_blocks(count):
        element = _concatenated_ranges(first[lo:hi], count[lo:hi])
        flat = np.repeat(fetch_set[pair_of_run[lo:hi]] % n_col_patterns * n_v, count[lo:hi])
        flat += base.v[element]
        keep = reach.col_pat.ravel()[flat]
        key = base.fiber[base.run_start[run[lo:hi]]] * n_sets
        key += fetch_set[pair_of_run[lo:hi]]
        parts.append((element[keep], np.repeat(key, count[lo:hi])[keep]))
    return parts


def _kept_by_position(base: _BaseFibers, reach: _Reach, image_channel: np.ndarray, fetch_set: np.ndarray,
                      element_bound: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """``_kept_elements`` of the pairs ``(image_channel, fetch_set)``: every element of the channel tested
    against the set's positions; blocks of pairs, in order."""
    n_sets, n_positions = len(reach.member), reach.member.shape[1]
    sizes = element_bound[image_channel + 1] - element_bound[image_channel]
    position = reach.position(base)
    parts = []
    for lo, hi in _item_blocks(sizes):
        element = _concatenated_ranges(element_bound[image_channel[lo:hi]], sizes[lo:hi])
        element_set = np.repeat(fetch_set[lo:hi], sizes[lo:hi])
        flat = element_set * n_positions
        flat += position[element]
        keep = reach.member.ravel()[flat]
        del flat
        element = element[keep]
        key = base.fiber[element] * n_sets
        key += element_set[keep]
        parts.append((element, key))
    return parts


def _item_blocks(sizes: np.ndarray, limit: int | None = None) -> list[tuple[int, int]]:
    """Consecutive index ranges ``[lo, hi)`` covering ``sizes`` in order, each summing to at most ``limit``
    (default ``_BLOCK_ELEMENTS``) or holding a single item."""
    limit = _BLOCK_ELEMENTS if limit is None else limit
    end = np.cumsum(sizes)
    blocks, lo = [], 0
    while lo < len(sizes):
        done = int(end[lo - 1]) if lo else 0
        hi = max(int(np.searchsorted(end, done + limit, side="right")), lo + 1)
        blocks.append((lo, hi))
        lo = hi
    return blocks


# Candidate elements ``_kept_elements`` tests per block (~40 bytes of temporaries each): bounds its memory
# (vgg16 classifier.0 on ANT: ~80 M candidates at once before, 2.0 GB) and keeps a block in cache. Memory
# and speed only: the result is the same for any value ≥ 1 (tests vary it). [choice]
_BLOCK_ELEMENTS = 1 << 18


def _row_starts(base: _BaseFibers, n_u: int) -> np.ndarray:
    """(n_runs, n_u + 1): per base fiber (run), the base index of its first element with row ≥ r, r = 0..n_u
    (fibers ordered (u, v, ko))."""
    run = np.repeat(np.arange(len(base.run_start), dtype=np.int64) * n_u, base.run_length)
    run += base.u
    table = np.zeros((len(base.run_start), n_u + 1), np.int64)
    np.cumsum(np.bincount(run, minlength=len(base.run_start) * n_u).reshape(-1, n_u), axis=1, out=table[:, 1:])
    table += base.run_start[:, None]
    return table


@dataclass(frozen=True)
class StreamedInput:
    """What ``streamed_vectors`` cuts into F-vectors: the canonical streamed tensor (Nt, Ct, Ko, U, V), the vector
    width F, and the stationary vectors the streamed ones will pair with (None: every fiber is built)."""

    tensor: np.ndarray
    width: int
    stationary: Vectors | None = None


def streamed_vectors(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses, streamed: StreamedInput,
                     options: MappingOptions) -> StreamedOperand:
    """F-vectors of the canonical streamed operand (Nt, Ct, Ko, U, V) under ``options`` (``dense``: every
    element a non-zero; ``fetch_filter``; ``channel_inner``: fibers ordered (u, v, ko)).

    The non-zeros are laid out once in unfiltered fiber order (``_base_fibers``). With ``stationary`` (the
    stationary vectors the streamed ones will pair with), vectors are built only for the fetch sets and
    streamed (image, channel)s that some stationary fiber pairs with (``_wanted_pairs``): the fibers every
    pairing cell looks up, ~1/5 of them on a 512-channel layer with 16 fetch sets; without it, for all. A set
    that keeps every position of a channel points at its base fibers' vectors, the others at a copy of what
    they keep (``_segments``). Every PE sees, for every fiber it pairs with, the vectors it saw when each set
    held its own sorted copy (``tests/dataflow/test_fibers.py`` compares them with that representation); the
    per-(block, set) deliveries, which count every fiber, are closed forms over the position counts.
    """
    streamed_tensor, width, stationary = streamed.tensor, streamed.width, streamed.stationary
    Nt, Ct = streamed_tensor.shape[:2]
    n_blocks, n_classes = Nt * Ct * tiling.n_groups, classes.n_streamed
    base = _base_fibers(tiling, classes, streamed_tensor, options)
    unfiltered = np.zeros(n_blocks * n_classes, np.int64)
    unfiltered[base.fiber[base.run_start]] = base.run_length
    if options.fetch_filter:
        row_pat, col_pat, set_of_pe = _reach_patterns(problem, tiling)
    else:
        row_pat, col_pat = np.ones((1, streamed_tensor.shape[3]), bool), np.ones((1, streamed_tensor.shape[4]), bool)
        set_of_pe = np.zeros(tiling.n_pes, np.int64)
    layout = StreamedLayout(n_blocks, n_classes, len(row_pat) * len(col_pat), set_of_pe)
    reach = _Reach.of(row_pat, col_pat)
    counts = reach.counts(base, n_blocks, n_classes)
    # DRAM reads: the non-zeros at the positions some set receives, summed per block from the position counts
    # (per (block, position), not per element).
    fetched = counts.sum(axis=1, where=np.asarray(reach.member.any(axis=0))[None, :])
    delivered = reach.per_set(counts, reach.member)
    per_channel = counts.reshape(Nt * Ct, -1, counts.shape[1]).sum(axis=1)
    del counts  # (n_blocks, U·V): freed before the fibers are laid out
    cuts = reach.per_set(per_channel, ~reach.member) > 0
    wanted = _wanted_pairs(problem, tiling, classes, stationary, set_of_pe, layout.n_sets)
    segments = _segments(base, reach, wanted, cuts, tiling.n_groups * n_classes, options.channel_inner)
    elements = Elements(base.u, base.v, base.out_channel, base.image, base.value)
    del base  # the fiber keys and runs are done with: freed before the store is gathered
    vectors = _segment_vectors(elements, segments, width, options.channel_inner, n_blocks * n_classes * layout.n_sets)
    return StreamedOperand(vectors, layout, unfiltered.reshape(n_blocks, n_classes), fetched, delivered)


def _key_order(keys: np.ndarray, key_space: int) -> np.ndarray:
    """``np.argsort(keys)`` for distinct keys in ``0..key_space − 1``: by a position table when the key space is
    at most ``_KEY_TABLE_PER_KEY`` entries per key (no sort), else the sort."""
    if key_space > _KEY_TABLE_PER_KEY * len(keys) + (1 << 16):
        return np.argsort(keys)
    position = np.full(key_space, -1, np.int64)
    position[keys] = np.arange(len(keys))
    return position[position >= 0]


# Key-space entries per fiber key up to which ``_key_order`` orders keys through a position table (8 bytes an
# entry) instead of a sort. Speed only: the same order. [choice]
_KEY_TABLE_PER_KEY = 16


def _segment_vectors(base: Elements, segments: _Segments, width: int, channel_inner: bool, key_space: int
                     ) -> Vectors:
    """The vectors of every segment and the elements of the store (``base``: the base fibers' elements); each
    fiber key points at its segment's vectors, keys ascending."""
    vec0, nvec, vec_start, vec_size = cut_segments(segments.length, width, segments.start)
    order = _key_order(segments.key, key_space)
    segment = segments.segment[order]
    sp1, sp2, chan, image, value = base.sp1, base.sp2, base.chan, base.image, base.value
    if segments.store is not None:
        store = segments.store
        sp1, sp2, chan, value = (a[store] for a in (sp1, sp2, chan, value))
        # One image (weights, or a batch of one): every element's image is 0, no gather needed.
        image = image[store] if image.any() else np.zeros(len(store), image.dtype)
    return Vectors(segments.key[order], vec0[segment], nvec[segment], segments.length[segment], vec_start, vec_size,
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
    return StreamedOperand(vectors, layout, unfiltered.astype(np.int64), fetched.astype(np.int64),
                           nnz.sum(axis=1).astype(np.int64))
