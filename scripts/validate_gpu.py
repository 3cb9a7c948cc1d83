"""Validate the GPU model against DeepBench's measured cuDNN 7 layer times (P100, TITAN Xp).

Prints, per GPU, precision and phase, the geometric-mean absolute error exp(mean |ln(pred/meas)|) − 1
and the bias exp(mean ln(pred/meas)) on the IMPLICIT*-forward rows and on all rows, as a Markdown table.
With ``--loo``, also a leave-one-GPU-out check of the calibration constants: each constant in turn
is re-fitted on one GPU's fp32 IMPLICIT* rows alone (grid below, the others at their defaults;
objective = mean of the three phase errors) and the result is evaluated on the other GPU.
With ``--oracle``, also the plan-space floor (``antsim.gpu.check.oracle_rows``: the error if every
row were predicted by the candidate plan closest to it), the rows no candidate plan reaches within
a factor 1.2, and two signs in the data of heuristic (not timed) kernel selection.

    .venv/bin/python scripts/validate_gpu.py [--loo] [--oracle]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

from antsim.gpu import CALIBRATION, load_gpu
from antsim.gpu.check import batch_inversions, check_measured, observations, oracle_rows, summarize
from antsim.gpu.estimate import layer_plans
from antsim.gpu.gemm import Gemm
from antsim.gpu.model import Calibration, Plan, plan_gemm
from antsim.measure.deepbench import MeasuredLayer, read_deepbench_csv
from antsim.workloads.layers import PHASES

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "deepbench"
RUNS = (("p100", "deepbench_conv_P100.csv", "fp32"), ("p100", "deepbench_conv_P100.csv", "fp16_pseudo"),
        ("titanxp", "deepbench_conv_TitanXp.csv", "fp32"))
FP32 = {"p100": "deepbench_conv_P100.csv", "titanxp": "deepbench_conv_TitanXp.csv"}
# Candidate values per constant for the leave-one-GPU-out check (around the physical default).
GRID: dict[str, tuple[float, ...]] = {
    "simt_efficiency": (0.7, 0.75, 0.8, 0.85, 0.9),
    "index_ops": (2.0, 3.0, 4.0, 6.0, 8.0),
    "wgrad_index_ops": (12.0, 16.0, 20.0, 24.0, 32.0),
    "warps_per_scheduler": (1.0, 2.0, 3.0, 4.0),
    "launch_overhead_s": (2e-6, 5e-6, 8e-6),
    "atomic_sectors": (1.0, 1.5, 2.0, 3.0),
}


def phase_errors(gpu: str, cal: Calibration) -> dict[str, float]:
    """fp32 IMPLICIT* error per phase on one GPU."""
    rows = check_measured(load_gpu(gpu), observations(read_deepbench_csv(DATA / FP32[gpu], "fp32")), "fp32", cal)
    return {s["phase"]: s["err_implicit"] for s in summarize(rows)}


def _objective(errors: dict[str, float]) -> float:
    return sum(errors.values()) / len(errors)


def leave_one_gpu_out() -> None:
    """Print, per constant and held-out GPU, the value fitted on the other GPU and both GPUs' errors."""
    print("| constant | default | fitted on | fitted value | errors on fit GPU (f/d/w) "
          "| errors on held-out GPU (f/d/w) | held-out with default (f/d/w) |")
    print("|---|---|---|---|---|---|---|")
    for name, values in GRID.items():
        for fit, held in (("p100", "titanxp"), ("titanxp", "p100")):
            scored = [(round(_objective(phase_errors(fit, dataclasses.replace(CALIBRATION, **{name: v}))), 6), v)
                      for v in values]
            best = min(scored)[1]
            cal = dataclasses.replace(CALIBRATION, **{name: best})
            fit_err, held_err, held_default = phase_errors(fit, cal), phase_errors(held, cal), phase_errors(held,
                                                                                                              CALIBRATION)
            print(f"| {name} | {getattr(CALIBRATION, name):g} | {fit} | {best:g} | {_fmt(fit_err)} | {_fmt(held_err)} "
                  f"| {_fmt(held_default)} |")


def plan_space_floor(tolerance: float = 0.2) -> None:
    """Print, per GPU and phase, the model's error next to the floor of any plan-selection rule."""
    print("| GPU | phase | model error | plan-space floor | floor, one plan for both GPUs "
          "| rows no plan reaches within a factor 1.2 |")
    print("|---|---|---|---|---|---|")
    unreached: list[str] = []
    shared = shared_plan_floor()
    for gpu, file in FP32.items():
        measured = [m for m in read_deepbench_csv(DATA / file, "fp32") if m.implicit_gemm]
        spec = load_gpu(gpu)
        model = {s["phase"]: s for s in summarize(check_measured(spec, observations(measured), "fp32"))}
        closest = oracle_rows(spec, observations(measured), "fp32")
        floor = {s["phase"]: s for s in summarize(closest)}
        shapes = {m.layer.name: _shape(m) for m in measured}
        for phase in ("fprop", "dgrad", "wgrad"):
            far = [r for r in closest if r.phase == phase and max(r.ratio, 1 / r.ratio) > 1 + tolerance]
            print(f"| {gpu} | {phase} | {model[phase]['err_implicit'] * 100:.1f} % "
                  f"| {floor[phase]['err_implicit'] * 100:.1f} % | {shared[gpu, phase] * 100:.1f} % "
                  f"| {len(far)} of {floor[phase]['n_implicit']} |")
            unreached += [f"{gpu} {phase} {r.name} ({shapes[r.name]}): closest plan {r.ratio:.2f}×" for r in far]
    print()
    print("Rows no candidate plan reaches within a factor 1.2 (closest plan / measured):")
    for line in unreached:
        print(f"* {line}")


