"""The shared streamed operand gives every PE the same vectors as the replicated one.

``streamed_reference.py`` keeps the representation of commit 0ab16c6 (every streamed non-zero copied into
each fetch set that reaches it, sorted, cut into vectors). For each PE, each streamed fiber it pairs with
(block, class, the PE's fetch set) must hold the same vectors in the same order — elements (u, v, ko,
image, value), sizes and boxes — on random layers over strides, pads, kernels, PE grids, Kc, widths,
stride phases, the fetch filter, the streamed order and dense designs; the fiber tables, layout and
per-block counts (deliveries included) must be equal too. Given the stationary vectors, the operand holds
only the fibers the pairing cells look up, with the same vectors and the same cells.
"""

from __future__ import annotations

import numpy as np
import pytest

from antsim.dataflow.fibers import (
    Elements,
    StreamedInput,
    StreamedOperand,
    Vectors,
    _reach_patterns,
    cut_segments,
    pack_vectors,
    stationary_vectors,
    streamed_vectors,
)
from antsim.dataflow.options import MappingOptions
from antsim.dataflow.pairing import make_cells
from antsim.dataflow.tiling import make_tiling, stride_classes
from antsim.phases import phase_problem
from antsim.workloads.layers import PHASES, Layer
from tests.dataflow.dataflow_helpers import random_tensors
from tests.dataflow.streamed_reference import reference_pack_vectors, reference_streamed_vectors


def _random_case(seed: int) -> tuple[Layer, tuple[int, int], int, int, bool, float]:
    """A random small layer (kernel, stride, pad, batch), PE grid, Kc, width, stride phases and density."""
    rng = np.random.default_rng(seed)
    R, S = (int(k) for k in rng.choice([1, 2, 3, 5], 2))
    stride = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    pad = (int(rng.integers(0, R)), int(rng.integers(0, S)))
    H, W = int(rng.integers(R, R + 14)), int(rng.integers(S, S + 14))
    layer = Layer(f"case{seed}", N=int(rng.integers(1, 4)), C=int(rng.integers(1, 6)), K=int(rng.integers(1, 12)),
                  H=H, W=W, R=R, S=S, stride=stride, pad=pad)
    grid = (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
    return layer, grid, int(rng.integers(1, 9)), int(rng.choice([1, 2, 3, 4, 8])), bool(rng.integers(0, 2)), \
        float(rng.choice([0.05, 0.3, 0.9]))


def _case_inputs(seed: int, phase: str, case_seed: int | None = None):  # type: ignore[no-untyped-def]
    """(problem, tiling, stride classes, stationary vectors, streamed tensor, width) of ``_random_case``."""
    layer, grid, kc, width, stride_phases, density = _random_case(seed if case_seed is None else case_seed)
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, grid[0], grid[1], kc)
    classes = stride_classes(problem, stride_phases)
    tensors = random_tensors(layer, density, seed)
    stationary = stationary_vectors(problem, tiling, classes, problem.stationary(tensors), False, 4)
    return problem, tiling, classes, stationary, problem.streamed(tensors), width


def _fiber_vectors(vectors: Vectors, key: int) -> list[tuple]:
    """The vectors of one fiber, each as (size, box, u, v, ko, image, value) — what a PE receives."""
    (index,) = np.flatnonzero(vectors.fiber_keys == key)
    out = []
    for vec in range(vectors.fiber_vec0[index], vectors.fiber_vec0[index] + vectors.fiber_nvec[index]):
        elems = slice(vectors.vec_start[vec], vectors.vec_start[vec] + vectors.vec_size[vec])
        out.append((int(vectors.vec_size[vec]), tuple(vectors.box[:, vec]), *(
            tuple(getattr(vectors, name)[elems]) for name in ("sp1", "sp2", "chan", "image", "value"))))
    return out


