"""The pieces the streamed and stationary vectors are built from, each against a brute force.

``_Geometry.decode`` (a laid-out slot's ``u, v, ko, image``) and ``positions`` against the layout itself: the
tensor of each element's own flat index, laid out by ``_fiber_layout``, names the element at every slot.
``_Reach.cell_ranges`` against the membership table: a (set, class) keeps cell ``(u', v')`` exactly when its
position ``(u' · mh + pu, v' · mw + pv)`` exists and the set receives it, and the ranges are the maximal runs
of those cells. ``_Reach.per_set`` against an integer product, on both sides of float32's exact range.
``_stable_order`` against numpy's stable sort. ``stationary_vectors`` byte for byte against the formulation
it replaced (``streamed_reference.reference_stationary_vectors``).
"""

from __future__ import annotations

import numpy as np
import pytest

from antsim.dataflow import fibers
from antsim.dataflow.fibers import stationary_vectors
from antsim.dataflow.tiling import make_tiling, stride_classes
from antsim.phases import phase_problem
from antsim.workloads.layers import PHASES, Layer
from tests.dataflow.dataflow_helpers import random_tensors
from tests.dataflow.streamed_reference import reference_stationary_vectors
from tests.dataflow.test_fibers import _random_case


def _random_geometry(rng: np.random.Generator) -> fibers._Geometry:
    shape = tuple(int(d) for d in (rng.integers(1, 3), rng.integers(1, 3), rng.integers(1, 7), rng.integers(1, 6),
                                   rng.integers(1, 6)))
    mt = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    kc = int(rng.integers(1, 4))
    return fibers._Geometry(shape, -(-shape[2] // kc), kc, -(-shape[3] // mt[0]), -(-shape[4] // mt[1]), mt,
                            bool(rng.integers(0, 2)))


@pytest.mark.parametrize("seed", range(30))
def test_decode_names_the_element_at_each_slot(seed):
    rng = np.random.default_rng(seed)
    geometry = _random_geometry(rng)
    Nt, Ct, Ko, U, V = geometry.shape
    mh, mw = geometry.mt
    split = (geometry.n_groups, geometry.kc, geometry.rows, mh, geometry.cols, mw)
    axes = (0, 1, 2, 5, 7, 4, 6, 3) if geometry.channel_inner else (0, 1, 2, 5, 7, 3, 4, 6)
    ids = np.arange(1, Nt * Ct * Ko * U * V + 1).reshape(geometry.shape)  # 0 marks padding
    laid_out = fibers._fiber_layout(ids, split, axes)
    slot = np.flatnonzero(laid_out)
    image, _, ko, u, v = np.unravel_index(laid_out[slot] - 1, geometry.shape)
    few = slot[rng.permutation(len(slot))[:3]]  # fewer slots than the slice: worked out per slot
    for chosen in (slot, np.sort(few), np.repeat(slot, 30)):  # 30 × every slot: read from the slice's tables
        where = np.searchsorted(slot, chosen)
        got = geometry.decode(chosen)
        for name, have, want in zip(("u", "v", "ko", "image"), got, (u, v, ko, image), strict=True):
            assert have.dtype == np.int64, name
            np.testing.assert_array_equal(have, want[where], err_msg=name)
        positions = geometry.positions(chosen)
        assert positions.dtype == np.int64
        np.testing.assert_array_equal(positions, (u * V + v)[where])


@pytest.mark.parametrize("seed", range(40))
def test_cell_ranges_are_the_runs_of_kept_cells(seed):
    rng = np.random.default_rng(seed)
    geometry = _random_geometry(rng)
    U, V = geometry.shape[3:]
    row_pat = rng.random((int(rng.integers(1, 4)), U)) < rng.random()
    col_pat = rng.random((int(rng.integers(1, 4)), V)) < rng.random()
    reach = fibers._Reach.of(row_pat, col_pat)
    ptr, lo, hi = reach.cell_ranges(geometry)
    (mh, mw), rows, cols = geometry.mt, geometry.rows, geometry.cols
    assert len(ptr) == len(reach.member) * mh * mw + 1
    for fetch_set in range(len(reach.member)):
        for cls in range(mh * mw):
            want = np.zeros(rows * cols, bool)
            for u_, v_ in np.ndindex(rows, cols):
                u, v = u_ * mh + cls // mw, v_ * mw + cls % mw
                want[u_ * cols + v_] = u < U and v < V and reach.member[fetch_set, u * V + v]
            combo = fetch_set * mh * mw + cls
            runs = list(zip(lo[ptr[combo]:ptr[combo + 1]], hi[ptr[combo]:ptr[combo + 1]], strict=True))
            got = np.zeros(rows * cols, bool)
            for a, b in runs:
                assert a < b and not got[a:b].any()
                got[a:b] = True
            np.testing.assert_array_equal(got, want)
            assert all(b < a2 for (_, b), (a2, _) in zip(runs, runs[1:], strict=False))  # ascending, maximal


@pytest.mark.parametrize("most", [(1 << 24) - 1, 1 << 24, 1 << 40])
def test_per_set_sums_exactly_on_both_sides_of_float32(most):
    """Rows whose sums reach ``most``: below 2^24 the float32 product, above it float64 — the integer sums."""
    rng = np.random.default_rng(most % 97)
    member = rng.random((5, 12)) < 0.6
    member[0] = True
    reach = fibers._Reach(member, member, member)  # per_set reads only ``member``
    counts = rng.integers(0, 7, (40, 12))
    counts[3] = 0
    counts[3, 0] = most  # one position holding it all, every set that keeps position 0 sums it
    counts[4, :] = most // 12
    got = reach.per_set(counts, int(counts.sum(axis=1).max()))
    want = counts @ member.T.astype(np.int64)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("top", [1, 300, 1 << 16, (1 << 16) + 1, 1 << 40])
def test_stable_order_is_the_stable_sort(top):
    keys = np.random.default_rng(top % 1009).integers(0, top, 5000)
    np.testing.assert_array_equal(fibers._stable_order(keys), np.argsort(keys, kind="stable"))
    assert len(fibers._stable_order(np.zeros(0, np.int64))) == 0


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("phase", PHASES)
def test_stationary_vectors_are_the_sorted_nonzeros_byte_for_byte(seed, phase):
    layer, grid, kc, width, stride_phases, density = _random_case(seed)
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, grid[0], grid[1], kc)
    classes = stride_classes(problem, stride_phases)
    tensor = problem.stationary(random_tensors(layer, density, seed))
    for dense in (False, True):
        got = stationary_vectors(problem, tiling, classes, tensor, dense, width)
        want = reference_stationary_vectors(problem, tiling, classes, tensor, dense, width)
        for name in fibers.Vectors.__dataclass_fields__:
            a, b = getattr(got, name), getattr(want, name)
            assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), name