def shared_plan_floor() -> dict[tuple[str, str], float]:
    """The plan-space floor when one plan (formulation, tile, split-K) must serve a layer on both GPUs.

    cuDNN 7 made the same forward-algorithm choice on both GPUs for every DeepBench layer, so its
    kernel choice looks like a function of the layer shape alone; this floor is what any such rule
    over the model's plans could reach. Returns (GPU, phase) → error.
    """
    specs = {gpu: load_gpu(gpu) for gpu in FP32}
    p100 = [m for m in read_deepbench_csv(DATA / FP32["p100"], "fp32") if m.implicit_gemm]
    titanxp = {_shape(m): m for m in read_deepbench_csv(DATA / FP32["titanxp"], "fp32") if m.implicit_gemm}
    logs: dict[tuple[str, str], list[float]] = {}
    for m in p100:  # every row once, as in the other tables (DeepBench lists a few shapes twice)
        pair = {"p100": m, "titanxp": titanxp[_shape(m)]}
        for phase in PHASES:
            if phase not in m.times_s:
                continue
            candidates = (_plan_errors(specs, pair, phase, plan, g)  # either GPU's plans, run on both
                          for gpu in specs for plan, g in layer_plans(specs[gpu], m.layer, phase))
            best = min((errs for errs in candidates if errs), key=lambda errs: sum(abs(e) for e in errs.values()))
            for gpu, e in best.items():
                logs.setdefault((gpu, phase), []).append(abs(e))
    return {key: math.exp(sum(v) / len(v)) - 1 for key, v in logs.items()}


def _plan_errors(specs: dict, pair: dict[str, MeasuredLayer], phase: str, plan: Plan, g: Gemm) -> dict[str, float]:
    """ln(pred/meas) of one (formulation, tile, split) on each GPU; {} when the tile does not fit one."""
    errors = {}
    for gpu, m in pair.items():
        other = plan_gemm(specs[gpu], g, "fp32", plan.tile, plan.split_k)
        if other is None:
            return {}
        errors[gpu] = math.log(other.time_s / m.times_s[phase])
    return errors


def _shape(m: MeasuredLayer) -> str:
    layer = m.layer
    stride = layer.stride_h if layer.stride_h == layer.stride_w else f"{layer.stride_h}×{layer.stride_w}"
    return (f"C={layer.C} K={layer.K} {layer.H}×{layer.W} {layer.R}×{layer.S} stride {stride} "
            f"pad {layer.pad_h}×{layer.pad_w} N={layer.N}")


def selection_evidence() -> None:
    """Print the two signs that DeepBench's cuDNN 7 picked kernels by heuristics, not by timing them."""
    rows = {gpu: read_deepbench_csv(DATA / file, "fp32") for gpu, file in FP32.items()}
    algos = {gpu: {_shape(m): m.algo for m in ms} for gpu, ms in rows.items()}
    shared = sorted(set(algos["p100"]) & set(algos["titanxp"]))
    same = sum(algos["p100"][k] == algos["titanxp"][k] for k in shared)
    print(f"Forward algorithm identical on P100 and TITAN Xp for {same} of {len(shared)} layer shapes.")
    for gpu, ms in rows.items():
        for name, phase, small, large, t_small, t_large in batch_inversions(ms):
            print(f"* {gpu} {phase} {name}: N={small} takes {t_small * 1e3:.3f} ms, N={large} {t_large * 1e3:.3f} ms")


def _fmt(errors: dict[str, float]) -> str:
    return " / ".join(f"{errors[p] * 100:.1f}" for p in ("fprop", "dgrad", "wgrad"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loo", action="store_true", help="also run the leave-one-GPU-out calibration check")
    parser.add_argument("--oracle", action="store_true",
                        help="also print the plan-space floor and the signs of heuristic kernel selection")
    args = parser.parse_args()
    print("| GPU | precision | phase | rows (implicit) | error (implicit) | bias (implicit) | rows (all) "
          "| error (all) | bias (all) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for gpu, file, precision in RUNS:
        rows = check_measured(load_gpu(gpu), observations(read_deepbench_csv(DATA / file, precision)), precision)
        for s in summarize(rows):
            print(f"| {gpu} | {precision} | {s['phase']} | {s['n_implicit']} | {s['err_implicit'] * 100:.1f} % "
                  f"| {s['bias_implicit']:.2f} | {s['n_all']} | {s['err_all'] * 100:.1f} % | {s['bias_all']:.2f} |")
    print()
    print("calibration:", ", ".join(f"{k}={v}" for k, v in CALIBRATION.to_dict().items()))
    if args.loo:
        print()
        leave_one_gpu_out()
    if args.oracle:
        print()
        plan_space_floor()
        print()
        selection_evidence()


if __name__ == "__main__":
    main()