def _assert_same_operand(shared: StreamedOperand, reference: StreamedOperand) -> None:
    layout, ref_layout = shared.layout, reference.layout
    assert (layout.n_blocks, layout.n_classes, layout.n_sets) == (ref_layout.n_blocks, ref_layout.n_classes,
                                                                  ref_layout.n_sets)
    np.testing.assert_array_equal(layout.set_of_pe, ref_layout.set_of_pe)
    np.testing.assert_array_equal(shared.unfiltered_nnz, reference.unfiltered_nnz)
    np.testing.assert_array_equal(shared.fetched_nnz, reference.fetched_nnz)
    np.testing.assert_array_equal(shared.delivered_nnz, reference.delivered_nnz)
    for name in ("fiber_keys", "fiber_nvec", "fiber_nnz"):  # fiber_vec0 may point at shared vectors
        np.testing.assert_array_equal(getattr(shared.vectors, name), getattr(reference.vectors, name), err_msg=name)
    for name in Vectors.__dataclass_fields__:
        assert getattr(shared.vectors, name).dtype == getattr(reference.vectors, name).dtype, name


def _assert_each_pe_sees_the_same_vectors(shared: StreamedOperand, reference: StreamedOperand, n_pes: int) -> None:
    layout = reference.layout
    for pe in range(n_pes):
        fetch_set = layout.set_of_pe[pe]
        for key in reference.vectors.fiber_keys[reference.vectors.fiber_keys % layout.n_sets == fetch_set]:
            assert _fiber_vectors(shared.vectors, key) == _fiber_vectors(reference.vectors, key), (pe, key)


OPTIONS = [MappingOptions(fetch_filter=f, channel_inner=c, dense=d)
           for f in (True, False) for c in (True, False) for d in (False, True)]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("phase", PHASES)
def test_every_pe_receives_the_vectors_of_the_replicated_representation(seed, phase):
    layer, grid, kc, width, stride_phases, density = _random_case(seed)
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, grid[0], grid[1], kc)
    classes = stride_classes(problem, stride_phases)
    tensor = problem.streamed(random_tensors(layer, density, seed))
    for options in OPTIONS:
        shared = streamed_vectors(problem, tiling, classes, StreamedInput(tensor, width), options)
        reference = reference_streamed_vectors(problem, tiling, classes, tensor, options, width)
        _assert_same_operand(shared, reference)
        _assert_each_pe_sees_the_same_vectors(shared, reference, tiling.n_pes)


def _cell_keys(problem, tiling, classes, stationary, streamed) -> np.ndarray:
    """The streamed fiber key every pairing cell looks up (``pairing.make_cells``: stream key and the PE's set)."""
    cells = make_cells(problem, tiling, classes, stationary, streamed)
    return cells.stream_key * streamed.layout.n_sets + streamed.layout.set_of_pe[cells.slot % tiling.n_pes]


@pytest.mark.parametrize("seed", range(12, 24))
@pytest.mark.parametrize("phase", PHASES)
def test_the_fibers_built_for_the_stationary_vectors_are_those_the_cells_pair_with(seed, phase):
    """Given the stationary vectors, the streamed operand holds only the fibers of the (image-channel, fetch set)s
    some stationary fiber pairs with: every fiber a cell looks up is there (or empty in the replicated
    representation too) with the replicated representation's vectors, the cells are the same, and the
    per-(block, set) deliveries and counts are those of every fiber."""
    problem, tiling, classes, stationary, tensor, width = _case_inputs(seed, phase)
    for options in OPTIONS:
        kept = streamed_vectors(problem, tiling, classes, StreamedInput(tensor, width, stationary), options)
        reference = reference_streamed_vectors(problem, tiling, classes, tensor, options, width)
        np.testing.assert_array_equal(kept.delivered_nnz, reference.delivered_nnz)
        np.testing.assert_array_equal(kept.unfiltered_nnz, reference.unfiltered_nnz)
        np.testing.assert_array_equal(kept.fetched_nnz, reference.fetched_nnz)
        wanted = np.unique(_cell_keys(problem, tiling, classes, stationary, reference))
        held = np.isin(wanted, reference.vectors.fiber_keys)
        assert np.isin(wanted[held], kept.vectors.fiber_keys).all()
        assert not np.isin(wanted[~held], kept.vectors.fiber_keys).any()
        assert np.isin(kept.vectors.fiber_keys, reference.vectors.fiber_keys).all()
        for key in kept.vectors.fiber_keys:
            assert _fiber_vectors(kept.vectors, key) == _fiber_vectors(reference.vectors, key), key
        cells, ref_cells = (make_cells(problem, tiling, classes, stationary, s) for s in (kept, reference))
        for name in ("slot", "i0", "n_i", "n_f", "nnz_s", "nnz_t", "nnz_t_all", "stream_key"):
            np.testing.assert_array_equal(getattr(cells, name), getattr(ref_cells, name), err_msg=name)


