"""GEMM operand generators and regimes (``antsim.sparsity.gemm``): densities, row structure, top-k attention,
the SWAT saved copy, determinism and refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from antsim.errors import AntsimError, WorkloadError
from antsim.sparsity.gemm import GEMM_REGIMES, GemmTensors, attention_operand, gemm_regime, make_gemm_tensors
from antsim.workloads.gemm import Gemm


def _density(a: np.ndarray) -> float:
    return float(np.count_nonzero(a)) / a.size


@pytest.mark.parametrize("model", ["swat", "uniform"])
def test_each_operand_takes_its_density(model: str) -> None:
    g = Gemm("fc", M=200, N=64, K=150, count=2)
    t = make_gemm_tensors(g, {"w": 0.1, "a": 0.5, "g": 0.3, "a_saved": 0.2}, model, seed=4)
    assert t.a.shape == (1, 200, 150) and t.b.shape == (2, 150, 64) and t.grad_output.shape == (2, 200, 64)
    tol = 0.0 if model == "swat" else 0.02  # top-k hits the density exactly; Bernoulli within sampling error
    for array, want in ((t.a, 0.1), (t.b, 0.5), (t.grad_output, 0.3)):
        assert abs(_density(array) - want) <= tol + 1e-3
    assert t.saved_b is not None and abs(_density(t.saved_b) - 0.2) <= 1e-3
    assert np.all((t.saved_b != 0) <= (t.b != 0))  # the saved copy keeps a subset of B
    kept = np.abs(t.b[t.saved_b != 0]).min()
    assert kept >= np.abs(t.b[(t.saved_b == 0) & (t.b != 0)]).max()  # ... its largest magnitudes


def test_activation_rows_are_uneven_but_weights_are_not() -> None:
    """Per-row log-normal gains make some reduction rows of B much denser than others (as feature channels
    are); the top-k weight has i.i.d. values, so its rows stay near the mean density."""
    g = Gemm("fc", M=256, N=256, K=256)
    t = make_gemm_tensors(g, {"w": 0.1, "a": 0.1, "g": 0.1}, "swat", seed=0)
    row_b = (t.b[0] != 0).mean(axis=1)
    row_w = (t.a[0] != 0).mean(axis=1)
    assert row_b.std() / row_b.mean() > 3 * row_w.std() / row_w.mean()


def test_top_k_attention_keeps_k_per_query_and_stays_a_distribution() -> None:
    rng = np.random.default_rng(0)
    probs = attention_operand((3, 20, 30), 0.1, "swat", rng)
    assert np.all((probs != 0).sum(axis=2) == math.ceil(0.1 * 30))
    np.testing.assert_allclose(probs.sum(axis=2), 1.0, rtol=1e-6)
    dense = attention_operand((3, 20, 30), 1.0, "swat", rng)
    assert np.all(dense > 0)


def test_attention_gemm_uses_the_attn_density_and_defaults_to_dense() -> None:
    g = Gemm("ctx", M=32, N=16, K=32, count=4, a="attention", batch_dim="count")
    t = make_gemm_tensors(g, GEMM_REGIMES["swat-topk-attn"], "swat", seed=1)
    assert t.a.shape == (4, 32, 32) and _density(t.a) == pytest.approx(math.ceil(0.1 * 32) / 32)
    t = make_gemm_tensors(g, {"w": 0.1, "a": 0.5, "g": 1.0}, "swat", seed=1)
    assert _density(t.a) == 1.0


def test_same_seed_same_operands_and_regimes() -> None:
    g = Gemm("qk", M=16, N=16, K=8, count=3, a="activations", batch_dim="count")
    one = make_gemm_tensors(g, gemm_regime("swat"), "swat", seed=7)
    two = make_gemm_tensors(g, gemm_regime("swat"), "swat", seed=7)
    assert all(np.array_equal(getattr(one, k), getattr(two, k)) for k in ("a", "b", "grad_output", "saved_b"))
    assert set(GEMM_REGIMES) == {"swat", "swat-gs", "swat-topk-attn", "uniform"}


def test_refusals() -> None:
    g = Gemm("fc", M=4, N=4, K=4)
    with pytest.raises(AntsimError, match="unknown key 'x'"):
        make_gemm_tensors(g, {"w": 0.1, "a": 0.1, "g": 0.1, "x": 0.2})
    with pytest.raises(AntsimError, match=r"densities.w: density of weights must be in \(0, 1\]; got 1.5"):
        make_gemm_tensors(g, {"w": 1.5, "a": 0.1, "g": 0.1})
    with pytest.raises(AntsimError, match="unknown sparsity model"):
        make_gemm_tensors(g, {"w": 0.1, "a": 0.1, "g": 0.1}, model="lognormal")
    with pytest.raises(AntsimError, match="gemm regime: unknown name"):
        gemm_regime("dense")
    with pytest.raises(WorkloadError, match="non-finite"):
        GemmTensors(np.full((1, 2, 2), np.nan), np.ones((1, 2, 2)), np.ones((1, 2, 2)))
