"""Seeded generators of sparse training operands (W, A, dY) at a chosen density per operand.

Models (registered by name; ``make_tensors(..., model=NAME)``):

* ``uniform`` — independent Bernoulli masks: every element non-zero with probability = density. Reproduces
  neither the per-channel imbalance nor the spatial clustering of real sparse training.
* ``topk_field`` (default) — whole-tensor top-k of |smooth random field|: a Gaussian random field smoothed
  over the spatial axes, scaled per channel by a log-normal factor; keeping the k largest magnitudes (as
  SWAT's top-k does) yields uneven per-channel density and spatially clustered non-zeros (DESIGN.md §1.2)
  at exactly the requested density.
* ``channel`` — channel-structured: whole channels non-zero (structured pruning / dead ReLU channels), the
  rest zero; density is met to the nearest channel.

Values of non-zeros are the field values (signed, never 0). Saved activations for wgrad (SWAT) are the
top-k by magnitude of the forward activations at ``density_a_saved``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.ndimage import gaussian_filter

from antsim.errors import AntsimError
from antsim.sparsity.tensors import Tensors
from antsim.workloads.layers import Layer

MaskModel = Callable[[tuple[int, ...], float, np.random.Generator, "FieldParams"], np.ndarray]
_MODELS: dict[str, MaskModel] = {}


@dataclass(frozen=True)
class FieldParams:
    """Shape of the smooth field behind ``topk_field``.

    Attributes:
        spatial_sigma: Gaussian smoothing length over the spatial axes (elements). [assumption: 1.5 gives
            neighbour clustering of the order seen in ReLU feature maps; see BENCHMARKS.md calibration]
        channel_sigma: log-normal sigma of the per-channel scale; larger → more uneven per-channel density.
            [assumption: 0.5; DESIGN.md §1.2 reports a per-channel CV of 0.2–1.6 in real tensors]
    """

    spatial_sigma: float = 1.5
    channel_sigma: float = 0.5


def _register(name: str) -> Callable[[MaskModel], MaskModel]:
    def wrap(fn: MaskModel) -> MaskModel:
        _MODELS[name] = fn
        return fn

    return wrap


def sparsity_models() -> list[str]:
    return sorted(_MODELS)


def _nonzero_values(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    values = rng.standard_normal(shape)
    return np.where(values == 0, 1.0, values)


@_register("uniform")
def _uniform(shape: tuple[int, ...], density: float, rng: np.random.Generator, params: FieldParams) -> np.ndarray:
    mask = rng.random(shape) < density
    return np.where(mask, _nonzero_values(shape, rng), 0.0)


def _smooth_field(shape: tuple[int, ...], rng: np.random.Generator, params: FieldParams) -> np.ndarray:
    field = rng.standard_normal(shape)
    if params.spatial_sigma > 0:
        sigma = (0, 0, params.spatial_sigma, params.spatial_sigma)
        field = gaussian_filter(field, sigma=sigma, mode="wrap")
        field /= field.std() or 1.0
    channel_scale = np.exp(params.channel_sigma * rng.standard_normal((1, shape[1], 1, 1)))
    return field * channel_scale


def top_k(values: np.ndarray, density: float) -> np.ndarray:
    """Keep the ``round(density·size)`` largest magnitudes of ``values`` (ties broken by position)."""
    keep = int(round(density * values.size))
    out = np.zeros_like(values)
    if keep == 0:
        return out
    flat = np.abs(values).ravel()
    index = np.argpartition(-flat, keep - 1)[:keep] if keep < flat.size else np.arange(flat.size)
    out.ravel()[index] = values.ravel()[index]
    return out


@_register("topk_field")
def _topk_field(shape: tuple[int, ...], density: float, rng: np.random.Generator, params: FieldParams) -> np.ndarray:
    field = _smooth_field(shape, rng, params)
    return top_k(np.where(field == 0, 1e-12, field), density)


@_register("channel")
def _channel(shape: tuple[int, ...], density: float, rng: np.random.Generator, params: FieldParams) -> np.ndarray:
    channels = shape[1]
    keep = int(round(density * channels))
    if density > 0:
        keep = max(keep, 1)
    chosen = rng.permutation(channels)[:keep]
    mask = np.zeros(shape, dtype=bool)
    mask[:, chosen] = True
    return np.where(mask, _nonzero_values(shape, rng), 0.0)


def make_operand(shape: tuple[int, ...], density: float, model: str, rng: np.random.Generator,
                 params: FieldParams | None = None) -> np.ndarray:
    """One 4-D operand at ``density`` under ``model`` (float32).

    Raises:
        AntsimError: unknown model or density outside [0, 1].
    """
    if model not in _MODELS:
        raise AntsimError(f"unknown sparsity model {model!r}; known: {', '.join(sparsity_models())}")
    if not 0.0 <= density <= 1.0:
        raise AntsimError(f"density must be in [0, 1]; got {density!r}")
    return _MODELS[model](shape, density, rng, params or FieldParams()).astype(np.float32)


def make_tensors(layer: Layer, density_w: float = 0.1, density_a: float = 0.1, density_g: float = 0.1,
                 model: str = "topk_field", seed: int = 0, density_a_saved: float | None = None,
                 params: FieldParams | None = None) -> Tensors:
    """Synthetic W, A, dY (and the SWAT-saved A) for ``layer``; same arguments → identical arrays.

    Args:
        density_w, density_a, density_g: fraction of non-zeros of W, forward A and dY.
        density_a_saved: density of the top-k copy of A kept for wgrad (SWAT); ``None`` → wgrad uses A.
    """
    for key, value in (("density_w", density_w), ("density_a", density_a), ("density_g", density_g),
                       ("density_a_saved", density_a_saved)):
        if value is not None and not 0.0 <= value <= 1.0:
            raise AntsimError(f"{key} must be in [0, 1]; got {value!r}")
    rng_w, rng_a, rng_g = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    weights = make_operand((layer.K, layer.C, layer.R, layer.S), density_w, model, rng_w, params)
    activations = make_operand((layer.N, layer.C, layer.H, layer.W), density_a, model, rng_a, params)
    grad_output = make_operand((layer.N, layer.K, layer.P, layer.Q), density_g, model, rng_g, params)
    saved = None
    if density_a_saved is not None and density_a_saved < density_a:
        saved = top_k(activations, density_a_saved)
    return Tensors(weights, activations, grad_output, saved)