def test_only_the_fibers_of_paired_channels_and_sets_are_built():
    """A 512-channel-like case in small: 1×1 tiles on a 4×4 plane, 16 fetch sets, stationary density 0.1 — most
    (channel, set)s meet no stationary non-zero, and their fibers are not built."""
    layer = Layer("sparse_sets", N=1, C=32, K=16, H=4, W=4, R=3, S=3, stride=1, pad=1)
    problem = phase_problem(layer, "fprop")
    tiling, classes = make_tiling(problem, 4, 4, 4), stride_classes(problem, False)
    tensors = random_tensors(layer, 0.1, 3)
    stationary = stationary_vectors(problem, tiling, classes, problem.stationary(tensors), False, 4)
    options = MappingOptions(fetch_filter=True)
    everything = streamed_vectors(problem, tiling, classes, StreamedInput(problem.streamed(tensors), 4), options)
    kept = streamed_vectors(problem, tiling, classes, StreamedInput(problem.streamed(tensors), 4, stationary), options)
    assert everything.layout.n_sets == 9
    assert len(kept.vectors.fiber_keys) < len(everything.vectors.fiber_keys) / 3
    np.testing.assert_array_equal(kept.delivered_nnz, everything.delivered_nnz)


@pytest.mark.parametrize("stride_phases", [True, False])
def test_a_row_pattern_with_a_hole(stride_phases):
    """One-row tiles with stride 2: a tile's row reaches taps 0 and 2 but not 1 (pattern 1, 0, 1), so its
    fibers keep two runs of rows with a gap, in (u, v, ko) order and in (ko, u, v) order."""
    layer = Layer("hole", N=1, C=3, K=6, H=6, W=6, R=3, S=3, stride=2, pad=1)
    problem = phase_problem(layer, "fprop")
    tiling = make_tiling(problem, 6, 2, 2)
    row_pat = _reach_patterns(problem, tiling)[0]
    assert [1, 0, 1] in row_pat.astype(int).tolist()
    classes = stride_classes(problem, stride_phases)
    tensor = problem.streamed(random_tensors(layer, 0.6, 4))
    for options in OPTIONS:
        shared = streamed_vectors(problem, tiling, classes, StreamedInput(tensor, 3), options)
        reference = reference_streamed_vectors(problem, tiling, classes, tensor, options, 3)
        _assert_same_operand(shared, reference)
        _assert_each_pe_sees_the_same_vectors(shared, reference, tiling.n_pes)


@pytest.mark.parametrize("seed", range(4))
def test_pairing_cells_reach_the_same_vector_contents(seed):
    layer, grid, kc, width, stride_phases, density = _random_case(100 + seed)
    for phase in PHASES:
        problem = phase_problem(layer, phase)
        tiling = make_tiling(problem, grid[0], grid[1], kc)
        classes = stride_classes(problem, stride_phases)
        tensors = random_tensors(layer, density, seed)
        stationary = stationary_vectors(problem, tiling, classes, problem.stationary(tensors), False, 4)
        options = MappingOptions(fetch_filter=True)
        shared = streamed_vectors(problem, tiling, classes, StreamedInput(problem.streamed(tensors), width), options)
        reference = reference_streamed_vectors(problem, tiling, classes, problem.streamed(tensors), options, width)
        cells, ref_cells = (make_cells(problem, tiling, classes, stationary, s) for s in (shared, reference))
        for name in ("slot", "i0", "n_i", "n_f", "nnz_s", "nnz_t", "nnz_t_all", "stream_key"):
            np.testing.assert_array_equal(getattr(cells, name), getattr(ref_cells, name), err_msg=name)
        for cell in range(len(cells.slot)):
            got = [(int(shared.vectors.vec_size[f]), tuple(shared.vectors.box[:, f]))
                   for f in range(cells.f0[cell], cells.f0[cell] + cells.n_f[cell])]
            want = [(int(reference.vectors.vec_size[f]), tuple(reference.vectors.box[:, f]))
                    for f in range(ref_cells.f0[cell], ref_cells.f0[cell] + ref_cells.n_f[cell])]
            assert got == want, cell


