"""Validate the GPU model against DeepBench's measured cuDNN 7 layer times (P100, TITAN Xp).

Prints, per GPU, precision and phase, the geometric-mean absolute error exp(mean |ln(pred/meas)|) − 1
and the bias exp(mean ln(pred/meas)) on the IMPLICIT*-forward rows and on all rows, as a Markdown table.

    .venv/bin/python scripts/validate_gpu.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

from antsim.gpu import CALIBRATION, load_gpu
from antsim.gpu.check import check_measured, deepbench_rows, summarize

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "deepbench"
RUNS = (("p100", "deepbench_conv_P100.csv", "fp32"), ("p100", "deepbench_conv_P100.csv", "fp16_pseudo"),
        ("titanxp", "deepbench_conv_TitanXp.csv", "fp32"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
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


if __name__ == "__main__":
    main()
