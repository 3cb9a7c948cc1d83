"""``antsim.measure.timing``: the timed calls compute the right gradients; CSV rows, round trip, repeatability."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from antsim.cli import main
from antsim.workloads.layers import Layer, write_layers_csv

TINY = Layer(name="tiny", N=2, C=8, K=16, H=12, W=12, R=3, S=3, stride=1, pad=1)


@pytest.mark.torch
@pytest.mark.parametrize("layer", [
    Layer(name="s2", N=2, C=3, K=4, H=7, W=6, R=3, S=3, stride=2, pad=1),
    Layer(name="rect", N=1, C=2, K=3, H=5, W=8, R=1, S=3, stride=(1, 2), pad=(0, 1)),
])
def test_phase_calls_equal_autograd(layer: Layer) -> None:
    torch = pytest.importorskip("torch")
    from antsim.measure.timing import phase_call

    gen = torch.Generator().manual_seed(0)
    a = torch.randn(layer.N, layer.C, layer.H, layer.W, generator=gen, dtype=torch.float64, requires_grad=True)
    w = torch.randn(layer.K, layer.C, layer.R, layer.S, generator=gen, dtype=torch.float64, requires_grad=True)
    dy = torch.randn(layer.N, layer.K, layer.P, layer.Q, generator=gen, dtype=torch.float64)
    y = torch.nn.functional.conv2d(a, w, None, layer.stride, layer.pad)
    y.backward(dy)
    with torch.no_grad():
        calls = {p: phase_call(p, layer, a.detach(), w.detach(), dy)() for p in ("fprop", "dgrad", "wgrad")}
    np.testing.assert_allclose(calls["fprop"].numpy(), y.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(calls["dgrad"].numpy(), a.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(calls["wgrad"].numpy(), w.grad.numpy(), rtol=1e-12, atol=1e-12)
    # An independent check of wgrad: dW[k,c,r,s] = Σ dY[n,k,p,q]·A[n,c,p·st+r−pad, q·st+s−pad].
    an = np.pad(a.detach().numpy(), ((0, 0), (0, 0), (layer.pad_h,) * 2, (layer.pad_w,) * 2))
    ref = np.zeros((layer.K, layer.C, layer.R, layer.S))
    for r in range(layer.R):
        for s in range(layer.S):
            win = an[:, :, r:r + layer.stride_h * layer.P:layer.stride_h, s:s + layer.stride_w * layer.Q:layer.stride_w]
            ref[:, :, r, s] = np.einsum("nkpq,ncpq->kc", dy.numpy(), win)
    np.testing.assert_allclose(calls["wgrad"].numpy(), ref, rtol=1e-10, atol=1e-12)


def _measure(tmp_path: Path, name: str, repeats: int, warmup: int = 2) -> list[dict[str, str]]:
    layers_csv = tmp_path / "layers.csv"
    write_layers_csv([TINY], layers_csv)
    out = tmp_path / f"{name}.csv"
    assert main(["measure", "--layers-csv", str(layers_csv), "--batch", "2", "--repeats", str(repeats),
                 "--warmup", str(warmup), "--threads", "1", "--out", str(out)]) == 0
    with out.open() as handle:
        return list(csv.DictReader(handle))


@pytest.mark.torch
def test_three_phases_timed_separately_and_csv_round_trips(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    rows = _measure(tmp_path, "m", repeats=5)
    assert torch.get_num_threads() == threads  # --threads 1 applies to the measurement only
    assert [r["phase"] for r in rows] == ["fprop", "dgrad", "wgrad"]
    times = [float(r["time_s"]) for r in rows]
    assert all(t > 0 for t in times) and len(set(times)) == 3
    for r in rows:
        assert float(r["time_min_s"]) <= float(r["time_s"]) <= float(r["time_max_s"])
        assert r["device"] == "cpu" and r["precision"] == "fp32" and r["repeats"] == "5"
        assert r["algorithm"] == "not exposed" and r["torch_version"]
    from antsim.measure.external import read_results_csv
    from antsim.report.compare import compare_results
    from antsim.results import LayerResult, NetworkResult

    measured = read_results_csv(tmp_path / "m.csv", [TINY])
    assert measured.backend == "measured" and measured.design == f"cpu:{rows[0]['device_name']}"
    assert [r.time_s for r in measured.records] == times
    model = NetworkResult(design="model", backend="gpu", workload={"layers": [TINY.to_dict()], "batch": 2},
                          records=tuple(LayerResult(layer="tiny", phase=p, time_s=1e-3) for p in
                                        ("fprop", "dgrad", "wgrad")))
    comparison = compare_results([model, measured], baseline="model")
    speedups = [row.speedup for row in comparison.rows_for("layer_phase", measured.design)]
    assert speedups == pytest.approx([1e-3 / t for t in times])


@pytest.mark.torch
def test_repeated_measurement_agrees_within_reported_spread(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    # The tiny layer's calls take ~0.2 ms: 101 timed calls after 10 warm-up ones give a median a short
    # burst of machine noise cannot move (21 after 2 once moved it 1.6x in CI).
    first = _measure(tmp_path, "a", repeats=101, warmup=10)
    second = _measure(tmp_path, "b", repeats=101, warmup=10)
    for one, two in zip(first, second, strict=True):
        lo1, med1, hi1 = (float(one[k]) for k in ("time_min_s", "time_s", "time_max_s"))
        lo2, med2, hi2 = (float(two[k]) for k in ("time_min_s", "time_s", "time_max_s"))
        assert lo1 <= med2 <= hi1 or lo2 <= med1 <= hi2, (one["phase"], (lo1, med1, hi1), (lo2, med2, hi2))