def test_a_fiber_every_set_keeps_whole_is_stored_once():
    """A 3×3 weight on a 4×4 plane over 4×4 PEs (1×1 tiles, pad 1): border tiles miss a row or column of
    taps, so there are 9 fetch sets. Weights only at the centre tap reach every tile: each of the 9 sets keeps
    every fiber whole and the shared representation holds each weight once, where the replicated one held
    9 copies. With every tap filled, the replicated one holds 1 + 4·(2/3) + 4·(4/9) = 49/9 copies (the
    interior set, four sets missing a third of the taps, four corners missing five ninths); the shared one,
    with every fiber built (no stationary vectors given), the base (which the interior set keeps whole) plus
    what each of the 8 cutting sets keeps: also 49/9."""
    layer = Layer("s", N=1, C=4, K=8, H=4, W=4, R=3, S=3, stride=1, pad=1)
    problem = phase_problem(layer, "fprop")
    tiling, classes, options = make_tiling(problem, 4, 4, 4), stride_classes(problem, False), \
        MappingOptions(fetch_filter=True)
    streamed = problem.streamed(random_tensors(layer, 0.5, 1))
    centre = np.zeros_like(streamed)
    centre[..., 1, 1] = streamed[..., 1, 1]
    shared = streamed_vectors(problem, tiling, classes, StreamedInput(centre, 4), options)
    reference = reference_streamed_vectors(problem, tiling, classes, centre, options, 4)
    assert reference.layout.n_sets == 9
    assert len(shared.vectors.value) == np.count_nonzero(centre)
    assert len(reference.vectors.value) == 9 * np.count_nonzero(centre)
    _assert_each_pe_sees_the_same_vectors(shared, reference, tiling.n_pes)
    full = np.ones_like(streamed)
    shared = streamed_vectors(problem, tiling, classes, StreamedInput(full, 4), options)
    reference = reference_streamed_vectors(problem, tiling, classes, full, options, 4)
    assert len(reference.vectors.value) == full.size * 49 // 9
    assert len(shared.vectors.value) == full.size * 49 // 9
    _assert_each_pe_sees_the_same_vectors(shared, reference, tiling.n_pes)


@pytest.mark.parametrize("width", [1, 3, 4])
def test_pack_vectors_equals_the_per_element_ranks(width):
    rng = np.random.default_rng(width)
    fiber = np.sort(rng.integers(0, 40, 300))
    sp1, sp2 = rng.integers(0, 9, 300), rng.integers(0, 9, 300)
    elements = Elements(sp1, sp2, rng.integers(0, 5, 300), np.zeros(300, np.int64), rng.standard_normal(300))
    got, want = pack_vectors(fiber, elements, width), reference_pack_vectors(fiber, elements, width)
    for name in ("fiber_keys", "fiber_vec0", "fiber_nvec", "fiber_nnz", "vec_start", "vec_size", "box"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)


def test_cut_segments_by_hand():
    vec0, nvec, start, size = cut_segments(np.array([5, 1, 4]), 2)
    assert vec0.tolist() == [0, 3, 4] and nvec.tolist() == [3, 1, 2]
    assert start.tolist() == [0, 2, 4, 5, 6, 8] and size.tolist() == [2, 2, 1, 1, 2, 2]
    assert [len(a) for a in cut_segments(np.zeros(0, np.int64), 4)] == [0, 0, 0, 0]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("phase", PHASES)
def test_stationary_counts_are_what_the_stationary_vectors_hold(seed, phase):
    """Per (image, PE): the non-zeros the stationary vectors hold (classes that pair with nothing dropped)."""
    from antsim.dataflow.fibers import stationary_counts

    layer, grid, kc, width, stride_phases, density = _random_case(seed)
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, grid[0], grid[1], kc)
    classes = stride_classes(problem, stride_phases)
    tensor = problem.stationary(random_tensors(layer, density, seed))
    vectors = stationary_vectors(problem, tiling, classes, tensor, False, width)
    keys = vectors.image * tiling.n_pes + tiling.pe_of_stationary()[vectors.sp1, vectors.sp2]
    want = np.bincount(keys, minlength=tensor.shape[0] * tiling.n_pes).reshape(tensor.shape[0], tiling.n_pes)
    got = stationary_counts(tiling, classes, tensor)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
