"""Time and energy per image of a training step as the batch grows (issue 12: batch-aware dataflow).

Runs scnn.yaml and ant.yaml over a zoo network at several batch sizes under a named regime and prints,
per design and batch: time and energy per image, the DRAM share of the energy, DRAM bits per image and
the batch tile the mapping chose (most common over the layer phases).

    .venv/bin/python scripts/batch_scaling.py --network resnet18-cifar --batches 1 4 16 --regime swat-gs
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from antsim.simulate import simulate_network
from antsim.sparsity.regimes import regime
from antsim.spec.arch import load_arch
from antsim.workloads.zoo import network


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="resnet18-cifar")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--regime", default="swat-gs")
    parser.add_argument("--arch", nargs="+", default=["arch_configs/scnn.yaml", "arch_configs/ant.yaml"])
    parser.add_argument("--layers", type=int, default=0, help="first K layers only (0: all)")
    args = parser.parse_args(argv)
    chosen = regime(args.regime)
    print("| design | batch | time/image (µs) | energy/image (µJ) | DRAM share | DRAM Mbit/image | batch tile"
          " | run (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for path in args.arch:
        arch = load_arch(path)
        for batch in args.batches:
            layers = [layer.with_batch(batch) for layer in network(args.network)]
            layers = layers[:args.layers] if args.layers else layers
            start = time.perf_counter()
            result = simulate_network(arch, layers, densities=dict(chosen.densities), sparsity=chosen.sparsity)
            elapsed = time.perf_counter() - start
            energy = sum(r.energy_j for r in result.records)
            dram_j = sum(r.energy_breakdown_j.get("dram", 0.0) for r in result.records)
            dram_bits = sum(r.actions["dram"]["read_bits"] + r.actions["dram"]["write_bits"] for r in result.records)
            tile = statistics.mode(int(r.details["tiling"]["batch_tile"]) for r in result.records)
            time_s = sum(r.time_s for r in result.records)
            print(f"| {arch.name} | {batch} | {time_s / batch * 1e6:.1f} | {energy / batch * 1e6:.1f} |"
                  f" {dram_j / energy:.0%} | {dram_bits / batch / 1e6:.2f} | {tile} | {elapsed:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
