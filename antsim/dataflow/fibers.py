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
filter there is one fetch set: SCNN broadcasts the whole block to every PE.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from antsim.dataflow.options import MappingOptions
from antsim.dataflow.tiling import StrideClasses, Tiling
from antsim.phases import PhaseProblem


@dataclass(frozen=True)
class Vectors:
    """Vectors of one operand and the elements they hold (all arrays in vector order).

    Attributes:
        fiber_keys: sorted distinct fiber keys (nf,). fiber_vec0 / fiber_nvec / fiber_nnz: first
            vector, vector count and non-zero count of each fiber (nf,).
        vec_start, vec_size: first element and element count of each vector (nv,).
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
    n = len(fiber)
    idx = np.arange(n)
    new_fiber = np.ones(n, bool)
    new_fiber[1:] = fiber[1:] != fiber[:-1]
    fiber_start = idx[new_fiber]
    fiber_id = np.cumsum(new_fiber)
    fiber_id -= 1
    # rank within the fiber, then "starts a vector", in place: n can be ~10^7 on a dense design
    rank = fiber_start[fiber_id]
    np.subtract(idx, rank, out=rank)
    np.remainder(rank, width, out=rank)
    new_vec = rank == 0
    del rank
    new_vec |= new_fiber
    vec_start = idx[new_vec]
    del idx, new_vec
    vec_size = np.diff(np.append(vec_start, n))
    vec_fiber_id = fiber_id[vec_start]
    del fiber_id
    nvec = np.bincount(vec_fiber_id, minlength=len(fiber_start))
    vec0 = np.concatenate(([0], np.cumsum(nvec)[:-1])) if len(nvec) else nvec
    box = _boxes(elements.sp1, elements.sp2, vec_start)
    return Vectors(fiber[fiber_start], vec0.astype(np.int64), nvec.astype(np.int64),
                   np.diff(np.append(fiber_start, n)).astype(np.int64), vec_start.astype(np.int64),
                   vec_size.astype(np.int64), box, elements.sp1, elements.sp2, elements.chan, elements.image,
                   elements.value)


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
    would hold), without building the vectors."""
    n_images = stationary_tensor.shape[0]
    n, _, y, x, _ = _used_stationary(classes, stationary_tensor, False)
    keys = n * tiling.n_pes + tiling.pe_of_stationary()[y, x]
    return np.bincount(keys, minlength=n_images * tiling.n_pes).astype(np.int64).reshape(n_images, tiling.n_pes)


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


def _fetch_sets(problem: PhaseProblem, tiling: Tiling, u: np.ndarray, v: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Streamed non-zeros each fetch set receives under the fetch filter.

    PEs whose row and column reach patterns are identical receive identical streams, so they share a
    fetch set (a weight block usually reaches every interior tile: a handful of sets, not one per PE).

    Returns:
        (set, element) pairs, set-major with elements in order; the set of each PE; the set count.
    """
    row_pat, col_pat, set_of_pe = _reach_patterns(problem, tiling)
    sets, elems = [], []
    for a in range(len(row_pat)):
        in_row = np.nonzero(row_pat[a, u])[0]
        for b in range(len(col_pat)):
            sel = in_row[col_pat[b, v[in_row]]]
            sets.append(np.full(len(sel), a * len(col_pat) + b))
            elems.append(sel)
    return (np.concatenate(sets).astype(np.int64), np.concatenate(elems).astype(np.int64), set_of_pe,
            len(row_pat) * len(col_pat))


def _fiber_then_uvk_order(fiber: np.ndarray, uvk: np.ndarray, n_uvk: int) -> np.ndarray | None:
    """Stable order of ``fiber`` then ``uvk`` (the element's ``(u·V + v)·Ko + ko``), as one stable sort of a
    combined int64 key — 4–12× faster than a 4-key ``lexsort`` (measured here) on the millions of elements of a dense
    design's streamed operand, built in place to spare memory. None when the key would not fit in int64."""
    if len(fiber) and (int(fiber.max()) + 1) * n_uvk >= 2**62:
        return None
    key = fiber.astype(np.int64)
    key *= n_uvk
    key += uvk
    return np.argsort(key, kind="stable")


def streamed_vectors(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses, streamed_tensor: np.ndarray,
                     options: MappingOptions, width: int) -> StreamedOperand:
    """F-vectors of the canonical streamed operand (Nt, Ct, Ko, U, V) under ``options`` (``dense``: every
    element a non-zero; ``fetch_filter``; ``channel_inner``: fibers ordered (u, v, ko))."""
    Nt, Ct = streamed_tensor.shape[:2]
    image, channel, out_channel, u, v = np.nonzero(nonzero_mask(streamed_tensor, options.dense))
    block = (image * Ct + channel) * tiling.n_groups + out_channel // tiling.kc
    cls = classes.streamed_class(u, v)
    values = np.asarray(streamed_tensor, dtype=np.float64)[image, channel, out_channel, u, v]
    n_blocks = Nt * Ct * tiling.n_groups
    unfiltered = np.bincount(block * classes.n_streamed + cls, minlength=n_blocks * classes.n_streamed)
    if options.fetch_filter:
        fetch_set, elem, set_of_pe, n_sets = _fetch_sets(problem, tiling, u, v)
        reached = np.zeros(len(u), bool)
        reached[elem] = True
        fetched = np.bincount(block, weights=reached, minlength=n_blocks)
        layout = StreamedLayout(n_blocks, classes.n_streamed, n_sets, set_of_pe)
    else:
        fetch_set, elem = np.zeros(len(u), dtype=np.int64), np.arange(len(u))
        fetched = np.bincount(block, minlength=n_blocks)
        layout = StreamedLayout(n_blocks, classes.n_streamed, 1, np.zeros(tiling.n_pes, np.int64))
    # A dense design streams every element to several fetch sets (≈13 M on a 512×512×3×3 layer): free
    # each temporary of that length (~100 MB) as soon as it is used.
    fiber = layout.key(block[elem], cls[elem], fetch_set)
    del fetch_set
    if options.channel_inner:
        n_ko, n_u, n_v = streamed_tensor.shape[2:]
        order = _fiber_then_uvk_order(fiber, ((u * n_v + v) * n_ko + out_channel)[elem], n_u * n_v * n_ko)
        if order is None:
            order = np.lexsort((out_channel[elem], v[elem], u[elem], fiber))
    else:
        order = np.argsort(fiber, kind="stable")  # np.nonzero's (ko, u, v) order within a fiber
    picked = elem[order]
    del elem
    fiber = fiber[order]
    del order
    elements = Elements(u[picked], v[picked], out_channel[picked], image[picked], values[picked])
    vectors = pack_vectors(fiber, elements, width)
    return StreamedOperand(vectors, layout, unfiltered.reshape(n_blocks, classes.n_streamed),
                           np.rint(fetched).astype(np.int64))


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
