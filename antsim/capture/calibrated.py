"""A reference generator calibrated on captured SWAT tensors: ``topk_field`` plus a magnitude envelope.

Calibration (``scripts/calibrate_sparsity.py``, BENCHMARKS.md "capture") showed that captured ResNet-18
operands differ from ``topk_field`` mostly in being *non-stationary*: the forward ReLU mask of A has an
even density over the plane and the batch, but the *largest* magnitudes — which SWAT's top-k keeps for
the saved A, and gradient top-k keeps for dY — concentrate on some regions of the plane (objects on a
flat background) and some images. That unevenness loads SCNN's planar PE tiles unevenly and, on these
tensors, moves ANT's speedup by 20–30 %, while RCP fractions do not change.

This module is the recipe, written against the public generator functions so it can be ported into
``antsim.sparsity.generators`` as a model:

* W: ``topk_field`` with ``weights`` FieldParams (default: no smoothing, no channel scale — captured
  early-training top-k weights look like top-k of i.i.d. values);
* A: ``topk_field`` at the forward density with ``activations`` FieldParams (the ReLU mask);
* saved A: the top-k, at its density, of |A| × envelope — an envelope shared by the batch (a smooth
  log-normal field over the plane) times a log-normal per-image gain;
* dY: dense when its density is 1, else the top-k of (its field × an independent envelope).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy.ndimage import gaussian_filter

from antsim.capture.stats import layer_like
from antsim.sparsity.generators import FieldParams, make_operand, top_k
from antsim.sparsity.tensors import Tensors
from antsim.workloads.layers import Layer


@dataclass(frozen=True)
class EnvelopeParams:
    """Parameters of the envelope recipe (defaults fitted on ResNet-18, batch 4, 100 SWAT steps).

    Attributes:
        weights, activations, grad_output: ``topk_field`` FieldParams per operand.
        envelope_sigma: Std of the log-amplitude of the spatial envelope (shared by the batch).
        envelope_length: Smoothing length of the envelope as a fraction of the plane's side.
        image_sigma: Std of the log-amplitude of the per-image gain.
    """

    weights: FieldParams = field(default_factory=lambda: FieldParams(0.0, 0.0))
    activations: FieldParams = field(default_factory=lambda: FieldParams(1.0, 0.15))
    grad_output: FieldParams = field(default_factory=lambda: FieldParams(0.5, 0.15))
    envelope_sigma: float = 0.25
    envelope_length: float = 0.25
    image_sigma: float = 0.1


def envelope(shape: tuple[int, int, int, int], rng: np.random.Generator, params: EnvelopeParams) -> np.ndarray:
    """Positive gain of shape (N, 1, H, W): smooth spatial log-normal field (shared) × per-image gain."""
    n, _, h, w = shape
    log_gain = np.zeros((1, 1, h, w))
    if h * w > 1 and params.envelope_sigma > 0:
        noise = rng.standard_normal((1, 1, h, w))
        sigma = (0, 0, params.envelope_length * h, params.envelope_length * w)
        smooth = gaussian_filter(noise, sigma=sigma, mode="reflect")
        log_gain = params.envelope_sigma * (smooth - smooth.mean()) / (smooth.std() or 1.0)
    per_image = params.image_sigma * rng.standard_normal((n, 1, 1, 1))
    return np.exp(log_gain + per_image)


def envelope_tensors(layer: Layer, density_w: float, density_a: float, density_g: float, seed: int = 0,
                     density_a_saved: float | None = None, params: EnvelopeParams | None = None) -> Tensors:
    """W, A, dY (and the saved A) of ``layer`` under the envelope recipe; exact densities (top-k)."""
    params = params or EnvelopeParams()
    rng_w, rng_a, rng_g, rng_ea, rng_eg = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5))
    a_shape, g_shape = (layer.N, layer.C, layer.H, layer.W), (layer.N, layer.K, layer.P, layer.Q)
    weights = make_operand((layer.K, layer.C, layer.R, layer.S), density_w, "topk_field", rng_w, params.weights)
    activations = make_operand(a_shape, density_a, "topk_field", rng_a, params.activations)
    saved = None
    if density_a_saved is not None and density_a_saved < density_a:
        chosen = top_k(np.abs(activations) * envelope(a_shape, rng_ea, params), density_a_saved) != 0
        saved = np.where(chosen, activations, 0).astype(np.float32)
    grad_field = make_operand(g_shape, 1.0, "topk_field", rng_g, params.grad_output)
    grad = grad_field
    if density_g < 1.0:
        chosen = top_k(grad_field * envelope(g_shape, rng_eg, params), density_g) != 0
        grad = np.where(chosen, grad_field, 0).astype(np.float32)
    return Tensors(weights, activations, grad, saved)


def envelope_like(captured: Mapping[str, Tensors], seed: int = 0,
                  params: EnvelopeParams | None = None) -> dict[str, Tensors]:
    """Envelope-recipe tensors with the shapes and per-layer densities of ``captured`` (layer i: seed + i)."""
    out = {}
    for i, (name, t) in enumerate(captured.items()):
        d = t.densities()
        out[name] = envelope_tensors(layer_like(name, t), d["weights"], d["activations"], d["grad_output"],
                                     seed + i, d.get("saved_activations"), params)
    return out
