"""The learned correction (``antsim.gpu.learned``): the fit recovers a known correction, ``none`` is the
identity, ``learned`` multiplies each convolution's time by ``exp(b + w·φ)`` and is echoed, a stale table
is refused, and the refit on tests/data reproduces the shipped table and scores leave-one-GPU-out."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from antsim.cli import main
from antsim.errors import AntsimError
from antsim.gpu import learned, load_gpu
from antsim.gpu.estimate import estimate_gpu, estimate_layer
from antsim.gpu.learned import (
    FEATURE_NAMES,
    CorrectionTable,
    FitRow,
    LearnedCorrection,
    features,
    fit_table,
    group_errors,
    leave_one_gpu_out,
    model_fingerprint,
    resolve_correction,
    shipped_table,
)
from antsim.results import GpuLayerDetails
from antsim.workloads.gemm import Gemm as GemmLayer
from antsim.workloads.layers import Layer

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("fit_gpu_correction", REPO / "scripts" / "fit_gpu_correction.py")
assert _spec is not None and _spec.loader is not None
fit_script = importlib.util.module_from_spec(_spec)
sys.modules["fit_gpu_correction"] = fit_script
_spec.loader.exec_module(fit_script)

LAYER = Layer("c", N=8, C=64, K=128, H=28, W=28, R=3, S=3, stride=(1, 1), pad=(1, 1))


def _synthetic(rng: np.random.Generator, weights: np.ndarray, intercept: float, host_s: float,
               gpus: int = 4, rows: int = 120, noise: float = 0.0) -> list[FitRow]:
    """Rows whose measured time is exactly ``kernel · exp(b + w·φ) · noise + host``."""
    out = []
    for g in range(gpus):
        for i in range(rows):
            phi = rng.normal(size=len(weights))
            phi[0] = float(i % 2)  # one 0/1 flag, as most features are
            kernel = float(np.exp(rng.uniform(np.log(1e-5), np.log(1e-2))))
            measured = kernel * math.exp(intercept + float(weights @ phi) + noise * rng.normal()) + host_s
            out.append(FitRow(tuple(phi), kernel, host_s, measured, f"gpu{g}", f"gpu{g} {'ab'[i % 3 == 0]}"))
    return out


@pytest.mark.parametrize("host_s", [0.0, 20e-6])
def test_the_fit_recovers_a_known_correction(host_s: float) -> None:
    rng = np.random.default_rng(1)
    weights, intercept = np.array([0.3, -0.2, 0.1]), 0.15
    rows = _synthetic(rng, weights, intercept, host_s)
    table = fit_table(rows, 1e-6, names=("a", "b", "c"))
    assert table.intercept == pytest.approx(intercept, abs=1e-6)
    assert np.allclose(table.weights, weights, atol=1e-6)
    assert max(group_errors(table, rows).values()) < 1e-6
    assert min(group_errors(None, rows).values()) > 0.05  # the rows do need the correction


def test_leave_one_gpu_out_never_sees_the_held_out_gpu() -> None:
    """Every GPU shares one correction but gpu3 is also 30 % slower: fitted on the others, gpu3 keeps
    exactly that 30 % as its error, and the others, fitted partly on gpu3, do not quite reach zero."""
    rng = np.random.default_rng(3)
    rows = [dataclasses.replace(r, measured_s=r.measured_s * (1.3 if r.gpu == "gpu3" else 1.0))
            for r in _synthetic(rng, np.array([0.2, -0.1]), 0.1, 0.0)]
    errors, lambdas = leave_one_gpu_out(rows, 1e-6, names=("a", "b"))
    assert set(lambdas) == {"gpu0", "gpu1", "gpu2", "gpu3"}
    assert errors["gpu3 a"] == pytest.approx(0.3, abs=1e-5) and errors["gpu3 b"] == pytest.approx(0.3, abs=1e-5)
    assert 0 < max(e for g, e in errors.items() if not g.startswith("gpu3")) < 0.3


def test_the_fit_is_ridge_regression_in_log_space() -> None:
    """Without host time and with every residual inside the Huber threshold, the fit is weighted ridge
    regression on standardised features — checked against numpy's least squares on the augmented system."""
    rng = np.random.default_rng(2)
    rows = _synthetic(rng, np.array([0.05, -0.04]), 0.02, 0.0, noise=0.01)
    lam = 0.5
    table = fit_table(rows, lam, names=("a", "b"))
    phi = np.array([r.phi for r in rows])
    counts = {g: sum(1 for r in rows if r.group == g) for g in {r.group for r in rows}}
    w = np.array([1.0 / counts[r.group] for r in rows])
    mean = w @ phi / w.sum()
    std = np.sqrt(w @ (phi - mean) ** 2 / w.sum())
    x = np.hstack([np.ones((len(rows), 1)), (phi - mean) / std])
    y = np.log([r.measured_s / r.kernel_s for r in rows])
    augmented = np.vstack([x * np.sqrt(w)[:, None], np.sqrt(lam) * np.eye(3)[1:]])
    theta = np.linalg.lstsq(augmented, np.concatenate([y * np.sqrt(w), [0.0, 0.0]]), rcond=None)[0]
    assert np.allclose(table.weights, theta[1:] / std, atol=1e-9)
    assert table.intercept == pytest.approx(theta[0] - (theta[1:] / std) @ mean, abs=1e-9)
    strong = fit_table(rows, 1e9, names=("a", "b"))  # λ → ∞: no feature survives, only the intercept
    assert np.allclose(strong.weights, 0.0, atol=1e-7)


