#!/usr/bin/env python
"""RCP fraction and ANT speedup on captured SWAT tensors vs synthetic tensors of the same densities.

For each capture (``antsim capture`` .npz of a zoo network), simulates every (layer, phase) on the
SCNN-like baseline and on ANT with (a) the captured tensors and (b) generator tensors with the captured
shapes and per-layer densities (``antsim.capture.stats.synthetic_like``), and reports per source:
RCP fraction of all Cartesian products, wgrad's share of products, the fraction of RCPs ANT skips, and
ANT's speedup and energy reduction over SCNN.

Usage::

    .venv/bin/python scripts/bench_capture.py reports/capture/resnet18-cifar_b4_g1.0.npz \
        reports/capture/resnet18-cifar_b4_g0.1.npz [--models swat topk_field uniform] [--fidelity fast]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]




def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("captures", nargs="+", type=Path)
    p.add_argument("--network", default="resnet18-cifar")
    p.add_argument("--baseline", type=Path, default=ROOT / "arch_configs" / "scnn.yaml")
    p.add_argument("--design", type=Path, default=ROOT / "arch_configs" / "ant.yaml")
    p.add_argument("--models", nargs="*", default=["swat", "topk_field", "uniform", "channel"])
    p.add_argument("--fidelity", default="fast", choices=("fast", "exact"))
    p.add_argument("--out", type=Path, default=ROOT / "reports" / "capture" / "bench_capture.md")
    return p.parse_args()


def products(result) -> dict[str, int]:
    total = valid = skipped = wgrad = 0
    for r in result.records:
        if r.products is None:
            continue
        total, valid, skipped = total + r.products.total, valid + r.products.valid, skipped + r.products.skipped
        wgrad += r.products.total if r.phase == "wgrad" else 0
    return {"total": total, "valid": valid, "rcp": total - valid, "skipped": skipped, "wgrad": wgrad}


def row(source: str, scnn, ant, seconds: float) -> str:
    ps, pa = products(scnn), products(ant)
    rcp_frac = ps["rcp"] / ps["total"] if ps["total"] else math.nan
    wgrad_share = ps["wgrad"] / ps["total"] if ps["total"] else math.nan
    anticipated = pa["skipped"] / pa["rcp"] if pa["rcp"] else math.nan
    st, at = scnn.totals, ant.totals
    speedup = st["time_s"] / at["time_s"]
    energy = st["energy_j"] / at["energy_j"] if st["energy_j"] and at["energy_j"] else math.nan
    return (f"| {source} | {rcp_frac:.3f} | {wgrad_share:.3f} | {anticipated:.3f} | {speedup:.2f} | "
            f"{energy:.2f} | {seconds:.0f} |")


def main() -> int:
    args = parse_args()
    import antsim
    from antsim.capture.stats import synthetic_like
    from antsim.simulate import simulate_network

    scnn_arch, ant_arch = antsim.load_arch(args.baseline), antsim.load_arch(args.design)
    lines = ["| tensors | RCP fraction (SCNN) | wgrad share of products | RCPs skipped by ANT | ANT speedup |"
             " ANT energy reduction | sim time (s) |", "|---|---|---|---|---|---|---|"]
    for path in args.captures:
        captured = antsim.load_tensors(path)
        batch = next(iter(captured.values())).activations.shape[0]
        layers = [layer.with_batch(batch) for layer in antsim.network(args.network)]
        sources = {f"captured {path.stem}": captured}
        sources.update({f"{m} like {path.stem}": synthetic_like(captured, m, seed=0) for m in args.models})
        for source, tensors in sources.items():
            t0 = time.perf_counter()
            results = [simulate_network(arch, layers, tensors=tensors, fidelity=args.fidelity)
                       for arch in (scnn_arch, ant_arch)]
            lines.append(row(source, *results, time.perf_counter() - t0))
            print(lines[-1], file=sys.stderr, flush=True)
    text = "\n".join(lines) + "\n"
    from antsim.results import write_text_atomic

    write_text_atomic(args.out, text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
