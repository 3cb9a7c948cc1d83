"""scripts/validate_gpu.py scores every measured file in tests/data; its figures guard against regressions.

The bounds are the errors the model reaches (BENCHMARKS.md, section gpu, issue 13), rounded up to the
next 5 points; the issue's goal (≤ 20 % per phase and precision on all rows) is a strict xfail.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "validate_gpu.py"
_spec = importlib.util.spec_from_file_location("validate_gpu", SCRIPT)
validate = importlib.util.module_from_spec(_spec)
sys.modules["validate_gpu"] = validate
_spec.loader.exec_module(validate)

# (gpu, precision) -> phase -> bound on the all-rows error, as reached.
REACHED = {
    ("p100", "fp32"): {"fprop": 0.15, "dgrad": 0.20, "wgrad": 0.20},
    ("p100", "fp16_pseudo"): {"fprop": 0.15, "dgrad": 0.20, "wgrad": 0.20},  # true-half rows (docs/gpu_precision.md)
    ("titanxp", "fp32"): {"fprop": 0.20, "dgrad": 0.20, "wgrad": 0.20},
    ("gtx1080ti", "fp32"): {"fprop": 0.15, "dgrad": 0.15, "wgrad": 0.20},  # dgrad 15.8 → 14.5 % (s13 dgrad2)
    # TITAN X Maxwell wgrad 20.1 → 17.9 % with the P2-state GDDR5 clock (s13 mwgrad2)
    ("titanx-maxwell", "fp32"): {"fprop": 0.15, "dgrad": 0.15, "wgrad": 0.20},
    ("m40", "fp32"): {"fprop": 0.15, "dgrad": 0.15, "wgrad": 0.20},
    # T4 fp32 fprop 20.1 → 17.5 %, dgrad 23.6 → 19.2 % with session 13's non-fused Winograd image blocks at fp32
    ("t4", "fp32"): {"fprop": 0.20, "dgrad": 0.20, "wgrad": 0.20},
    ("t4", "fp16"): {"fprop": 0.20, "dgrad": 0.20, "wgrad": 0.15},
    ("a100-80gb-pcie", "fp32"): {"fprop": 0.20},
    ("p100-pcie", "fp32"): {"fprop": 0.15},
    ("p4", "fp32"): {"fprop": 0.15},
}
RUNS = [run for run in validate.RUNS if (run.gpu, run.precision) in REACHED]


def test_every_measured_file_is_scored() -> None:
    files = {p.relative_to(validate.DATA).as_posix() for harness in ("deepbench", "neusight")
             for p in (validate.DATA / harness).glob("*.csv")}  # tests/data/results holds golden outputs
    assert files == {run.file for run in validate.RUNS}
    assert {run.harness for run in validate.RUNS} == {"deepbench", "neusight"}


@pytest.mark.parametrize("run", RUNS, ids=lambda r: f"{r.gpu}-{r.precision}")
def test_all_rows_within_the_reached_error_and_above_the_floor(run) -> None:
    errors = validate.phase_errors(validate.run_rows(run))
    floor = validate.phase_errors(validate.run_rows(run, floor=True))
    assert set(errors) == set(REACHED[run.gpu, run.precision])
    for phase, bound in REACHED[run.gpu, run.precision].items():
        assert errors[phase] <= bound, (phase, errors[phase])
        assert floor[phase] <= errors[phase], phase  # the closest plan is never farther than the chosen one


def test_neusight_rows_carry_their_own_harness_host_time_and_deepbench_rows_none() -> None:
    # docs/gpu_scale.md §7–8: each NeuSight file's host time is read off its own least-work rows, along its
    # collection sequence, where it grows (~45 µs on the first rows to 340–770 µs on the last, from the gaps alone);
    # with one median per file (session 9) the files scored 21.5 / 24.2 / 19.7 %, at the 60 µs constant of
    # session 8 (the fastest A100 call) 27.1 / 33.2 / 27.1 %.
    from antsim.gpu.check import harness_host_time_s

    hosts = {run.gpu: validate.host_time_us(run) for run in validate.RUNS}
    assert all(hosts[run.gpu] == (0.0, 0.0) for run in validate.RUNS if run.harness == "deepbench")
    assert all(hosts[g][0] < 80 for g in ("a100-80gb-pcie", "p100-pcie", "p4"))
    assert 150 < hosts["a100-80gb-pcie"][1] < 400 and 500 < hosts["p100-pcie"][1] < 900 and 450 < hosts["p4"][1] < 900
    for run in (r for r in validate.RUNS if r.harness == "neusight"):
        own = validate.phase_errors(validate.run_rows(run))["fprop"]
        measured = validate.padded_channels(validate.observations(validate.read_deepbench_csv(
            validate.DATA / run.file, run.precision)), 0)
        gpu = validate.load_gpu(run.gpu)
        median = harness_host_time_s(gpu, measured, run.precision, selection=run.selection, library=run.library)
        for constant in (median, 60e-6):
            rows = validate.check_measured(gpu, measured, run.precision, selection=run.selection,
                                           library=run.library, host_overhead_s=constant)
            assert own < validate.geomean_abs_error([r.ratio for r in rows]) - 0.04, (run.gpu, constant)


def test_fit_picks_the_grid_point_with_the_lowest_mean_error() -> None:
    a, b = validate.RUNS[0], validate.RUNS[2]
    table = {(0.5, 20.0): {a: {"fprop": 0.3}, b: {"fprop": 0.1}}, (0.6, 20.0): {a: {"fprop": 0.1}, b: {"fprop": 0.2}}}
    assert validate.fit([a, b], table) == (0.6, 20.0)  # mean 0.15 < 0.2
    assert validate.fit([b], table) == (0.5, 20.0)  # fitted without a, the other point wins


def test_deepbench_tensor_core_rows_time_the_channel_padded_layer() -> None:
    # DeepBench's conv_bench pads C and K up to a multiple of 8 before timing "half" on tensor cores.
    from antsim.gpu.check import Observation
    from antsim.workloads.gemm import Gemm
    from antsim.workloads.layers import Layer

    rgb = Layer("rgb", N=8, C=3, K=60, H=32, W=32, R=3, S=3, stride=1, pad=1)
    fc = Gemm("fc", M=10, N=8, K=3, batch=8)
    obs = [Observation(rgb, "fprop", 1e-3), Observation(fc, "fprop", 1e-3)]
    out = validate.padded_channels(obs, validate.DEEPBENCH_TENSOR_PAD)
    assert (out[0].layer.C, out[0].layer.K, out[0].layer.H, out[0].layer.R) == (8, 64, 32, 3)
    assert out[0].measured_s == 1e-3 and out[1] == obs[1]  # the time is the padded layer's; GEMM layers untouched
    assert validate.padded_channels(obs, 0) == obs
    padded_runs = {(r.gpu, r.precision) for r in validate.RUNS if r.pad_channels}
    assert padded_runs == {("t4", "fp16")}  # the only tensor-core ("half" on tensor cores) sheet


def test_issue_goal_twenty_percent_on_all_rows() -> None:
    # issue 13's in-sample goal, reached in session 13 (mwgrad2: TITAN X Maxwell wgrad, the last figure above 20 %)
    for run in RUNS:
        assert all(e <= 0.20 for e in validate.phase_errors(validate.run_rows(run)).values()), run.gpu


@pytest.mark.slow
def test_issue_goal_twenty_five_percent_leave_one_gpu_out() -> None:
    # issue 13's held-out goal: each GPU predicted with the fitted constants (validate.FIT_GRID) chosen on the other
    # GPUs alone; the same table `scripts/validate_gpu.py --loo` prints (~1.5 min)
    table = validate.error_table()
    for gpu in dict.fromkeys(run.gpu for run in RUNS):
        key = validate.fit([run for run in RUNS if run.gpu != gpu], table)
        for run in (r for r in RUNS if r.gpu == gpu):
            assert all(e <= 0.25 for e in table[key][run].values()), (gpu, run.precision, key, table[key][run])


def test_family_of_a_row_names_filter_stride_channel_band_and_algorithm() -> None:
    from antsim.workloads.gemm import Gemm as GemmLayer
    from antsim.workloads.layers import Layer

    layer = Layer("x", N=8, C=64, K=128, H=28, W=28, R=3, S=3, stride=2, pad=1)
    assert validate.shape_family(layer, "BWD_DATA_ALGO_1") == "3×3 s2, C < 128, BWD_DATA_ALGO_1"
    assert validate.shape_family(dataclasses.replace(layer, C=8), "x").startswith("3×3 s2, C < 32")
    assert validate.shape_family(dataclasses.replace(layer, C=128), "x") == "3×3 s2, C ≥ 128, x"
    assert validate.shape_family(GemmLayer("g", M=8, N=8, K=8), "gemm") == "GEMM layer, gemm"


def test_measured_times_against_the_p100_imply_the_builtin_sm_clocks() -> None:
    # docs/gpu_scale.md §2: the clock each card ran at, from measured times alone (1×1 layers, fprop and dgrad),
    # is near the clock its builtin spec runs kernels at: the base clock on Maxwell, the top boost bin on the
    # GTX 1080 Ti (which the measurements put 5-6 % higher still); the T4's 1×1 layers at its boost clock.
    clocks = validate.implied_clocks()
    for name, tolerance in (("m40", 0.02), ("titanx-maxwell", 0.02), ("gtx1080ti", 0.07), ("t4", 0.08)):
        sm_mhz = validate.load_gpu(name).sm_clock_hz / 1e6
        for phase in ("fprop", "dgrad"):
            assert clocks[name]["1x1", phase][2] == pytest.approx(sm_mhz, rel=tolerance), (name, phase)
    # and the rated boost clock is not what the Maxwell cards and the GTX 1080 Ti ran at
    for name in ("m40", "titanx-maxwell", "gtx1080ti"):
        boost = validate.load_gpu(name).clock_mhz
        assert all(abs(clocks[name]["1x1", p][2] / boost - 1) > 0.05 for p in ("fprop", "dgrad")), name


def test_the_halving_1x1_stride_2_dgrad_runs_at_the_row_phased_speed_on_every_fp32_sheet() -> None:
    # DeepBench's C = 1024 -> K = 512, 14 x 14, stride-2 1x1 dgrads (N = 8, 16): the zero-inserted GEMM predicts
    # 1.4-1.9x their measured time on all six fp32 sheets (cuDNN 5-7.6), the row-phased GEMM the heuristics run
    # for K >= 512 (antsim.gpu.menus.ROW_PHASED_MIN_K) 0.8-1.2x.
    from antsim.gpu.estimate import estimate_layer
    from antsim.gpu.gemm import implicit_gemm
    from antsim.gpu.model import best_plan

    seen = 0
    for run in (r for r in validate.RUNS if r.harness == "deepbench" and r.precision == "fp32"):
        gpu = validate.load_gpu(run.gpu)
        for m in validate.read_deepbench_csv(validate.DATA / run.file, run.precision):
            layer = m.layer
            halving = (layer.C, layer.K, layer.H, layer.R, layer.stride_h) == (1024, 512, 14, 1, 2)
            if not halving or "dgrad" not in m.times_s:
                continue
            measured = m.times_s["dgrad"]
            chosen = estimate_layer(gpu, layer, "dgrad", "fp32", selection="heuristic", library=run.library,
                                    forward_algo=m.algo)
            zero_inserted = best_plan(gpu, implicit_gemm(layer, "dgrad"), "fp32")
            assert chosen.details["algorithm"] == "row_phased", run.gpu
            assert 0.8 < chosen.time_s / measured < 1.2, (run.gpu, layer.N)
            assert zero_inserted.time_s / measured > 1.4, (run.gpu, layer.N)
            seen += 1
    assert seen == 12
