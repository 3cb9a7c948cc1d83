"""Error and speed of the closed-form timing tier against the discrete-event (simpy) model on the zoo.

Usage:
    .venv/bin/python scripts/timing_tier_vs_des.py [--networks resnet18-cifar ... | all] [--every N]
        [--configs scnn ant dense] [--batches 1 16] [--batch-sample 2] [--repeats 3] [--out FILE.json]

For every network (``antsim zoo``; ``--every n`` keeps every n-th layer of the networks in ``LARGE``, and
``--every-all`` of all of them), design and batch, maps each (layer, phase) once at ``fast`` fidelity (batch
16 with ``--batch-sample 2`` images mapped), then times the same ``PhaseWork`` with
``simulate_phase(timing="events")`` and ``timing="closed_form"`` (``--repeats`` runs each, median) and
compares the two: records whose cycles differ, the largest |cycle error| and the largest relative error of
a record, and the error of the step's total. The script pins itself to one core with one BLAS thread.
Operands: the default generator (swat) at the default densities (W, A, dY 0.1), seed 0.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # before numpy is imported
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# The default run: ResNet-18 CIFAR whole and four other families subsampled (≈ 330 s on one core of the shared
# machine at load ≈ 8; VGG-16, WRN, BERT and the LSTM add minutes each: "--networks all", or name them).
DEFAULT_NETWORKS = ("resnet18-cifar", "densenet121-cifar", "googlenet-imagenet", "resnet50-imagenet",
                    "vit-lite-7-4-cifar")
LARGE = ("densenet121", "googlenet", "resnet50", "vgg16-imagenet", "resnet18-imagenet", "wrn-16-8", "bert-base",
         "vit-lite", "lstm")


def _phase_work(arch: Any, layer: Any, phase: str, tensors: Any, batch_sample: int) -> tuple[Any, Any]:
    """The dataflow's work and stream densities of one (layer, phase), as ``simulate_layer`` makes them."""
    from antsim.dataflow import map_phase
    from antsim.dataflow.gemm import gemm_stream_densities, map_gemm_phase
    from antsim.sim import Densities
    from antsim.simulate import stream_densities
    from antsim.workloads.gemm import Gemm

    if isinstance(layer, Gemm):
        return (map_gemm_phase(arch, layer, phase, tensors, "fast"),
                Densities(*gemm_stream_densities(arch, layer, phase, tensors)))
    work = map_phase(arch, layer, phase, tensors, "fast", batch_sample=batch_sample)
    return work, stream_densities(arch, work, tensors, phase)


def _timed(arch: Any, work: Any, densities: Any, repeats: int) -> tuple[Any, Any, dict[str, float]]:
    """Both tiers' timings of one phase and the median seconds of: the schedule both build first
    (``build_schedule``), the whole ``simulate_phase`` of each tier (runs alternate, so load drifts hit
    both alike)."""
    from antsim.sim import build_schedule, simulate_phase

    runs: dict[str, list[float]] = {"schedule": [], "events": [], "closed_form": []}
    results: dict[str, Any] = {}
    for _ in range(repeats):
        start = time.perf_counter()
        build_schedule(arch, work, densities)
        runs["schedule"].append(time.perf_counter() - start)
        for timing in ("events", "closed_form"):
            start = time.perf_counter()
            results[timing] = simulate_phase(arch, work, densities, timing=timing)  # type: ignore[arg-type]
            runs[timing].append(time.perf_counter() - start)
    return results["events"], results["closed_form"], {k: statistics.median(v) for k, v in runs.items()}


