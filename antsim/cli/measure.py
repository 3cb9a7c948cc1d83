"""``antsim measure``: time fprop / dgrad / wgrad of each layer with PyTorch on CPU or CUDA (.csv)."""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path
from typing import Any

from antsim.cli._common import (
    add_workload_arguments,
    check_out_path,
    parse_phases,
    progress,
    resolve_workload,
    seed_value,
)

HELP = "measure per-layer fprop/dgrad/wgrad times with PyTorch (CPU or CUDA baseline) into a CSV"
# An error's subject (antsim.errors.AntsimError) -> the flag that gave it; main() adds it to the message.
FLAGS = {"precision": "--precision", "repeats": "--repeats", "warmup": "--warmup", "device": "--device"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workload_arguments(parser, default_network=None)
    group = parser.add_argument_group("measurement")
    group.add_argument("--precision", choices=("fp32", "fp16", "bf16"), default="fp32", help="precision (fp32)")
    group.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where to run (cpu)")
    group.add_argument("--repeats", type=int, default=10, help="timed calls per (layer, phase); median kept (10)")
    group.add_argument("--warmup", type=int, default=2, help="untimed calls before timing (2)")
    group.add_argument("--threads", type=int, default=None, help="CPU threads for torch (default: torch's)")
    group.add_argument("--seed", type=seed_value, default=0, help="seed of the operand values (0)")
    parser.add_argument("--out", type=Path, required=True, help="CSV to write (one row per layer and phase)")


def run(args: argparse.Namespace) -> int:
    from antsim.capture import require_torch
    from antsim.errors import AntsimError

    # Every argument is checked before torch is imported or a layer is timed.
    check_out_path(args.out, (".csv",))
    phases = parse_phases(args.phases)
    layers, workload = resolve_workload(args)
    for flag, value, low in (("--threads", args.threads, 1), ("--repeats", args.repeats, 1),
                             ("--warmup", args.warmup, 0)):
        if value is not None and value < low:
            raise AntsimError(f"{flag} must be >= {low}; got {value}")
    torch = require_torch("measure")
    from antsim.measure.timing import COLUMNS, measure_layers
    from antsim.results import write_text_atomic

    previous_threads = torch.get_num_threads()
    torch.set_num_threads(args.threads or previous_threads)
    try:
        rows = measure_layers(progress(layers, total=len(layers), desc=f"measure {args.device}", unit="layer"),
                              phases, args.device, args.precision, args.repeats, args.warmup, args.seed)
    finally:
        torch.set_num_threads(previous_threads)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(args.out, buffer.getvalue())
    sys.stdout.write(_summary(rows, workload["network"], args.out))
    return 0


def _summary(rows: list[dict[str, Any]], network: str, out: Path) -> str:
    first = rows[0]
    lines = [f"{network}: {len(rows)} (layer, phase) timings on {first['device']} ({first['device_name']}), "
             f"{first['precision']}, torch {first['torch_version']}, median of {first['repeats']}"]
    for phase in dict.fromkeys(r["phase"] for r in rows):
        total = sum(r["time_s"] for r in rows if r["phase"] == phase)
        lines.append(f"  {phase:6s} {total * 1e3:10.3f} ms")
    lines.append(f"  total  {sum(r['time_s'] for r in rows) * 1e3:10.3f} ms")
    lines.append(f"wrote {out}")
    return "\n".join(lines) + "\n"
