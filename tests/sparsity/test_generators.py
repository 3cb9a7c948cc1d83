"""Sparsity generators: exact/expected densities, determinism, and the structure each model promises."""

from __future__ import annotations

import numpy as np
import pytest

from antsim import Layer
from antsim.errors import AntsimError
from antsim.sparsity.generators import make_operand, make_tensors, sparsity_models, top_k

LAYER = Layer(name="l", N=2, C=32, K=16, H=24, W=24, R=3, S=3, stride=1, pad=1)


def _channel_cv(a: np.ndarray) -> float:
    per_channel = (a != 0).mean(axis=(0, 2, 3))
    return float(per_channel.std() / per_channel.mean())


def _neighbour_ratio(a: np.ndarray) -> float:
    """P(right neighbour non-zero | non-zero) / density: 1 for independent masks, > 1 when clustered."""
    m = a != 0
    both = (m[..., 1:] & m[..., :-1]).sum()
    return float(both / m[..., :-1].sum() / m.mean())


@pytest.mark.parametrize("model", ["uniform", "topk_field", "channel", "swat"])
def test_same_seed_same_tensors_other_seed_other_tensors(model: str) -> None:
    a, b = make_tensors(LAYER, model=model, seed=3), make_tensors(LAYER, model=model, seed=3)
    c = make_tensors(LAYER, model=model, seed=4)
    assert all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("weights", "activations", "grad_output"))
    assert not np.array_equal(a.activations, c.activations)


@pytest.mark.parametrize("density", [0.05, 0.1, 0.5, 1.0])
def test_topk_field_density_is_exact(density: float) -> None:
    t = make_tensors(LAYER, density, density, density, model="topk_field", seed=1)
    for name, value in t.densities().items():
        size = getattr(t, name).size
        assert value == round(density * size) / size, name


def test_uniform_density_is_binomial() -> None:
    a = make_operand((4, 64, 32, 32), 0.1, "uniform", np.random.default_rng(0))
    n = a.size
    assert abs((a != 0).sum() - 0.1 * n) < 4 * np.sqrt(n * 0.1 * 0.9)


def test_topk_field_has_channel_imbalance_and_clustering_uniform_has_neither() -> None:
    shape = (2, 64, 32, 32)
    field = make_operand(shape, 0.1, "topk_field", np.random.default_rng(0))
    uniform = make_operand(shape, 0.1, "uniform", np.random.default_rng(0))
    # binomial CV of a 2048-element channel at d=0.1 is ~0.07; docs/sources.md §1.2 reports 0.2-1.6 in real tensors
    assert _channel_cv(uniform) < 0.15 < 0.2 < _channel_cv(field) < 1.6
    assert abs(_neighbour_ratio(uniform) - 1) < 0.1 and _neighbour_ratio(field) > 2


def test_channel_model_is_whole_channels() -> None:
    a = make_operand((2, 20, 8, 8), 0.25, "channel", np.random.default_rng(0))
    per_channel = (a != 0).mean(axis=(0, 2, 3))
    assert set(np.unique(per_channel)) == {0.0, 1.0} and per_channel.sum() == 5


def test_saved_activations_are_top_k_of_forward_activations() -> None:
    t = make_tensors(LAYER, density_a=0.5, density_a_saved=0.1, seed=2, model="topk_field")
    saved = t.saved_activations
    assert saved is not None and np.count_nonzero(saved) == round(0.1 * saved.size)
    kept = saved != 0
    assert np.array_equal(saved[kept], t.activations[kept])
    assert np.abs(t.activations[~kept]).max() <= np.abs(saved[kept]).min()
    assert t.wgrad_activations is saved


def test_top_k_keeps_largest_magnitudes() -> None:
    values = np.array([[3.0, -5.0, 1.0, 0.5]])
    assert top_k(values, 0.5).tolist() == [[3.0, -5.0, 0.0, 0.0]]


def test_bad_inputs() -> None:
    with pytest.raises(AntsimError, match="model 'gausian'; known: channel, swat, topk_field, uniform"):
        make_tensors(LAYER, model="gausian")
    with pytest.raises(AntsimError, match=r"density_g: density of output gradients must be in \(0, 1\]; got 1.5"):
        make_tensors(LAYER, density_g=1.5)
    assert sparsity_models() == ["channel", "swat", "topk_field", "uniform"]
