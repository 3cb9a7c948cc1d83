"""Where a training step's time goes: per stage and per phase (markdown tables for BENCHMARKS.md).

Usage:
    .venv/bin/python scripts/profile_step.py [--network resnet18-cifar] [--configs scnn ant dense]
        [--batch 1 16] [--batch-sample 0] [--regime uniform] [--repeats 3] [--timing events|closed_form]

For each design and batch, runs the step stage by stage the way ``simulate_network`` does — operand
generation, ``map_phase`` (dataflow), ``simulate_phase`` (discrete-event timing and action counts),
pricing (energy) — timing each stage per phase with ``perf_counter`` (``--clock cpu``: ``process_time``, the
process's own CPU time, steadier when other jobs share the core) (median of ``--repeats`` runs),
then profiles one more run with cProfile to split the dataflow into its parts (vectors, cells, pair
counts, footprints, conflict sampling, drift, batch loop). It also times the *counting floor*: the valid
products of every phase counted with BLAS mask correlations (the least any model that looks at every
non-zero must pay), so the ratio to it is measured in the same run.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections import defaultdict

import numpy as np

from antsim.dataflow import map_phase
from antsim.dataflow.reuse import clear_all, disabled
from antsim.sim import simulate_phase
from antsim.simulate import SharedWork, _price, layer_seed, stream_densities
from antsim.sparsity.generators import make_tensors
from antsim.sparsity.regimes import regime
from antsim.spec.arch import load_arch
from antsim.workloads.layers import PHASES, Layer
from antsim.workloads.zoo import network

DATAFLOW_PARTS = (
    ("stationary vectors", "fibers.py", "stationary_vectors"), ("streamed vectors", "fibers.py", "streamed_vectors"),
    ("cells", "pairing.py", "make_cells"), ("pair counts / ANT screen", "anticipation.py", "count_pairs"),
    ("footprints (valid, halo, partial)", "footprint.py", "fast_footprint"),
    ("bank-conflict sampling", "exact.py", "sampled_conflicts"), ("PE drift (lock-step)", "drift.py", "lockstep_pairs"),
    ("batch loop", "batching.py", "batch_tiled"), ("schedule", "schedule.py", "build_schedule"),
    ("event run", "flat.py", "run"),
)


def _one_step(arch, layers: list[Layer], densities, sparsity: str, batch_sample: int, warm: bool = False,
              clock=time.perf_counter, timing_model: str = "events") -> dict:
    """Seconds per (stage, phase) of one step: cold (no stage cache) unless ``warm`` (the caches hold
    what an earlier design on the same operands left, as in a sweep or ``compare``); ``timing_model`` is
    ``simulate_phase``'s tier (``events`` or ``closed_form``)."""
    if not warm:
        with disabled():
            return _one_step(arch, layers, densities, sparsity, batch_sample, warm=True, clock=clock,
                             timing_model=timing_model)
    spent: dict = defaultdict(float)
    shared = SharedWork(arch)  # as simulate_network: prices once per design, each operand counted once per layer
    for index, layer in enumerate(layers):
        shared.next_layer()
        t0 = clock()
        tensors = make_tensors(layer, densities["w"], densities["a"], densities["g"], model=sparsity,
                               seed=layer_seed(0, index), density_a_saved=densities.get("a_saved"))
        spent["operands", "all"] += clock() - t0
        for phase in PHASES:
            t1 = clock()
            work = map_phase(arch, layer, phase, tensors, "fast", batch_sample=batch_sample)
            t2 = clock()
            timing = simulate_phase(arch, work, stream_densities(arch, work, tensors, phase, shared.density),
                                    timing=timing_model)
            t3 = clock()
            _price(shared.prices(), timing.actions, timing.cycles / (arch.technology.clock_ghz * 1e9))
            t4 = clock()
            spent["dataflow", phase] += t2 - t1
            spent["timing", phase] += t3 - t2
            spent["energy", phase] += t4 - t3
    return spent


def counting_floor(layers: list[Layer], densities, sparsity: str, clock=time.perf_counter) -> float:
    """Seconds to count the valid products of every phase with BLAS mask correlations (im2col GEMMs)."""
    total = 0.0
    for index, layer in enumerate(layers):
        t = make_tensors(layer, densities["w"], densities["a"], densities["g"], model=sparsity,
                         seed=layer_seed(0, index), density_a_saved=densities.get("a_saved"))
        start = clock()
        a = _im2col((t.activations != 0).astype(np.float32), layer)
        a_saved = _im2col((t.wgrad_activations != 0).astype(np.float32), layer)
        w = (t.weights != 0).astype(np.float32).reshape(layer.K, -1)
        g = (t.grad_output != 0).astype(np.float32).transpose(1, 0, 2, 3).reshape(layer.K, -1)
        float((w @ a).sum())  # fprop: W × im2col(A)
        _dgrad_pairs(t.weights != 0, t.grad_output != 0, layer)
        float((g @ a_saved.T).sum())  # wgrad: dY × im2col(A_saved)ᵀ
        total += clock() - start
    return total


