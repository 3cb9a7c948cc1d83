"""The fprop/dgrad footprint's per-tap pair counts: the dense BLAS product and the scipy sparse one give the
same footprint, and both equal the dense per-tap path (an independent algorithm: touched-output arrays)."""

from __future__ import annotations

import numpy as np
import pytest

from antsim.dataflow import footprint
from antsim.dataflow.tiling import make_tiling
from antsim.phases import phase_problem
from antsim.workloads.layers import Layer
from tests.dataflow.dataflow_helpers import random_tensors

LAYERS = [
    Layer("3x3", N=2, C=5, K=11, H=9, W=7, R=3, S=3, stride=1, pad=1),
    Layer("s2", N=1, C=3, K=8, H=12, W=12, R=3, S=3, stride=2, pad=1),
    Layer("5x3", N=1, C=7, K=6, H=6, W=11, R=5, S=3, stride=(2, 1), pad=(2, 0)),
]
FIELDS = ("valid_products", "partial_outputs", "halo_outputs", "output_values")


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", ["fprop", "dgrad"])
@pytest.mark.parametrize("density", [0.05, 0.4])
def test_blas_and_sparse_tap_products_give_the_same_footprint(layer, phase, density, monkeypatch):
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, 3, 2, 4)
    t = random_tensors(layer, density, seed=3)
    S, T = problem.stationary(t) != 0, problem.streamed(t) != 0
    blas = footprint.plane_footprint_sparse(problem, tiling, S, T)
    monkeypatch.setattr(footprint, "_BLAS_TAP_ENTRIES", 0)  # every tap through scipy
    sparse = footprint.plane_footprint_sparse(problem, tiling, S, T)
    dense = footprint.plane_footprint_dense(problem, tiling, S, T)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(blas, name), getattr(sparse, name), err_msg=name)
        np.testing.assert_array_equal(getattr(blas, name), getattr(dense, name), err_msg=name)
    assert blas.valid_products.sum() > 0


@pytest.mark.parametrize("blas", [True, False])
def test_tap_pair_counts_by_hand(blas, monkeypatch):
    if not blas:
        monkeypatch.setattr(footprint, "_BLAS_TAP_ENTRIES", 0)
    w_tap = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 1]], bool)  # (Ko=3, Cs=3)
    channel, out = np.array([0, 2, 1, 2]), np.array([0, 0, 1, 3])  # S_tap (Cs × O=4)
    row, col, count = footprint._tap_pair_counts(w_tap, channel, out, 4)
    got = {(int(r), int(c)): float(n) for r, c, n in zip(row, col, count, strict=True)}
    assert got == {(0, 0): 2, (0, 3): 1, (2, 0): 2, (2, 1): 1, (2, 3): 1}
