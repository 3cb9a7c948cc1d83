"""Error of the ``batch_sample`` estimate against the full batch, per zoo network, design and phase.

Usage:
    .venv/bin/python scripts/batch_sample_error.py [--networks resnet18-cifar vgg16-cifar ...]
        [--batch 16] [--samples 2 4] [--configs scnn ant] [--regime swat] [--every 1] [--out FILE.json]

For every network (conv layers; ``--every n`` keeps every n-th layer, to bound the run time on the large
ImageNet networks) and design, simulates the training step at ``fast`` fidelity on the full batch and
with each sample size, and prints the signed error of the step's cycles and energy (total and per phase)
with the wall time of each run. Same seed, same operands: the only difference is the estimate.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from antsim.simulate import simulate_network
from antsim.sparsity.regimes import regime
from antsim.spec.arch import load_arch
from antsim.workloads.layers import PHASES, Layer
from antsim.workloads.zoo import network

DEFAULT_NETWORKS = ("resnet18-cifar", "vgg16-cifar", "wrn-16-8-cifar", "densenet121-cifar", "googlenet-imagenet",
                    "resnet50-imagenet")


def _step(arch, layers: list[Layer], densities, sparsity: str, k: int) -> dict:
    start = time.perf_counter()
    result = simulate_network(arch, layers, densities=densities, sparsity=sparsity, fidelity="fast", seed=0,
                              batch_sample=k)
    wall = time.perf_counter() - start
    per_phase = {p: sum(r.cycles for r in result.records if r.phase == p) for p in PHASES}
    return {"cycles": sum(per_phase.values()), "energy_j": sum(r.energy_j for r in result.records),
            "phase_cycles": per_phase, "wall_s": wall}


def _error(estimate: float, full: float) -> float:
    return estimate / full - 1.0 if full else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=list(DEFAULT_NETWORKS))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--samples", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--configs", nargs="+", default=["scnn", "ant"])
    parser.add_argument("--regime", default="swat")
    parser.add_argument("--every", type=int, default=1, help="keep every n-th conv layer")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    chosen = regime(args.regime)
    rows = []
    for name in args.networks:
        layers = [layer.with_batch(args.batch) for layer in network(name)
                  if isinstance(layer, Layer)][::args.every]
        for config in args.configs:
            arch = load_arch(f"arch_configs/{config}.yaml")
            full = _step(arch, layers, chosen.densities, chosen.sparsity, 0)
            for k in args.samples:
                est = _step(arch, layers, chosen.densities, chosen.sparsity, k)
                row = {"network": name, "layers": len(layers), "config": config, "batch": args.batch, "k": k,
                       "cycles_error": _error(est["cycles"], full["cycles"]),
                       "energy_error": _error(est["energy_j"], full["energy_j"]),
                       "phase_errors": {p: _error(est["phase_cycles"][p], full["phase_cycles"][p]) for p in PHASES},
                       "full_wall_s": full["wall_s"], "sample_wall_s": est["wall_s"]}
                rows.append(row)
                phases = " ".join(f"{p} {e:+.1%}" for p, e in row["phase_errors"].items())
                print(f"{name:20s} {len(layers):3d} layers {config:5s} batch {args.batch} k={k}: cycles"
                      f" {row['cycles_error']:+.1%} energy {row['energy_error']:+.1%} ({phases}); wall"
                      f" {full['wall_s']:.1f} s full, {est['wall_s']:.1f} s sampled", flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
