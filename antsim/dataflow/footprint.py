"""Valid products and output footprints without enumerating products (the ``fast`` path).

Mask correlation over kernel offsets: for each tap (a streamed position ``(u, v)`` for fprop/dgrad,
an output position ``(r, s)`` for wgrad) the linked stationary/other coordinates form a fixed
one-to-one index set, so the non-zero pairs linked by that tap are a small matrix product of masks.
Summing products gives valid counts per (chunk, PE) — exact, the same integers the ``exact`` path
finds by enumeration — and thresholding them gives the distinct outputs each PE touches (partial
outputs, halo, outputs per chunk).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.sparse import csr_matrix

from antsim.dataflow.reuse import kept_geometry
from antsim.dataflow.tiling import Tiling
from antsim.phases import DimMap, PhaseProblem

# Booleans in one touched-output array of the dense per-tap path (PEs × output plane × channels): 16 MB.
# It bounds memory, not results: output-channel groups are processed in batches that fit it.
_TOUCH_BUDGET = 1 << 24

# Product of the two mask densities above which fprop/dgrad footprints take the dense per-tap path
# (cost ∝ planes × channels) instead of the sparse one (cost ∝ valid products). Speed only: both paths
# give the same integers (tests/dataflow/test_mapper.py). [choice, commit a62dcd1] Re-measured on a
# loaded 2-core machine the sparse path was the faster one at every density product from 0.01 to 1 on a
# 64→64 32×32 and a 256→256 4×4 fprop (8×8 PEs): 0.05–0.30 s against 0.11–0.49 s.
_DENSE_SWITCH = 0.05

# Key spaces up to 2^26 take a bitmap (64 MB of booleans, one pass) in ``distinct``; larger ones a sort.
_BITMAP_KEYS = 1 << 26


def distinct(keys: np.ndarray, space: int) -> np.ndarray:
    """Sorted distinct values of non-negative int ``keys`` < ``space`` (a bitmap when it is small)."""
    if space <= _BITMAP_KEYS:
        seen = np.zeros(space, bool)
        seen[keys] = True
        return np.flatnonzero(seen)
    keys = np.sort(keys)
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys


# Keys (``drift``'s blocks, the stacked path's (PE, output) groups) are ranked through an int32 table over their
# key space when it holds at most 16 entries per key (one pass over the space), else by a stable sort (cells
# arrive in long ascending runs, which a stable sort merges fast). Speed only: both give ``np.unique``'s distinct
# keys and inverse (tests/dataflow/test_footprint.py). [choice] Measured here (one core, every
# ``drift.lockstep_pairs`` call of a ResNet-18 CIFAR step, best of 5): the table took 0.1–0.5× the stable sort's
# time up to 5 entries per key, 1.1× at 36 and 8–9× at 39–41; the stable sort 0.4–1.2× ``np.unique``'s.
_TABLE_PER_KEY = 16


def rank_keys(keys: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` of non-negative int ``keys`` < ``space``: the sorted distinct keys
    and the index (int64) of each key among them."""
    if space <= _TABLE_PER_KEY * len(keys) and space < 1 << 31:
        seen = np.zeros(space, bool)
        seen[keys] = True
        rank = np.cumsum(seen, dtype=np.int32) - 1
        return np.flatnonzero(seen), rank[keys].astype(np.int64)
    # int32 keys where the space allows: numpy's stable sort of int32 takes ~0.7× the time of int64's.
    order = np.argsort(keys.astype(np.int32) if space < 1 << 31 else keys, kind="stable")
    ordered = keys[order]
    first = np.ones(len(keys), bool)
    first[1:] = ordered[1:] != ordered[:-1]
    index = np.empty(len(keys), np.int64)
    index[order] = np.cumsum(first) - 1
    return ordered[first], index


@dataclass(frozen=True)
class Footprint:
    """Per slot (``chunk · n_pes + pe``): valid products, distinct outputs held, distinct halo outputs;
    per chunk: distinct outputs after halo exchange / reduction."""

    valid_products: np.ndarray
    partial_outputs: np.ndarray
    halo_outputs: np.ndarray
    output_values: np.ndarray


