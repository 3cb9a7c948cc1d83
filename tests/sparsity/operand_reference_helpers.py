"""The operand generators as they were at 2bd0d76 (before the chunked draws and the candidate top-k), kept
verbatim but for names (``_top_k_mask_of_gain`` written as its definition, the product's top-k mask), as the
reference of tests/sparsity/test_generators_reference.py and test_gemm_reference.py. ``top_k`` here is the
original argpartition selection (before session 7's threshold), so the reference shares no selection code with
the package.

Since session 9 the ``uniform`` and ``channel`` values (and the GEMM ``uniform`` ones) are one normal per non-zero
instead of one per element: ``nonzero_draws`` and the ``*_drawn`` functions state that contract in whole-array
numpy, and ``make_operand`` / ``make_tensors`` / the GEMM makers take the model table or Bernoulli maker to use
(default: the 2bd0d76 ones, whose masks the package still reproduces bit for bit)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import numpy as np
from scipy.ndimage import gaussian_filter

from antsim.sparsity.gemm import GemmTensors, attention_operand
from antsim.sparsity.generators import FieldParams, SwatParams, envelope
from antsim.sparsity.tensors import Tensors
from antsim.workloads.gemm import Gemm
from antsim.workloads.layers import Layer

GEMM_ROW_GAIN_SIGMA = 0.5


def top_k(values: np.ndarray, density: float) -> np.ndarray:
    """The original ``top_k``: the argpartition of −|values|."""
    keep = int(round(density * values.size))
    out = np.zeros_like(values)
    if keep == 0:
        return out
    flat = np.abs(values).ravel()
    index = np.argpartition(-flat, keep - 1)[:keep] if keep < flat.size else np.arange(flat.size)
    out.ravel()[index] = values.ravel()[index]
    return out


def nonzero_values(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """The values of generators ``_nonzero_values`` and gemm ``_nonzero_normal``."""
    values = rng.standard_normal(shape)
    return np.where(values == 0, 1.0, values)


def uniform(shape: tuple[int, ...], density: float, rng: np.random.Generator, params: FieldParams) -> np.ndarray:
    mask = rng.random(shape) < density
    return np.where(mask, nonzero_values(shape, rng), 0.0)


def smooth_field(shape: tuple[int, ...], rng: np.random.Generator, params: FieldParams) -> np.ndarray:
    field = rng.standard_normal(shape)
    if params.spatial_sigma > 0:
        sigma = (0, 0, params.spatial_sigma, params.spatial_sigma)
        field = gaussian_filter(field, sigma=sigma, mode="wrap")
        field /= field.std() or 1.0
    channel_scale = np.exp(params.channel_sigma * rng.standard_normal((1, shape[1], 1, 1)))
    field *= channel_scale
    return field


def topk_field(shape: tuple[int, ...], density: float, rng: np.random.Generator, params: FieldParams) -> np.ndarray:
    field = smooth_field(shape, rng, params)
    field[field == 0] = 1e-12
    keep_all = int(round(density * field.size)) >= field.size
    return field if keep_all else top_k(field, density)


def channel(shape: tuple[int, ...], density: float, rng: np.random.Generator, params: FieldParams) -> np.ndarray:
    channels = shape[1]
    keep = int(round(density * channels))
    if density > 0:
        keep = max(keep, 1)
    chosen = rng.permutation(channels)[:keep]
    mask = np.zeros(shape, dtype=bool)
    mask[:, chosen] = True
    return np.where(mask, nonzero_values(shape, rng), 0.0)


MODELS = {"uniform": uniform, "topk_field": topk_field, "channel": channel}


def nonzero_draws(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The session-9 contract: 0 off ``mask``; on it, in C order, ``rng.standard_normal(count)`` (0 → 1.0)."""
    out = np.zeros(mask.shape)
    out[mask] = nonzero_values((int(np.count_nonzero(mask)),), rng)
    return out


def uniform_drawn(shape: tuple[int, ...], density: float, rng: np.random.Generator, params: FieldParams
                  ) -> np.ndarray:
    return nonzero_draws(rng.random(shape) < density, rng)


def channel_drawn(shape: tuple[int, ...], density: float, rng: np.random.Generator, params: FieldParams
                  ) -> np.ndarray:
    channels = shape[1]
    keep = int(round(density * channels))
    if density > 0:
        keep = max(keep, 1)
    chosen = rng.permutation(channels)[:keep]
    mask = np.zeros(shape, dtype=bool)
    mask[:, chosen] = True
    return nonzero_draws(mask, rng)


DRAWN_MODELS = {"uniform": uniform_drawn, "topk_field": topk_field, "channel": channel_drawn}


def make_operand(shape: tuple[int, ...], density: float, model: str, rng: np.random.Generator,
                 params: FieldParams | None = None, models: dict = MODELS) -> np.ndarray:  # type: ignore[type-arg]
    return models[model](shape, density, rng, params or FieldParams()).astype(np.float32)


def top_k_of_envelope(shape: tuple[int, int, int, int], density: float, rng_field: np.random.Generator,
                      rng_envelope: np.random.Generator, field_params: FieldParams, params: SwatParams) -> np.ndarray:
    field = make_operand(shape, 1.0, "topk_field", rng_field, field_params)
    if density >= 1.0:
        return field
    chosen = top_k(np.abs(field) * envelope(shape, rng_envelope, params), density) != 0
    return np.where(chosen, field, 0).astype(np.float32)


