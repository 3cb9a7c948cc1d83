"""SCNN's density study on GoogLeNet: antsim's SCNN against its dense DCNN, beside the published curve.

Parashar et al. (SCNN, ISCA 2017, arXiv:1708.04485, the GoogLeNet sensitivity-to-density figure) sweep
weight and activation density together on GoogLeNet and plot SCNN's performance relative to an equally
provisioned dense design (DCNN): about 0.79x at density 1.0, break-even near 0.85, about 24x at 0.1.
This script runs the same sweep: GoogLeNet (``googlenet-imagenet``) without its first conv (whose input
is the dense RGB image, not a density the sweep can set), uniform masks with W = A density at each point,
fprop only (SCNN is an inference accelerator), ``fast`` fidelity. Each design in ``--arch`` (default:
``arch_configs/scnn.yaml``) is compared with ``--dense`` (default ``arch_configs/dense.yaml``):
speed = dense time / design time, energy ratio = design energy / dense energy. The break-even density
is interpolated linearly in log(speed) between the two sweep points that bracket speed 1.
``--set section.key=value`` (repeatable, YAML scalars) changes every design alike, dense one included,
e.g. ``--set accumulators.queue_depth=2`` for bank FIFOs (docs/accumulator_banks.md).

    .venv/bin/python scripts/scnn_density_sweep.py [--densities 1,0.85,...] [--arch FILE ...]
        [--dense FILE] [--set KEY=VALUE ...] [--layers K] [--jobs 2] [--seed 0] [--out sweep.csv]
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # runnable from a checkout without installing it

from antsim.errors import AntsimError  # noqa: E402
from antsim.spec.arch import ArchSpec  # noqa: E402
from antsim.workloads.layers import Layer  # noqa: E402

NETWORK = "googlenet-imagenet"
DENSITIES = (1.0, 0.85, 0.7, 0.5, 0.3, 0.1)  # the sweep points (W = A density)
# SCNN / DCNN speed on GoogLeNet read from the SCNN paper's density figure (Parashar et al., ISCA 2017),
# as quoted in antsim issue 12 and the team's design notes: 0.79x at 1.0, break-even ~0.85, ~24x at 0.1.
# The figure gives no readable values at the other sweep points, so none are invented here.
PAPER_SPEED = {1.0: 0.79, 0.85: 1.0, 0.1: 24.0}
PAPER_ENERGY = {1.0: 1.33}  # "33% more energy" than DCNN at density 1.0 (same source)
DEFAULT_SCNN = ROOT / "arch_configs" / "scnn.yaml"
DEFAULT_DENSE = ROOT / "arch_configs" / "dense.yaml"


@dataclass(frozen=True)
class Point:
    """One design's fprop totals at one density."""

    density: float
    design: str
    cycles: int
    time_s: float
    energy_j: float
    wall_s: float


@dataclass(frozen=True)
class Row:
    """A point set against the dense design at the same density (and the paper where it has a value)."""

    network: str
    density: float
    design: str
    cycles: int
    time_s: float
    energy_j: float
    speed_vs_dense: float
    energy_vs_dense: float
    paper_speed: float | None
    paper_energy: float | None
    wall_s: float


# --- inputs ------------------------------------------------------------------------------------------

def parse_densities(text: str) -> tuple[float, ...]:
    """``"1,0.5"`` → (1.0, 0.5); each in (0, 1], no repeats.

    Raises:
        AntsimError: naming ``--densities`` and the bad value.
    """
    out: list[float] = []
    for token in text.split(","):
        try:
            value = float(token)
        except ValueError:
            raise AntsimError(f"--densities: {token.strip()!r} is not a number") from None
        if not 0.0 < value <= 1.0 or value in out:
            raise AntsimError(f"--densities: {value!r} must be in (0, 1] and appear once")
        out.append(value)
    return tuple(out)


def study_layers(network: str = NETWORK, limit: int | None = None) -> list[Layer]:
    """The network's convs without the first one (dense image input), optionally only the first ``limit``.

    Raises:
        AntsimError: ``limit`` outside [1, number of convs]; WorkloadError: unknown network.
    """
    from antsim.workloads.zoo import network as zoo

    layers = zoo(network)[1:]
    if limit is not None and not 1 <= limit <= len(layers):
        raise AntsimError(f"--layers: {limit} must be in [1, {len(layers)}] for {network}")
    return layers if limit is None else layers[:limit]


