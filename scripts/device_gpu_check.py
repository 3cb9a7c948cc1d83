"""Measure DeepBench's conv shapes on a real GPU and check the GPU model against them — the prepared
device check for a session that is lent a GPU machine (see ``scripts/device_gpu_check.sh``).

Each distinct DeepBench shape (its own batch N) is timed with ``antsim.measure`` (PyTorch, cuDNN with
timed algorithm selection: ``cudnn.benchmark``), fprop/dgrad/wgrad, and written twice under ``--out``:

* ``deepbench_conv_<GPU>_<precision>.csv`` — DeepBench's own format (``antsim gpu --check`` reads it
  with per-row batch); ``fwd_algo`` is the kernel family of the fprop kernels that ran
  (``IMPLICIT_GEMM``, ``WINOGRAD``, ``FFT`` or ``OTHER``), so the usual implicit-rows filter applies;
* ``kernels_<GPU>_<precision>.csv`` — one row per (layer, phase): time, and the names of every kernel
  the call launched (the information DeepBench lacks for dgrad and wgrad).

It then prints ``antsim gpu --gpu GPU --check … --floor`` for each precision (and writes its per-row
errors). It runs on a CPU too, for a dry run: ``--device cpu --precision fp32 --limit 3``.

    python3 scripts/device_gpu_check.py --gpu h200 --device cuda --precision fp32 bf16 --out OUT
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the device machine runs the checkout without installing it

from antsim.measure.deepbench import DEEPBENCH_COLUMNS, PHASE_COLUMNS, read_deepbench_csv  # noqa: E402
from antsim.results import write_text_atomic  # noqa: E402
from antsim.workloads.layers import PHASES, Layer  # noqa: E402

SHAPES = ROOT / "tests" / "data" / "deepbench" / "deepbench_conv_P100.csv"
# Substrings of cuDNN / CUTLASS kernel names per family, checked in this order.
FAMILIES = (("WINOGRAD", ("winograd",)), ("FFT", ("fft",)),
            ("IMPLICIT_GEMM", ("implicit", "xmma", "cutlass", "gemm", "conv2d", "convolve")))


def kernel_family(kernels: str) -> str:
    """The algorithm family of a call from the names of the kernels it launched."""
    names = kernels.lower()
    for family, marks in FAMILIES:
        if any(mark in names for mark in marks):
            return family
    return "OTHER"


def deepbench_shapes(limit: int | None = None) -> list[tuple[Layer, str]]:
    """Distinct (shape, batch) of DeepBench's fp32 rows with their benchmark family, in file order."""
    seen, out = set(), []
    for m in read_deepbench_csv(SHAPES, "fp32"):
        layer = m.layer
        key = (layer.N, layer.C, layer.K, layer.H, layer.W, layer.R, layer.S, layer.stride, layer.pad)
        if key not in seen:
            seen.add(key)
            out.append((layer, m.source))
    return out[:limit]


def deepbench_csv(gpu: str, precision: str, shapes: Sequence[tuple[Layer, str]],
                  rows: Sequence[dict[str, Any]]) -> str:
    """DeepBench-format CSV text of measured rows (times in ms, fwd_algo from the fprop kernels)."""
    by_key = {(r["name"], r["phase"]): r for r in rows}
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(DEEPBENCH_COLUMNS)
    for layer, source in shapes:
        times = {p: by_key[layer.name, p]["time_s"] * 1e3 for p in PHASES if (layer.name, p) in by_key}
        fprop = by_key.get((layer.name, "fprop"), {})
        writer.writerow([gpu, precision, source, layer.W, layer.H, layer.C, layer.N, layer.K, layer.R, layer.S,
                         layer.pad_h, layer.pad_w, layer.stride_h, layer.stride_w,
                         *(f"{times[p]:.6g}" if p in times else "" for p in PHASE_COLUMNS),
                         kernel_family(str(fprop.get("kernels", ""))) if fprop.get("kernels") else ""])
    return buffer.getvalue()


def kernels_csv(rows: Sequence[dict[str, Any]]) -> str:
    """(layer, phase) → time and kernel names, as CSV text."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["name", "phase", "time_s", "family", "kernels", "N", "C", "K", "H", "W", "R", "S",
                     "stride_h", "stride_w", "pad_h", "pad_w"])
    for r in rows:
        writer.writerow([r["name"], r["phase"], f"{r['time_s']:.6g}", kernel_family(str(r["kernels"])),
                         r["kernels"], *(r[c] for c in ("N", "C", "K", "H", "W", "R", "S", "stride_h", "stride_w",
                                                         "pad_h", "pad_w"))])
    return buffer.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="h200", help="builtin GPU the model checks against (default h200)")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--precision", nargs="+", default=["fp32", "bf16"])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="first N shapes only (dry runs)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    from antsim.capture import require_torch

    require_torch("measure")
    from antsim.cli import main as antsim_main
    from antsim.measure.timing import measure_layers

    args.out.mkdir(parents=True, exist_ok=True)
    shapes = deepbench_shapes(args.limit)
    for precision in args.precision:
        print(f"device_gpu_check: {len(shapes)} shapes x 3 phases at {precision} on {args.device}", file=sys.stderr,
              flush=True)
        rows = measure_layers([layer for layer, _ in shapes], PHASES, args.device, precision, args.repeats,
                              args.warmup)
        label = args.gpu.upper()
        measured = args.out / f"deepbench_conv_{label}_{precision}.csv"
        write_text_atomic(measured, deepbench_csv(label, precision, shapes, rows))
        write_text_atomic(args.out / f"kernels_{label}_{precision}.csv", kernels_csv(rows))
        antsim_main(["gpu", "--gpu", args.gpu, "--precision", precision, "--check", str(measured), "--floor",
                     "--worst", "10", "--out", str(args.out / f"errors_{label}_{precision}.csv")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
