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

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

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


class _Deferred(Vectors):
    """``Vectors`` whose ``box`` and ``value`` are worked out on first read, each exactly as an eager build gives it:
    of the consumers only the ANT screen reads the streamed vectors' boxes and only the ``exact`` functional output
    their values, so SCNN's fast mapping never pays for either (``streamed_vectors``). Everything else reads as a
    ``Vectors`` (``dataclasses.replace`` gives an eager one of the same class)."""

    _deferred: dict[str, Callable[[], np.ndarray]]

    @classmethod
    def of(cls, arrays: dict[str, np.ndarray], box: Callable[[], np.ndarray], value: Callable[[], np.ndarray]
           ) -> Vectors:
        vectors = object.__new__(cls)
        for name, array in arrays.items():  # the frozen dataclass's own way of setting its fields
            object.__setattr__(vectors, name, array)
        object.__setattr__(vectors, "_deferred", {"box": box, "value": value})
        return vectors

    def __reduce__(self) -> tuple[type, tuple[np.ndarray, ...]]:
        """Pickled (and deep-copied) as the eager ``Vectors`` it reads as: the builders are closures."""
        return Vectors, tuple(getattr(self, name) for name in Vectors.__dataclass_fields__)

    @cached_property
    def box(self) -> np.ndarray:
        return self._deferred["box"]()

    @cached_property
    def value(self) -> np.ndarray:
        return self._deferred["value"]()


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
    return _pack(fiber, (elements.sp1, elements.sp2, elements.chan, elements.image), width, lambda: elements.value)


def _pack(fiber: np.ndarray, coordinates: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], width: int,
          value: Callable[[], np.ndarray]) -> Vectors:
    """``pack_vectors`` of elements ``coordinates`` (sp1, sp2, chan, image), their boxes and ``value()`` worked out on
    first read (``_Deferred``)."""
    new_fiber = np.ones(len(fiber), bool)
    np.not_equal(fiber[1:], fiber[:-1], out=new_fiber[1:])
    fiber_start = np.flatnonzero(new_fiber)
    del new_fiber
    fiber_nnz = np.diff(np.append(fiber_start, len(fiber)))
    vec0, nvec, vec_start, vec_size = cut_segments(fiber_nnz, width)
    sp1, sp2, chan, image = coordinates
    arrays = {"fiber_keys": fiber[fiber_start].astype(np.int64), "fiber_vec0": vec0, "fiber_nvec": nvec,
              "fiber_nnz": fiber_nnz.astype(np.int64), "vec_start": vec_start, "vec_size": vec_size, "sp1": sp1,
              "sp2": sp2, "chan": chan, "image": image}
    return _Deferred.of(arrays, lambda: _boxes(sp1, sp2, vec_start), value)


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


