"""The default ``swat`` model: exact densities, and statistics inside the ranges measured on captured SWAT
operands (ResNet-18 CIFAR, batch 4; BENCHMARKS.md "capture", medians over layers [min-max]) where the
uncalibrated ``topk_field`` falls outside them."""

from __future__ import annotations

import numpy as np
import pytest

from antsim import Layer
from antsim.capture.stats import batch_cv, channel_cv, clustering, spatial_cv
from antsim.sparsity.generators import FieldParams, SwatParams, make_tensors, swat_tensors

LAYER = Layer(name="l", N=4, C=64, K=64, H=32, W=32, R=3, S=3, stride=1, pad=1)

# Captured ranges (min-max over the 20 layers of the dY-top-k-0.1 capture).
CAPTURED = {
    ("weights", "channel_cv"): (0.03, 0.28), ("weights", "clustering"): (0.97, 5.27),
    ("saved_activations", "channel_cv"): (0.0, 1.36), ("saved_activations", "clustering"): (1.64, 8.78),
    ("saved_activations", "spatial_cv"): (0.18, 1.77), ("saved_activations", "batch_cv"): (0.11, 0.40),
    ("grad_output", "channel_cv"): (0.29, 1.39), ("grad_output", "clustering"): (0.61, 7.34),
}
STATS = {"channel_cv": channel_cv, "clustering": clustering, "spatial_cv": spatial_cv, "batch_cv": batch_cv}


def _stat(t, operand: str, name: str) -> float:
    return STATS[name](getattr(t, operand))


def test_densities_are_exact_and_seeded() -> None:
    t = make_tensors(LAYER, 0.1, 0.5, 0.1, seed=3, density_a_saved=0.1)
    for operand, density in (("weights", 0.1), ("activations", 0.5), ("saved_activations", 0.1),
                             ("grad_output", 0.1)):
        array = getattr(t, operand)
        assert np.count_nonzero(array) == round(density * array.size), operand
    kept = t.saved_activations != 0
    assert np.array_equal(t.saved_activations[kept], t.activations[kept])  # a subset of A's non-zeros
    again = make_tensors(LAYER, 0.1, 0.5, 0.1, seed=3, density_a_saved=0.1)
    assert all(np.array_equal(getattr(t, k), getattr(again, k))
               for k in ("weights", "activations", "grad_output", "saved_activations"))
    dense = make_tensors(LAYER, 0.1, 0.1, 1.0, seed=3)
    assert np.count_nonzero(dense.grad_output) == dense.grad_output.size and dense.saved_activations is None
    assert np.count_nonzero(dense.activations) == round(0.1 * dense.activations.size)
    # a saved density equal to A's means "no separate copy": A is the top-k copy either way
    same = make_tensors(LAYER, 0.1, 0.1, 1.0, seed=3, density_a_saved=0.1)
    np.testing.assert_array_equal(same.activations, dense.activations)
    assert same.saved_activations is None


def test_statistics_fall_in_the_captured_ranges_where_topk_field_does_not() -> None:
    swat = make_tensors(LAYER, 0.1, 0.5, 0.1, seed=0, density_a_saved=0.1)
    for (operand, name), (low, high) in CAPTURED.items():
        assert low <= _stat(swat, operand, name) <= high, (operand, name, _stat(swat, operand, name))
    field = make_tensors(LAYER, 0.1, 0.5, 0.1, seed=0, density_a_saved=0.1, model="topk_field")
    outside = [key for key, (low, high) in CAPTURED.items() if not low <= _stat(field, *key) <= high]
    # topk_field: whole kernels survive in W, and its top-k copies are spatially even across the batch
    assert ("weights", "clustering") in outside and ("saved_activations", "batch_cv") in outside


def test_envelope_makes_top_k_copies_non_stationary_but_not_the_forward_mask() -> None:
    flat = SwatParams(envelope_sigma=0.0, image_sigma=0.0)
    strong = SwatParams(envelope_sigma=0.5, image_sigma=0.3)
    t0 = swat_tensors(LAYER, 0.1, 0.5, 0.1, seed=1, density_a_saved=0.1, params=flat)
    t1 = swat_tensors(LAYER, 0.1, 0.5, 0.1, seed=1, density_a_saved=0.1, params=strong)
    np.testing.assert_array_equal(t0.activations, t1.activations)
    for operand in ("saved_activations", "grad_output"):
        assert spatial_cv(getattr(t1, operand)) > 2 * spatial_cv(getattr(t0, operand)), operand
        assert batch_cv(getattr(t1, operand)) > 2 * batch_cv(getattr(t0, operand)), operand


def test_flat_envelope_with_shared_params_gives_topk_field_masks() -> None:
    same = FieldParams(1.5, 0.5)
    params = SwatParams(weights=same, activations=same, grad_output=same, envelope_sigma=0.0, image_sigma=0.0)
    ours = swat_tensors(LAYER, 0.1, 0.5, 1.0, seed=0, density_a_saved=0.1, params=params)
    ref = make_tensors(LAYER, 0.1, 0.5, 1.0, model="topk_field", seed=0, density_a_saved=0.1, params=same)
    np.testing.assert_array_equal(ours.weights, ref.weights)
    np.testing.assert_array_equal(ours.activations, ref.activations)
    np.testing.assert_array_equal(ours.saved_activations != 0, ref.saved_activations != 0)


def test_params_of_the_wrong_kind_are_rejected() -> None:
    from antsim.errors import AntsimError

    with pytest.raises(AntsimError, match="SwatParams"):
        make_tensors(LAYER, model="swat", params=FieldParams())
    with pytest.raises(AntsimError, match="FieldParams"):
        make_tensors(LAYER, model="uniform", params=SwatParams())
