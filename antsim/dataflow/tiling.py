"""Planar tiling of the stationary plane over the PE grid, output-channel groups and stride phases.

SCNN's planar tiling: the stationary plane ``Ys × Xs`` is cut into ``ceil(Ys/rows) × ceil(Xs/cols)``
tiles, PE ``(i, j)`` (index ``i·cols + j``) holding rows ``[i·th, (i+1)·th)`` and columns
``[j·tw, (j+1)·tw)`` through every channel (tiles past the plane's edge are empty). An output
plane is cut the same way to define each PE's *own* output tile (outputs outside it are halo).
Work chunks are (image n, output-channel group g) in order, ``g`` covering ``Kc`` channels.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product

import numpy as np

from antsim.phases import PhaseProblem


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Tiling:
    """Where everything of one (layer, phase) lives on a ``rows × cols`` PE grid.

    Attributes:
        rows, cols: PE grid. tile_h, tile_w: stationary tile size (elements).
        out_tile_h, out_tile_w: own output tile size (plane outputs only; 0 for wgrad).
        plane: stationary plane (Ys, Xs). out_plane: output plane (O1, O2).
        kc: output channels per group. n_groups: groups. n_images: N. n_chunks: N · n_groups.
    """

    rows: int
    cols: int
    tile_h: int
    tile_w: int
    out_tile_h: int
    out_tile_w: int
    plane: tuple[int, int]
    out_plane: tuple[int, int]
    kc: int
    n_groups: int
    n_images: int

    @property
    def n_pes(self) -> int:
        return self.rows * self.cols

    @property
    def n_chunks(self) -> int:
        return self.n_images * self.n_groups

    def pe_of_stationary(self) -> np.ndarray:
        """PE index of every stationary-plane position, shape (Ys, Xs)."""
        ys, xs = np.arange(self.plane[0]) // self.tile_h, np.arange(self.plane[1]) // self.tile_w
        return ys[:, None] * self.cols + xs[None, :]

    def pe_of_output(self) -> np.ndarray:
        """PE owning each output-plane position, shape (O1, O2); -1 everywhere for wgrad."""
        if self.out_tile_h == 0:
            return np.full(self.out_plane, -1, dtype=np.int64)
        ys, xs = np.arange(self.out_plane[0]) // self.out_tile_h, np.arange(self.out_plane[1]) // self.out_tile_w
        return ys[:, None] * self.cols + xs[None, :]

    def row_extents(self) -> tuple[np.ndarray, np.ndarray]:
        """Inclusive stationary-row range ``(y_lo, y_hi)`` of each PE row (empty: lo > hi)."""
        lo = np.arange(self.rows) * self.tile_h
        return lo, np.minimum(lo + self.tile_h, self.plane[0]) - 1

    def col_extents(self) -> tuple[np.ndarray, np.ndarray]:
        """Inclusive stationary-column range ``(x_lo, x_hi)`` of each PE column."""
        lo = np.arange(self.cols) * self.tile_w
        return lo, np.minimum(lo + self.tile_w, self.plane[1]) - 1

    def tile_gather(self) -> np.ndarray:
        """Flat stationary-plane index of each PE's tile elements, padded with ``Ys·Xs`` (a sentinel
        that callers point at a zero), shape (n_pes, tile_h·tile_w)."""
        Ys, Xs = self.plane
        out = np.full((self.n_pes, self.tile_h * self.tile_w), Ys * Xs, dtype=np.int64)
        dy, dx = np.divmod(np.arange(self.tile_h * self.tile_w), self.tile_w)
        for i, j in product(range(self.rows), range(self.cols)):
            y, x = i * self.tile_h + dy, j * self.tile_w + dx
            inside = (y < Ys) & (x < Xs)
            out[i * self.cols + j, inside] = y[inside] * Xs + x[inside]
        return out

    def group_slice(self, g: int, n_out_channels: int) -> slice:
        return slice(g * self.kc, min((g + 1) * self.kc, n_out_channels))


def make_tiling(problem: PhaseProblem, rows: int, cols: int, kc: int, accumulator_entries: int = 0) -> Tiling:
    """SCNN planar tiling of ``problem`` on a ``rows × cols`` grid with ``kc`` output channels per group
    (``kc = 0``: as many as one accumulator half of ``accumulator_entries`` holds, ``capacity_group``)."""
    N, _, Ys, Xs = problem.stationary_shape
    n_out_channels = problem.streamed_shape[2]
    out_plane = problem.output_shape[2:]
    tile_h, tile_w = _ceil_div(Ys, rows), _ceil_div(Xs, cols)
    out_tile_h, out_tile_w = ((_ceil_div(out_plane[0], rows), _ceil_div(out_plane[1], cols))
                              if problem.output_is_plane else (0, 0))
    tiling = Tiling(rows, cols, tile_h, tile_w, out_tile_h, out_tile_w, (Ys, Xs), (out_plane[0], out_plane[1]),
                    max(kc, 1), _ceil_div(n_out_channels, max(kc, 1)), N)
    if kc > 0:
        return tiling
    kc = capacity_group(problem, tiling, accumulator_entries)
    return replace(tiling, kc=kc, n_groups=_ceil_div(n_out_channels, kc))


def output_window(problem: PhaseProblem, tiling: Tiling) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Per PE the origin of the output window its tile can reach, and the (uniform) window size: the
    PE's own output tile plus its halo (plane outputs only)."""
    U, V = problem.streamed_shape[3:]
    y_lo, y_hi = tiling.row_extents()
    x_lo, x_hi = tiling.col_extents()
    row_lo, row_hi = problem.dims[0].reach(y_lo, y_hi, np.zeros_like(y_lo), np.full_like(y_lo, U - 1))
    col_lo, col_hi = problem.dims[1].reach(x_lo, x_hi, np.zeros_like(x_lo), np.full_like(x_lo, V - 1))
    win_h = int(max(1, (row_hi - row_lo + 1).max()))
    win_w = int(max(1, (col_hi - col_lo + 1).max()))
    return np.repeat(row_lo, tiling.cols), np.tile(col_lo, tiling.rows), win_h, win_w