def _used_stationary(tiling: Tiling, classes: StrideClasses, stationary: np.ndarray, dense: bool
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The stationary non-zeros that pair with something: their flat index into ``stationary`` (N, Cs, Ys, Xs)
    and ``pe · n_classes + class`` of each — worked out per plane position and read per non-zero, or per
    non-zero where there are fewer non-zeros than positions."""
    Ys, Xs = stationary.shape[2:]
    flat = np.arange(stationary.size) if dense else np.flatnonzero(stationary != 0)  # ~2× faster than on floats
    position = flat // (Ys * Xs)
    position *= Ys * Xs
    np.subtract(flat, position, out=position)
    per_element = len(flat) < Ys * Xs
    point = position if per_element else np.arange(Ys * Xs)
    y = point // Xs
    x = point - y * Xs
    pe_class = tiling.pe_of_stationary()[y, x]
    used_class = np.zeros(classes.n_stationary, bool)
    used_class[[a for a, _ in classes.groups]] = True
    used = None
    if classes.n_stationary > 1:
        cls = classes.stationary_class(y, x)
        pe_class *= classes.n_stationary
        pe_class += cls
        used = used_class[cls]
    elif not used_class[0]:
        used = np.zeros(len(point), bool)
    if not per_element:
        pe_class = pe_class[position]
        used = None if used is None else used[position]
    if used is not None and not used.all():
        flat, pe_class = flat[used], pe_class[used]
    return flat, pe_class


def _stable_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` of non-negative integers: numpy's radix sort on 16-bit copies when every
    key fits (the same permutation: a stable order is unique)."""
    if len(keys) and keys.max() < 1 << 16:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    return np.argsort(keys, kind="stable")


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
    stationary = np.asarray(stationary_tensor)
    n_channels, Ys, Xs = stationary.shape[1:]
    flat, pe_class = _used_stationary(tiling, classes, stationary, dense)
    image_channel = flat // (Ys * Xs)
    if not problem.channel_matched:  # wgrad: one fiber per (image, PE, class) over every channel
        image_channel //= n_channels
    image_channel *= tiling.n_pes * classes.n_stationary
    image_channel += pe_class
    order = _stable_order(image_channel)
    fiber, flat = image_channel[order], flat[order]
    del image_channel, pe_class, order
    channel = flat // (Ys * Xs)
    position = flat - channel * (Ys * Xs)
    y = position // Xs
    x = position - y * Xs
    image = channel // n_channels
    channel -= image * n_channels
    return _pack(fiber, (y, x, channel, image), width, lambda: stationary.reshape(-1)[flat].astype(np.float64))


@dataclass(frozen=True)
class StreamedLayout:
    """How streamed fiber keys decode: ``((block·n_classes + class)·n_sets + fetch set)``, block =
    ``(nt·Ct + ct)·n_groups + g``; ``set_of_pe[pe]`` is the fetch set feeding each PE (all 0 unfiltered).
    ``row_pat`` / ``col_pat``: the streamed rows ``u`` / columns ``v`` each row / column reach pattern receives
    (set ``a · len(col_pat) + b`` receives the positions of rows ``row_pat[a]`` and columns ``col_pat[b]``), so
    every element of a set's fibers lies there; None where that is not recorded (then nothing is assumed)."""

    n_blocks: int
    n_classes: int
    n_sets: int
    set_of_pe: np.ndarray
    row_pat: np.ndarray | None = None
    col_pat: np.ndarray | None = None

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
class _Geometry:
    """The streamed tensor (Nt, Ct, Ko, U, V) as ``_fiber_layout`` lays it out: padded to ``n_groups · kc`` output
    channels and ``rows · mh × cols · mw`` positions, each fiber ``(block, class)`` a run of ``rows · cols · kc``
    slots ordered ``(u', v', ko)`` (``channel_inner``) or ``(ko, u', v')``; class ``pu · mw + pv`` holds the
    positions ``u = u' · mh + pu``, ``v = v' · mw + pv``. A *cell* is one ``(fiber, u', v')``."""

    shape: tuple[int, ...]
    n_groups: int
    kc: int
    rows: int
    cols: int
    mt: tuple[int, int]
    channel_inner: bool

    @property
    def n_classes(self) -> int:
        return self.mt[0] * self.mt[1]

    @property
    def fiber_length(self) -> int:
        return self.rows * self.cols * self.kc

    @property
    def n_fibers(self) -> int:
        return self.shape[0] * self.shape[1] * self.n_groups * self.n_classes

    def cell_of(self, slot: np.ndarray) -> np.ndarray:
        """The cell ``fiber · rows · cols + u' · cols + v'`` of laid-out slots."""
        if self.channel_inner:
            return slot // self.kc
        fiber_cells, within = np.divmod(slot, self.rows * self.cols)
        fiber_cells //= self.kc
        fiber_cells *= self.rows * self.cols
        fiber_cells += within
        return fiber_cells

    def position_counts(self, cell_counts: np.ndarray) -> np.ndarray:
        """(n_blocks, U·V) non-zeros per block and position from the (n_fibers · rows · cols) cell counts."""
        (mh, mw), (n_u, n_v) = self.mt, self.shape[3:]
        per_cell = cell_counts.reshape(-1, mh, mw, self.rows, self.cols)
        if (mh, mw) != (1, 1):
            per_cell = per_cell.transpose(0, 3, 1, 4, 2)
        grid = per_cell.reshape(len(per_cell), self.rows * mh, self.cols * mw)[:, :n_u, :n_v]
        return grid.reshape(len(grid), n_u * n_v)

    def positions(self, slot: np.ndarray) -> np.ndarray:
        """``u · V + v`` of laid-out slots (int64): the place of the slot's cell within its fiber — itself when
        there is one stride phase (the fiber's cells are the ``U × V`` grid in C order) — else read from a
        (class, cell) table."""
        cells = self.rows * self.cols
        cell = self.cell_of(slot)
        fiber = cell // cells
        within = fiber * cells
        np.subtract(cell, within, out=within)
        if self.n_classes == 1:
            return within
        (mh, mw), n_v = self.mt, self.shape[4]
        cls, u_, v_ = np.meshgrid(np.arange(self.n_classes), np.arange(self.rows), np.arange(self.cols), indexing="ij")
        table = (u_ * mh + cls // mw) * n_v + v_ * mw + cls % mw
        fiber %= self.n_classes
        fiber *= cells
        fiber += within
        return table.ravel()[fiber]

    def decode(self, slot: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``u, v, ko, image`` of laid-out slots (int64). A slot's place within its image-channel's slice of the
        layout (``n_groups · n_classes`` fibers) fixes ``u, v, ko``: read from tables over the slice when it holds
        at most half as many places as there are slots to decode (a table costs about what decoding its places
        would), else worked out per slot."""
        Nt, Ct = self.shape[:2]
        per_channel = self.n_groups * self.n_classes * self.fiber_length
        image = np.zeros(len(slot), np.int64)
        if Nt > 1:
            image = slot // (per_channel * Ct)
        if 2 * per_channel > len(slot):
            return (*self._coordinates(slot), image)
        # ``slot mod per_channel`` as a floor division and a multiply-subtract (~2× faster than ``%``).
        within = slot // per_channel
        within *= per_channel
        np.subtract(slot, within, out=within)
        u_of, v_of, k_of = self._coordinates(np.arange(per_channel))
        return u_of[within], v_of[within], k_of[within], image

    def values(self, tensor: np.ndarray, slot: np.ndarray) -> np.ndarray:
        """The elements (float64) of the streamed tensor (Nt, Ct, Ko, U, V) at laid-out slots: ``decode``'s
        coordinates, the channel from the slot's image-channel slice of the layout."""
        u, v, ko, image = self.decode(slot)
        channel = slot // (self.n_groups * self.n_classes * self.fiber_length)
        channel %= self.shape[1]
        return np.asarray(tensor)[image, channel, ko, u, v].astype(np.float64)

    def _coordinates(self, slot: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``u, v, ko`` of laid-out slots: three small position tables within the fiber, the class and group
        terms from the fiber index."""
        kc, rows, cols, (mh, mw) = self.kc, self.rows, self.cols, self.mt
        position = np.arange(rows * cols * kc)
        if self.channel_inner:
            u_of, rest_of = np.divmod(position, cols * kc)
            v_of, k_of = np.divmod(rest_of, kc)
        else:
            k_of, rest_of = np.divmod(position, rows * cols)
            u_of, v_of = np.divmod(rest_of, cols)
        fiber = slot // (rows * cols * kc)
        rest = fiber * (rows * cols * kc)
        np.subtract(slot, rest, out=rest)
        u, v, ko = u_of[rest], v_of[rest], k_of[rest]
        del rest
        block, cls = np.divmod(fiber, self.n_classes)
        if mh > 1:  # one stride phase per dimension: every class offset is 0
            u *= mh
            u += cls // mw
        if mw > 1:
            v *= mw
            v += cls % mw
        ko += block % self.n_groups * kc
        return u, v, ko


@dataclass(frozen=True)
class _BaseFibers:
    """The streamed non-zeros sorted once into their unfiltered fibers ``(block, class)`` (fiber index
    ``block · n_classes + class``), each fiber in the streamed order: ``slot``, each non-zero's laid-out index
    (ascending: base order; values are read from the tensor only when asked for, ``_Geometry.values``); per cell
    (``_Geometry``), the base index of
    its first non-zero (``cell_start``, one past the end last; meaningful within a fiber only for fibers ordered
    (u', v', ko)); per fiber its non-zero count; the non-empty fibers (runs)."""

    geometry: _Geometry
    slot: np.ndarray
    cell_start: np.ndarray
    fiber_nnz: np.ndarray
    run_fiber: np.ndarray
    run_start: np.ndarray
    run_length: np.ndarray

    def fiber_start(self, fibers: np.ndarray) -> np.ndarray:
        """Base index of the first non-zero of each fiber index (``n_fibers``: one past the end)."""
        return self.cell_start[fibers * (self.geometry.rows * self.geometry.cols)]


def _base_fibers(tiling: Tiling, classes: StrideClasses, streamed_tensor: np.ndarray, options: MappingOptions
                 ) -> tuple[_BaseFibers, np.ndarray]:
    """The streamed non-zeros of (Nt, Ct, Ko, U, V) in unfiltered fiber order, without a sort: the tensor's non-zero
    mask, padded with False to whole output-channel groups and whole stride phases, is copied once laid out as
    (Nt, Ct, G, phase_u, phase_v, U', V', Kc) — (…, Kc, U', V') for ``spatial_inner`` — whose C order is
    block, class, then (u, v, ko) (or (ko, u, v)) within the fiber; its non-zeros are read from that copy (a dense
    design takes every element of the unpadded tensor). The cell counts (``_cell_counts``) give every per-fiber
    and per-position count; also returned: the (n_blocks, U·V) non-zeros per block and position."""
    n_u, n_v = streamed_tensor.shape[3:]
    (mh, mw), kc, n_groups = classes.mt, tiling.kc, tiling.n_groups
    geometry = _Geometry(tuple(streamed_tensor.shape), n_groups, kc, -(-n_u // mh), -(-n_v // mw), classes.mt,
                         options.channel_inner)
    split = (n_groups, kc, geometry.rows, mh, geometry.cols, mw)
    axes = (0, 1, 2, 5, 7, 4, 6, 3) if options.channel_inner else (0, 1, 2, 5, 7, 3, 4, 6)
    # The non-zero mask is laid out, not the values: a quarter of the bytes of float32 to move (values are read
    # from the tensor at the store's slots when asked for); a nonzero scan of booleans, ~2× faster than of floats.
    nonzero = np.ones(streamed_tensor.shape, bool) if options.dense else np.asarray(streamed_tensor) != 0
    mask = _fiber_layout(nonzero, split, axes)
    del nonzero
    slot = np.flatnonzero(mask)
    cells_per_fiber = geometry.rows * geometry.cols
    cell_counts = _cell_counts(geometry, mask, slot)
    del mask
    cell_start = np.zeros(len(cell_counts) + 1, np.int64)
    np.cumsum(cell_counts, dtype=np.int64, out=cell_start[1:])
    fiber_nnz = np.diff(cell_start[::cells_per_fiber])
    run_fiber = np.flatnonzero(fiber_nnz)
    base = _BaseFibers(geometry, slot, cell_start, fiber_nnz, run_fiber, cell_start[run_fiber * cells_per_fiber],
                       fiber_nnz[run_fiber])
    return base, geometry.position_counts(cell_counts)


def _cell_counts(geometry: _Geometry, mask: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """Non-zeros per cell of the laid-out non-zero ``mask`` (flat, C order) whose non-zeros are ``slot``. With
    fibers ordered (u', v', ko) a cell is ``kc`` consecutive slots: where ``kc`` bytes make one unsigned integer
    (kc = 1, 2, 4, 8), a cell's count is the number of set bits of its bytes read as that integer (each byte is 0 or
    1) — one pass over the cells (numpy ≥ 2.0; uint8 counts, summed as int64 by every user); else a bincount of the
    slots' cells (int64)."""
    n_cells = geometry.n_fibers * geometry.rows * geometry.cols
    if geometry.channel_inner and geometry.kc in (1, 2, 4, 8) and hasattr(np, "bitwise_count") and \
            mask.size == n_cells * geometry.kc:
        return np.bitwise_count(mask.view(np.dtype(f"u{geometry.kc}")))
    return np.bincount(geometry.cell_of(slot), minlength=n_cells)


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
    """``first[k], …, first[k] + count[k] − 1`` for every k, end to end (int64): the running sum of steps that are 1
    within a range and jump from one range's last element to the next one's first (one pass over the output;
    ``np.repeat`` of per-range offsets costs ~5× as much on ranges of a few elements)."""
    count = np.asarray(count, dtype=np.int64)
    first = np.asarray(first, dtype=np.int64)
    if not count.all():
        kept = np.flatnonzero(count)
        first, count = first[kept], count[kept]
    if not len(count):
        return np.zeros(0, np.int64)
    end = np.cumsum(count)
    step = np.ones(int(end[-1]), np.int64)
    step[0] = first[0]
    step[end[:-1]] = first[1:] - first[:-1] - count[:-1] + 1
    return np.cumsum(step)


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

    def per_set(self, counts: np.ndarray, most: int) -> np.ndarray:
        """``counts`` (rows × positions, each row summing to at most ``most``) summed over the positions each set
        keeps, (rows, n_sets): a float product, exact (every partial sum an integer below 2^24 in float32, else
        2^53 in float64); no product when every set keeps every position, or none."""
        if not self.member.any():
            return np.zeros((len(counts), len(self.member)), np.int64)
        if self.member.all():
            return np.repeat(counts.sum(axis=1, dtype=np.int64)[:, None], len(self.member), axis=1)
        exact = np.float32 if most < 1 << 24 else np.float64
        return (counts.astype(exact) @ self.member.T.astype(exact)).astype(np.int64)

    def cell_ranges(self, geometry: _Geometry) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What each (fetch set, class) keeps of a fiber ordered (u', v', ko), as runs of its cells: ``ptr``
        (n_sets · n_classes + 1) into ``lo, hi`` (cell offsets ``u' · cols + v'`` within the fiber, ``[lo, hi)``),
        the maximal runs of kept cells in C order — from a (set, class, cell) table of the kept cells."""
        (mh, mw), rows, cols = geometry.mt, geometry.rows, geometry.cols
        by_row = _phase_table(self.row_pat, mh, rows)  # (n_row_patterns, mh, rows): row pattern at u' · mh + pu
        by_col = _phase_table(self.col_pat, mw, cols)
        kept = by_row[:, None, :, None, :, None] & by_col[None, :, None, :, None, :]
        edges = np.diff(kept.reshape(-1, rows * cols).astype(np.int8), axis=1, prepend=0, append=0)
        combo, lo = np.nonzero(edges == 1)
        hi = np.nonzero(edges == -1)[1]
        ptr = np.zeros(len(edges) + 1, np.int64)
        np.cumsum(np.bincount(combo, minlength=len(edges)), out=ptr[1:])
        return ptr, lo.astype(np.int64), hi.astype(np.int64)


def _phase_table(pattern: np.ndarray, phases: int, length: int) -> np.ndarray:
    """(patterns, phases, length): ``pattern[:, i · phases + p]`` at ``[:, p, i]`` (False past its end)."""
    padded = np.zeros((len(pattern), phases * length), bool)
    padded[:, :pattern.shape[1]] = pattern
    return padded.reshape(len(pattern), length, phases).transpose(0, 2, 1)


def _wanted_pairs(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses, stationary: Vectors | None,
                  set_of_pe: np.ndarray, n_sets: int) -> np.ndarray:
    """(Nt·Ct, n_sets, streamed classes): True where a stationary fiber on a PE of the set pairs with the streamed
    class of the image-channel ``nt · Ct + ct`` (its own class is one that class pairs with) — the fibers of every
    cell ``pairing.make_cells`` builds (all of them without ``stationary``)."""
    Nt, Ct = problem.streamed_shape[:2]
    if stationary is None:
        return np.ones((Nt * Ct, n_sets, classes.n_streamed), bool)
    rest, stationary_class = np.divmod(stationary.fiber_keys, classes.n_stationary)
    rest, pe = np.divmod(rest, tiling.n_pes)
    image, channel = np.divmod(rest, problem.stationary_shape[1] if problem.channel_matched else 1)
    image_channel = (image if Nt > 1 else 0) * Ct + (channel if Ct > 1 else 0)
    by_class = np.zeros((Nt * Ct, n_sets, classes.n_stationary), bool)
    by_class[image_channel, set_of_pe[pe], stationary_class] = True
    if classes.n_stationary == classes.n_streamed == 1:
        return by_class
    wanted = np.zeros((Nt * Ct, n_sets, classes.n_streamed), bool)
    for a, b in classes.groups:
        wanted[:, :, b] |= by_class[:, :, a]
    return wanted


@dataclass(frozen=True)
class _RunIndex:
    """The base runs (non-empty fibers) of each (streamed class, image-channel) ``k = class · n_ic + ic``:
    ``order[bound[k]:bound[k + 1]]``, in base order (``order`` None: the runs themselves, one class)."""

    order: np.ndarray | None
    bound: np.ndarray

    @classmethod
    def of(cls, base: _BaseFibers, n_ic: int) -> _RunIndex:
        geometry = base.geometry
        per_channel = geometry.n_groups * geometry.n_classes
        if geometry.n_classes == 1:
            return cls(None, np.searchsorted(base.run_fiber, np.arange(n_ic + 1, dtype=np.int64) * per_channel))
        fiber_class = base.run_fiber % geometry.n_classes
        order = np.concatenate([np.flatnonzero(fiber_class == c) for c in range(geometry.n_classes)])
        key = fiber_class[order] * n_ic
        key += base.run_fiber[order] // per_channel
        return cls(order, np.searchsorted(key, np.arange(geometry.n_classes * n_ic + 1, dtype=np.int64)))

    def runs(self, image_channel: np.ndarray, fetch_set: np.ndarray, wanted: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
        """The runs of the streamed classes ``wanted`` at each pair ``(image_channel, fetch_set)``, pair by pair
        (class by class), and the pair of each run."""
        if self.order is None:
            n_runs = self.bound[image_channel + 1] - self.bound[image_channel]
            return _concatenated_ranges(self.bound[image_channel], n_runs), np.repeat(np.arange(len(n_runs)), n_runs)
        pair, fiber_class = np.nonzero(wanted[image_channel, fetch_set])
        k = fiber_class * wanted.shape[0]
        k += image_channel[pair]
        n_runs = self.bound[k + 1] - self.bound[k]
        return self.order[_concatenated_ranges(self.bound[k], n_runs)], np.repeat(pair, n_runs)


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


def _segments(base: _BaseFibers, reach: _Reach, wanted: np.ndarray, cuts: np.ndarray) -> _Segments:
    """Each wanted (image-channel, set)'s fibers of the streamed classes wanted there (``_wanted_pairs``): its base
    fibers themselves when the set keeps every position they hold (shared by every such set), else (``cuts``:
    (image-channel, set) pairs where the set misses a position the channel holds) a copy of the elements the set
    keeps, in base order."""
    image_channel, fetch_set = np.nonzero(wanted.any(axis=2))
    n_sets = len(reach.member)
    run_fiber = base.run_fiber
    bounds = np.arange(len(wanted) + 1, dtype=np.int64) * (base.geometry.n_groups * base.geometry.n_classes)
    index = _RunIndex.of(base, len(wanted))
    cut = cuts[image_channel, fetch_set]
    # Whole: every base fiber of the channel (of a class wanted there), shared; a base fiber's vectors are cut once.
    run, pair = index.runs(image_channel[~cut], fetch_set[~cut], wanted)
    used = np.zeros(len(run_fiber), bool)
    used[run] = True
    whole_key = run_fiber[run] * n_sets + fetch_set[~cut][pair]
    # Cut: the channel's elements at the positions the set keeps, copied (runs of equal keys are its fibers).
    element, seg_key, seg_length = _kept_elements(base, reach, image_channel[cut], fetch_set[cut], (bounds, index),
                                                  wanted)
    used_runs = np.flatnonzero(used)
    used_length = base.run_length[used_runs]
    if len(used_runs) == len(run_fiber) and not len(element):  # every base fiber, nothing copied: the base itself
        store, whole_start = None, base.run_start
    else:  # the base fibers some set keeps whole, then the copies
        store = np.concatenate((_concatenated_ranges(base.run_start[used_runs], used_length), element))
        whole_start = np.cumsum(used_length) - used_length
    seg_start = np.cumsum(seg_length) - seg_length + int(used_length.sum())
    return _Segments(np.concatenate((whole_start, seg_start)), np.concatenate((used_length, seg_length)),
                     np.concatenate((whole_key, seg_key)),
                     np.concatenate(((np.cumsum(used) - 1)[run], len(used_runs) + np.arange(len(seg_start)))), store)


def _kept_elements(base: _BaseFibers, reach: _Reach, image_channel: np.ndarray, fetch_set: np.ndarray,
                   bounds: tuple[np.ndarray, _RunIndex], wanted: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The base elements each (image-channel, fetch set) pair keeps, pair by pair in base order, and the copied
    fibers they form (fiber key ``base fiber · n_sets + set`` and length of each, in order): with fibers ordered
    (u, v, ko), runs of cells (``_kept_by_cells``) — the pairs whose set's row pattern is an interval first, then
    the others (the order of the store before the cells held it); otherwise every element of the channel is
    tested (``_kept_by_position``). ``bounds``: the first fiber and the first run of each image-channel (one
    past the end last)."""
    fiber_bound, index = bounds
    if not len(image_channel):  # no set cuts a wanted channel (one fetch set, or every set keeps all)
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    if base.geometry.channel_inner:
        by_rows = reach.row_intervals()[fetch_set // len(reach.col_pat), 0] >= 0
        order = np.concatenate((np.flatnonzero(by_rows), np.flatnonzero(~by_rows)))
        return _kept_by_cells(base, reach, image_channel[order], fetch_set[order], index, wanted)
    parts = _kept_by_position(base, reach, image_channel, fetch_set, base.fiber_start(fiber_bound))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    element, element_key = np.concatenate([e for e, _ in parts]), np.concatenate([k for _, k in parts])
    seg_start, seg_length = _runs(element_key)
    return element, element_key[seg_start], seg_length


def _kept_by_cells(base: _BaseFibers, reach: _Reach, image_channel: np.ndarray, fetch_set: np.ndarray,
                   index: _RunIndex, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_kept_elements`` of the pairs ``(image_channel, fetch_set)`` for fibers ordered (u', v', ko): what a set
    keeps of a fiber is runs of its cells (``_Reach.cell_ranges``), each a run of base elements
    (``cell_start``) — no element is tested; one copied fiber per (pair, run) that keeps something."""
    geometry, n_sets = base.geometry, len(reach.member)
    ptr, lo, hi = reach.cell_ranges(geometry)
    run, pair = index.runs(image_channel, fetch_set, wanted)  # only the classes wanted there (``_wanted_pairs``)
    pair_set = fetch_set[pair]
    fiber = base.run_fiber[run]
    del run, pair
    combo = pair_set * geometry.n_classes
    if geometry.n_classes > 1:
        combo += fiber % geometry.n_classes
    n_items = ptr[combo + 1] - ptr[combo]
    item = _concatenated_ranges(ptr[combo], n_items)
    cell = np.repeat(fiber * (geometry.rows * geometry.cols), n_items)
    first = base.cell_start[cell + lo[item]]
    cell += hi[item]
    count = base.cell_start[cell] - first
    del cell, item
    # What each (run, set) keeps: its items' counts summed; the non-empty ones are the copied fibers.
    ends = np.zeros(len(count) + 1, np.int64)
    np.cumsum(count, out=ends[1:])
    item_end = np.cumsum(n_items)
    kept = ends[item_end] - ends[item_end - n_items]
    copied = np.flatnonzero(kept)
    key = fiber[copied] * n_sets
    key += pair_set[copied]
    return _concatenated_ranges(first, count), key, kept[copied]


def _kept_by_position(base: _BaseFibers, reach: _Reach, image_channel: np.ndarray, fetch_set: np.ndarray,
                      element_bound: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """``_kept_elements`` of the pairs ``(image_channel, fetch_set)``: every element of the channel tested
    against the set's positions; blocks of pairs, in order."""
    n_sets, n_positions = len(reach.member), reach.member.shape[1]
    sizes = element_bound[image_channel + 1] - element_bound[image_channel]
    position = base.geometry.positions(base.slot)
    fiber = base.slot // base.geometry.fiber_length
    parts = []
    for lo, hi in _item_blocks(sizes):
        element = _concatenated_ranges(element_bound[image_channel[lo:hi]], sizes[lo:hi])
        element_set = np.repeat(fetch_set[lo:hi], sizes[lo:hi])
        flat = element_set * n_positions
        flat += position[element]
        keep = reach.member.ravel()[flat]
        del flat
        element = element[keep]
        key = fiber[element] * n_sets
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
    base, counts = _base_fibers(tiling, classes, streamed_tensor, options)
    if options.fetch_filter:
        row_pat, col_pat, set_of_pe = _reach_patterns(problem, tiling)
    else:
        row_pat, col_pat = np.ones((1, streamed_tensor.shape[3]), bool), np.ones((1, streamed_tensor.shape[4]), bool)
        set_of_pe = np.zeros(tiling.n_pes, np.int64)
    layout = StreamedLayout(n_blocks, n_classes, len(row_pat) * len(col_pat), set_of_pe, row_pat, col_pat)
    reach = _Reach.of(row_pat, col_pat)
    # DRAM reads: the non-zeros at the positions some set receives, summed per block from the position counts
    # (per (block, position), not per element); every block's non-zeros when the sets together receive every
    # position.
    block_nnz = base.fiber_nnz.reshape(n_blocks, n_classes).sum(axis=1)
    reached = np.asarray(reach.member.any(axis=0))
    fetched = block_nnz if reached.all() else counts.sum(axis=1, where=reached[None, :], dtype=np.int64)
    # Every set keeps every position (no fetch filter): each set receives the whole block, no per-position sum.
    delivered = np.repeat(block_nnz[:, None], layout.n_sets, axis=1) if reach.member.all() else \
        reach.per_set(counts, int(block_nnz.max(initial=0)))
    del counts  # (n_blocks, U·V): freed before the fibers are laid out
    # A set cuts a channel where it receives fewer of the channel's non-zeros than the channel holds.
    cuts = block_nnz.reshape(Nt * Ct, -1).sum(axis=1)[:, None] > delivered.reshape(Nt * Ct, -1, layout.n_sets
                                                                                    ).sum(axis=1)
    wanted = _wanted_pairs(problem, tiling, classes, stationary, set_of_pe, layout.n_sets)
    segments = _segments(base, reach, wanted, cuts)
    geometry, slot = base.geometry, base.slot
    unfiltered = base.fiber_nnz.reshape(n_blocks, n_classes)
    del base  # the cell table and runs are done with: freed before the store is gathered
    vectors = _segment_vectors(geometry, (slot, streamed_tensor), segments, width, n_blocks * n_classes * layout.n_sets)
    return StreamedOperand(vectors, layout, unfiltered, fetched, delivered)


def _key_order(keys: np.ndarray, key_space: int) -> np.ndarray:
    """``np.argsort(keys)`` for distinct keys in ``0..key_space − 1``: by a position table when the key space is
    at most ``_KEY_TABLE_PER_KEY`` entries per key (no sort), else the sort."""
    if len(keys) < 2 or bool((keys[1:] > keys[:-1]).all()):  # already ascending (one fetch set, every fiber whole)
        return np.arange(len(keys))
    if key_space > _KEY_TABLE_PER_KEY * len(keys) + (1 << 16):
        return np.argsort(keys)
    index = np.dtype(np.int32 if len(keys) < 1 << 31 else np.int64)  # half the table's bytes to fill and scan
    position: np.ndarray = np.full(key_space, -1, index)
    position[keys] = np.arange(len(keys), dtype=index)
    return position[position >= 0]


# Key-space entries per fiber key up to which ``_key_order`` orders keys through a position table (8 bytes an
# entry at most) instead of a sort. Speed only: the same order. [choice]
_KEY_TABLE_PER_KEY = 16


def _segment_vectors(geometry: _Geometry, elements: tuple[np.ndarray, np.ndarray], segments: _Segments, width: int,
                     key_space: int) -> Vectors:
    """The vectors of every segment and the elements of the store, decoded from their laid-out slots
    (``elements``: the base fibers' slots and the streamed tensor; the base decoded and gathered where the store
    holds more than twice as many elements); each fiber key points at its segment's vectors, keys ascending."""
    vec0, nvec, vec_start, vec_size = cut_segments(segments.length, width, segments.start)
    order = _key_order(segments.key, key_space)
    segment = segments.segment[order]
    slot, tensor = elements
    store = segments.store
    if store is not None and len(store) > 2 * len(slot):  # copies outnumber the base: decode it, then gather
        u, v, chan, image = geometry.decode(slot)
        u, v, chan = u[store], v[store], chan[store]
        image = image[store] if geometry.shape[0] > 1 else np.zeros(len(store), np.int64)  # one image: all 0
    else:
        u, v, chan, image = geometry.decode(slot if store is None else slot[store])
    arrays = {"fiber_keys": segments.key[order], "fiber_vec0": vec0[segment], "fiber_nvec": nvec[segment],
              "fiber_nnz": segments.length[segment], "vec_start": vec_start, "vec_size": vec_size, "sp1": u, "sp2": v,
              "chan": chan, "image": image}
    return _Deferred.of(arrays, lambda: _vector_boxes(u, v, vec_start, vec_size, width, geometry.channel_inner),
                        lambda: geometry.values(tensor, slot if store is None else slot[store]))


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
