"""``antsim.dataflow.tiling``: SCNN's planar tiling checked position by position (every stationary element on
exactly one PE, in the tile its row and column fall in), output-channel groups that partition K, and the
stride classes of a strided fprop against a brute force over every (input, weight) pair."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest

from antsim.dataflow.tiling import make_tiling, stride_classes
from antsim.phases import phase_problem
from antsim.workloads.layers import PHASES, Layer

LAYER = Layer("l", N=2, C=3, K=10, H=7, W=9, R=3, S=3, stride=1, pad=1)


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize(("rows", "cols"), [(2, 4), (3, 3), (8, 8)])
def test_every_stationary_element_is_on_exactly_one_pe(phase: str, rows: int, cols: int) -> None:
    problem = phase_problem(LAYER, phase)
    tiling = make_tiling(problem, rows, cols, kc=4)
    ys, xs = problem.stationary_shape[2:]
    # The smallest tiles that cover the plane: ceil(Ys / rows) × ceil(Xs / cols).
    assert tiling.tile_h * rows >= ys > (tiling.tile_h - 1) * rows
    assert tiling.tile_w * cols >= xs > (tiling.tile_w - 1) * cols
    gather = tiling.tile_gather()
    flat = gather[gather < ys * xs]
    assert sorted(flat.tolist()) == list(range(ys * xs))  # each position once
    owner = tiling.pe_of_stationary()
    row_lo, row_hi = tiling.row_extents()
    col_lo, col_hi = tiling.col_extents()
    for pe, (i, j) in enumerate(product(range(rows), range(cols))):
        held = {(int(v) // xs, int(v) % xs) for v in gather[pe] if v < ys * xs}
        th, tw = tiling.tile_h, tiling.tile_w
        brute = {(y, x) for y in range(ys) for x in range(xs)
                 if i * th <= y < (i + 1) * th and j * tw <= x < (j + 1) * tw}
        assert held == brute == {(y, x) for y in range(ys) for x in range(xs) if owner[y, x] == pe}
        assert held == {(y, x) for y in range(row_lo[i], row_hi[i] + 1) for x in range(col_lo[j], col_hi[j] + 1)}


def test_output_tiles_and_groups() -> None:
    fprop = make_tiling(phase_problem(LAYER, "fprop"), 2, 4, kc=4)
    assert (fprop.out_tile_h, fprop.out_tile_w) == (4, 3) and fprop.n_groups == 3 and fprop.n_chunks == 2 * 3
    channels = [c for g in range(fprop.n_groups) for c in range(10)[fprop.group_slice(g, 10)]]
    assert channels == list(range(10))  # groups of 4, 4, 2 partition the 10 output channels in order
    wgrad = make_tiling(phase_problem(LAYER, "wgrad"), 2, 4, kc=4)
    assert (wgrad.out_tile_h, wgrad.out_tile_w) == (0, 0) and (wgrad.pe_of_output() == -1).all()


def test_disabled_stride_phases_are_one_class() -> None:
    strided = Layer("s", N=1, C=2, K=2, H=7, W=9, R=3, S=3, stride=2, pad=1)
    classes = stride_classes(phase_problem(strided, "fprop"), enabled=False)
    assert (classes.ms, classes.mt, classes.groups) == ((1, 1), (1, 1), ((0, 0),))


@pytest.mark.parametrize("pad", [0, 1])
def test_strided_fprop_classes_are_the_pairs_that_reach_an_integer_output(pad: int) -> None:
    layer = Layer("s", N=1, C=2, K=2, H=7, W=9, R=3, S=3, stride=2, pad=pad)
    classes = stride_classes(phase_problem(layer, "fprop"), enabled=True)
    # Input (y, x) times weight (r, s) lands on output (p, q) = ((y + pad − r) / 2, (x + pad − s) / 2) when both
    # divisions are exact; the class pairs of those products, and no others, form products.
    reached = set()
    for y, x, r, s in product(range(7), range(9), range(3), range(3)):
        if (y + pad - r) % 2 == 0 and (x + pad - s) % 2 == 0:
            a = classes.stationary_class(np.array(y), np.array(x))
            b = classes.streamed_class(np.array(r), np.array(s))
            reached.add((int(a), int(b)))
    assert classes.ms == classes.mt == (2, 2) and set(classes.groups) == reached and len(reached) == 4
