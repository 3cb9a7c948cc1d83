"""``antsim simulate``: time, energy and area of an accelerator design on a training step."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from antsim.cli._common import (
    add_sparsity_arguments,
    add_workload_arguments,
    check_out_path,
    check_sparsity_model,
    parse_phases,
    resolve_densities,
    resolve_tensors,
    resolve_workload,
)
from antsim.vocabulary import parse_timing

HELP = "simulate an accelerator design (arch YAML) on a network's training step (fprop, dgrad, wgrad)"
# An error's subject (antsim.errors.AntsimError) -> the flag that gave it; main() adds it to the message.
FLAGS = {"force": "{message} (--force)"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--arch", type=Path, required=True, help="arch YAML (e.g. arch_configs/ant.yaml)")
    add_workload_arguments(parser)
    add_sparsity_arguments(parser)
    parser.add_argument("--out", type=Path, required=True, help="result file: .json (antsim.result/1) or .csv")
    add_timing_argument(parser)
    add_force_argument(parser)


def add_timing_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timing", default="events",
                        help="timing tier: events (simpy discrete-event model, the default) | closed_form (the"
                             " same timing as a recurrence, antsim.sim.closed_form; docs/timing_tier.md)")


def add_force_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--force", action="store_true",
                        help="run even when the resource guard estimates more memory than is available or more"
                             " timing steps than its limit (antsim.guard)")


def run(args: argparse.Namespace) -> int:
    from antsim.simulate import check_dram_technology, simulate_network
    from antsim.spec.arch import load_arch

    out = check_out_path(args.out, (".json", ".csv"))
    timing = parse_timing(args.timing, "--timing")
    arch = load_arch(args.arch)
    check_dram_technology(arch, str(args.arch))
    layers, workload = resolve_workload(args)
    phases = parse_phases(args.phases)
    densities = resolve_densities(args)
    tensors = resolve_tensors(args, layers)
    if tensors is None:
        check_sparsity_model(args.sparsity)
    workload = workload.with_keys(tensors=str(args.tensors) if args.tensors else None,
                                  sparsity=None if tensors is not None else args.sparsity, regime=args.regime)
    from antsim.guard import guard_run

    guard_run([arch], layers, phases, densities, tensors, args.fidelity, force=args.force)
    result = simulate_network(arch, layers, phases=phases, densities=densities, sparsity=args.sparsity,
                              tensors=tensors, fidelity=args.fidelity, seed=args.seed,
                              progress=not args.no_progress, workload=workload, batch_sample=args.batch_sample,
                              timing=timing)
    if out.suffix.lower() == ".csv":
        result.write_csv(out)
    else:
        result.write_json(out)
    sys.stdout.write(summary(result) + f"wrote {out}\n")
    return 0


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


def summary(result: Any) -> str:
    """Short human summary of a NetworkResult: totals, products and where the cycles went."""
    totals = result.totals
    total = sum(r.products.total for r in result.records if r.products)
    valid = sum(r.products.valid for r in result.records if r.products)
    skipped = sum(r.products.skipped for r in result.records if r.products)
    rcp = total - valid
    w = result.workload
    lines = [
        f"{result.design}: {w.get('network')} x{len(result.records)} (layer, phase) records,"
        f" batch {w.get('batch')}, fidelity {w.get('fidelity')}",
        f"  cycles {totals['cycles']:,}  time {totals['time_s'] * 1e3:.4f} ms"
        f"  energy {(totals['energy_j'] or 0.0) * 1e3:.4f} mJ  area {result.area_mm2 or 0.0:.3f} mm2",
        f"  products {total:,}  valid {valid:,}  RCP {_pct(rcp, total):.1f}%"
        f"  skipped {_pct(skipped, total):.1f}% of products ({_pct(skipped, rcp):.1f}% of RCPs)",
    ]
    for phase in w.get("phases", []):
        cycles = sum(r.cycles or 0 for r in result.records if r.phase == phase)
        lines.append(f"  {phase:<6} cycles {cycles:,}")
    return "\n".join(lines) + "\n"