def load_design(path: str | Path, changes: Sequence[str] = ()) -> ArchSpec:
    """The arch file with each ``section.key=value`` change (the value read as a YAML scalar) applied.

    Raises:
        AntsimError: a change not of the form ``section.key=value``; SpecError: a bad file, key or value.
    """
    import yaml

    from antsim.spec.arch import arch_from_dict, load_arch

    arch = load_arch(path)
    if not changes:
        return arch
    data = arch.to_dict()
    for change in changes:
        dotted, equals, text = change.partition("=")
        section, dot, key = dotted.partition(".")
        if not (equals and dot and section and key) or not isinstance(data.get(section, {}), dict):
            raise AntsimError(f"--set: {change!r} must be section.key=value (e.g. accumulators.queue_depth=2)")
        data.setdefault(section, {})[key] = yaml.safe_load(text)
    return arch_from_dict(data, f"{path} with --set {' '.join(changes)}")


def design_names(paths: Sequence[Path], changes: Sequence[str] = ()) -> list[str]:
    """Load each arch file (validating it, ``changes`` applied) and return its design name; names must be
    distinct.

    Raises:
        SpecError: a bad arch file or change; AntsimError: two files with the same design ``name``.
    """
    names: dict[str, Path] = {}
    for path in paths:
        name = load_design(path, changes).name
        if name in names:
            raise AntsimError(f"--arch {path}: name {name!r} is already the design in {names[name]}")
        names[name] = path
    return list(names)


# --- the sweep ---------------------------------------------------------------------------------------

def run_density(density: float, arch_paths: Sequence[str], layers: Sequence[Layer], seed: int,
                changes: Sequence[str] = ()) -> list[Point]:
    """Every design's fprop totals at one W = A density, on one set of uniform operands shared by all."""
    from antsim.simulate import layer_seed, simulate_network
    from antsim.sparsity.generators import make_tensors

    # dY is not read by fprop; it is generated at the same density only because Tensors carries it.
    tensors = {layer.name: make_tensors(layer, density, density, density, model="uniform",
                                        seed=layer_seed(seed, index))
               for index, layer in enumerate(layers)}
    points = []
    for path in arch_paths:
        arch = load_design(path, changes)
        start = time.perf_counter()
        totals = simulate_network(arch, layers, phases=("fprop",), tensors=tensors, fidelity="fast").totals
        points.append(Point(density, arch.name, int(totals["cycles"] or 0), float(totals["time_s"] or 0.0),
                            float(totals["energy_j"] or 0.0), time.perf_counter() - start))
    return points


def sweep(arch_paths: Sequence[Path], dense_path: Path, layers: Sequence[Layer],
          densities: Sequence[float], jobs: int = 1, seed: int = 0, network: str = NETWORK,
          changes: Sequence[str] = ()) -> list[Row]:
    """Run every design and the dense reference at every density (``changes`` applied to all); rows are
    density-major, dense first."""
    names = design_names([dense_path, *arch_paths], changes)
    paths = [str(p) for p in (dense_path, *arch_paths)]
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=min(jobs, len(densities))) as pool:
            futures = [pool.submit(run_density, d, paths, list(layers), seed, tuple(changes)) for d in densities]
            results = [f.result() for f in futures]
    else:
        results = [run_density(d, paths, layers, seed, changes) for d in densities]
    return [row for points in results for row in _against_dense(points, names[0], network)]


def _against_dense(points: Sequence[Point], dense: str, network: str) -> list[Row]:
    ref = next(p for p in points if p.design == dense)
    return [Row(network=network, density=p.density, design=p.design, cycles=p.cycles, time_s=p.time_s,
                energy_j=p.energy_j, speed_vs_dense=ref.time_s / p.time_s, energy_vs_dense=p.energy_j / ref.energy_j,
                paper_speed=PAPER_SPEED.get(p.density) if p.design != dense else None,
                paper_energy=PAPER_ENERGY.get(p.density) if p.design != dense else None, wall_s=p.wall_s)
            for p in points]


def break_even(curve: Sequence[tuple[float, float]]) -> float | None:
    """Density at which speed crosses 1, from the dense end of a (density, speed) curve.

    Between the two adjacent points (in decreasing density) that bracket 1, ln(speed) is taken as linear
    in density — exact for a curve whose speed grows geometrically as density falls. ``None`` when the
    curve does not cross 1 within its range (ahead or behind at every point).
    """
    ordered = sorted(curve, reverse=True)
    for (d_hi, s_hi), (d_lo, s_lo) in zip(ordered, ordered[1:], strict=False):
        if s_hi == 1.0:
            return d_hi
        if (s_hi - 1.0) * (s_lo - 1.0) <= 0.0:
            t = math.log(s_hi) / (math.log(s_hi) - math.log(s_lo))
            return d_hi + t * (d_lo - d_hi)
    return ordered[-1][0] if ordered and ordered[-1][1] == 1.0 else None


