"""What ``streamed_vectors`` and ``stationary_vectors`` leave to be worked out, and the counting shortcuts they use.

Boxes and values are built on first read (``_Deferred``): what a read gives must be what an eager build gives — the
boxes by ``_boxes`` (min/max ``reduceat`` over each vector), the values read from the tensor at each element's
coordinates — and ``dataclasses.replace`` must keep working. The cell counts by popcount must equal the bincount of
the slots' cells, and ``_concatenated_ranges`` the ranges written out one by one.
"""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from antsim.dataflow.fibers import (
    StreamedInput,
    Vectors,
    _boxes,
    _cell_counts,
    _concatenated_ranges,
    _Geometry,
    stationary_vectors,
    streamed_vectors,
)
from antsim.dataflow.options import MappingOptions
from antsim.dataflow.tiling import make_tiling, stride_classes
from antsim.phases import phase_problem
from antsim.workloads.layers import PHASES, Layer
from tests.dataflow.dataflow_helpers import random_tensors

LAYER = Layer("deferred", N=2, C=5, K=11, H=9, W=8, R=3, S=3, stride=(2, 1), pad=(1, 1))


def _eager_boxes(vectors) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Min and max of sp1 and sp2 over each vector, element by element (vectors may share or skip elements)."""
    box = np.zeros((4, len(vectors.vec_start)), np.int64)
    for vec, (start, size) in enumerate(zip(vectors.vec_start, vectors.vec_size, strict=True)):
        sp1, sp2 = vectors.sp1[start:start + size], vectors.sp2[start:start + size]
        box[:, vec] = sp1.min(), sp1.max(), sp2.min(), sp2.max()
    return box


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("options", [MappingOptions(fetch_filter=True), MappingOptions(),
                                     MappingOptions(fetch_filter=True, channel_inner=False),
                                     MappingOptions(dense=True)])
def test_deferred_boxes_and_values_are_the_eager_ones(phase, options):  # type: ignore[no-untyped-def]
    problem = phase_problem(LAYER, phase)
    tiling = make_tiling(problem, 2, 3, 4)
    classes = stride_classes(problem, True)
    tensors = random_tensors(LAYER, 0.4, 3)
    stationary_tensor, streamed_tensor = problem.stationary(tensors), problem.streamed(tensors)
    stationary = stationary_vectors(problem, tiling, classes, stationary_tensor, options.dense, 3)
    operand = streamed_vectors(problem, tiling, classes, StreamedInput(streamed_tensor, 2, stationary), options)
    streamed = operand.vectors
    assert "box" not in vars(stationary) and "value" not in vars(streamed)  # nothing built before a read
    np.testing.assert_array_equal(stationary.box, _eager_boxes(stationary))
    np.testing.assert_array_equal(stationary.box, _boxes(stationary.sp1, stationary.sp2, stationary.vec_start))
    np.testing.assert_array_equal(streamed.box, _eager_boxes(streamed))
    # Values: the tensor at each element's coordinates (streamed: the channel from its fiber key's block).
    np.testing.assert_array_equal(stationary.value, np.asarray(stationary_tensor, np.float64)[
        stationary.image, stationary.chan, stationary.sp1, stationary.sp2])
    block = streamed.fiber_keys // operand.layout.n_sets // operand.layout.n_classes
    for key_block, vec0, nnz in zip(block, streamed.fiber_vec0, streamed.fiber_nnz, strict=True):
        elements = np.arange(streamed.vec_start[vec0], streamed.vec_start[vec0] + nnz)
        channel = key_block // tiling.n_groups % streamed_tensor.shape[1]
        want = np.asarray(streamed_tensor, np.float64)[streamed.image[elements], channel, streamed.chan[elements],
                                                       streamed.sp1[elements], streamed.sp2[elements]]
        np.testing.assert_array_equal(streamed.value[elements], want)
    assert streamed.value.dtype == stationary.value.dtype == np.float64
    # A pickled copy is an eager Vectors, equal field by field.
    restored = pickle.loads(pickle.dumps(streamed))
    assert type(restored) is Vectors
    for field in dataclasses.fields(streamed):
        np.testing.assert_array_equal(getattr(restored, field.name), getattr(streamed, field.name))
    # A replaced copy is eager and equal field by field.
    copy = dataclasses.replace(streamed, box=streamed.box.astype(np.int32))
    assert copy.box.dtype == np.int32
    for field in dataclasses.fields(streamed):
        if field.name != "box":
            np.testing.assert_array_equal(getattr(copy, field.name), getattr(streamed, field.name))


def test_concatenated_ranges_are_the_ranges_one_by_one():
    rng = np.random.default_rng(5)
    for _ in range(400):
        n = int(rng.integers(0, 25))
        count = rng.integers(0, 6, n) * (rng.random(n) < 0.6)
        first = rng.integers(-3, 80, n)
        want = [np.arange(f, f + c) for f, c in zip(first, count, strict=True)]
        got = _concatenated_ranges(first, count)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, np.concatenate([*want, np.zeros(0, np.int64)]))


@pytest.mark.parametrize("kc", [1, 2, 3, 4, 5, 8, 9])
@pytest.mark.parametrize("channel_inner", [True, False])
def test_popcount_cell_counts_are_the_bincount_of_cells(kc, channel_inner):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(kc)
    geometry = _Geometry((2, 3, 4 * kc, 5, 4), 4, kc, 3, 2, (2, 2), channel_inner)
    mask = rng.random(geometry.n_fibers * geometry.fiber_length) < 0.3
    slot = np.flatnonzero(mask)
    want = np.bincount(geometry.cell_of(slot), minlength=geometry.n_fibers * geometry.rows * geometry.cols)
    got = _cell_counts(geometry, mask, slot)
    np.testing.assert_array_equal(got, want)