def links(dim: DimMap, n_y: int, n_u: int, by_output: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per tap, the linked index pairs of one dimension.

    ``by_output=False`` (fprop/dgrad): tap = streamed ``u``; returns ``(y, o)`` pairs per u.
    ``by_output=True`` (wgrad): tap = output ``o``; returns ``(y, u)`` pairs per o.
    """
    y, u = np.meshgrid(np.arange(n_y), np.arange(n_u), indexing="ij")
    o, ok = dim.output(y, u)
    out = []
    for t in range(dim.extent if by_output else n_u):
        if by_output:
            yy, uu = np.nonzero(ok & (o == t))
            out.append((yy, uu))
        else:
            sel = ok[:, t]
            out.append((np.nonzero(sel)[0], o[sel, t]))
    return out


def _within(group: slice, channels: slice) -> slice:
    """``group`` (output channels) as a slice of the channel batch ``channels`` that holds it."""
    return slice(group.start - channels.start, group.stop - channels.start)


def plane_footprint_dense(problem: PhaseProblem, tiling: Tiling, stationary_mask: np.ndarray,
                          streamed_mask: np.ndarray) -> Footprint:
    """fprop/dgrad with dense matrix products per tap (cost ∝ planes × channels; for dense masks)."""
    N, Cs, Ys, Xs = stationary_mask.shape
    Ko, U, V = streamed_mask.shape[2:]
    O1, O2 = tiling.out_plane
    n_pes, G = tiling.n_pes, tiling.n_groups
    taps = [(u, v, a, b) for u, a in enumerate(links(problem.dims[0], Ys, U, False))
            for v, b in enumerate(links(problem.dims[1], Xs, V, False))]
    pe_stat = tiling.pe_of_stationary()
    not_own = tiling.pe_of_output().ravel()[None, :] != np.arange(n_pes)[:, None]  # (n_pes, O)
    weights = streamed_mask[0].astype(np.float32)  # (Cs, Ko, U, V)
    valid, partial, halo = (np.zeros((N, G, n_pes), np.int64) for _ in range(3))
    out_values = np.zeros((N, G), np.int64)
    per_batch = max(1, _TOUCH_BUDGET // max(1, n_pes * O1 * O2 * tiling.kc))
    for n in range(N):
        plane = stationary_mask[n].astype(np.float32)
        for g0 in range(0, G, per_batch):
            groups = range(g0, min(G, g0 + per_batch))
            channels = slice(groups[0] * tiling.kc, min(Ko, (groups[-1] + 1) * tiling.kc))
            touched = np.zeros((n_pes, O1 * O2, channels.stop - channels.start), bool)
            for u, v, (rows_in, rows_out), (cols_in, cols_out) in taps:
                w_tap = weights[:, channels, u, v]
                if len(rows_in) == 0 or len(cols_in) == 0 or not w_tap.any():
                    continue
                pair_counts = w_tap.T @ plane[:, rows_in[:, None], cols_in[None, :]].reshape(Cs, -1)  # (ko, linked)
                src = pe_stat[rows_in[:, None], cols_in[None, :]].ravel()
                opos = (rows_out[:, None] * O2 + cols_out[None, :]).ravel()
                touched[src, opos, :] |= (pair_counts > 0).T
                for g in groups:
                    in_group = _within(tiling.group_slice(g, Ko), channels)
                    per_pe = np.bincount(src, pair_counts[in_group].sum(axis=0), minlength=n_pes)
                    valid[n, g] += np.rint(per_pe).astype(np.int64)
            for g in groups:
                part = touched[:, :, _within(tiling.group_slice(g, Ko), channels)]
                per_pe_out = part.sum(axis=2)  # (n_pes, O)
                partial[n, g] = per_pe_out.sum(axis=1)
                halo[n, g] = (per_pe_out * not_own).sum(axis=1)
                out_values[n, g] = part.any(axis=0).sum()
    return Footprint(valid.ravel(), partial.ravel(), halo.ravel(), out_values.ravel())


def _forward(pairs: tuple[np.ndarray, np.ndarray], n_y: int) -> np.ndarray:
    """Map stationary coordinate y → linked output coordinate o (−1 where none) for one tap."""
    fwd = np.full(n_y, -1, dtype=np.int64)
    fwd[pairs[0]] = pairs[1]
    return fwd


# A tap's ``W_tap @ S_tap`` is one dense float32 BLAS product (instead of a scipy sparse one) when its result
# has at most 2^17 entries (Ko × output plane) and it takes at most 2^29 multiply-adds. Speed only: both give
# the same pair counts (small integers, exact in float32) in an entry order no caller depends on
# (tests/dataflow/test_footprint_taps.py). [choice] Measured here (one core, density 0.1, every fprop/dgrad
# layer): the dense product took 0.40–0.93× the sparse one's time up to 2^17 result entries (ResNet-50
# ImageNet's 7×7 and 14×14 layers, every ResNet-18 CIFAR layer), 0.8–1.2× at 2×10^5 and 1.1–2.7× above (the
# sparse products' fixed cost per call is ~0.1 ms; the dense one scans its whole result). All fprop/dgrad
# footprints of a step: ResNet-18 CIFAR 0.69 → 0.43 s, ResNet-50 ImageNet 3.42 → 2.73 s (CPU time, best of 3).
_BLAS_TAP_ENTRIES = 1 << 17
_BLAS_TAP_MACS = 1 << 29


def _tap_pair_counts(w_tap: np.ndarray, channel: np.ndarray, out: np.ndarray, n_out: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Non-zero entries (output channel, output position, pair count) of ``W_tap (Ko × Cs) @ S_tap (Cs × O)``:
    ``w_tap`` is W_tap's mask, S_tap has its non-zeros at (``channel``, ``out``) — one stationary non-zero
    per (channel, output) of a tap."""
    n_ko, n_channels = w_tap.shape
    if n_ko * n_out <= _BLAS_TAP_ENTRIES and n_ko * n_channels * n_out <= _BLAS_TAP_MACS:
        s_tap = np.zeros((n_channels, n_out), np.float32)
        s_tap[channel, out] = 1.0
        product = w_tap.astype(np.float32) @ s_tap
        row, col = np.nonzero(product)
        return row, col, product[row, col].astype(np.float64)
    w_out_channel, w_channel = np.nonzero(w_tap)
    s_sparse = csr_matrix((np.ones(len(out)), (channel, out)), shape=(n_channels, n_out))
    w_sparse = csr_matrix((np.ones(len(w_out_channel)), (w_out_channel, w_channel)), shape=(n_ko, n_channels))
    pair_counts = (w_sparse @ s_sparse).tocoo()
    return pair_counts.row, pair_counts.col, pair_counts.data


def plane_footprint_sparse(problem: PhaseProblem, tiling: Tiling, stationary_mask: np.ndarray,
                           streamed_mask: np.ndarray) -> Footprint:
    """fprop/dgrad with sparse products per tap ``W_tap (Ko × Cs) @ S_tap (Cs × outputs)`` (cost ∝ valid
    products); touched outputs are keyed by the PE whose stationary value produced them."""
    N = stationary_mask.shape[0]
    G, n_pes = tiling.n_groups, tiling.n_pes
    valid = np.zeros((N, G * n_pes))
    partial, halo = np.zeros((N, G * n_pes), np.int64), np.zeros((N, G * n_pes), np.int64)
    out_values = np.zeros((N, G), np.int64)
    taps = _SparseTaps.build(problem, tiling, stationary_mask, streamed_mask)
    for n in range(N):
        for channels in taps.channel_batches():
            found = taps.touched(n, channels, valid[n])
            if found is None:
                continue
            touched, out_channel_of = found
            rest, o = np.divmod(touched, taps.n_out)
            pe, local = np.divmod(rest, channels.stop - channels.start)
            out_channel = out_channel_of[local]
            slot = (out_channel // tiling.kc) * n_pes + pe
            partial[n] += np.bincount(slot, minlength=G * n_pes)
            halo[n] += np.bincount(slot[taps.own[o] != pe], minlength=G * n_pes)
            outs = distinct(local * taps.n_out + o, (channels.stop - channels.start) * taps.n_out)
            out_values[n] += np.bincount(out_channel_of[outs // taps.n_out] // tiling.kc, minlength=G)
    return Footprint(np.rint(valid).astype(np.int64).ravel(), partial.ravel(), halo.ravel(), out_values.ravel())


@dataclass(frozen=True)
class _SparseTaps:
    """The per-tap operands of ``plane_footprint_sparse``: each streamed tap's weight mask and the output each
    stationary position lands on through it."""

    problem: PhaseProblem
    tiling: Tiling
    stationary_mask: np.ndarray
    tap_weights: np.ndarray  # (U, V, Ko, Cs): W_tap per tap
    weighted: np.ndarray  # (U, V): the tap has a weight
    fwd_h: list[np.ndarray]
    fwd_w: list[np.ndarray]
    own: np.ndarray
    n_out: int

    @classmethod
    def build(cls, problem: PhaseProblem, tiling: Tiling, stationary_mask: np.ndarray,
              streamed_mask: np.ndarray) -> _SparseTaps:
        Ys, Xs = stationary_mask.shape[2:]
        U, V = streamed_mask.shape[3:]
        tap_weights = np.ascontiguousarray(streamed_mask[0].transpose(2, 3, 1, 0))
        return cls(problem, tiling, stationary_mask, tap_weights, np.asarray(tap_weights.any(axis=(2, 3))),
                   [_forward(pair, Ys) for pair in links(problem.dims[0], Ys, U, False)],
                   [_forward(pair, Xs) for pair in links(problem.dims[1], Xs, V, False)],
                   tiling.pe_of_output().ravel(), tiling.out_plane[0] * tiling.out_plane[1])

    def channel_batches(self) -> list[slice]:
        """Output channels in batches whose (PE, channel, output) key space fits one ``_BITMAP_KEYS`` bitmap,
        so touched outputs are marked tap by tap instead of collected from every tap first (a 10000-channel
        GEMM decoder with 65 taps held ~2 GB of keys)."""
        n_ko = self.tap_weights.shape[2]
        per_batch = max(1, _BITMAP_KEYS // max(1, self.tiling.n_pes * self.n_out))
        return [slice(k, min(k + per_batch, n_ko)) for k in range(0, n_ko, per_batch)]

    def touched(self, n: int, channels: slice, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Add image ``n``'s valid pair counts of the ``channels`` to ``valid`` (per slot); return the distinct
        touched ``(pe · batch + local channel) · outputs + output`` keys and the channel of each local index,
        or None when no tap lands."""
        tiling, n_out = self.tiling, self.n_out
        width = channels.stop - channels.start
        seen = np.zeros(tiling.n_pes * width * n_out, bool)
        pe_stat = tiling.pe_of_stationary()
        c, y, x = np.nonzero(self.stationary_mask[n])
        landed = False
        for u, rows_of in enumerate(self.fwd_h):
            out_row = rows_of[y]
            for v, cols_of in enumerate(self.fwd_w):
                out_col = cols_of[x]
                ok = (out_row >= 0) & (out_col >= 0)
                if not ok.any() or not self.weighted[u, v]:
                    continue
                o = out_row[ok] * tiling.out_plane[1] + out_col[ok]
                row, col, count = _tap_pair_counts(self.tap_weights[u, v, channels], c[ok], o, n_out)
                src = np.full(n_out, -1, dtype=np.int64)
                src[o] = pe_stat[y[ok], x[ok]]
                pe = src[col]
                valid += np.bincount(((row + channels.start) // tiling.kc) * tiling.n_pes + pe, weights=count,
                                     minlength=len(valid))
                seen[(pe * width + row) * n_out + col] = True
                landed = True
        if not landed:
            return None
        return np.flatnonzero(seen), np.arange(channels.start, channels.stop)


# fprop/dgrad footprints of every tap at once (``plane_footprint_stacked``: the links' bit-packed output channels
# OR-ed per (PE, output), the valid products from one narrow float32 product per image) when one image's
# (position, tap, output channel) triples fit 2^22 and its product's multiply-adds 2^29 (the gate of the session-7
# stacked product, kept: every path gives the same integers, tests/dataflow/test_footprint_taps.py). [choice]
# Measured here (one core, CPU time, uniform 0.1, every ResNet-18 CIFAR fprop/dgrad layer fits):
# docs/footprint_speed.md.
_STACKED_ENTRIES = 1 << 22
_STACKED_MACS = 1 << 29


def stacked_fits(stationary_shape: tuple[int, ...], streamed_shape: tuple[int, ...]) -> bool:
    """Whether one image's (position, tap, output channel) triples fit ``_STACKED_ENTRIES``, its stationary
    positions × channels × taps × output channels fit ``_STACKED_MACS``, and the summed pair counts (≤ taps · Cs)
    are exact in float32."""
    _, Cs, Ys, Xs = stationary_shape
    Ko, U, V = streamed_shape[2:]
    entries = Ys * Xs * U * V * Ko
    return entries <= _STACKED_ENTRIES and entries * Cs <= _STACKED_MACS and U * V * Cs < 1 << 24


def _forward_table(dim: DimMap, n_y: int, n_u: int) -> np.ndarray:
    """(n_u, n_y): per streamed tap u, the output coordinate o linked to each stationary y (−1 where none); the
    rows of ``_forward`` over ``links(dim, n_y, n_u, False)`` in one call."""
    o, ok = dim.output(np.broadcast_to(np.arange(n_y), (n_u, n_y)), np.arange(n_u)[:, None])
    return np.where(ok, o, -1)


def _stable_order(values: np.ndarray, bound: int) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` of non-negative ints below ``bound``: as uint16 when they fit, which numpy
    sorts by radix (≈ 8× faster than its int64 merge sort on 10^4 values, measured here), else as int32 or given."""
    if bound <= 1 << 16:
        return np.argsort(values.astype(np.uint16), kind="stable")
    return np.argsort(values.astype(np.int32) if bound < 1 << 31 else values, kind="stable")


def _starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Index of the first entry of each run of equal values in ``sorted_keys``."""
    if len(sorted_keys) == 0:
        return np.zeros(0, np.int64)
    return np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1])))


@dataclass(frozen=True)
class _TapLinks:
    """Every (stationary position, streamed tap) whose output lies in the window, in ``groups`` of links per (PE,
    output): the links ordered by group, the groups by PE, then output.

    Attributes:
        position: stationary position ``y · Xs + x`` of each link. tap: streamed tap ``u · V + v``.
        first_link: each group's first link. pe, out: each group's PE and output position ``o1 · O2 + o2``.
        halo: the group's output is owned by another PE. first_group, pes: the first group of each PE that has
            one, and those PEs. by_output, first_by_output: the groups ordered by output, and where each output's
            groups start in that order.
        patterns: (K, taps) float32, the taps a position links (1 where it does), one per distinct pair of a tap-row
            set and a tap-column set; by_pattern,
            first_pattern: the positions ordered by their pattern, and where each pattern's positions start in that
            order (a position's taps are its row's times its column's: at most a few per dimension, e.g. 9 for a
            padded 3×3 stride-1 kernel). pe_order: the positions ordered by PE (stable), each given by its index in
            the pattern order. first_position, position_pes: where each PE's positions start in that order, and
            those PEs.
    """

    position: np.ndarray
    tap: np.ndarray
    first_link: np.ndarray
    pe: np.ndarray
    out: np.ndarray
    halo: np.ndarray
    first_group: np.ndarray
    pes: np.ndarray
    by_output: np.ndarray
    first_by_output: np.ndarray
    patterns: np.ndarray
    by_pattern: np.ndarray
    first_pattern: np.ndarray
    pe_order: np.ndarray
    first_position: np.ndarray
    position_pes: np.ndarray

    @classmethod
    def build(cls, dims: tuple[DimMap, DimMap], tiling: Tiling, plane: tuple[int, int], taps: tuple[int, int]
              ) -> _TapLinks:
        (Ys, Xs), (U, V) = plane, taps
        fwd_h = _forward_table(dims[0], Ys, U)  # (U, Ys)
        fwd_w = _forward_table(dims[1], Xs, V)  # (V, Xs)
        ok = (fwd_h[:, None, :, None] >= 0) & (fwd_w[None, :, None, :] >= 0)  # (U, V, Ys, Xs)
        tap, y, x = np.nonzero(ok.reshape(U * V, Ys, Xs))
        n_out = tiling.out_plane[0] * tiling.out_plane[1]
        out = fwd_h[tap // V, y] * tiling.out_plane[1] + fwd_w[tap % V, x]
        pe_of_position = tiling.pe_of_stationary().ravel()
        position = y * Xs + x
        keys, group = rank_keys(pe_of_position[position].astype(np.int64) * n_out + out, tiling.n_pes * n_out)
        order = _stable_order(group, len(keys))
        pe, out_of_group = np.divmod(keys, n_out)
        first_group, by_output = _starts(pe), _stable_order(out_of_group, n_out)
        patterns, by_pattern, first_pattern = _link_patterns(fwd_h >= 0, fwd_w >= 0)
        pe_order = _stable_order(pe_of_position, tiling.n_pes)
        first_position = _starts(pe_of_position[pe_order])
        in_pattern_order = np.empty(len(by_pattern), np.int64)
        in_pattern_order[by_pattern] = np.arange(len(by_pattern))
        arrays = (position[order], tap[order], _starts(group[order]), pe, out_of_group,
                  tiling.pe_of_output().ravel()[out_of_group] != pe, first_group, pe[first_group], by_output,
                  _starts(out_of_group[by_output]), patterns, by_pattern, first_pattern, in_pattern_order[pe_order],
                  first_position, pe_of_position[pe_order][first_position])
        for array in arrays:  # a cached geometry is shared by every call with its key
            array.flags.writeable = False
        return cls(*arrays)


def _distinct_columns(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(bits.T, axis=0, return_inverse=True)`` of a bool (n, m) array, up to the order of the distinct
    columns: each column's bits packed into bytes and the byte strings ranked as one 1-D array (no per-row
    comparisons in Python)."""
    packed = np.packbits(bits.T, axis=1)
    keys: np.ndarray
    if packed.shape[1] <= 8:  # a column's bits as one uint64 code: a sort of ints
        codes = np.zeros((len(packed), 8), np.uint8)
        codes[:, :packed.shape[1]] = packed
        keys = codes.view(np.uint64).ravel()
    else:
        keys = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).ravel()
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    first = np.ones(len(keys), bool)
    first[1:] = ordered[1:] != ordered[:-1]
    inverse = np.empty(len(keys), np.int64)
    inverse[order] = np.cumsum(first) - 1
    return bits.T[order[first]], inverse


def _link_patterns(rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_TapLinks.patterns, by_pattern, first_pattern`` from ``rows`` (U, Ys) and ``cols`` (V, Xs), whether tap row
    u (column v) links stationary row y (column x): position (y, x) links tap (u, v) when both do."""
    row_patterns, row_of = _distinct_columns(rows)
    col_patterns, col_of = _distinct_columns(cols)
    pattern_of = (row_of.reshape(-1, 1) * len(col_patterns) + col_of.reshape(1, -1)).ravel()  # per y · Xs + x
    patterns = (row_patterns[:, None, :, None] & col_patterns[None, :, None, :]).reshape(
        len(row_patterns) * len(col_patterns), -1)
    by_pattern = _stable_order(pattern_of, len(patterns))
    counts = np.bincount(pattern_of, minlength=len(patterns))
    return patterns.astype(np.float32), by_pattern, np.cumsum(counts) - counts


# fprop/dgrad link geometries (``_tap_links``) and wgrad layouts (``_wgrad_layout``) are kept per key, the least
# recently used dropped first. A key holds every field ``build`` reads (the dimension maps, the plane and tap
# shapes, the tiling with its channels per group, groups and images set to 1: they move no position or output),
# so a kept geometry is the one ``build`` returns (tests/dataflow/test_footprint.py). [choice] 32 entries: a
# ResNet-18 CIFAR step has 20 fprop/dgrad and 10 wgrad geometries among its 60 calls.
_GEOMETRIES = 32
# Geometries with more than 2^16 position-tap pairs are built per call instead of kept. Memory only: a kept
# geometry's arrays (int64 links, float32 link masks: ~1 KB per 20 pairs) stay on the heap between calls and pin the
# freed temporaries around them. [choice] Measured here (``scripts/peak_rss.py``, dense vgg16-imagenet-full, batch 1,
# whose 224×224 and 112×112 planes have 451,584 and 112,896 pairs): peak RSS 1,598 MiB kept up to 2^20, 1,541 up to
# 2^17, 1,473 up to 2^16, 1,457 never kept (docs/footprint_speed.md). Every ResNet-18 CIFAR geometry (≤ 32·32·9
# pairs) and every 56×56 one stays kept.
_KEPT_LINKS = 1 << 16


def _geometry_key(tiling: Tiling) -> Tiling:
    """``tiling`` without the fields no geometry reads (channels per group, groups, images)."""
    return replace(tiling, kc=1, n_groups=1, n_images=1)


@kept_geometry(_GEOMETRIES)
def _kept_tap_links(dims: tuple[DimMap, DimMap], tiling: Tiling, plane: tuple[int, int], taps: tuple[int, int]
                    ) -> _TapLinks:
    return _TapLinks.build(dims, tiling, plane, taps)


def _tap_links(problem: PhaseProblem, tiling: Tiling, plane: tuple[int, int], taps: tuple[int, int]) -> _TapLinks:
    """``_TapLinks.build`` of ``problem``'s dimension maps, kept while small (``_KEPT_LINKS``)."""
    if plane[0] * plane[1] * taps[0] * taps[1] > _KEPT_LINKS:
        return _TapLinks.build(problem.dims, tiling, plane, taps)
    return _kept_tap_links(problem.dims, _geometry_key(tiling), plane, taps)


# Population counts of every byte value (a group of 8 output channels is one byte of a bit-packed row), for numpy
# < 2.0, which lacks the ``bitwise_count`` ufunc (pyproject allows numpy 1.26; 2.x counts ~100× faster).
_POPCOUNT = np.array([bin(value).count("1") for value in range(256)], np.uint8)


def _byte_counts(packed: np.ndarray) -> np.ndarray:
    """The set bits of every byte of uint8 ``packed``, uint8 of the same shape."""
    count = getattr(np, "bitwise_count", None)
    return count(packed) if count is not None else _POPCOUNT[packed]


def _group_counts(packed: np.ndarray, n_channels: int, kc: int) -> np.ndarray:
    """Per row of ``packed`` (R, bytes) uint8, bits of ``n_channels`` output channels (little-endian, zero-padded):
    the set bits of each group of ``kc`` channels ``ko // kc``, (R, G) (uint8 when ``kc`` = 8, else int64)."""
    n_groups = -(-n_channels // kc)
    if kc % 8:
        bits = np.unpackbits(packed, axis=1, count=n_channels, bitorder="little")
        return np.add.reduceat(bits, np.arange(0, n_channels, kc), axis=1, dtype=np.int64)
    n_bytes = n_groups * kc // 8  # whole bytes per group; zero bits past the last channel
    per_byte = _byte_counts(packed[:, :n_bytes])
    if per_byte.shape[1] < n_bytes:
        per_byte = np.concatenate((per_byte, np.zeros((len(packed), n_bytes - per_byte.shape[1]), np.uint8)), axis=1)
    return per_byte if kc == 8 else per_byte.reshape(len(packed), n_groups, kc // 8).sum(axis=2, dtype=np.int64)


def _pack_leading(bits: np.ndarray) -> np.ndarray:
    """``np.packbits(bits, axis=0, bitorder="little")`` of a C-contiguous (K, R) uint8 0/1 array, by shifted ORs of
    whole rows (numpy's packbits along a leading axis walks it element by element). A 0/1 byte shifted by fewer
    than 8 bits stays inside its byte, so rows of a multiple of 8 bytes are shifted and OR-ed as uint64 words."""
    full = len(bits) // 8
    out = np.zeros((-(-len(bits) // 8), bits.shape[1]), np.uint8)
    word = np.uint64 if bits.shape[1] % 8 == 0 else np.uint8
    eights, packed = bits[:8 * full].reshape(full, 8, bits.shape[1]).view(word), out.view(word)
    for bit in range(8):
        np.bitwise_or(packed[:full], np.left_shift(eights[:, bit], word(bit)), out=packed[:full])
    for bit in range(len(bits) - 8 * full):
        np.bitwise_or(packed[full], np.left_shift(bits[8 * full + bit].view(word), word(bit)), out=packed[full])
    return out


def _packed_weights(streamed_mask: np.ndarray) -> np.ndarray:
    """(taps · Cs, words · 8) uint8: row ``tap · Cs + c`` holds bit ``ko`` (little-endian, whole uint64 words) where
    the weight of channel ``c``, output channel ``ko`` at ``tap`` is non-zero. fprop's weights are a transposed
    view (output channels outermost in memory): packed along them in memory order, then the bytes transposed."""
    Cs, Ko, U, V = streamed_mask.shape[1:]
    n_bytes = -(-Ko // 8)
    weights = streamed_mask[0].view(np.uint8)
    packed = np.zeros((U * V, Cs, -(-Ko // 64) * 8), np.uint8)
    if weights.strides[1] > weights.strides[0]:
        by_ko = np.ascontiguousarray(weights.transpose(1, 0, 2, 3)).reshape(Ko, Cs * U * V)
        packed[:, :, :n_bytes] = _pack_leading(by_ko).reshape(n_bytes, Cs, U * V).transpose(2, 1, 0)
    else:
        by_tap = np.ascontiguousarray(np.ascontiguousarray(weights).reshape(Cs * Ko, U * V).T)
        packed[:, :, :n_bytes] = np.packbits(by_tap.reshape(U * V, Cs, Ko), axis=2, bitorder="little")
    return packed.reshape(U * V * Cs, -1)


@dataclass(frozen=True)
class _TapWeights:
    """The streamed operand of ``plane_footprint_stacked`` per (tap, channel) row ``tap · Cs + c``.

    Attributes:
        bits: (taps · Cs, words) uint64, bit ``ko`` set where the output channel's weight is non-zero.
        per_tap: (taps, Cs · G) float32, per tap, channel and group of ``kc`` output channels its non-zero weights.
    """

    bits: np.ndarray
    per_tap: np.ndarray

    @classmethod
    def build(cls, streamed_mask: np.ndarray, kc: int) -> _TapWeights:
        Cs, Ko, U, V = streamed_mask.shape[1:]
        packed = _packed_weights(streamed_mask)
        per_tap = _group_counts(packed, Ko, kc).reshape(U * V, -1)
        return cls(packed.view(np.uint64), per_tap.astype(np.float32))


# A block of at most 2^18 (link, stationary non-zero) pairs per pass of ``_held_words`` (its gathered words and
# indices, ~2–10 MB). Memory only: blocks cut between (PE, output) groups, so every group is OR-ed whole. [choice]
_PAIR_BLOCK = 1 << 18


def _held_words(links: _TapLinks, bits: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """(groups, words) uint64: per (PE, output) group, the output channels some pair of its links forms, OR-ed over
    the link's non-zero stationary channels ``c`` of the weight bits of row ``tap · Cs + c``.

    Args:
        bits: ``_TapWeights.bits``. positions: (positions, Cs) bool, one image's stationary mask per position.
    """
    n_channels = positions.shape[1]
    y, c = np.nonzero(positions)  # by position, then channel
    per_position = np.bincount(y, minlength=len(positions))
    first_channel = np.cumsum(per_position) - per_position
    count = per_position[links.position]  # pairs of each link
    link_end = np.cumsum(count)
    link_start = link_end - count
    group_start = link_start[links.first_link]
    group_end = np.append(group_start[1:], link_end[-1])
    held = np.zeros((len(group_start), bits.shape[1]), np.uint64)
    g0 = 0
    while g0 < len(group_start):
        g1 = max(g0 + 1, int(np.searchsorted(group_end, group_start[g0] + _PAIR_BLOCK, side="right")))
        l0 = links.first_link[g0]
        l1 = links.first_link[g1] if g1 < len(group_start) else len(count)
        p0, p1 = group_start[g0], group_end[g1 - 1]
        if p1 > p0:
            shift = np.repeat(first_channel[links.position[l0:l1]] - link_start[l0:l1], count[l0:l1])
            rows = c[np.arange(p0, p1) + shift] + np.repeat(links.tap[l0:l1] * n_channels, count[l0:l1])
            starts = group_start[g0:g1] - p0
            last = int(np.searchsorted(starts, p1 - p0))  # groups past it are empty (and start past the block)
            ored = np.bitwise_or.reduceat(bits[rows], starts[:last], axis=0)
            formed = group_end[g0:g0 + last] > group_start[g0:g0 + last]  # an empty group's reduceat is not 0
            held[g0:g0 + last][formed] = ored[formed]
        g0 = g1
    return held


def _valid_per_pe(links: _TapLinks, weights: _TapWeights, positions: np.ndarray) -> np.ndarray:
    """(G, PEs with positions) valid products of one image: per position, its stationary non-zeros times each group's
    non-zero weights of their channel summed over the taps the position links (its pattern's: one product per
    pattern of the weights summed over its taps), summed over each PE's positions. Integers ≤ Cs · taps · kc:
    float32 products where they stay below 2^24 (exact), float64 otherwise."""
    n_positions, n_channels = positions.shape
    per_pattern = links.patterns @ weights.per_tap  # (K, Cs · G): small integers, exact in float32
    exact32 = n_channels * per_pattern.max(initial=0) < 1 << 24
    dtype = np.float32 if exact32 else np.float64
    per_pattern = per_pattern.astype(dtype, copy=False).reshape(len(per_pattern), n_channels, -1)
    ordered = positions[links.by_pattern].astype(dtype)
    per_position = np.empty((n_positions, per_pattern.shape[2]), dtype)
    bounds = np.append(links.first_pattern, n_positions)
    for k, (p0, p1) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        if p1 > p0:
            np.matmul(ordered[p0:p1], per_pattern[k], out=per_position[p0:p1])
    # Exact integers: the cast to int64 is exact, and their sums per PE (int64) too.
    return np.add.reduceat(per_position[links.pe_order].astype(np.int64), links.first_position, axis=0).T


def plane_footprint_stacked(problem: PhaseProblem, tiling: Tiling, stationary_mask: np.ndarray,
                            streamed_mask: np.ndarray) -> Footprint:
    """fprop/dgrad from every (stationary position, streamed tap) link at once. A position lies on one PE, so a (PE,
    output) group's links hold the pairs that PE forms for that output: it holds output channel ``ko`` when some
    link's position has a non-zero channel whose weight at the link's tap and ``ko`` is non-zero (``_held_words``:
    bit-packed weight rows OR-ed per group). Partial outputs are the held channels, halo those of another PE's
    output, written outputs the channels held by some group of an output; valid products are per-position counts
    summed over the position's links (``_valid_per_pe``). The same integers as the per-tap paths."""
    N, Cs, Ys, Xs = stationary_mask.shape
    Ko, U, V = streamed_mask.shape[2:]
    G, kc, n_pes = tiling.n_groups, tiling.kc, tiling.n_pes
    links = _tap_links(problem, tiling, (Ys, Xs), (U, V))
    valid, partial, halo = (np.zeros((N, G, n_pes), np.int64) for _ in range(3))
    out_values = np.zeros((N, G), np.int64)
    if len(links.pe) == 0:
        return Footprint(valid.ravel(), partial.ravel(), halo.ravel(), out_values.ravel())
    weights = _TapWeights.build(streamed_mask, kc)
    for n in range(N):
        positions = np.ascontiguousarray(stationary_mask[n].reshape(Cs, Ys * Xs).T)  # (positions, Cs)
        valid[n][:, links.position_pes] = _valid_per_pe(links, weights, positions)
        held = _held_words(links, weights.bits, positions)
        touched = _group_counts(held.view(np.uint8), Ko, kc)  # (groups, G)
        partial[n][:, links.pes] = np.add.reduceat(touched, links.first_group, axis=0, dtype=np.int64).T
        halo[n][:, links.pes] = np.add.reduceat(touched * links.halo[:, None], links.first_group, axis=0,
                                                dtype=np.int64).T
        written = np.bitwise_or.reduceat(held[links.by_output], links.first_by_output, axis=0)
        out_values[n] = _group_counts(written.view(np.uint8), Ko, kc).sum(axis=0, dtype=np.int64)
    return Footprint(valid.ravel(), partial.ravel(), halo.ravel(), out_values.ravel())


def _inverse(pairs: tuple[np.ndarray, np.ndarray], n_u: int) -> np.ndarray:
    """Map streamed coordinate u → linked stationary coordinate y (−1 where none) for one tap."""
    inv = np.full(n_u, -1, dtype=np.int64)
    inv[pairs[1]] = pairs[0]
    return inv


@dataclass(frozen=True)
class _WgradLayout:
    """wgrad geometry: the stationary positions of each occupied PE and the dY position each tap links them to.

    Attributes:
        pes: the occupied PEs (P,). positions: (P, T) each PE's positions ``y · Xs + x``, padded with ``Ys · Xs``
            (an empty position). linked: (taps, Ys · Xs + 1) the dY position ``u · V + v`` a tap links each
            stationary position to, ``U · V`` (an empty dY position) where none, and for the padding.
            by_pe: (Ys · Xs,) the positions ordered by PE (stable); pe_index: the index in ``pes`` of each one's PE.
    """

    pes: np.ndarray
    positions: np.ndarray
    linked: np.ndarray
    by_pe: np.ndarray
    pe_index: np.ndarray

    @classmethod
    def build(cls, dims: tuple[DimMap, DimMap], tiling: Tiling, plane: tuple[int, int], taps: tuple[int, int]
              ) -> _WgradLayout:
        (Ys, Xs), (U, V) = plane, taps
        pe_stat = tiling.pe_of_stationary().ravel()
        order = _stable_order(pe_stat, tiling.n_pes)
        first = _starts(pe_stat[order])
        pes, count = pe_stat[order][first], np.diff(np.append(first, len(order)))
        positions = np.full((len(pes), int(count.max())), Ys * Xs, np.int64)
        positions[np.repeat(np.arange(len(pes)), count), np.arange(len(order)) - np.repeat(first, count)] = order
        inv_h = [_inverse(pair, U) for pair in links(dims[0], Ys, U, True)]
        inv_w = [_inverse(pair, V) for pair in links(dims[1], Xs, V, True)]
        linked = np.full((len(inv_h) * len(inv_w), Ys * Xs + 1), U * V, np.int64)
        for tap, (rows_of, cols_of) in enumerate((h, w) for h in inv_h for w in inv_w):
            (u,), (v,) = np.nonzero(rows_of >= 0), np.nonzero(cols_of >= 0)
            stationary_at = (rows_of[u][:, None] * Xs + cols_of[v][None, :]).ravel()
            linked[tap, stationary_at] = (u[:, None] * V + v[None, :]).ravel()
        arrays = (pes, positions, linked, order, np.repeat(np.arange(len(pes)), count))
        for array in arrays:  # a kept geometry is shared by every call with its key
            array.flags.writeable = False
        return cls(*arrays)


@kept_geometry(_GEOMETRIES)
def _kept_wgrad_layout(dims: tuple[DimMap, DimMap], tiling: Tiling, plane: tuple[int, int], taps: tuple[int, int]
                       ) -> _WgradLayout:
    return _WgradLayout.build(dims, tiling, plane, taps)


def _wgrad_layout(problem: PhaseProblem, tiling: Tiling, plane: tuple[int, int], taps: tuple[int, int]
                  ) -> _WgradLayout:
    """``_WgradLayout.build`` of ``problem``'s dimension maps, kept while small (``_KEPT_LINKS``)."""
    if plane[0] * plane[1] * taps[0] * taps[1] > _KEPT_LINKS:
        return _WgradLayout.build(problem.dims, tiling, plane, taps)
    return _kept_wgrad_layout(problem.dims, _geometry_key(tiling), plane, taps)


def tap_footprint(problem: PhaseProblem, tiling: Tiling, stationary_mask: np.ndarray, streamed_mask: np.ndarray,
                  tile_of_image: np.ndarray | None = None) -> Footprint:
    """wgrad: ``stationary_mask`` (N, Cs, Ys, Xs) and ``streamed_mask`` (N, 1, Ko, U, V) non-zero masks (bool).

    Per tap, a linked streamed non-zero ``(ko, p, q)`` meets every stationary non-zero at its linked position
    (on the PE holding it): the valid pairs of a slot are, over the PE's positions, the stationary channels
    non-zero there times the group's dY non-zeros linked to it (``_wgrad_valid``). The accumulator entries a PE
    holds for a tap, ``(ch, ko)``, are those with a non-zero pair on one of its positions in one of the batch
    tile's images (``_held_counts``: bit-packed dY rows OR-ed per (tap, channel, PE)); the distinct entries over
    PEs are the non-zeros of the tile's whole dW.

    ``tile_of_image`` (N,) groups consecutive images into batch tiles whose partial sums accumulate in
    the same accumulator entries: a tile's partial and written outputs are the union of its images',
    reported on the chunks of the tile's last image (0 on the others). Valid products stay per image.
    Default: every image its own tile.
    """
    N, Cs, Ys, Xs = stationary_mask.shape
    Ko, U, V = streamed_mask.shape[2:]
    n_pes, G = tiling.n_pes, tiling.n_groups
    tiles = np.arange(N) if tile_of_image is None else np.asarray(tile_of_image)
    layout = _wgrad_layout(problem, tiling, (Ys, Xs), (U, V))
    stationary = stationary_mask.reshape(N, Cs, Ys * Xs)
    streamed = streamed_mask.reshape(N, Ko, U * V)
    valid = _wgrad_valid(layout, tiling, stationary, streamed)
    partial = np.zeros((N, G * n_pes), np.int64)
    out_values = np.zeros((N, G), np.int64)
    one_position = layout.positions.shape[1] == 1
    for tile in np.unique(tiles):
        images = np.flatnonzero(tiles == tile)
        held_known = one_position and len(images) == 1  # every pair of a (tap, channel, PE) cell is its only one
        partial[images[-1]], out_values[images[-1]] = _held_counts(layout, tiling, stationary[images],
                                                                   streamed[images], held_known)
        if held_known:
            partial[images[-1]] = valid[images[-1]].ravel()
    return Footprint(valid.ravel(), partial.ravel(), np.zeros(N * G * n_pes, np.int64), out_values.ravel())


def _wgrad_valid(layout: _WgradLayout, tiling: Tiling, stationary: np.ndarray, streamed: np.ndarray) -> np.ndarray:
    """Valid products (N, G, n_pes) of ``stationary`` (N, Cs, plane) and ``streamed`` (N, Ko, U·V) masks: per
    image, group and position, the stationary channels non-zero there times the group's dY non-zeros linked to
    it summed over taps, summed over each PE's positions. The linked dY counts are int32 (≤ taps · Kc < 2^31),
    their products with the channel counts int64: exact."""
    N = stationary.shape[0]
    channels_at = np.zeros((N, stationary.shape[2] + 1), np.int64)  # + the empty position
    channels_at[:, :-1] = np.count_nonzero(stationary, axis=1)
    dy_per_group = np.zeros((N, tiling.n_groups, streamed.shape[2] + 1), np.int32)  # + the empty dY position
    # Summed along the channel axis in place (no transposed int32 copy): uint8 0/1 values into int32.
    dy_per_group[:, :, :-1] = np.add.reduceat(np.asarray(streamed, bool).view(np.uint8),
                                              np.arange(0, streamed.shape[1], tiling.kc),
                                              axis=1, dtype=np.int32)
    linked_dy = dy_per_group[:, :, layout.linked[0]]
    for tap in range(1, len(layout.linked)):
        linked_dy += dy_per_group[:, :, layout.linked[tap]]
    per_position = linked_dy * channels_at[:, None, :]  # (N, G, plane + 1); the padding's is 0
    valid = np.zeros((N, tiling.n_groups, tiling.n_pes), np.int64)
    valid[:, :, layout.pes] = per_position[:, :, layout.positions].sum(axis=3)
    return valid


def _dy_bits(streamed: np.ndarray) -> np.ndarray:
    """(U·V · n, words) uint64 of a tile's dY masks (n, Ko, U·V): row ``u · n + image`` holds bit ``ko``
    (little-endian) where the dY value is non-zero."""
    n, Ko, n_dy = streamed.shape
    by_position = np.zeros((n_dy * n, -(-Ko // 64) * 64), bool)
    by_position[:, :Ko] = np.ascontiguousarray(streamed.reshape(n * Ko, n_dy).T).reshape(n_dy * n, Ko)
    return np.packbits(by_position, axis=1, bitorder="little").view(np.uint64)


def _cell_blocks(cell: np.ndarray, per_block: int) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges of ``cell`` (non-decreasing keys) of about ``per_block`` entries (at least one
    whole cell each) that never cut a run of equal keys."""
    starts = np.append(_starts(cell), len(cell))
    blocks, k0 = [], 0
    while k0 < len(cell):
        k1 = int(starts[np.searchsorted(starts, k0 + per_block, side="right") - 1])
        k1 = k1 if k1 > k0 else int(starts[np.searchsorted(starts, k0, side="right")])
        blocks.append((k0, k1))
        k0 = k1
    return blocks


# ``_held_counts`` keeps each (tap, channel, PE) cell's OR-ed dY row in a dense table over every cell (one row per
# (tap, channel) for each PE: popcounts summed over taps and channels give the held entries, the rows OR-ed over PEs
# the written ones) when the table holds at most this many words per (tap, stationary non-zero) pair of the tile;
# else the cells formed are sorted by PE and summed per PE run. Speed only: both give the same integers
# (tests/dataflow/test_footprint_taps.py). [choice] Measured here (one core, CPU time, best of 7, each wgrad call of
# a batch-1 ResNet-18 CIFAR step, docs/footprint_speed.md): the table took 0.5–0.6× the sorted cells' time at 0.6
# words per pair (the 32×32 planes), 0.7–1.05× at 5.2–5.3 (16×16 planes and the stride-2 layer onto them) and 4×
# at 44 (the stride-2 layer onto 8×8).
_TABLE_WORDS_PER_PAIR = 8
# ... and at most 2^22 words (32 MiB). Memory only: a larger table (many PEs × channels × taps) takes the sorted cells.
# [choice]
_TABLE_MAX_WORDS = 1 << 22


def _held_counts(layout: _WgradLayout, tiling: Tiling, stationary: np.ndarray, streamed: np.ndarray,
                 held_known: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Held accumulator entries of one batch tile, summed over taps: per slot ``group · n_pes + pe`` the
    distinct ``(ch, ko)`` a PE holds (G · n_pes,), and per group the distinct ones over PEs (G,).

    A stationary non-zero ``(ch, y)`` of an image pairs, through tap ``t``, with the dY non-zeros at the position
    ``t`` links ``y`` to in the same image: OR-ing their bit-packed dY rows over the tile's non-zeros of channel
    ``ch`` on one PE gives the ``ko`` the PE holds with ``(ch, t)``; OR-ed over PEs, the tile's dW non-zeros.

    Args:
        stationary: (n, Cs, plane) the tile's stationary masks. streamed: (n, Ko, U·V) its dY masks.
        held_known: the caller knows the held entries (a tile of one image on PEs of one position each holds
            every pair it forms once: its valid products); only the written ones are counted, zeros returned.
    """
    n, Cs = stationary.shape[:2]
    Ko, n_dy = streamed.shape[1:]
    P, n_taps = len(layout.pes), len(layout.linked)
    d_bits = _dy_bits(streamed)
    # Non-zeros by channel, then PE (positions in PE order), then position and image: a (channel, PE) cell's run.
    ch, rank, image = np.nonzero(stationary.transpose(1, 2, 0)[:, layout.by_pe])
    position, cell = layout.by_pe[rank], ch * P + layout.pe_index[rank]
    reaches = layout.linked != n_dy  # (taps, positions + 1): the tap links the position to a dY position
    pairs = int(np.count_nonzero(reaches, axis=0)[position].sum())
    table_words = n_taps * Cs * P * d_bits.shape[1]
    table = not held_known and table_words <= min(_TABLE_WORDS_PER_PAIR * pairs, _TABLE_MAX_WORDS)
    cells = _HeldCells(n_taps * Cs, P, Ko, table, tiling)
    for k0, k1 in _cell_blocks(cell, max(1, _PAIR_BLOCK // n_taps)):
        tap, k = np.nonzero(reaches[:, position[k0:k1]])  # pairs by tap, then non-zero
        if len(k) == 0:
            continue
        k += k0
        key = tap * (Cs * P) + cell[k]  # non-decreasing: (tap, channel, PE)
        first = _starts(key)
        rows = d_bits[layout.linked[tap, position[k]] * n + image[k]]
        ored = rows if len(first) == len(key) else np.bitwise_or.reduceat(rows, first, axis=0)  # per cell
        cells.add(key[first], ored, not held_known)
    written, held = cells.result()
    partial = np.zeros((tiling.n_groups, tiling.n_pes), np.int64)
    if held is not None:
        partial[:, layout.pes] = held.T
    return partial.ravel(), _group_counts(written.view(np.uint8), Ko, tiling.kc).sum(axis=0, dtype=np.int64)


class _HeldCells:
    """The OR-ed dY rows of a tile's (tap, channel, PE) cells, ``cell = (tap · Cs + channel) · P + PE``: per PE the
    held entries' popcounts per group, per (tap, channel) the written dW row. In a dense table of every cell
    (``table``, rows stored as they come, each cell once) or, else, summed block by block over the cells formed."""

    def __init__(self, n_rows: int, n_pes: int, n_channels: int, table: bool, tiling: Tiling) -> None:
        self.n_pes, self.n_channels, self.tiling = n_pes, n_channels, tiling
        words = -(-n_channels // 64)
        self.table = np.zeros((n_rows * n_pes, words), np.uint64) if table else None
        self.written = None if table else np.zeros((n_rows, words), np.uint64)
        self.held = np.zeros((n_pes, tiling.n_groups), np.int64)
        # A PE's held entries of a group are at most rows · kc: summed in the narrowest exact unsigned type, which numpy
        # casts the uint8 popcounts to far faster than to int64 (0.05 against 2 ms on 10^6 counts, measured here).
        bound = n_rows * tiling.kc
        self.sum_dtype = np.uint16 if bound < 1 << 16 else np.uint32 if bound < 1 << 32 else np.uint64

    def add(self, cell: np.ndarray, ored: np.ndarray, count_held: bool) -> None:
        """Cells ``cell`` (ascending, none seen before) with their OR-ed rows ``ored``."""
        if self.table is not None:
            self.table[cell] = ored
            return
        assert self.written is not None
        P, tiling = self.n_pes, self.tiling
        if count_held:
            cell_pe = (cell % P).astype(np.uint16 if P < 1 << 16 else np.int64)  # uint16: a radix sort
            by_pe = np.argsort(cell_pe, kind="stable")
            pe_first = _starts(cell_pe[by_pe])
            counts = _group_counts(ored[by_pe].view(np.uint8), self.n_channels, tiling.kc)
            self.held[cell_pe[by_pe[pe_first]]] += np.add.reduceat(counts, pe_first, axis=0, dtype=self.sum_dtype)
        tap_channel = cell // P
        runs = _starts(tap_channel)
        self.written[tap_channel[runs]] |= np.bitwise_or.reduceat(ored, runs, axis=0)

    def result(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The written dW rows (taps · Cs, words) and the held entries (P, G) (None if not counted)."""
        if self.table is None:
            assert self.written is not None
            return self.written, self.held
        P, tiling = self.n_pes, self.tiling
        counts = _group_counts(self.table.view(np.uint8), self.n_channels, tiling.kc)
        held = counts.reshape(-1, P * tiling.n_groups).sum(axis=0, dtype=self.sum_dtype)
        return _or_over_middle(self.table.reshape(-1, P, self.table.shape[1])), held.reshape(P, -1).astype(np.int64)


def _or_over_middle(rows: np.ndarray) -> np.ndarray:
    """``np.bitwise_or.reduce(rows, axis=1)`` of a (R, M, W) array by halving M (whole contiguous slices OR-ed;
    numpy's reduce over a middle axis walks the short last axis one row at a time)."""
    while rows.shape[1] > 1:
        half = rows.shape[1] // 2
        folded = rows[:, :half] | rows[:, half:2 * half]
        if rows.shape[1] % 2:
            folded[:, 0] |= rows[:, -1]
        rows = folded
    return rows[:, 0]


def fast_footprint(problem: PhaseProblem, tiling: Tiling, stationary_mask: np.ndarray, streamed_mask: np.ndarray,
                   tile_of_image: np.ndarray | None = None) -> Footprint:
    """Valid products and output footprints of the phase from the operands' non-zero masks (wgrad
    partial sums accumulated over the batch tiles ``tile_of_image``, see ``tap_footprint``)."""
    if problem.output_is_plane:
        if stacked_fits(stationary_mask.shape, streamed_mask.shape):
            return plane_footprint_stacked(problem, tiling, stationary_mask, streamed_mask)
        # Sparse products cost ∝ valid products, dense ones ∝ planes × channels: pick by mask density.
        if stationary_mask.mean() * streamed_mask.mean() > _DENSE_SWITCH:
            return plane_footprint_dense(problem, tiling, stationary_mask, streamed_mask)
        return plane_footprint_sparse(problem, tiling, stationary_mask, streamed_mask)
    return tap_footprint(problem, tiling, stationary_mask, streamed_mask, tile_of_image)


def dense_footprint(problem: PhaseProblem, tiling: Tiling, tile_of_image: np.ndarray | None = None) -> Footprint:
    """``fast_footprint`` of all-ones masks (a dense design), from a one-channel problem.

    With every element a non-zero, a phase's footprint is geometry times channel counts: per slot, the
    valid pairs are the stationary channels × the group's output channels × the one-channel count of
    linked positions; the distinct outputs a PE holds (and its halo, and the outputs written) are the
    group's channels × the one-channel count for fprop/dgrad, and also × the stationary channels for
    wgrad, whose outputs (dW) are indexed by both. Tested equal to the mask correlation of all-ones masks.
    """
    N, Cs, Ys, Xs = problem.stationary_shape
    Nt, _, Ko, U, V = problem.streamed_shape
    one_channel = replace(problem, stationary_shape=(N, 1, Ys, Xs), streamed_shape=(Nt, 1, 1, U, V),
                          output_shape=(problem.output_shape[0] if problem.output_is_plane else 1, 1,
                                        *problem.output_shape[2:]))
    base = fast_footprint(one_channel, replace(tiling, kc=1, n_groups=1), np.ones(one_channel.stationary_shape, bool),
                          np.ones(one_channel.streamed_shape, bool), tile_of_image)
    n_pes, G = tiling.n_pes, tiling.n_groups
    per_group = np.array([len(range(Ko)[tiling.group_slice(g, Ko)]) for g in range(G)], dtype=np.int64)
    held_scale = per_group * (1 if problem.output_is_plane else Cs)

    def per_slot(values: np.ndarray, scale: np.ndarray) -> np.ndarray:
        return (values.reshape(N, 1, n_pes) * scale[None, :, None]).ravel()

    return Footprint(per_slot(base.valid_products, per_group * Cs), per_slot(base.partial_outputs, held_scale),
                     per_slot(base.halo_outputs, held_scale), (base.output_values.reshape(N, 1) * held_scale).ravel())