def test_none_is_the_identity() -> None:
    assert resolve_correction("none") is None
    layers = [LAYER, GemmLayer("fc", M=256, N=64, K=512, batch=64)]
    plain = estimate_gpu("p100", layers)
    assert estimate_gpu("p100", layers, correction=None) == plain
    zero = CorrectionTable(FEATURE_NAMES, 0.0, (0.0,) * len(FEATURE_NAMES), model_fingerprint(), 1.0)
    corrected = estimate_gpu("p100", layers, correction=LearnedCorrection(zero))
    assert [r.time_s for r in corrected.records] == [r.time_s for r in plain.records]
    assert [r.energy_j for r in corrected.records] == [r.energy_j for r in plain.records]
    assert "gpu_correction" not in plain.meta and corrected.meta["gpu_correction"]["name"] == "learned"


def test_learned_multiplies_each_convolution_by_its_factor() -> None:
    correction = LearnedCorrection(shipped_table())  # whether it is fresh: tests/gpu/test_learned_table.py
    for gpu, precision in (("t4", "fp16"), ("a100", "tf32"), ("m40", "fp32")):
        for phase in ("fprop", "dgrad", "wgrad"):
            plain = estimate_layer(gpu, LAYER, phase, precision)
            fixed = estimate_layer(gpu, LAYER, phase, precision, correction=correction)
            d = GpuLayerDetails.of(plain)
            phi = features(load_gpu(gpu), LAYER, phase, d, plain.time_s)
            expected = math.exp(correction.table.intercept + sum(w * x for w, x in zip(correction.table.weights,
                                                                                       phi, strict=True)))
            assert fixed.time_s == pytest.approx(plain.time_s * expected, rel=1e-12)
            assert GpuLayerDetails.of(fixed) == d  # the details stay the physical plan's
    fc = GemmLayer("fc", M=256, N=64, K=512, batch=64)
    assert estimate_layer("a100", fc, "fprop", correction=correction) == estimate_layer("a100", fc, "fprop")


def test_features_are_physical_flags_and_logs_of_the_plan() -> None:
    gpu = load_gpu("titanxp")
    r = estimate_layer(gpu, LAYER, "wgrad")
    d = GpuLayerDetails.of(r)
    phi = dict(zip(FEATURE_NAMES, features(gpu, LAYER, "wgrad", d, r.time_s), strict=True))
    assert (phi["wgrad"], phi["dgrad"], phi["filter_1x1"], phi["strided"], phi["wide_sm"]) == (1, 0, 0, 0, 1)
    assert phi["cudnn8"] == 1 and phi["cudnn5"] == phi["cudnn6"] == 0
    ridge = gpu.peak(d.run_precision) / gpu.dram_bytes_per_s
    assert phi["log_intensity_vs_ridge"] == pytest.approx(math.log(d.executed_flops / d.dram_bytes / ridge))
    assert phi["wave_tail"] == pytest.approx(math.log(math.ceil(d.waves) / d.waves))
    assert phi["log_time_vs_launch"] == pytest.approx(math.log(r.time_s / (d.kernels * 5e-6)))
    assert round(load_gpu("p100").fp32_lanes_per_sm) == 64 and not features(load_gpu("p100"), LAYER, "wgrad", d, 1e-3)[
        FEATURE_NAMES.index("wide_sm")]


def test_a_stale_table_is_refused() -> None:
    stale = dataclasses.replace(shipped_table(), fingerprint="0" * 16)
    with pytest.raises(AntsimError, match=r"stale.*scripts/fit_gpu_correction\.py") as info:
        resolve_correction("learned", stale)
    assert "\n" not in str(info.value)
    with pytest.raises(AntsimError, match="unknown 'trained'; known: none, learned"):
        resolve_correction("trained")