def compare_network(name: str, config: str, batch: int, every: int, batch_sample: int, repeats: int) -> dict:
    """One (network, design, batch): both tiers on every (layer, phase), errors and timing-stage seconds."""
    from antsim.simulate import DEFAULT_DENSITIES, _layer_tensors, check_densities
    from antsim.spec.arch import load_arch
    from antsim.workloads.zoo import network

    arch = load_arch(ROOT / "arch_configs" / f"{config}.yaml")
    layers = [layer.with_batch(batch) for layer in network(name)][::every]
    densities = check_densities(DEFAULT_DENSITIES)
    row: dict[str, Any] = {"network": name, "config": config, "batch": batch, "layers": len(layers),
                           "records": 0, "differing": 0, "max_abs_error": 0, "max_rel_error": 0.0,
                           "cycles_events": 0, "cycles_closed_form": 0, "schedule_s": 0.0, "events_s": 0.0,
                           "closed_form_s": 0.0, "mapping_s": 0.0}
    sample = batch_sample if batch > 1 else 0
    for index, layer in enumerate(layers):
        tensors = _layer_tensors(layer, index, densities, "swat", None, 0)
        for phase in ("fprop", "dgrad", "wgrad"):
            start = time.perf_counter()
            work, stream = _phase_work(arch, layer, phase, tensors, sample)
            row["mapping_s"] += time.perf_counter() - start
            events, closed, seconds = _timed(arch, work, stream, repeats)
            error = closed.cycles - events.cycles
            row["records"] += 1
            row["differing"] += int(error != 0)
            row["max_abs_error"] = max(row["max_abs_error"], abs(error))
            if events.cycles:
                row["max_rel_error"] = max(row["max_rel_error"], abs(error) / events.cycles)
            row["cycles_events"] += events.cycles
            row["cycles_closed_form"] += closed.cycles
            for key in ("schedule", "events", "closed_form"):
                row[f"{key}_s"] += seconds[key]
    return row


def _table(rows: list[dict]) -> str:
    """Markdown: errors, then the timing stage (``simulate_phase``) and its engine part (stage − schedule)."""
    lines = ["| network | design | batch | layers | records | differ | max abs err | max rel err | step err |"
             " stage DES s | stage CF s | stage ratio | engine DES s | engine CF s | engine ratio |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        step = (r["cycles_closed_form"] - r["cycles_events"]) / r["cycles_events"] if r["cycles_events"] else 0.0
        engine_des, engine_cf = r["events_s"] - r["schedule_s"], r["closed_form_s"] - r["schedule_s"]
        lines.append(f"| {r['network']} | {r['config']} | {r['batch']} | {r['layers']} | {r['records']} |"
                     f" {r['differing']} | {r['max_abs_error']} | {r['max_rel_error']:.1e} | {step:.1e} |"
                     f" {r['events_s']:.3f} | {r['closed_form_s']:.3f} | {_ratio(r['events_s'], r['closed_form_s'])} |"
                     f" {engine_des:.3f} | {engine_cf:.3f} | {_ratio(engine_des, engine_cf)} |")
    return "\n".join(lines)


def _ratio(slow: float, fast: float) -> str:
    return f"{slow / fast:.1f}x" if fast > 0 else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=list(DEFAULT_NETWORKS), help="zoo names, or 'all'")
    parser.add_argument("--configs", nargs="+", default=["scnn", "ant", "dense"])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--batch-sample", type=int, default=2, help="images mapped per layer at batch > 1")
    parser.add_argument("--every", type=int, default=12, help="keep every n-th layer of the large networks")
    parser.add_argument("--every-all", type=int, default=1, help="keep every n-th layer of the others")
    parser.add_argument("--repeats", type=int, default=3, help="timing runs per tier and phase (median)")
    parser.add_argument("--core", type=int, default=None, help="pin to this core (default: the first allowed)")
    parser.add_argument("--out", type=Path, default=None, help="write the rows as JSON")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.core if args.core is not None else min(os.sched_getaffinity(0))})
    from antsim.workloads.zoo import networks

    names = networks() if args.networks == ["all"] else args.networks
    rows = []
    started = time.perf_counter()
    for name in names:
        every = args.every if any(name.startswith(big) for big in LARGE) else args.every_all
        for config in args.configs:
            for batch in args.batches:
                rows.append(compare_network(name, config, batch, every, args.batch_sample, args.repeats))
                r = rows[-1]
                print(f"{name} {config} b{batch}: {r['differing']}/{r['records']} differ, max |err| "
                      f"{r['max_abs_error']}, DES {r['events_s']:.3f} s, closed form {r['closed_form_s']:.3f} s"
                      f" ({time.perf_counter() - started:.0f} s)", flush=True)
    print(_table(rows))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
