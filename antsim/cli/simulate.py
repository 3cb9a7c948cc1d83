"""``antsim simulate``: time, energy and area of an accelerator design on a training step."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from antsim.cli._common import add_workload_arguments, check_out_path, parse_phases, resolve_workload

HELP = "simulate an accelerator design (arch YAML) on a network's training step (fprop, dgrad, wgrad)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--arch", type=Path, required=True, help="arch YAML (e.g. arch_configs/ant.yaml)")
    add_workload_arguments(parser)
    group = parser.add_argument_group("sparsity")
    group.add_argument("--density-w", type=float, default=0.1, help="weight density (default 0.1)")
    group.add_argument("--density-a", type=float, default=0.1, help="activation density (default 0.1)")
    group.add_argument("--density-g", type=float, default=0.1, help="output-gradient dY density (default 0.1)")
    group.add_argument("--density-a-saved", type=float, default=None,
                       help="density of the top-k copy of A saved for wgrad (SWAT; default: wgrad uses A)")
    source = group.add_mutually_exclusive_group()
    source.add_argument("--sparsity", default="topk_field",
                        help="operand generator: uniform | topk_field | channel (default topk_field)")
    source.add_argument("--tensors", type=Path, default=None, help="tensors .npz file instead of generated ones")
    parser.add_argument("--fidelity", choices=("fast", "exact"), default="fast",
                        help="fast (vector granularity, default) or exact (every product)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the operand generators (default 0)")
    parser.add_argument("--out", type=Path, required=True, help="result file: .json (antsim.result/1) or .csv")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _densities(args: argparse.Namespace) -> dict[str, float]:
    from antsim.simulate import check_densities

    dens = {"w": args.density_w, "a": args.density_a, "g": args.density_g}
    if args.density_a_saved is not None:
        dens["a_saved"] = args.density_a_saved
    for key, flag in (("w", "w"), ("a", "a"), ("g", "g"), ("a_saved", "a-saved")):
        if key in dens and not 0.0 <= dens[key] <= 1.0:
            from antsim.errors import AntsimError

            raise AntsimError(f"--density-{flag} must be in [0, 1]; got {dens[key]}")
    return check_densities(dens)


def _tensors(args: argparse.Namespace, layers: list[Any]) -> dict[str, Any] | None:
    if args.tensors is None:
        return None
    from antsim.errors import WorkloadError
    from antsim.sparsity.tensors import load_tensors

    tensors = load_tensors(args.tensors)
    for layer in layers:
        if layer.name not in tensors:
            raise WorkloadError(f"{args.tensors}: no tensors for layer {layer.name!r}")
        tensors[layer.name].check_shapes(layer)
    return tensors


def _check_sparsity(name: str) -> None:
    from antsim.errors import AntsimError
    from antsim.sparsity.generators import sparsity_models

    if name not in sparsity_models():
        raise AntsimError(f"--sparsity: unknown model {name!r}; known: {', '.join(sparsity_models())}")


def run(args: argparse.Namespace) -> int:
    from antsim.simulate import simulate_network
    from antsim.spec.arch import load_arch

    out = check_out_path(args.out, (".json", ".csv"))
    arch = load_arch(args.arch)
    layers, workload = resolve_workload(args)
    phases = parse_phases(args.phases)
    densities = _densities(args)
    tensors = _tensors(args, layers)
    if tensors is None:
        _check_sparsity(args.sparsity)
    workload.update(tensors=str(args.tensors) if args.tensors else None,
                    sparsity=None if tensors is not None else args.sparsity)
    result = simulate_network(arch, layers, phases=phases, densities=densities, sparsity=args.sparsity,
                              tensors=tensors, fidelity=args.fidelity, seed=args.seed,
                              progress=not args.no_progress, workload=workload)
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