def test_a_physics_change_moves_the_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    from antsim.gpu import estimate

    before = model_fingerprint()
    real = estimate.best_plan
    monkeypatch.setattr(estimate, "best_plan", lambda *a, **k: dataclasses.replace(real(*a, **k),
                                                                                   time_s=real(*a, **k).time_s * 1.01))
    model_fingerprint.cache_clear()
    try:
        assert model_fingerprint() != before
    finally:
        monkeypatch.undo()
        model_fingerprint.cache_clear()
    assert model_fingerprint() == before


def test_the_cli_applies_echoes_and_refuses_a_stale_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture) -> None:
    # the plumbing, whether or not the shipped table is fresh (tests/gpu/test_learned_table.py checks that)
    monkeypatch.setitem(learned.learned_table.TABLE, "fingerprint", model_fingerprint())
    layers = tmp_path / "layers.csv"
    layers.write_text("name,N,C,K,H,W,R,S,stride,pad\nc1,8,64,128,28,28,3,3,1,1\n")
    out = tmp_path / "r.json"
    base = ["gpu", "--gpu", "v100", "--layers-csv", str(layers), "--no-progress", "--out", str(out)]
    assert main([*base, "--gpu-correction", "learned"]) == 0
    assert "learned correction" in capsys.readouterr().out
    echo = json.loads(out.read_text())["meta"]["gpu_correction"]
    assert echo["fingerprint"] == model_fingerprint() and echo["name"] == "learned"
    check = ["gpu", "--gpu", "t4", "--selection", "heuristic", "--library", "cudnn7", "--check",
             str(REPO / "tests" / "data" / "deepbench" / "deepbench_conv_T4.csv"), "--gpu-correction", "learned"]
    assert main(check) == 0
    assert "learned correction" in capsys.readouterr().out.splitlines()[0]
    monkeypatch.setitem(learned.learned_table.TABLE, "fingerprint", "0" * 16)
    for argv in (base + ["--gpu-correction", "learned"], check,
                 ["compare", "--gpu", "v100", "--layers-csv", str(layers), "--no-progress", "--gpu-correction",
                  "learned"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "stale" in err and "\n" not in err, argv


# --- the refit on tests/data ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def test_rows() -> list[FitRow]:
    return fit_script.fit_rows(REPO / "tests" / "data")


# Refitted on tests/data (DeepBench whole, NeuSight every 12th row) at the shipped λ, the correction's
# in-sample error per file and phase stays within this of the shipped table's on the same rows (measured:
# at most 0.22 points, P100 PCIe, on the physics of 231f006).
REFIT_TOLERANCE = 0.01


def test_refitting_on_tests_data_reproduces_the_shipped_correction(test_rows: list[FitRow]) -> None:
    shipped = shipped_table()
    refit = fit_table(test_rows, shipped.ridge_lambda)
    ours, theirs = group_errors(refit, test_rows), group_errors(shipped, test_rows)
    assert max(abs(ours[g] - theirs[g]) for g in ours) <= REFIT_TOLERANCE
    assert sum(theirs.values()) < sum(group_errors(None, test_rows).values())  # it does correct something


# Leave-one-GPU-out on tests/data (λ chosen without the held-out GPU, nested), as reached: the mean over the
# 24 (file, phase) groups and the worst group, rounded up (docs/gpu_learned.md §3; session 13: 16.1 % and 22.6 %).
LOO_REACHED_MEAN, LOO_REACHED_MAX = 0.20, 0.25


@pytest.fixture(scope="module")
def loo(test_rows: list[FitRow]) -> dict[str, float]:
    """Leave-one-GPU-out errors per group, λ chosen without the held-out GPU (~1 min)."""
    return leave_one_gpu_out(test_rows, learned.choose_lambda)[0]


@pytest.mark.slow
def test_leave_one_gpu_out_on_tests_data_as_reached(loo: dict[str, float], test_rows: list[FitRow]) -> None:
    assert len(loo) == 24
    assert sum(loo.values()) / len(loo) <= LOO_REACHED_MEAN
    assert max(loo.values()) <= LOO_REACHED_MAX


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="since wgrad's short DRAM runs (docs/gpu_scale.md §6.2) the physical model "
                                       "alone is as good held out (session 13, tests/data and full files: physical "
                                       "15.7 %, held out 16.1 %) (docs/gpu_learned.md §3)")
def test_held_out_the_option_beats_the_physical_model_on_average(loo: dict[str, float],
                                                                  test_rows: list[FitRow]) -> None:
    physical = group_errors(None, test_rows)
    assert sum(loo.values()) < sum(physical.values())


@pytest.mark.slow
def test_leave_one_gpu_out_on_tests_data_meets_the_issue_goal(loo: dict[str, float]) -> None:
    # reached in session 13 (the non-fused Winograd image blocks at fp32, docs/gpu_model.md §5)
    assert max(loo.values()) <= 0.25
