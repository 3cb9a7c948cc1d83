"""Speed and memory of the accelerator simulator on a whole sparse-training step.

A full ResNet-18 CIFAR training step (20 convs × fprop, dgrad, wgrad; W 0.1, A 0.1, dY 0.1, top-k
field operands) at ``fast`` fidelity, for scnn.yaml, ant.yaml and dense.yaml, pinned to one core with one BLAS
thread. Each measurement runs in a fresh subprocess so its peak RSS is its own. Also: how wall time
grows with the batch size (1, 2, 4) and with the plane size (every layer's H, W scaled ×2).

Usage: .venv/bin/python scripts/bench_sim.py [--repeats 3] [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def measure_once(design: str, batch: int, plane_scale: int) -> dict:
    """Run one training step in this process; wall split into operand generation and simulation."""
    import resource
    from dataclasses import replace

    from antsim.simulate import layer_seed, simulate_layer
    from antsim.sparsity.generators import make_tensors
    from antsim.spec.arch import load_arch
    from antsim.workloads.zoo import network

    arch = load_arch(ROOT / "arch_configs" / f"{design}.yaml")
    layers = [replace(layer, N=batch, H=layer.H * plane_scale, W=layer.W * plane_scale)
              for layer in network("resnet18-cifar")]
    t_gen = t_sim = 0.0
    cycles = 0
    for index, layer in enumerate(layers):
        t0 = time.perf_counter()
        tensors = make_tensors(layer, 0.1, 0.1, 0.1, seed=layer_seed(0, index))
        t1 = time.perf_counter()
        for phase in ("fprop", "dgrad", "wgrad"):
            cycles += simulate_layer(arch, layer, phase, tensors, fidelity="fast").cycles
        t_gen, t_sim = t_gen + t1 - t0, t_sim + time.perf_counter() - t1
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return {"design": design, "batch": batch, "plane_scale": plane_scale, "generate_s": t_gen,
            "simulate_s": t_sim, "wall_s": t_gen + t_sim, "peak_rss_mb": peak_mb, "cycles": cycles}


def run_child(design: str, batch: int, plane_scale: int) -> dict:
    env = {**os.environ, **ONE_THREAD}
    cmd = [sys.executable, __file__, "--child", design, str(batch), str(plane_scale)]
    if hasattr(os, "sched_getaffinity"):
        core = min(os.sched_getaffinity(0))
        cmd = ["taskset", "-c", str(core), *cmd]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def median_of(design: str, batch: int, plane_scale: int, repeats: int) -> dict:
    runs = [run_child(design, batch, plane_scale) for _ in range(repeats)]
    out = dict(runs[0])
    for key in ("generate_s", "simulate_s", "wall_s"):
        out[key] = statistics.median(r[key] for r in runs)
    out["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    out["repeats"] = repeats
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="skip the batch and plane growth runs")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", nargs=3, metavar=("DESIGN", "BATCH", "SCALE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_once(args.child[0], int(args.child[1]), int(args.child[2]))))
        return 0
    rows = [median_of(design, 1, 1, args.repeats) for design in ("scnn", "ant", "dense")]
    if not args.quick:
        rows += [median_of("ant", batch, 1, 1) for batch in (2, 4)]
        rows += [median_of("ant", 1, 2, 1)]
    print("| design | batch | plane | runs | generate (s) | simulate (s) | total (s) | peak RSS (MB) | cycles |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        plane = f"{32 * r['plane_scale']}²"
        print(f"| {r['design']} | {r['batch']} | {plane} | {r['repeats']} | {r['generate_s']:.2f} |"
              f" {r['simulate_s']:.2f} | {r['wall_s']:.2f} | {r['peak_rss_mb']:.0f} | {r['cycles']:,} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
