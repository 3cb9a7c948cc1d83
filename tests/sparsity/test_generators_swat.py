"""The default ``swat`` model: exact densities, and statistics inside the ranges measured on captured SWAT
operands (ResNet-18 CIFAR, batch 4, training on natural-photo crops whose loss falls; BENCHMARKS.md
"capture", reports/calibration.md) where the uncalibrated ``topk_field`` falls outside them."""

from __future__ import annotations

import numpy as np
import pytest

from antsim import Layer
from antsim.capture.stats import batch_cv, channel_cv, clustering, spatial_cv
from antsim.sparsity.generators import FieldParams, SwatParams, make_tensors, swat_tensors

LAYER = Layer(name="l", N=4, C=64, K=64, H=32, W=32, R=3, S=3, stride=1, pad=1)

# Captured ranges: min-max over the 20 layers of the dY-top-k-0.1 capture, measured with
#   antsim capture --network resnet18-cifar --steps 400 --batch 4 --density 0.1 --grad-density 0.1 \
#       --data natural --lr 0.004 --out reports/capture/resnet18-cifar_b4_g0.1_natural_s400.npz
#   scripts/calibrate_sparsity.py --captures reports/capture/resnet18-cifar_b4_g0.1_natural_s400.npz ...
# (torch 2.13.0 CPU, one thread, seed 0; loss 2.60 -> 1.59 over the run, first vs last 40 steps).
CAPTURED = {
    ("weights", "channel_cv"): (0.04, 0.29), ("weights", "clustering"): (0.97, 2.61),
    ("saved_activations", "channel_cv"): (0.17, 0.93), ("saved_activations", "clustering"): (1.98, 9.11),
    ("saved_activations", "spatial_cv"): (0.14, 0.50), ("saved_activations", "batch_cv"): (0.10, 1.73),
    ("grad_output", "channel_cv"): (0.25, 1.28), ("grad_output", "clustering"): (1.21, 5.89),
    ("grad_output", "spatial_cv"): (0.10, 0.88), ("grad_output", "batch_cv"): (0.32, 0.91),
}
SEEDS = (0, 1, 2)  # statistics are medians over these seeds (a batch of 4 makes per-image CVs noisy)
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


def _median_stats(**kwargs) -> dict[tuple[str, str], float]:
    tensors = [make_tensors(LAYER, 0.1, 0.5, 0.1, seed=seed, density_a_saved=0.1, **kwargs) for seed in SEEDS]
    return {key: float(np.median([_stat(t, *key) for t in tensors])) for key in CAPTURED}


def test_statistics_fall_in_the_captured_ranges_where_topk_field_does_not() -> None:
    swat = _median_stats()
    for key, (low, high) in CAPTURED.items():
        assert low <= swat[key] <= high, (key, swat[key])
    field = _median_stats(model="topk_field")
    outside = [key for key, (low, high) in CAPTURED.items() if not low <= field[key] <= high]
    # topk_field: whole kernels survive in W, and its top-k copies are even across the batch
    assert {("weights", "clustering"), ("saved_activations", "batch_cv"), ("grad_output", "batch_cv")} <= set(outside)


def test_the_previous_default_misses_the_natural_image_ranges() -> None:
    """The digits-fitted parameters (before the natural-image capture) put the saved A's non-zeros in too
    few places of the plane and spread dY too evenly over the images — why the defaults changed."""
    old = SwatParams(activations=FieldParams(1.0, 0.15), envelope_sigma=0.25, envelope_length=0.25, image_sigma=0.1,
                     grad_envelope_sigma=None, grad_image_sigma=None)
    stats = _median_stats(params=old)
    assert stats["saved_activations", "spatial_cv"] > CAPTURED["saved_activations", "spatial_cv"][1]
    assert stats["grad_output", "batch_cv"] < CAPTURED["grad_output", "batch_cv"][0]


def test_grad_envelope_changes_only_dy() -> None:
    """dY's own envelope leaves W, A and the saved A untouched (separate random streams); ``None`` means A's."""
    shared = SwatParams(envelope_sigma=0.3, image_sigma=0.2, grad_envelope_sigma=None, grad_image_sigma=None)
    explicit = SwatParams(envelope_sigma=0.3, image_sigma=0.2, grad_envelope_sigma=0.3, grad_image_sigma=0.2)
    own = SwatParams(envelope_sigma=0.3, image_sigma=0.2, grad_envelope_sigma=0.0, grad_image_sigma=0.8)
    runs = [swat_tensors(LAYER, 0.1, 0.5, 0.1, seed=2, density_a_saved=0.1, params=p) for p in (shared, explicit, own)]
    for operand in ("weights", "activations", "saved_activations", "grad_output"):
        np.testing.assert_array_equal(getattr(runs[0], operand), getattr(runs[1], operand))
    for operand in ("weights", "activations", "saved_activations"):
        np.testing.assert_array_equal(getattr(runs[0], operand), getattr(runs[2], operand))
    assert batch_cv(runs[2].grad_output) > 2 * batch_cv(runs[0].grad_output)


def test_envelope_makes_top_k_copies_non_stationary_but_not_the_forward_mask() -> None:
    flat = SwatParams(envelope_sigma=0.0, image_sigma=0.0, grad_envelope_sigma=0.0, grad_image_sigma=0.0)
    strong = SwatParams(envelope_sigma=0.5, image_sigma=0.3, grad_envelope_sigma=None, grad_image_sigma=None)
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
