"""Validate the GPU model against DeepBench's measured cuDNN 7 layer times (P100, TITAN Xp).

Prints, per GPU, precision and phase, the geometric-mean absolute error exp(mean |ln(pred/meas)|) − 1
and the bias exp(mean ln(pred/meas)) on the IMPLICIT*-forward rows and on all rows, as a Markdown table.
With ``--loo``, also a leave-one-GPU-out check of the calibration constants: each constant in turn
is re-fitted on one GPU's fp32 IMPLICIT* rows alone (grid below, the others at their defaults;
objective = mean of the three phase errors) and the result is evaluated on the other GPU.

    .venv/bin/python scripts/validate_gpu.py [--loo]
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from antsim.gpu import CALIBRATION, load_gpu
from antsim.gpu.check import check_measured, deepbench_rows, summarize
from antsim.gpu.model import Calibration

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
    rows = check_measured(load_gpu(gpu), deepbench_rows(DATA / FP32[gpu], "fp32"), "fp32", cal)
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


def _fmt(errors: dict[str, float]) -> str:
    return " / ".join(f"{errors[p] * 100:.1f}" for p in ("fprop", "dgrad", "wgrad"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loo", action="store_true", help="also run the leave-one-GPU-out calibration check")
    args = parser.parse_args()
    print("| GPU | precision | phase | rows (implicit) | error (implicit) | bias (implicit) | rows (all) "
          "| error (all) | bias (all) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for gpu, file, precision in RUNS:
        rows = check_measured(load_gpu(gpu), deepbench_rows(DATA / file, precision), precision)
        for s in summarize(rows):
            print(f"| {gpu} | {precision} | {s['phase']} | {s['n_implicit']} | {s['err_implicit'] * 100:.1f} % "
                  f"| {s['bias_implicit']:.2f} | {s['n_all']} | {s['err_all'] * 100:.1f} % | {s['bias_all']:.2f} |")
    print()
    print("calibration:", ", ".join(f"{k}={v}" for k, v in CALIBRATION.to_dict().items()))
    if args.loo:
        print()
        leave_one_gpu_out()


if __name__ == "__main__":
    main()