def _dgrad_pairs(w: np.ndarray, g: np.ndarray, layer: Layer) -> float:
    """(W, dY) non-zero pairs that land on an input position: per tap, dY's in-window non-zeros per
    output channel times W's non-zeros of that channel and tap."""
    (sh, sw), (ph, pw) = layer.stride, layer.pad
    w_per_tap = w.sum(axis=1).astype(np.float32)  # K, R, S
    total = 0.0
    for r in range(layer.R):
        rows = (np.arange(layer.P) * sh + r - ph >= 0) & (np.arange(layer.P) * sh + r - ph < layer.H)
        for s in range(layer.S):
            cols = (np.arange(layer.Q) * sw + s - pw >= 0) & (np.arange(layer.Q) * sw + s - pw < layer.W)
            per_k = g[:, :, rows][:, :, :, cols].sum(axis=(0, 2, 3))
            total += float(per_k @ w_per_tap[:, r, s])
    return total


def _im2col(x: np.ndarray, layer: Layer) -> np.ndarray:
    """(C·R·S, N·P·Q) patches of ``x`` (N, C, H, W)."""
    (sh, sw), (ph, pw) = layer.stride, layer.pad
    padded = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    cols = [padded[:, :, r:r + sh * (layer.P - 1) + 1:sh, s:s + sw * (layer.Q - 1) + 1:sw]
            for r in range(layer.R) for s in range(layer.S)]
    stacked = np.stack(cols, axis=2)  # N, C, RS, P, Q
    return stacked.transpose(1, 2, 0, 3, 4).reshape(layer.C * layer.R * layer.S, -1)


def _parts(arch, layers, densities, sparsity: str, batch_sample: int, clock=time.perf_counter,
           timing_model: str = "events") -> dict[str, float]:
    profile = cProfile.Profile(clock)
    profile.enable()
    _one_step(arch, layers, densities, sparsity, batch_sample, clock=clock, timing_model=timing_model)
    profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    out = {}
    for label, filename, function in DATAFLOW_PARTS:
        out[label] = sum(v[3] for k, v in stats.items() if k[0].endswith(filename) and k[2] == function)
    out["profiled total"] = sum(v[2] for v in stats.values())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="resnet18-cifar")
    parser.add_argument("--configs", nargs="+", default=["scnn", "ant", "dense"])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--batch-sample", type=int, default=0)
    parser.add_argument("--regime", default="uniform")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-parts", action="store_true", help="skip the cProfile split of the dataflow")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="wall: perf_counter; cpu: this process's CPU time (process_time), steadier on a shared"
                        " machine")
    parser.add_argument("--warm", action="store_true",
                        help="keep the stage caches between repeats (a design after the first on the same operands)")
    parser.add_argument("--timing", choices=["events", "closed_form"], default="events",
                        help="simulate_phase's timing tier: events (the discrete-event model, default) or closed_form"
                        " (antsim.sim.closed_form)")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    chosen = regime(args.regime)
    for batch in args.batch:
        layers = [layer.with_batch(batch) for layer in network(args.network) if isinstance(layer, Layer)]
        floors = [counting_floor(layers, chosen.densities, chosen.sparsity, clock) for _ in range(args.repeats)]
        floor = statistics.median(floors)
        print(f"\n### {args.network}, batch {batch}, regime {args.regime}, batch_sample {args.batch_sample},"
              f" caches {'warm' if args.warm else 'off'}, {args.clock} clock, timing {args.timing}"
              f" — counting floor {floor:.3f} s (median of {args.repeats})\n")
        print("| design | step (s) | × floor | operands | " + " | ".join(f"dataflow {p}" for p in PHASES)
              + " | timing (all phases) | energy |")
        print("|---" * (6 + len(PHASES)) + "|")
        for config in args.configs:
            arch = load_arch(f"arch_configs/{config}.yaml")
            clear_all()
            runs = [_one_step(arch, layers, chosen.densities, chosen.sparsity, args.batch_sample, args.warm, clock,
                              args.timing)
                    for _ in range(args.repeats + (1 if args.warm else 0))][(1 if args.warm else 0):]
            med = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
            step = statistics.median(sum(run.values()) for run in runs)
            timing = sum(v for (stage, _), v in med.items() if stage == "timing")
            energy = sum(v for (stage, _), v in med.items() if stage == "energy")
            print(f"| {config} | {step:.2f} | {step / floor:.1f} | {med['operands', 'all']:.2f} | "
                  + " | ".join(f"{med['dataflow', p]:.2f}" for p in PHASES) + f" | {timing:.2f} | {energy:.3f} |")
            if not args.no_parts:
                parts = _parts(arch, layers, chosen.densities, chosen.sparsity, args.batch_sample, clock, args.timing)
                total = parts.pop("profiled total")
                print("|   parts (cProfile, cumulative s; % of the profiled step) | "
                      + "; ".join(f"{k} {v:.2f} ({v / total:.0%})" for k, v in parts.items()) + " |")


if __name__ == "__main__":
    main()