# --- outputs -----------------------------------------------------------------------------------------

def format_table(rows: Sequence[Row], dense: str) -> str:
    """Per density: dense cycles, then each design's cycles, speed and energy ratio, then the paper's."""
    designs = list(dict.fromkeys(r.design for r in rows if r.design != dense))
    columns = [f"{dense} cycles"] + [f"{d} {what}" for d in designs for what in ("cycles", "speed", "energy")]
    columns += ["paper speed", "paper energy"]
    widths = [max(11, len(c)) for c in columns]
    lines = ["density" + "".join(f"  {c:>{w}}" for c, w in zip(columns, widths, strict=True))]
    for density in dict.fromkeys(r.density for r in rows):
        at = {r.design: r for r in rows if r.density == density}
        cells = [f"{at[dense].cycles:,}"]
        for d in designs:
            cells += [f"{at[d].cycles:,}", _times(at[d].speed_vs_dense), _times(at[d].energy_vs_dense)]
        cells += [_times(PAPER_SPEED.get(density)), _times(PAPER_ENERGY.get(density))]
        lines.append(f"{density:>7.2f}" + "".join(f"  {c:>{w}}" for c, w in zip(cells, widths, strict=True)))
    for d in designs:
        curve = [(r.density, r.speed_vs_dense) for r in rows if r.design == d]
        lines.append(f"break-even density ({d} speed = {dense}): {_density(break_even(curve), curve)}"
                     f"   (paper: {_density(break_even(sorted(PAPER_SPEED.items())), [])})")
    return "\n".join(lines)


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _density(value: float | None, curve: Sequence[tuple[float, float]]) -> str:
    if value is not None:
        return f"{value:.3f}"
    if curve and all(s > 1.0 for _, s in curve):
        return f"above {max(d for d, _ in curve):.2f} (faster at every point)"
    return f"below {min(d for d, _ in curve):.2f} (slower at every point)" if curve else "n/a"


def write_csv(rows: Sequence[Row], path: Path) -> None:
    """One row per (density, design) with every field of ``Row`` (missing paper values empty)."""
    fields = list(Row.__dataclass_fields__)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else v for k, v in asdict(row).items()})


# --- command line ------------------------------------------------------------------------------------

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--densities", default=",".join(map(str, DENSITIES)),
                        help="comma-separated W = A densities (default 1.0,0.85,0.7,0.5,0.3,0.1)")
    parser.add_argument("--arch", type=Path, action="append", default=None,
                        help="sparse design to compare with the dense one; repeat for several "
                             "(default arch_configs/scnn.yaml)")
    parser.add_argument("--dense", type=Path, default=DEFAULT_DENSE, help="the reference (default dense.yaml)")
    parser.add_argument("--set", dest="changes", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="change every design alike, dense one included (repeatable)")
    parser.add_argument("--network", default=NETWORK, help=f"zoo network (default {NETWORK})")
    parser.add_argument("--layers", type=int, default=None, help="only the first K convs after conv1 (quick runs)")
    parser.add_argument("--jobs", type=int, default=1, help="processes over densities (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="operand seed (default 0)")
    parser.add_argument("--out", type=Path, default=None, help="write the rows as CSV")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.jobs < 1:
            raise AntsimError(f"--jobs: {args.jobs} must be >= 1")
        densities = parse_densities(args.densities)
        layers = study_layers(args.network, args.layers)
        archs = args.arch or [DEFAULT_SCNN]
        start = time.perf_counter()
        rows = sweep(archs, args.dense, layers, densities, args.jobs, args.seed, args.network, args.changes)
    except AntsimError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    dense = rows[0].design
    changed = f"; every design with {', '.join(args.changes)}" if args.changes else ""
    print(f"{args.network}: {len(layers)} convs (first conv left out), fprop, uniform masks, W = A density, "
          f"fast fidelity, seed {args.seed}; speed = {dense} time / design time, energy = design / {dense}{changed}")
    print(format_table(rows, dense))
    print(f"wall time {time.perf_counter() - start:.0f} s with --jobs {args.jobs}", file=sys.stderr)
    if args.out is not None:
        write_csv(rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
