"""ANT vs SCNN at a training batch under each named regime: speed, energy with and without DRAM, area.

For every network and regime, SCNN (scnn.yaml) and ANT (ant.yaml) run the whole training step (fprop,
dgrad, wgrad of every conv) at ``--batch``; the table gives ANT's speedup, its energy reduction with DRAM
and on chip only (DRAM energy left out of both designs), their geometric means over the networks, and
ANT's area increment for the whole chip, next to the ANT paper's 3.71× / 4.40× (geomean over 5 networks).

    .venv/bin/python scripts/ant_study_batch.py --networks resnet18-cifar vgg16-cifar --batch 16 --jobs 2

``--batch-sample K`` maps K images per layer and estimates the rest (``antsim.dataflow.sampling``, error
in BENCHMARKS.md); ``--set section.key=value`` (repeatable) changes both designs, for the sensitivity of
the comparison to one modelling choice (e.g. ``accumulators.bank_hash=mod``, ``mapping.pe_sync=free``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import yaml

from antsim.simulate import design_area_mm2, simulate_network
from antsim.sparsity.regimes import REGIMES, regime
from antsim.spec.arch import ArchSpec, arch_from_dict, load_arch
from antsim.workloads.layers import Layer
from antsim.workloads.zoo import network

PAPER = (3.71, 4.40)  # ANT paper (ISCA 2022): geomean speedup / energy reduction over SCNN, 5 networks


def design(name: str, changes: tuple[str, ...]) -> ArchSpec:
    """``arch_configs/<name>.yaml`` with each ``section.key=value`` change (YAML scalars) applied."""
    data = load_arch(f"arch_configs/{name}.yaml").to_dict()
    for change in changes:
        path, _, text = change.partition("=")
        section, _, key = path.partition(".")
        data.setdefault(section, {})[key] = yaml.safe_load(text)
    return arch_from_dict(data, f"{name} with {', '.join(changes)}" if changes else name)


def run(job: tuple[str, str, str, int, int, tuple[str, ...]]
        ) -> tuple[str, str, str, float, float, float, float, float, float]:
    """(design, network, regime, batch, sample, changes) → time, energy, on-chip energy, wall seconds,
    RCPs per product of the mapping (``rcp / total``) and RCPs skipped (``skipped / rcp``)."""
    name_of_design, net, name, batch, sample, changes = job
    chosen = regime(name)
    start = time.perf_counter()
    layers = [layer.with_batch(batch) for layer in network(net) if isinstance(layer, Layer)]
    result = simulate_network(design(name_of_design, changes), layers, densities=dict(chosen.densities),
                              sparsity=chosen.sparsity, batch_sample=sample)
    energy = math.fsum(r.energy_j for r in result.records)
    dram = math.fsum(r.energy_breakdown_j.get("dram", 0.0) for r in result.records)
    time_s = math.fsum(r.time_s for r in result.records)
    products = [r.products for r in result.records if r.products is not None]
    total, rcp = sum(p.total for p in products), sum(p.rcp for p in products)
    skipped = sum(p.skipped for p in products)
    return (name_of_design, net, name, time_s, energy, energy - dram, time.perf_counter() - start,
            rcp / max(1, total), skipped / max(1, rcp))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=["resnet18-cifar", "vgg16-cifar"])
    parser.add_argument("--regimes", nargs="+", default=["swat", "swat-gs"], choices=list(REGIMES))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--batch-sample", type=int, default=0, help="images mapped per layer (0 = all)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="change both designs (repeatable)")
    args = parser.parse_args(argv)
    changes = tuple(args.set)
    jobs = [(d, n, r, args.batch, args.batch_sample, changes)
            for n in args.networks for r in args.regimes for d in ("scnn", "ant")]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = {(d, n, r): rest for d, n, r, *rest in pool.map(run, jobs)}
    print(f"batch {args.batch}, fast fidelity, seed 0, batch_sample {args.batch_sample},"
          f" changes: {', '.join(changes) or 'none'}")
    print("| network | regime | ANT speedup | energy reduction | on-chip energy reduction | SCNN RCP % of products"
          " | RCPs ANT skips | run s (scnn/ant) |")
    print("|---|---|---|---|---|---|---|---|")
    ratios: dict[str, list[tuple[float, float, float]]] = {r: [] for r in args.regimes}
    for n in args.networks:
        for r in args.regimes:
            s, a = rows[("scnn", n, r)], rows[("ant", n, r)]
            ratio = (s[0] / a[0], s[1] / a[1], s[2] / a[2])
            ratios[r].append(ratio)
            print(f"| {n} | {r} | {ratio[0]:.2f}× | {ratio[1]:.2f}× | {ratio[2]:.2f}× | {100 * s[4]:.1f} %"
                  f" | {100 * a[5]:.1f} % | {s[3]:.0f} / {a[3]:.0f} |")
    for r, values in ratios.items():
        geo = [math.exp(sum(math.log(v[i]) for v in values) / len(values)) for i in range(3)]
        print(f"| geomean | {r} | {geo[0]:.2f}× | {geo[1]:.2f}× | {geo[2]:.2f}× | | |"
              f" paper {PAPER[0]}× / {PAPER[1]}× |")
    scnn_area, ant_area = (design_area_mm2(design(d, changes)) for d in ("scnn", "ant"))
    print(f"area: scnn {scnn_area:.3f} mm², ant {ant_area:.3f} mm², increment {ant_area - scnn_area:.4f} mm²"
          f" ({(ant_area / scnn_area - 1):.2%} of the chip)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