@pytest.mark.parametrize("density", [0.5, 0.05])  # more non-zeros than plane positions, and fewer
@pytest.mark.parametrize("phase", PHASES)
def test_stationary_vectors_drop_the_classes_that_pair_with_nothing(phase, density):
    """A 1×1 kernel at stride 2 with stride phases: in wgrad only the input positions a tap lands on, even
    (y, x), pair with a gradient, so three of the four stationary classes are dropped; the same bytes as the
    reference in every phase."""
    layer = Layer("1x1s2", N=2, C=3, K=5, H=9, W=8, R=1, S=1, stride=2, pad=0)
    problem = phase_problem(layer, phase)
    tiling, classes = make_tiling(problem, 3, 2, 2), stride_classes(problem, True)
    if phase == "wgrad":
        assert len({a for a, _ in classes.groups}) == 1 < classes.n_stationary
    tensor = problem.stationary(random_tensors(layer, density, 7))
    assert (np.count_nonzero(tensor) >= tensor.shape[2] * tensor.shape[3]) == (density == 0.5)
    got = stationary_vectors(problem, tiling, classes, tensor, False, 3)
    want = reference_stationary_vectors(problem, tiling, classes, tensor, False, 3)
    assert 0 < len(got.value) < np.count_nonzero(tensor) or phase != "wgrad"
    for name in fibers.Vectors.__dataclass_fields__:
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), name
