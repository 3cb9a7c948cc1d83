"""The envelope recipe: exact densities, determinism, and the non-stationarity it is meant to add."""

from __future__ import annotations

import numpy as np
import pytest

from antsim.capture.calibrated import EnvelopeParams, envelope_like, envelope_tensors
from antsim.capture.stats import batch_cv, clustering, spatial_cv
from antsim.sparsity.generators import make_tensors
from antsim.workloads.layers import Layer

LAYER = Layer(name="l", N=4, C=32, K=32, H=16, W=16, R=3, S=3, stride=1, pad=1)


def test_densities_are_exact_and_seeded() -> None:
    t = envelope_tensors(LAYER, 0.1, 0.5, 0.1, seed=3, density_a_saved=0.1)
    assert np.count_nonzero(t.weights) == round(0.1 * t.weights.size)
    assert np.count_nonzero(t.activations) == round(0.5 * t.activations.size)
    assert np.count_nonzero(t.saved_activations) == round(0.1 * t.activations.size)
    assert np.count_nonzero(t.grad_output) == round(0.1 * t.grad_output.size)
    # The saved copy keeps values of A (a subset of its non-zeros).
    kept = t.saved_activations != 0
    assert np.array_equal(t.saved_activations[kept], t.activations[kept])
    again = envelope_tensors(LAYER, 0.1, 0.5, 0.1, seed=3, density_a_saved=0.1)
    assert all(np.array_equal(getattr(t, k), getattr(again, k))
               for k in ("weights", "activations", "grad_output", "saved_activations"))
    dense = envelope_tensors(LAYER, 0.1, 0.5, 1.0, seed=3)
    assert np.count_nonzero(dense.grad_output) == dense.grad_output.size and dense.saved_activations is None


def test_envelope_makes_top_k_non_stationary_but_not_the_relu_mask() -> None:
    flat = EnvelopeParams(envelope_sigma=0.0, image_sigma=0.0)
    strong = EnvelopeParams(envelope_sigma=0.5, image_sigma=0.3)
    t0 = envelope_tensors(LAYER, 0.1, 0.5, 0.1, seed=1, density_a_saved=0.1, params=flat)
    t1 = envelope_tensors(LAYER, 0.1, 0.5, 0.1, seed=1, density_a_saved=0.1, params=strong)
    np.testing.assert_array_equal(t0.activations, t1.activations)   # forward mask independent of the envelope
    assert spatial_cv(t1.saved_activations) > 2 * spatial_cv(t0.saved_activations)
    assert batch_cv(t1.saved_activations) > 2 * batch_cv(t0.saved_activations)
    assert spatial_cv(t1.grad_output) > 2 * spatial_cv(t0.grad_output)
    # Default weights: top-k of an unsmoothed field, i.e. no clustering inside the kernels.
    assert clustering(t1.weights) == pytest.approx(1.0, abs=0.15)


def test_flat_envelope_with_shared_params_reduces_to_topk_field_masks() -> None:
    from antsim.sparsity.generators import FieldParams

    same = FieldParams(1.5, 0.5)
    params = EnvelopeParams(weights=same, activations=same, grad_output=same, envelope_sigma=0.0, image_sigma=0.0)
    ours = envelope_tensors(LAYER, 0.1, 0.5, 1.0, seed=0, density_a_saved=0.1, params=params)
    ref = make_tensors(LAYER, 0.1, 0.5, 1.0, model="topk_field", seed=0, density_a_saved=0.1, params=same)
    np.testing.assert_array_equal(ours.weights, ref.weights)
    np.testing.assert_array_equal(ours.activations, ref.activations)
    np.testing.assert_array_equal(ours.saved_activations != 0, ref.saved_activations != 0)


def test_envelope_like_copies_layers() -> None:
    captured = {"a": envelope_tensors(LAYER, 0.2, 0.4, 0.3, seed=0, density_a_saved=0.1)}
    like = envelope_like(captured, seed=2)
    assert list(like) == ["a"]
    assert like["a"].densities() == pytest.approx(captured["a"].densities())
