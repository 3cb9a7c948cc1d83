"""``streamed_vectors`` tests its kept elements a block at a time (``fibers._BLOCK_ELEMENTS``): any block size
gives the vectors of the replicated representation (``streamed_reference.py``) and the same arrays, byte for
byte, as one block holding everything — on random layers, at block sizes that split every channel and every
fiber, with empty fibers (an all-zero operand) and every element a non-zero (dense designs, all-ones operands).
"""

from __future__ import annotations

import numpy as np
import pytest

from antsim.dataflow import fibers
from antsim.dataflow.fibers import StreamedInput, StreamedOperand, streamed_vectors
from antsim.dataflow.tiling import make_tiling, stride_classes
from antsim.phases import phase_problem
from antsim.workloads.layers import PHASES
from tests.dataflow.dataflow_helpers import random_tensors
from tests.dataflow.streamed_reference import reference_streamed_vectors
from tests.dataflow.test_fibers import (
    OPTIONS,
    _assert_each_pe_sees_the_same_vectors,
    _assert_same_operand,
    _case_inputs,
    _fiber_vectors,
    _random_case,
)

OPERAND_ARRAYS = ("unfiltered_nnz", "fetched_nnz", "delivered_nnz")


def _greedy_blocks(sizes: list[int], limit: int) -> list[tuple[int, int]]:
    """Brute force: items in order, a block closed when the next item would take it past ``limit`` (a block
    holds at least one item)."""
    blocks, lo, total = [], 0, 0
    for index, size in enumerate(sizes):
        if index > lo and total + size > limit:
            blocks.append((lo, index))
            lo, total = index, 0
        total += size
    if lo < len(sizes):
        blocks.append((lo, len(sizes)))
    return blocks


@pytest.mark.parametrize("seed", range(40))
def test_item_blocks_are_the_greedy_blocks(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 12, int(rng.integers(0, 60))) * rng.integers(0, 2, 1)[0] if seed % 7 == 0 else \
        rng.integers(0, 12, int(rng.integers(0, 60)))
    limit = int(rng.integers(1, 30))
    got = fibers._item_blocks(np.asarray(sizes, np.int64), limit)
    assert got == _greedy_blocks([int(s) for s in sizes], limit)
    assert [i for lo, hi in got for i in range(lo, hi)] == list(range(len(sizes)))


def _assert_identical(got: StreamedOperand, want: StreamedOperand) -> None:
    for name in fibers.Vectors.__dataclass_fields__:
        a, b = getattr(got.vectors, name), getattr(want.vectors, name)
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), name
    for name in OPERAND_ARRAYS:
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)


def _operands(problem, tiling, classes, streamed: StreamedInput, options, monkeypatch, blocks) -> list:
    out = []
    for block in blocks:
        monkeypatch.setattr(fibers, "_BLOCK_ELEMENTS", block)
        out.append(streamed_vectors(problem, tiling, classes, streamed, options))
    return out


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("phase", PHASES)
def test_any_block_size_gives_the_replicated_vectors(seed, phase, monkeypatch):
    problem, tiling, classes, stationary, tensor, width = _case_inputs(seed, phase, case_seed=200 + seed)
    for options in OPTIONS:
        reference = reference_streamed_vectors(problem, tiling, classes, tensor, options, width)
        whole, *split = _operands(problem, tiling, classes, StreamedInput(tensor, width), options, monkeypatch,
                                  (1 << 40, 1, 3, 17))
        _assert_same_operand(whole, reference)
        _assert_each_pe_sees_the_same_vectors(whole, reference, tiling.n_pes)
        for operand in split:
            _assert_identical(operand, whole)
        kept_whole, *kept_split = _operands(problem, tiling, classes, StreamedInput(tensor, width, stationary),
                                            options, monkeypatch, (1 << 40, 1, 5))
        for key in kept_whole.vectors.fiber_keys:
            assert _fiber_vectors(kept_whole.vectors, key) == _fiber_vectors(reference.vectors, key), key
        for operand in kept_split:
            _assert_identical(operand, kept_whole)


@pytest.mark.parametrize("fill", ["zeros", "ones"])
@pytest.mark.parametrize("phase", PHASES)
def test_empty_and_all_dense_operands(fill, phase, monkeypatch):
    """An all-zero streamed operand (every fiber empty, nothing kept) and an all-ones one (every position of
    every fiber held) at block sizes 1 and 4, against the replicated representation."""
    layer, grid, kc, width, stride_phases, _ = _random_case(300)
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, grid[0], grid[1], kc)
    classes = stride_classes(problem, stride_phases)
    tensor = problem.streamed(random_tensors(layer, 0.3, 1))
    tensor = np.zeros_like(tensor) if fill == "zeros" else np.ones_like(tensor)
    for options in OPTIONS:
        reference = reference_streamed_vectors(problem, tiling, classes, tensor, options, width)
        whole, *split = _operands(problem, tiling, classes, StreamedInput(tensor, width), options, monkeypatch,
                                  (1 << 40, 1, 4))
        _assert_same_operand(whole, reference)
        _assert_each_pe_sees_the_same_vectors(whole, reference, tiling.n_pes)
        if fill == "zeros" and not options.dense:
            assert len(whole.vectors.fiber_keys) == 0
        for operand in split:
            _assert_identical(operand, whole)


@pytest.mark.parametrize("seed", range(30))
def test_unique_rows_is_numpys_unique_along_rows(seed):
    rng = np.random.default_rng(seed)
    table = rng.random((int(rng.integers(1, 12)), int(rng.integers(1, 10)))) < rng.random()
    if seed % 5 == 0:
        table[:] = table[0]  # one distinct row
    rows, inverse = fibers._unique_rows(table)
    want_rows, want_inverse = np.unique(table, axis=0, return_inverse=True)
    assert rows.dtype == want_rows.dtype and rows.shape == want_rows.shape
    np.testing.assert_array_equal(rows, want_rows)
    assert inverse.dtype == want_inverse.dtype
    np.testing.assert_array_equal(inverse, want_inverse.ravel())
