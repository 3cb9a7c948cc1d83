"""Benchmark the dataflow stage: ``map_phase(fast)`` on ResNet-18 CIFAR layers.

Usage: .venv/bin/python scripts/bench_dataflow.py [--repeats 5] [--network resnet18-cifar] [--density 0.1]

Prints (1) the median time of ``fast`` on one full 64→64 3×3 32×32 layer (batch 1), per phase, for the
SCNN baseline and ANT configs with the product accounting; (2) the time for every layer × phase of the
network under both configs; (3) fast-vs-exact conflict cycles on a reduced layer.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from antsim.dataflow import map_phase
from antsim.sparsity.generators import make_tensors
from antsim.spec.arch import load_arch
from antsim.workloads.layers import PHASES, Layer
from antsim.workloads.zoo import network

CONFIGS = ("arch_configs/scnn.yaml", "arch_configs/ant.yaml")


def time_layer(arch, layer: Layer, tensors, repeats: int) -> None:
    for phase in PHASES:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            work = map_phase(arch, layer, phase, tensors)
            times.append(time.perf_counter() - start)
        p = work.products
        print(f"  {arch.name:5s} {phase:5s} median {statistics.median(times):6.3f} s  total {p.total:>11,d}"
              f"  valid {p.valid:>9,d}  rcp {p.rcp / max(p.total, 1):6.1%}  skipped/rcp"
              f" {p.skipped / max(p.rcp, 1):6.1%}  issued pairs {int(work.issued_pairs.sum()):>10,d}"
              f"  conflicts {int(work.conflict_cycles.sum()):>8,d}")


def time_network(arch, name: str, density: float) -> None:
    layers = network(name)
    start = time.perf_counter()
    worst = (0.0, "")
    for layer in layers:
        tensors = make_tensors(layer, density, density, density, seed=0)
        for phase in PHASES:
            t0 = time.perf_counter()
            map_phase(arch, layer, phase, tensors)
            worst = max(worst, (time.perf_counter() - t0, f"{layer.name}/{phase}"))
    print(f"  {arch.name:5s} {name}: {len(layers)} layers x 3 phases in {time.perf_counter() - start:6.2f} s"
          f" (slowest {worst[1]} {worst[0]:.3f} s; tensor generation included)")


def conflicts_fast_vs_exact(density: float) -> None:
    layer = Layer("reduced", N=1, C=16, K=16, H=32, W=32, R=3, S=3, stride=1, pad=1)
    tensors = make_tensors(layer, density, density, density, seed=0)
    for path in CONFIGS:
        arch = load_arch(path)
        for phase in PHASES:
            fast = map_phase(arch, layer, phase, tensors)
            exact = map_phase(arch, layer, phase, tensors, fidelity="exact")
            same = all(np.array_equal(getattr(fast, f), getattr(exact, f)) for f in
                       ("issued_pairs", "valid_products", "partial_outputs", "halo_outputs"))
            print(f"  {arch.name:5s} {phase:5s} conflicts exact {int(exact.conflict_cycles.sum()):>7,d}"
                  f"  fast {int(fast.conflict_cycles.sum()):>7,d}  other fields identical: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--network", default="resnet18-cifar")
    parser.add_argument("--density", type=float, default=0.1)
    args = parser.parse_args()
    layer = Layer("layer1.0.conv1", N=1, C=64, K=64, H=32, W=32, R=3, S=3, stride=1, pad=1)
    tensors = make_tensors(layer, args.density, args.density, args.density, seed=0)
    print(f"fast on {layer.name} (64->64, 3x3, 32x32, batch 1, density {args.density}, topk_field):")
    for path in CONFIGS:
        time_layer(load_arch(path), layer, tensors, args.repeats)
    print("whole network, fast:")
    for path in CONFIGS:
        time_network(load_arch(path), args.network, args.density)
    print("bank-conflict cycles, fast vs exact (16->16, 3x3, 32x32):")
    conflicts_fast_vs_exact(args.density)


if __name__ == "__main__":
    main()
