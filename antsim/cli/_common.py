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