def swat_tensors(layer: Layer, density_w: float, density_a: float, density_g: float, seed: int = 0,
                 density_a_saved: float | None = None, params: SwatParams | None = None) -> Tensors:
    params = params or SwatParams()
    rng_w, rng_a, rng_g, rng_ea, rng_eg = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5))
    a_shape, g_shape = (layer.N, layer.C, layer.H, layer.W), (layer.N, layer.K, layer.P, layer.Q)
    weights = make_operand((layer.K, layer.C, layer.R, layer.S), density_w, "topk_field", rng_w, params.weights)
    saved = None
    if density_a_saved is None or density_a_saved >= density_a:
        activations = top_k_of_envelope(a_shape, density_a, rng_a, rng_ea, params.activations, params)
    else:
        activations = make_operand(a_shape, density_a, "topk_field", rng_a, params.activations)
        chosen = top_k(np.abs(activations) * envelope(a_shape, rng_ea, params), density_a_saved) != 0
        saved = np.where(chosen, activations, 0).astype(np.float32)
    grad = top_k_of_envelope(g_shape, density_g, rng_g, rng_eg, params.grad_output, params.for_grad())
    return Tensors(weights, activations, grad, saved)


def make_tensors(layer: Layer, density_w: float = 0.1, density_a: float = 0.1, density_g: float = 0.1,
                 model: str = "swat", seed: int = 0, density_a_saved: float | None = None,
                 params: FieldParams | SwatParams | None = None, models: dict = MODELS) -> Tensors:  # type: ignore[type-arg]
    if model == "swat":
        assert params is None or isinstance(params, SwatParams)
        return swat_tensors(layer, density_w, density_a, density_g, seed, density_a_saved, params)
    assert not isinstance(params, SwatParams)
    rng_w, rng_a, rng_g = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    weights = make_operand((layer.K, layer.C, layer.R, layer.S), density_w, model, rng_w, params, models)
    activations = make_operand((layer.N, layer.C, layer.H, layer.W), density_a, model, rng_a, params, models)
    grad_output = make_operand((layer.N, layer.K, layer.P, layer.Q), density_g, model, rng_g, params, models)
    saved = None
    if density_a_saved is not None and density_a_saved < density_a:
        saved = top_k(activations, density_a_saved)
    return Tensors(weights, activations, grad_output, saved)


def gemm_bernoulli(shape: tuple[int, ...], density: float, rng: np.random.Generator) -> np.ndarray:
    return np.where(rng.random(shape) < density, nonzero_values(shape, rng), 0.0).astype(np.float32)


def gemm_bernoulli_drawn(shape: tuple[int, ...], density: float, rng: np.random.Generator) -> np.ndarray:
    """The session-9 contract of the GEMM ``uniform`` operands (``nonzero_draws``)."""
    return uniform_drawn(shape, density, rng, FieldParams()).astype(np.float32)


Bernoulli = Callable[[tuple[int, ...], float, np.random.Generator], np.ndarray]


def gemm_weight_operand(shape: tuple[int, ...], density: float, model: str, rng: np.random.Generator,
                        bernoulli: Bernoulli = gemm_bernoulli) -> np.ndarray:
    if model == "uniform":
        return bernoulli(shape, density, rng)
    return top_k(nonzero_values(shape, rng), density).astype(np.float32)


def gemm_activation_operand(shape: tuple[int, int, int], density: float, model: str, rng: np.random.Generator,
                            bernoulli: Bernoulli = gemm_bernoulli) -> np.ndarray:
    if model == "uniform":
        return bernoulli(shape, density, rng)
    values = nonzero_values(shape, rng)
    if density >= 1.0:
        return values.astype(np.float32)
    gain = np.exp(GEMM_ROW_GAIN_SIGMA * rng.standard_normal((1, shape[1], 1)))
    keep = top_k(np.abs(values) * gain, density) != 0
    return np.where(keep, values, 0.0).astype(np.float32)


def make_gemm_tensors(gemm: Gemm, densities: dict[str, float], model: str = "swat", seed: int = 0,
                      bernoulli: Bernoulli = gemm_bernoulli) -> GemmTensors:
    rng_a, rng_b, rng_g = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    count_a = 1 if gemm.weight_shared else gemm.count
    if gemm.a == "weights":
        a = gemm_weight_operand((1, gemm.M, gemm.K), densities["w"], model, rng_a, bernoulli)
    elif gemm.a == "attention":
        a = attention_operand((count_a, gemm.M, gemm.K), densities.get("attn", 1.0), model, rng_a)
    else:
        a = gemm_activation_operand((count_a, gemm.M, gemm.K), densities["a"], model, rng_a, bernoulli)
    b = gemm_activation_operand((gemm.count, gemm.K, gemm.N), densities["a"], model, rng_b, bernoulli)
    grad = gemm_activation_operand((gemm.count, gemm.M, gemm.N), densities["g"], model, rng_g, bernoulli)
    saved_density = densities.get("a_saved")
    saved = top_k(b, saved_density) if saved_density is not None and saved_density < densities["a"] else None
    return GemmTensors(a, b, grad, saved)


def continuous(shape: tuple[int, ...], dtype: type, rng: np.random.Generator) -> np.ndarray:
    """Distinct magnitudes (no ties)."""
    return rng.standard_normal(shape).astype(dtype)


def tied(shape: tuple[int, ...], dtype: type, rng: np.random.Generator) -> np.ndarray:
    """Few distinct magnitudes (ties everywhere, zeros and both signs)."""
    return rng.integers(-3, 4, shape).astype(dtype)


def signed_zeros(shape: tuple[int, ...], dtype: type, rng: np.random.Generator) -> np.ndarray:
    """Mostly zeros, a third of them negative zeros."""
    values = rng.standard_normal(shape).astype(dtype)
    values[rng.random(shape) < 0.6] = 0.0
    values[rng.random(shape) < 0.3] = -0.0
    return values


def peak_bytes(call: Callable[[], object]) -> int:
    """tracemalloc's peak while ``call`` runs (numpy reports its buffers to tracemalloc)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
