"""Sparse operands of GEMM layers (``GemmTensors``), their seeded generators and training regimes.

Operands (``make_gemm_tensors``; densities keyed as the conv ones plus ``attn``):

* A weight (``a="weights"``): density ``w``, the top-k magnitudes of i.i.d. normal values (SWAT's top-k of
  W, at exactly the density) — Bernoulli under the ``uniform`` model.
* An activation (B always; A when ``a="activations"``): density ``a``, the top-k of |normal| × a log-normal
  gain per row (feature / reduction index k; sigma 0.5 [assumption: the per-channel spread of
  ``FieldParams.channel_sigma``, docs/sources.md §1.2]) — uneven rows as in real feature matrices.
* An attention matrix (``a="attention"``: softmax probabilities P, rows = queries): density ``attn``
  (default 1: a softmax has no zeros), kept per row — every query keeps its ``ceil(attn·keys)`` largest
  scores, the top-k attention of Gupta et al. ("Memory-efficient Transformers via Top-k Attention",
  SustaiNLP 2021).
* The copy of B saved for wgrad (SWAT): the top-k magnitudes of B at density ``a_saved`` (none when absent
  or not below ``a``).
* dY: density ``g``, as an activation.

Models: ``uniform`` gives Bernoulli masks everywhere (attention rows included); every other conv model
name (``swat``, ``topk_field``, ``channel``) gives the top-k construction above.

Regimes (``GEMM_REGIMES``; the conv regimes of ``antsim.sparsity.regimes`` assume ReLU activations):

| regime | W | A/B forward | saved B | dY | attention P |
|---|---|---|---|---|---|
| ``swat`` | 0.1 | 1.0 | 0.1 | 1.0 | 1.0 |
| ``swat-gs`` | 0.1 | 1.0 | 0.1 | 0.1 | 1.0 |
| ``swat-topk-attn`` | 0.1 | 1.0 | 0.1 | 1.0 | 0.1 |
| ``uniform`` | 0.1 | 0.1 | 0.1 | 0.1 | 0.1 |

SWAT (Raihan & Aamodt, NeurIPS 2020) keeps the top-k of W in the forward pass and of the activations saved
for the weight gradient, at 90 % sparsity. The forward operands of transformer and LSTM GEMMs are LayerNorm,
attention, GELU or tanh outputs — no exact zeros — hence dense [assumption: no activation top-k in the
forward pass]; ``swat-gs`` adds top-k gradient sparsification of dY; ``swat-topk-attn`` keeps 10 % of the
attention scores per query [assumption: k = 10 % of the keys].
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from antsim.errors import AntsimError, WorkloadError
from antsim.sparsity.densities import Densities, DensityError
from antsim.sparsity.generators import bernoulli_normals, sparsity_models, top_k, top_k_mask_of_gain
from antsim.sparsity.tensors import check_operand
from antsim.workloads.gemm import Gemm

ROW_GAIN_SIGMA = 0.5  # [assumption] log-normal spread of per-row gains, as FieldParams.channel_sigma
GEMM_REGIMES: Mapping[str, Densities] = MappingProxyType({
    "swat": Densities(w=0.1, a=1.0, a_saved=0.1, g=1.0, attn=1.0),
    "swat-gs": Densities(w=0.1, a=1.0, a_saved=0.1, g=0.1, attn=1.0),
    "swat-topk-attn": Densities(w=0.1, a=1.0, a_saved=0.1, g=1.0, attn=0.1),
    "uniform": Densities(w=0.1, a=0.1, g=0.1, attn=0.1),
})


@dataclass(frozen=True)
class GemmTensors:
    """The operands of one GEMM layer's training step. Zeros are sparsity.

    Attributes:
        a: A, shape ``(1, M, K)`` when it is a shared weight, else ``(count, M, K)``.
        b: B, shape ``(count, K, N)`` (fprop's right operand).
        grad_output: dY, shape ``(count, M, N)``.
        saved_b: the copy of B kept for wgrad (SWAT top-k); ``None`` means wgrad uses ``b``.
    """

    a: np.ndarray
    b: np.ndarray
    grad_output: np.ndarray
    saved_b: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("a", "b", "grad_output", "saved_b"):
            array = getattr(self, name)
            if array is not None:
                check_operand(array, name)

    @property
    def wgrad_b(self) -> np.ndarray:
        return self.b if self.saved_b is None else self.saved_b

    def check_shapes(self, gemm: Gemm) -> None:
        """Raise ``WorkloadError`` if an operand's shape does not match ``gemm``."""
        expected = {
            "a": (1 if gemm.weight_shared else gemm.count, gemm.M, gemm.K),
            "b": (gemm.count, gemm.K, gemm.N),
            "grad_output": (gemm.count, gemm.M, gemm.N),
            "saved_b": (gemm.count, gemm.K, gemm.N),
        }
        for name, shape in expected.items():
            array = getattr(self, name)
            if array is not None and tuple(array.shape) != shape:
                raise WorkloadError(f"gemm {gemm.name!r}: {name} has shape {tuple(array.shape)}, expected {shape}")

    # Names the conv ``Tensors`` uses, so density reporting reads either kind.
    @property
    def weights(self) -> np.ndarray:
        return self.a

    @property
    def activations(self) -> np.ndarray:
        return self.b

    @property
    def saved_activations(self) -> np.ndarray | None:
        return self.saved_b


def gemm_regime(name: str) -> Densities:
    """The densities of GEMM regime ``name`` (table in the module docstring).

    Raises:
        AntsimError: an unknown name, listing the known ones.
    """
    if name not in GEMM_REGIMES:
        raise AntsimError(f"gemm regime: unknown name {name!r}; known: {', '.join(GEMM_REGIMES)}")
    return GEMM_REGIMES[name]


def _nonzero_normal(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    values = rng.standard_normal(shape)
    values[values == 0] = 1.0  # in place: the values of np.where(values == 0, 1.0, values) without a second copy
    return values


def weight_operand(shape: tuple[int, ...], density: float, model: str, rng: np.random.Generator) -> np.ndarray:
    """A weight matrix at ``density``: top-k of i.i.d. normals (Bernoulli for ``uniform``)."""
    if model == "uniform":
        return bernoulli_normals(shape, density, rng)
    return top_k(_nonzero_normal(shape, rng), density, np.float32)


def activation_operand(shape: tuple[int, int, int], density: float, model: str, rng: np.random.Generator
                       ) -> np.ndarray:
    """An activation ``(count, rows, cols)`` at ``density``: top-k of |normal| × per-row log-normal gain."""
    if model == "uniform":
        return bernoulli_normals(shape, density, rng)
    values = _nonzero_normal(shape, rng)
    if density >= 1.0:
        return values.astype(np.float32)
    gain = np.exp(ROW_GAIN_SIGMA * rng.standard_normal((1, shape[1], 1)))
    keep = top_k_mask_of_gain(values, gain, density)  # before the output: the selection's temporaries are gone
    out = np.zeros(shape, np.float32)  # the float32 values of np.where(keep, values, 0.0)
    np.copyto(out, values, casting="same_kind", where=keep)
    return out


def attention_operand(shape: tuple[int, int, int], density: float, model: str, rng: np.random.Generator
                      ) -> np.ndarray:
    """Softmax probabilities ``(count, queries, keys)``; each query keeps its ``ceil(density·keys)`` largest
    (top-k attention), or a Bernoulli mask for ``uniform``. Rows renormalised to sum to 1."""
    scores = rng.standard_normal(shape)
    probs = np.exp(scores - scores.max(axis=2, keepdims=True))
    if model == "uniform":
        probs = np.where(rng.random(shape) < density, probs, 0.0)
    elif density < 1.0:
        keep = max(1, math.ceil(density * shape[2])) if density > 0 else 0
        order = np.argsort(-scores, axis=2, kind="stable")
        mask = np.zeros(shape, bool)
        np.put_along_axis(mask, order[:, :, :keep], True, axis=2)
        probs = np.where(mask, probs, 0.0)
    sums = probs.sum(axis=2, keepdims=True)
    return np.divide(probs, sums, out=np.zeros_like(probs), where=sums > 0).astype(np.float32)


def _check(densities: Mapping[str, float]) -> None:
    """The ``Densities`` rule (known keys, each in (0, 1]), the key in front: ``"densities.w: …"``."""
    try:
        Densities.from_mapping(densities)
    except DensityError as exc:
        raise AntsimError(f"{exc.at('densities')}: {exc}") from None


def make_gemm_tensors(gemm: Gemm, densities: Mapping[str, float], model: str = "swat", seed: int = 0
                      ) -> GemmTensors:
    """Synthetic A, B, dY (and the SWAT-saved B) of ``gemm``; same arguments → identical arrays.

    Args:
        densities: ``w``, ``a``, ``g`` (required), ``a_saved`` and ``attn`` (default 1.0) — see the module
            docstring for which operand each sets.
        model: a name of ``antsim.sparsity.generators.sparsity_models()``.

    Raises:
        AntsimError: an unknown model or density key, or a density outside (0, 1].
    """
    _check(densities)
    if model not in sparsity_models():
        raise AntsimError(f"unknown sparsity model {model!r}; known: {', '.join(sparsity_models())}")
    rng_a, rng_b, rng_g = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    count_a = 1 if gemm.weight_shared else gemm.count
    if gemm.a == "weights":
        a = weight_operand((1, gemm.M, gemm.K), densities["w"], model, rng_a)
    elif gemm.a == "attention":
        a = attention_operand((count_a, gemm.M, gemm.K), densities.get("attn", 1.0), model, rng_a)
    else:
        a = activation_operand((count_a, gemm.M, gemm.K), densities["a"], model, rng_a)
    b = activation_operand((gemm.count, gemm.K, gemm.N), densities["a"], model, rng_b)
    grad = activation_operand((gemm.count, gemm.M, gemm.N), densities["g"], model, rng_g)
    saved_density = densities.get("a_saved")
    saved = top_k(b, saved_density) if saved_density is not None and saved_density < densities["a"] else None
    return GemmTensors(a, b, grad, saved)


__all__ = ["GEMM_REGIMES", "GemmTensors", "activation_operand", "attention_operand", "gemm_regime",
           "make_gemm_tensors", "weight_operand"]
