"""The model against measured cuDNN 7 layer times (DeepBench, P100 and TITAN Xp).

Error = exp(mean |ln(pred/meas)|) − 1 per phase, on the fp32 rows whose forward algorithm was an
implicit GEMM (the kernels the model describes). Design target: ≤ 20 % per phase on both GPUs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from antsim.errors import AntsimError, WorkloadError
from antsim.gpu import load_gpu
from antsim.gpu.check import (
    batch_inversions,
    bias,
    check_measured,
    geomean_abs_error,
    observations,
    oracle_rows,
    summarize,
)
from antsim.gpu.estimate import estimate_layer, layer_plans
from antsim.measure.deepbench import MeasuredLayer, read_deepbench_csv
from antsim.workloads.layers import PHASES, Layer

FILES = {"p100": "deepbench_conv_P100.csv", "titanxp": "deepbench_conv_TitanXp.csv"}
# Reached by the calibrated model (BENCHMARKS.md, section gpu); these bounds guard against regressions.
# fprop meets the 20 % design target; dgrad and wgrad do not yet (see the xfail test below).
ACHIEVED = {"fprop": 0.20, "dgrad": 0.25, "wgrad": 0.25}


def _errors(deepbench: Path, gpu: str) -> dict[str, dict]:
    # DeepBench ran cuDNN 7 with its heuristic algorithm choice (deepbench/README.md)
    rows = check_measured(load_gpu(gpu), observations(read_deepbench_csv(deepbench / FILES[gpu], "fp32")), "fp32",
                          selection="heuristic", library="cudnn7")
    return {s.phase: s for s in summarize(rows)}


def test_error_metric_is_symmetric_in_log_space() -> None:
    assert geomean_abs_error([2.0, 0.5]) == pytest.approx(1.0)
    assert bias([2.0, 0.5]) == pytest.approx(1.0)
    assert geomean_abs_error([1.1, 1.1]) == pytest.approx(0.1)


@pytest.mark.parametrize("gpu", sorted(FILES))
def test_implicit_gemm_rows_within_the_achieved_error(deepbench: Path, gpu: str) -> None:
    errors = _errors(deepbench, gpu)
    for phase, bound in ACHIEVED.items():
        s = errors[phase]
        assert s.n_implicit == 68, phase
        assert s.err_implicit <= bound, (gpu, phase, s.err_implicit)
        assert 0.8 <= s.bias_implicit <= 1.25, (gpu, phase, s.bias_implicit)  # no systematic offset
        assert s.err_all < 0.6, (gpu, phase)  # Winograd/FFT rows included


# Reached on TITAN Xp's implicit rows since session 11 (dgrad 18.7 %: the 1×1 stride-2 dgrads of K ≥ 512 run the
# row-phased kernel, menus.ROW_PHASED_MIN_K; 20.8 % before). Not reached on P100's: dgrad 22.7 %.
@pytest.mark.parametrize("gpu", [pytest.param("p100", marks=pytest.mark.xfail(
    strict=True, reason="design target ≤ 20 % per phase on the implicit rows: dgrad P100 22.7 % "
    "(BENCHMARKS.md, session 11)")), "titanxp"])
def test_design_target_twenty_percent_every_phase(deepbench: Path, gpu: str) -> None:
    errors = _errors(deepbench, gpu)
    assert all(errors[p].err_implicit <= 0.20 for p in ("fprop", "dgrad", "wgrad"))


def test_deepbench_columns_map_onto_layers(deepbench: Path) -> None:
    rows = read_deepbench_csv(deepbench / FILES["p100"])
    assert len(rows) == 188 and {m.precision for m in rows} == {"fp32", "fp16_pseudo"}
    first = rows[0]  # DeepSpeech: W=700 H=161 C=1 N=4 K=32 R=5 S=20, stride 2, no padding
    assert (first.layer.W, first.layer.H, first.layer.C, first.layer.N, first.layer.K) == (700, 161, 1, 4, 32)
    assert (first.layer.R, first.layer.S, first.layer.stride, first.layer.pad) == (5, 20, (2, 2), (0, 0))
    assert (first.layer.P, first.layer.Q) == (79, 341)  # the next DeepSpeech row's H=79, W=341
    assert first.times_s == pytest.approx({"fprop": 0.142e-3, "dgrad": 0.482e-3, "wgrad": 0.301e-3})
    assert first.implicit_gemm and first.algo == "IMPLICIT_PRECOMP_GEMM"


def test_empty_or_zero_dgrad_is_an_input_layer_without_dgrad(tmp_path: Path) -> None:
    header = "gpu,precision,source,W,H,C,N,K,R,S,pad_h,pad_w,stride_h,stride_w,fwd_ms,dgrad_ms,wgrad_ms,fwd_algo\n"
    path = tmp_path / "db.csv"
    path.write_text(header + "X,fp32,Vision,32,32,3,8,16,3,3,1,1,1,1,0.1,,0.2,IMPLICIT_GEMM\n"
                    "X,fp32,Vision,32,32,16,8,16,3,3,1,1,1,1,0.1,0,0.2,WINOGRAD\n")
    rows = read_deepbench_csv(path)
    assert [sorted(m.times_s) for m in rows] == [["fprop", "wgrad"], ["fprop", "wgrad"]]
    assert [m.implicit_gemm for m in rows] == [True, False]
    assert len(check_measured(load_gpu("p100"), observations(rows), "fp32")) == 4


def test_precision_absent_from_the_file_is_reported(deepbench: Path) -> None:
    with pytest.raises(WorkloadError, match="no rows of 'fp16'; the file has fp32"):
        read_deepbench_csv(deepbench / FILES["titanxp"], "fp16")


def test_the_model_keeps_the_fastest_of_the_plans_the_oracle_weighs() -> None:
    spec = load_gpu("p100")
    for layer in (Layer("s2", N=8, C=256, K=512, H=28, W=28, R=1, S=1, stride=2, pad=0),
                  Layer("c1", N=4, C=1, K=32, H=40, W=60, R=5, S=5, stride=2, pad=0)):
        for phase in PHASES:
            plans = layer_plans(spec, layer, phase)
            assert len(plans) >= 3  # at least one plan per tile
            assert estimate_layer(spec, layer, phase).time_s == min(p.time_s for p, _ in plans)


def test_oracle_keeps_the_plan_closest_to_the_measurement() -> None:
    spec = load_gpu("titanxp")
    layer = Layer("c64", N=8, C=64, K=128, H=28, W=28, R=3, S=3, stride=1, pad=1)
    slowest = max(p.time_s for p, _ in layer_plans(spec, layer, "wgrad"))
    measured = [MeasuredLayer(layer, {"wgrad": slowest}, "fp32", "IMPLICIT_GEMM")]
    (closest,) = oracle_rows(spec, observations(measured), "fp32")
    (model,) = check_measured(spec, observations(measured), "fp32")
    assert closest.ratio == pytest.approx(1.0)
    assert model.ratio < 0.9  # the model keeps a faster plan


@pytest.mark.parametrize("gpu", sorted(FILES))
def test_plan_space_floor_is_below_the_model_error(deepbench: Path, gpu: str) -> None:
    measured = observations(read_deepbench_csv(deepbench / FILES[gpu], "fp32"))
    floor = {s.phase: s.err_implicit for s in summarize(oracle_rows(load_gpu(gpu), measured, "fp32"))}
    model = _errors(deepbench, gpu)
    for phase in PHASES:
        assert 0 < floor[phase] <= model[phase].err_implicit, phase


def test_batch_inversions_flag_a_smaller_batch_that_ran_longer(deepbench: Path) -> None:
    layer = Layer("x", N=8, C=64, K=64, H=14, W=14, R=1, S=1, stride=1, pad=0)
    rows = [MeasuredLayer(layer, {"fprop": 2e-4, "wgrad": 1e-4}),
            MeasuredLayer(layer.with_batch(16), {"fprop": 1e-4, "wgrad": 2e-4})]
    assert batch_inversions(rows) == [("x", "fprop", 8, 16, 2e-4, 1e-4)]
    assert batch_inversions(rows[:1]) == []
    # Measurements of another precision (or GPU) are not compared with each other.
    other = [MeasuredLayer(layer, {"fprop": 2e-4}, "fp32"),
             MeasuredLayer(layer.with_batch(16), {"fprop": 1e-4}, "fp16")]
    assert batch_inversions(other) == []
    # The evidence BENCHMARKS.md cites: cuDNN 7 on P100 ran Resnet-71/74 dgrad slower at N = 8 than at N = 16.
    p100 = batch_inversions(read_deepbench_csv(deepbench / FILES["p100"], "fp32"))
    assert ("Resnet-71", "dgrad", 8, 16, 0.273e-3, 0.254e-3) in [(*r[:4], round(r[4], 7), round(r[5], 7)) for r in p100]
    assert batch_inversions(read_deepbench_csv(deepbench / FILES["titanxp"], "fp32")) == []


def _synthetic_harness(host_s: float, jitter_s: float = 0.0) -> tuple[object, list]:
    """Observations whose measured time is the model's kernel time plus a per-call host time (plus a
    row-dependent jitter on the large rows only): what a framework harness timed around each call records."""
    from antsim.gpu.check import Observation

    gpu = load_gpu("p4")
    layers = [Layer(f"l{i}", N=n, C=c, K=c, H=h, W=h, R=3, S=3, stride=1, pad=1)
              for i, (n, c, h) in enumerate((n, c, h) for n in (1, 8, 32) for c in (16, 64, 256) for h in (7, 28, 56))]
    obs = []
    for i, layer in enumerate(layers):
        kernel = estimate_layer(gpu, layer, "fprop", "fp32", selection="timed", library="cudnn8").time_s
        obs.append(Observation(layer, "fprop", kernel + host_s + (jitter_s * (i % 3) if layer.macs > 1e8 else 0.0)))
    return gpu, obs


def test_harness_host_time_is_read_off_the_least_work_rows() -> None:
    from antsim.gpu.check import HOST_PROBE_MIN_ROWS, harness_host_time_s

    for host in (0.0, 120e-6, 340e-6):
        gpu, obs = _synthetic_harness(host, jitter_s=1e-3)  # the large rows' jitter does not reach the probe
        got = harness_host_time_s(gpu, obs, "fp32", selection="timed", library="cudnn8")
        assert got == pytest.approx(host, abs=1e-9)
        rows = check_measured(gpu, [o for o in obs if o.layer.macs <= 1e8], "fp32", selection="timed",
                              library="cudnn8", host_overhead_s=got)
        assert all(r.ratio == pytest.approx(1.0) for r in rows)
    # a harness cannot give time back: a model slower than every probe reads 0, not a negative host time
    gpu, obs = _synthetic_harness(0.0)
    faster = [dataclasses.replace(o, measured_s=o.measured_s / 2) for o in obs]
    assert harness_host_time_s(gpu, faster, "fp32", selection="timed", library="cudnn8") == 0.0
    # the probe is the least-work rows, at least HOST_PROBE_MIN_ROWS of them: with a host time on those only
    probes = sorted(obs, key=lambda o: o.layer.macs)[:HOST_PROBE_MIN_ROWS]
    marked = [dataclasses.replace(o, measured_s=o.measured_s + 200e-6) if o in probes else o for o in obs]
    assert harness_host_time_s(gpu, marked, "fp32", selection="timed", library="cudnn8") == pytest.approx(200e-6)
    with pytest.raises(AntsimError, match="no measured rows"):
        harness_host_time_s(gpu, [], "fp32")


def test_harness_host_times_follow_a_host_time_that_drifts_along_the_sequence() -> None:
    from antsim.gpu.check import harness_host_times_s, per_row_host_s

    gpu, obs = _synthetic_harness(0.0, jitter_s=1e-3)
    for first, step in ((40e-6, 25e-6), (300e-6, 0.0), (500e-6, -10e-6)):
        drifted = [dataclasses.replace(o, measured_s=o.measured_s + first + step * i) for i, o in enumerate(obs)]
        got = harness_host_times_s(gpu, drifted, "fp32", selection="timed", library="cudnn8")
        # the least-work rows sit at scattered places of the sequence; the line through them is the harness's
        assert got == pytest.approx([first + step * i for i in range(len(obs))], abs=1e-9)
        rows = check_measured(gpu, [o for o in drifted if o.layer.macs <= 1e8], "fp32", selection="timed",
                              library="cudnn8", host_overhead_s=[h for h, o in zip(got, drifted, strict=True)
                                                                 if o.layer.macs <= 1e8])
        assert all(r.ratio == pytest.approx(1.0) for r in rows)
    # a harness cannot give time back: where the line falls below 0 (a model slower than the late probes) it reads 0
    falling = [dataclasses.replace(o, measured_s=o.measured_s + 100e-6 - 10e-6 * i) for i, o in enumerate(obs)]
    got = harness_host_times_s(gpu, falling, "fp32", selection="timed", library="cudnn8")
    assert got == pytest.approx([max(0.0, 100e-6 - 10e-6 * i) for i in range(len(obs))], abs=1e-9)
    assert per_row_host_s(5e-6, 3) == [5e-6] * 3
    with pytest.raises(AntsimError, match="2 values for 3 rows"):
        per_row_host_s([1e-6, 2e-6], 3)
    with pytest.raises(AntsimError, match="no measured rows"):
        harness_host_times_s(gpu, [], "fp32")
