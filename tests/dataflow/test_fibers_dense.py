"""A dense design's closed forms (fiber-level streamed operand, footprint) equal the general element-level path."""

from __future__ import annotations

import numpy as np
import pytest

from antsim.dataflow.fibers import StreamedInput, dense_streamed_fibers, streamed_vectors
from antsim.dataflow.footprint import dense_footprint, fast_footprint
from antsim.dataflow.options import MappingOptions
from antsim.dataflow.tiling import make_tiling, stride_classes
from antsim.phases import phase_problem
from antsim.sparsity.generators import make_tensors
from antsim.workloads.layers import PHASES, Layer

LAYERS = [
    Layer("3x3", N=2, C=5, K=11, H=9, W=7, R=3, S=3, stride=1, pad=1),
    Layer("s2", N=1, C=3, K=8, H=12, W=12, R=3, S=3, stride=2, pad=1),
    Layer("1x1s2", N=1, C=6, K=9, H=8, W=8, R=1, S=1, stride=2, pad=0),
    Layer("7x7", N=1, C=3, K=6, H=15, W=15, R=7, S=7, stride=2, pad=3),
]


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("fetch_filter", [True, False])
@pytest.mark.parametrize("grid,kc,width,stride_phases", [((2, 2), 4, 4, True), ((3, 2), 8, 2, False)])
def test_fiber_sizes_match_the_element_level_vectors(layer, phase, fetch_filter, grid, kc, width, stride_phases):
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, grid[0], grid[1], kc)
    classes = stride_classes(problem, stride_phases)
    tensors = make_tensors(layer, 0.3, 0.3, 0.3, seed=0)  # values are ignored by a dense design
    options = MappingOptions(dense=True, fetch_filter=fetch_filter)
    reference = streamed_vectors(problem, tiling, classes, StreamedInput(problem.streamed(tensors), width), options)
    closed = dense_streamed_fibers(problem, tiling, classes, width, fetch_filter)
    # fiber_vec0 is where a fiber's vectors sit: the element-level operand shares them between fetch sets
    # (tests/dataflow/test_fibers.py checks their contents); the closed form lays them end to end.
    for name in ("fiber_keys", "fiber_nvec", "fiber_nnz"):
        np.testing.assert_array_equal(getattr(closed.vectors, name), getattr(reference.vectors, name), err_msg=name)
    np.testing.assert_array_equal(closed.unfiltered_nnz, reference.unfiltered_nnz)
    np.testing.assert_array_equal(closed.fetched_nnz, reference.fetched_nnz)
    np.testing.assert_array_equal(closed.layout.set_of_pe, reference.layout.set_of_pe)
    assert (closed.layout.n_blocks, closed.layout.n_classes, closed.layout.n_sets) == (
        reference.layout.n_blocks, reference.layout.n_classes, reference.layout.n_sets)


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("grid,kc,tiles", [((2, 2), 4, None), ((3, 2), 3, [0, 0]), ((1, 4), 16, [0, 1])])
def test_dense_footprint_equals_the_mask_correlation_of_all_ones(layer, phase, grid, kc, tiles):
    layer = layer.with_batch(2)
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, grid[0], grid[1], kc)
    tile_of_image = None if tiles is None else np.array(tiles)
    S = np.ones(problem.stationary_shape, bool)
    T = np.ones(problem.streamed_shape, bool)
    reference = fast_footprint(problem, tiling, S, T, tile_of_image)
    closed = dense_footprint(problem, tiling, tile_of_image)
    for name in ("valid_products", "partial_outputs", "halo_outputs", "output_values"):
        np.testing.assert_array_equal(getattr(closed, name), getattr(reference, name), err_msg=name)
