"""Arguments and helpers shared by several commands (workload selection, progress, output paths)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from antsim.errors import AntsimError
from antsim.workloads.layers import PHASES, Layer, read_layers_csv

T = TypeVar("T")

DEFAULT_NETWORK = "resnet18-cifar"


def add_workload_arguments(parser: argparse.ArgumentParser, default_network: str | None = DEFAULT_NETWORK) -> None:
    """``--network``, ``--layers-csv``, ``--batch``, ``--phases``."""
    group = parser.add_argument_group("workload")
    group.add_argument("--network", default=None,
                       help=f"network from the zoo (default {default_network}; see 'antsim zoo')")
    group.add_argument("--layers-csv", type=Path, default=None, help="layers CSV instead of a zoo network")
    group.add_argument("--batch", type=int, default=1, help="batch size N (default 1)")
    group.add_argument("--phases", default=",".join(PHASES), help="comma-separated subset of fprop,dgrad,wgrad")
    parser.set_defaults(_default_network=default_network)


def parse_phases(text: str) -> tuple[str, ...]:
    phases = tuple(p.strip() for p in text.split(",") if p.strip())
    bad = [p for p in phases if p not in PHASES]
    if bad or not phases:
        raise AntsimError(f"--phases: unknown phase {bad[0] if bad else text!r}; known: {', '.join(PHASES)}")
    return tuple(p for p in PHASES if p in phases)


def resolve_workload(args: argparse.Namespace) -> tuple[list[Layer], dict[str, Any]]:
    """Layers (at ``--batch``) and the workload echo ``{network, layers_csv, batch, phases, layers}``."""
    from antsim.workloads.zoo import network

    if args.batch < 1:
        raise AntsimError(f"--batch must be >= 1; got {args.batch}")
    if args.network and args.layers_csv:
        raise AntsimError("give either --network or --layers-csv, not both")
    if args.layers_csv:
        layers = read_layers_csv(args.layers_csv)
        name = args.layers_csv.stem
    else:
        name = args.network or args._default_network
        if name is None:
            raise AntsimError("give --network NAME or --layers-csv FILE")
        layers = network(name)
    layers = [layer.with_batch(args.batch) for layer in layers]
    workload = {
        "network": name,
        "layers_csv": str(args.layers_csv) if args.layers_csv else None,
        "batch": args.batch,
        "phases": list(parse_phases(args.phases)),
        "layers": [layer.to_dict() for layer in layers],
    }
    return layers, workload


def progress(items: Iterable[T], total: int | None = None, desc: str = "", unit: str = "it") -> Iterator[T]:
    """A tqdm progress bar on stderr."""
    from tqdm import tqdm

    yield from tqdm(items, total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True,
                    mininterval=0.5, leave=False)


def check_out_path(path: Path, suffixes: tuple[str, ...]) -> Path:
    """Reject an ``--out`` path with an unsupported suffix or an unwritable folder before doing work."""
    if path.suffix.lower() not in suffixes:
        raise AntsimError(f"--out {path}: must end in {' or '.join(suffixes)}")
    parent = path.parent if str(path.parent) else Path(".")
    if parent.exists() and not parent.is_dir():
        raise AntsimError(f"--out {path}: {parent} is not a folder")
    return path


def add_sparsity_arguments(parser: argparse.ArgumentParser, title: str = "sparsity and simulation") -> None:
    """Operand densities, generator or tensors file, fidelity, seed — shared by ``simulate`` and ``compare``."""
    group = parser.add_argument_group(title)
    group.add_argument("--density-w", type=float, default=0.1, help="weight density (default 0.1)")
    group.add_argument("--density-a", type=float, default=0.1, help="activation density (default 0.1)")
    group.add_argument("--density-g", type=float, default=0.1, help="output-gradient dY density (default 0.1)")
    group.add_argument("--density-a-saved", type=float, default=None,
                       help="density of the top-k copy of A saved for wgrad (SWAT; default: wgrad uses A)")
    source = group.add_mutually_exclusive_group()
    source.add_argument("--sparsity", default="swat",
                        help="operand generator: swat (calibrated on captured SWAT tensors, the default) |"
                             " topk_field | uniform | channel")
    source.add_argument("--tensors", type=Path, default=None, help="tensors .npz file instead of generated ones")
    group.add_argument("--fidelity", choices=("fast", "exact"), default="fast",
                       help="fast (vector granularity, default) or exact (every product)")
    group.add_argument("--seed", type=int, default=0, help="seed of the operand generators (default 0)")
    group.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")


def resolve_densities(args: argparse.Namespace) -> dict[str, float]:
    """``{"w", "a", "g"[, "a_saved"]}`` from the density flags, each checked to lie in [0, 1]."""
    from antsim.simulate import check_densities

    densities = {"w": args.density_w, "a": args.density_a, "g": args.density_g}
    if args.density_a_saved is not None:
        densities["a_saved"] = args.density_a_saved
    for key, flag in (("w", "w"), ("a", "a"), ("g", "g"), ("a_saved", "a-saved")):
        if key in densities and not 0.0 <= densities[key] <= 1.0:
            raise AntsimError(f"--density-{flag} must be in [0, 1]; got {densities[key]}")
    return check_densities(densities)


def resolve_tensors(args: argparse.Namespace, layers: list[Layer]) -> dict[str, Any] | None:
    """The ``--tensors`` file's operands, checked to cover every layer with matching shapes."""
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


def check_sparsity_model(name: str) -> None:
    """Reject an unknown ``--sparsity`` generator name."""
    from antsim.sparsity.generators import sparsity_models

    if name not in sparsity_models():
        raise AntsimError(f"--sparsity: unknown model {name!r}; known: {', '.join(sparsity_models())}")