def capacity_group(problem: PhaseProblem, tiling: Tiling, accumulator_entries: int) -> int:
    """The output channels per group that one accumulator half holds: SCNN sizes Kc so a group's partial
    sums fit its accumulators (DNNsim's ``Kc = out_acc_size / (output tile)``; here the tile's whole reachable
    window, halo included, so a group never overflows). A plane output takes the window per channel;
    wgrad's dW takes C·R·S partial sums per channel. At least 1, at most every output channel."""
    if problem.output_is_plane:
        _, _, win_h, win_w = output_window(problem, tiling)
        per_channel = win_h * win_w
    else:
        per_channel = int(np.prod(problem.output_shape[1:]))
    return int(min(problem.streamed_shape[2], max(1, accumulator_entries // max(1, per_channel))))


@dataclass(frozen=True)
class StrideClasses:
    """Stride-phase split of both operands: stationary class ``(y mod ms_h)·ms_w + x mod ms_w``, streamed
    class likewise with ``mt``; ``groups`` lists the (stationary class, streamed class) pairs that form
    products. One group ``(0, 0)`` when stride phases are off."""

    ms: tuple[int, int]
    mt: tuple[int, int]
    groups: tuple[tuple[int, int], ...]

    @property
    def n_stationary(self) -> int:
        return self.ms[0] * self.ms[1]

    @property
    def n_streamed(self) -> int:
        return self.mt[0] * self.mt[1]

    def stationary_class(self, y: np.ndarray, x: np.ndarray) -> np.ndarray:
        return (y % self.ms[0]) * self.ms[1] + x % self.ms[1]

    def streamed_class(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return (u % self.mt[0]) * self.mt[1] + v % self.mt[1]


def stride_classes(problem: PhaseProblem, enabled: bool) -> StrideClasses:
    """Stride phases of ``problem`` (``arch.mapping.stride_phases``); a single class when disabled."""
    if not enabled:
        return StrideClasses((1, 1), (1, 1), ((0, 0),))
    (msh, mth, okh), (msw, mtw, okw) = (d.stride_classes() for d in problem.dims)
    groups = []
    for ah, aw in product(range(msh), range(msw)):
        for bh, bw in product(range(mth), range(mtw)):
            if okh[ah, bh] and okw[aw, bw]:
                groups.append((ah * msw + aw, bh * mtw + bw))
    return StrideClasses((msh, msw), (mth, mtw), tuple(groups))
