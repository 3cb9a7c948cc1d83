"""Validate the GPU model against every measured file in tests/data (DeepBench cuDNN 5–7.6, NeuSight cuDNN 8.9).

Each file is read with the library generation, selection mode and harness overhead it was measured
with (``RUNS``): DeepBench's cuDNN heuristics (``heuristic``, following each row's recorded forward
algorithm) and, for its tensor-core rows, the C and K it padded up to a multiple of 8 before timing
(``Run.pad_channels``), NeuSight's ``cudnn.benchmark`` (``timed``) with its per-call PyTorch dispatch time
inside each timed interval (``--host-overhead-us`` of ``antsim gpu --check``; here each file's own, read off
its least-work rows along its collection sequence: ``harness_host_s``). Printed as Markdown:

1. per GPU, precision and phase: error = exp(mean |ln(pred/meas)|) − 1 and bias on all rows, on the
   implicit-GEMM rows, per recorded forward-algorithm family (fprop), and the plan-space floor (every
   row predicted by the plan of the menu closest to it: what no selection rule can beat);
2. with ``--gemm``: the GEMM-layer path (``antsim.gpu.gemm_layer``) on DeepBench's 1×1 stride-1
   rows (a 1×1 stride-1 convolution is a GEMM) beside the conv path on the same rows;
3. with ``--families``: per phase, the families (filter, stride, channel band, the model's algorithm)
   holding the most error (summed |ln(pred/meas)|), with each run's bias / error and rows;
4. with ``--loo``: leave-one-GPU-out — the fitted constants (``FIT_GRID``: the non-fused and fused Winograd
   efficiencies, the wgrad run overhead and the wgrad split floor; NeuSight's host time is each file's own, not fitted)
   are refitted on all GPUs but one and the held-out GPU is predicted with them. ``fit`` is a plain function
   of the runs it may see, rerun per fold;
5. with ``--clocks``: the SM clock each DeepBench fp32 card ran at, from its measured times against the P100's on
   the same layers (no model; docs/gpu_scale.md §2);
6. with ``--power``: the board-power floor time ≥ (core + DRAM energy) / (TDP − static) applied to every row,
   with the energy model's per-FLOP core energy and multiples of it (docs/gpu_scale.md §6).

    .venv/bin/python scripts/validate_gpu.py [--gemm] [--families] [--loo] [--clocks] [--power] [--data DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from antsim.gpu import CALIBRATION, load_gpu
from antsim.gpu.check import (
    CheckRow,
    Observation,
    bias,
    check_measured,
    family_rows,
    gemm_observations,
    geomean_abs_error,
    harness_host_times_s,
    observations,
    oracle_rows,
    padded_channels,
)
from antsim.gpu.estimate import KernelCorrection, estimate_layer
from antsim.gpu.learned import CORRECTIONS, resolve_correction
from antsim.gpu.model import Calibration
from antsim.measure.deepbench import read_deepbench_csv
from antsim.workloads.gemm import Gemm as GemmLayer
from antsim.workloads.layers import PHASES, Layer

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
# NeuSight's harness: CUDA events around a Python torch.nn.Conv2d call, so the dispatch time lands in
# each interval (neusight/README.md: 0.1–0.3 ms on rows under ~0.3 ms). It is a property of the harness and
# its host machine, read off each file's own least-work rows (docs/gpu_scale.md §7), not a constant shared by
# the GPUs, and it grows along each file's collection sequence (``antsim.gpu.check.harness_host_times_s``;
# docs/gpu_scale.md §8).


# DeepBench's conv_bench pads C and K up to a multiple of 8 before timing a tensor-core ("half") training
# convolution (baidu-research/DeepBench, code/nvidia/conv_bench.cu: "Tensor cores need channels to be a
# multiple of 8. So, added padding for some kernels", PAD_KERNELS = 1 by default), so its fp16_mixed rows
# of C = 1 or 3 input layers time the C = 8 convolution, on tensor cores.
DEEPBENCH_TENSOR_PAD = 8


@dataclass(frozen=True)
class Run:
    """One measured file read as it was measured (``pad_channels``: the multiple the harness padded C and K
    up to before timing; 0: none; ``computes``: the precision the rows ran at when the file's label says
    otherwise, ``modelled``)."""

    file: str
    gpu: str
    precision: str
    library: str
    selection: str
    harness: str  # "deepbench" (no host time inside the interval) or "neusight"
    pad_channels: int = 0
    computes: str = ""

    @property
    def modelled(self) -> str:
        """The precision the model predicts the rows at."""
        return self.computes or self.precision


# DeepBench's P100 half rows (labelled ``fp16_pseudo`` in the data) ran cuDNN's TRUE_HALF_CONFIG: conv_bench
# times "half" training convolutions as ``time_cnn<uint16_t, uint16_t>``, whose convolution descriptor gets
# compute type CUDNN_DATA_HALF (GitHub `baidu-research/DeepBench` code/nvidia/conv_bench.cu and
# code/nvidia/cudnn_helper.h, ``ConvolutionDescriptor``), and its compute-bound rows run above the P100's
# fp32 peak (the 5×5 stride-2 C = 64, K = 128 fprop: 44.5 GFLOP in 2.81 ms, 15.9 TFLOP/s of 10.6) at half
# the fp32 rows' time: half2 arithmetic (docs/gpu_precision.md).
P100_HALF = "fp16"


RUNS: tuple[Run, ...] = (
    Run("deepbench/deepbench_conv_P100.csv", "p100", "fp32", "cudnn7", "heuristic", "deepbench"),
    Run("deepbench/deepbench_conv_P100.csv", "p100", "fp16_pseudo", "cudnn7", "heuristic", "deepbench",
        computes=P100_HALF),
    Run("deepbench/deepbench_conv_TitanXp.csv", "titanxp", "fp32", "cudnn7", "heuristic", "deepbench"),
    Run("deepbench/deepbench_conv_1080Ti.csv", "gtx1080ti", "fp32", "cudnn6", "heuristic", "deepbench"),
    Run("deepbench/deepbench_conv_TitanX_Maxwell.csv", "titanx-maxwell", "fp32", "cudnn5", "heuristic", "deepbench"),
    Run("deepbench/deepbench_conv_M40.csv", "m40", "fp32", "cudnn5", "heuristic", "deepbench"),
    Run("deepbench/deepbench_conv_T4.csv", "t4", "fp32", "cudnn7.6", "heuristic", "deepbench"),
    Run("deepbench/deepbench_conv_T4.csv", "t4", "fp16", "cudnn7.6", "heuristic", "deepbench", DEEPBENCH_TENSOR_PAD),
    Run("neusight/neusight_conv_fwd_A100_80GB_PCIe.csv", "a100-80gb-pcie", "fp32", "cudnn8", "timed", "neusight"),
    Run("neusight/neusight_conv_fwd_P100_PCIe_16GB.csv", "p100-pcie", "fp32", "cudnn8", "timed", "neusight"),
    Run("neusight/neusight_conv_fwd_P4.csv", "p4", "fp32", "cudnn8", "timed", "neusight"),
)
# Candidate values of the fitted constants for leave-one-GPU-out (around the defaults).
# NeuSight's host time is no grid constant: each file's own (``harness_host_s``), recomputed in every fold.
FIT_GRID = {"winograd_efficiency": (0.5, 0.6, 0.65, 0.7, 0.75, 0.8),
            "winograd_fused_efficiency": (0.8, 0.9, 1.0),
            "wgrad_run_overhead_bytes": (0.0, 64.0, 96.0, 112.0, 128.0, 160.0),
            "wgrad_min_split_k": (2, 4, 8)}
Key = tuple[float, ...]  # (winograd_efficiency, winograd_fused_efficiency, wgrad_run_overhead_bytes, wgrad_min_split_k)


def harness_host_s(run: Run, measured: Sequence[Observation], cal: Calibration = CALIBRATION) -> list[float]:
    """The per-call host time inside each of a run's timed intervals: none for DeepBench (300 back-to-back calls
    divided), NeuSight's read off the file's own least-work rows along its collection sequence, where it drifts
    (``harness_host_times_s``; docs/gpu_scale.md §8)."""
    if run.harness != "neusight":
        return [0.0] * len(measured)
    return harness_host_times_s(load_gpu(run.gpu), measured, run.modelled, cal, run.selection, run.library)


def run_rows(run: Run, cal: Calibration = CALIBRATION, data: Path = DATA, floor: bool = False,
             correction: KernelCorrection | None = None, phases: Sequence[str] = PHASES) -> list[CheckRow]:
    """The check rows of one run (``floor``: the plan-space floor's rows instead; ``correction``: the
    learned correction of ``antsim.gpu.learned``, not applied to the floor; ``phases``: only those phases' rows)."""
    gpu = load_gpu(run.gpu)
    measured = padded_channels(observations(read_deepbench_csv(data / run.file, run.precision)), run.pad_channels)
    measured = [o for o in measured if o.phase in phases]
    host = harness_host_s(run, measured, cal)
    if floor:
        return oracle_rows(gpu, measured, run.modelled, cal, library=run.library, host_overhead_s=host)
    return check_measured(gpu, measured, run.modelled, cal, selection=run.selection, library=run.library,
                          host_overhead_s=host, correction=correction)


def host_time_us(run: Run, data: Path = DATA) -> tuple[float, float]:
    """``harness_host_s`` of a run's file at its first and last row, in µs."""
    measured = padded_channels(observations(read_deepbench_csv(data / run.file, run.precision)), run.pad_channels)
    hosts = harness_host_s(run, measured)
    return hosts[0] * 1e6, hosts[-1] * 1e6


def gemm_path_rows(run: Run, data: Path = DATA) -> tuple[list[CheckRow], list[CheckRow]]:
    """DeepBench's 1×1 stride-1 rows of one run through the GEMM-layer path, and the same rows through
    the conv path (``antsim.gpu.check.gemm_observations``)."""
    gpu = load_gpu(run.gpu)
    measured = padded_channels(observations(read_deepbench_csv(data / run.file, run.precision)), run.pad_channels)
    gemms = gemm_observations(measured)
    keys = {(o.layer.name, o.phase) for o in gemms}
    convs = [o for o in measured if (o.layer.name, o.phase) in keys]
    return (check_measured(gpu, gemms, run.modelled, selection=run.selection, library=run.library),
            check_measured(gpu, convs, run.modelled, selection=run.selection, library=run.library))


def gemm_table(data: Path = DATA) -> None:
    """Print table 3: the GEMM-layer path on DeepBench's 1×1 stride-1 convolutions beside the conv path."""
    print("| GPU | precision | phase | 1×1 rows | GEMM-layer path error | bias | conv path error (same rows) |")
    print("|---|---|---|---|---|---|---|")
    for run in (r for r in RUNS if r.harness == "deepbench"):
        gemm, conv = gemm_path_rows(run, data)
        for phase in PHASES:
            g = [r.ratio for r in gemm if r.phase == phase]
            c = [r.ratio for r in conv if r.phase == phase]
            if g:
                print(f"| {run.gpu} | {run.precision} | {phase} | {len(g)} | {_pct(geomean_abs_error(g))} "
                      f"| {bias(g):.2f} | {_pct(geomean_abs_error(c))} |")


def phase_errors(rows: Sequence[CheckRow]) -> dict[str, float]:
    """Geomean |error| per phase over all rows."""
    return {p: geomean_abs_error([r.ratio for r in rows if r.phase == p]) for p in PHASES
            if any(r.phase == p for r in rows)}


def _pct(value: float) -> str:
    return "–" if math.isnan(value) else f"{value * 100:.1f} %"


def score_table(data: Path = DATA, correction: KernelCorrection | None = None) -> None:
    """Print table 1: every run, every phase, with families and the plan-space floor."""
    print("| GPU | library, selection | precision | phase | rows | error (all) | bias | error (implicit rows) "
          "| fprop by recorded family: GEMM / Winograd / FFT | plan-space floor (all) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for run in RUNS:
        rows = run_rows(run, data=data, correction=correction)
        floor = phase_errors(run_rows(run, data=data, floor=True))
        for phase in PHASES:
            mine = [r for r in rows if r.phase == phase]
            if not mine:
                continue
            ratios = [r.ratio for r in mine]
            implicit = [r.ratio for r in mine if r.implicit]
            families = family_rows(mine) if phase == "fprop" else {}
            fam = " / ".join(_fam(families.get(f, [])) for f in ("gemm", "winograd", "fft")) if families else "–"
            print(f"| {run.gpu} | {run.library}, {run.selection} | {run.precision} | {phase} | {len(mine)} "
                  f"| {_pct(geomean_abs_error(ratios))} | {bias(ratios):.2f} | {_pct(geomean_abs_error(implicit))} "
                  f"| {fam} | {_pct(floor[phase])} |")


def _fam(rows: Sequence[CheckRow]) -> str:
    return f"{_pct(geomean_abs_error([r.ratio for r in rows]))} (n={len(rows)})" if rows else "–"


def _channel_band(channels: int) -> str:
    return "C < 32" if channels < 32 else "C < 128" if channels < 128 else "C ≥ 128"


def shape_family(layer: Layer | GemmLayer, model_algo: str) -> str:
    """A row's family: filter, stride, input-channel band and the algorithm the model kept."""
    if isinstance(layer, GemmLayer):
        return f"GEMM layer, {model_algo}"
    return f"{layer.R}×{layer.S} s{layer.stride_h}, {_channel_band(layer.C)}, {model_algo}"


def family_table(data: Path = DATA, top: int = 8) -> None:
    """Print table 4: per phase, the ``top`` families with the largest summed |ln(pred/meas)| over every run
    (error × rows: where the error mass is), each run's bias / error and row count."""
    cells: dict[tuple[str, str], dict[Run, list[float]]] = {}
    for run in RUNS:
        measured = padded_channels(observations(read_deepbench_csv(data / run.file, run.precision)), run.pad_channels)
        for o, r in zip(measured, run_rows(run, data=data), strict=True):
            cells.setdefault((r.phase, shape_family(o.layer, r.model_algo)), {}).setdefault(run, []).append(
                math.log(r.ratio))
    print("| phase | family (filter, stride, C, model's algorithm) | Σ abs ln | "
          + " | ".join(f"{r.gpu} {r.precision}" for r in RUNS) + " |")
    print("|---|---|---|" + "---|" * len(RUNS))
    for phase in PHASES:
        mass = {key: sum(abs(x) for xs in per_run.values() for x in xs) for key, per_run in cells.items()
                if key[0] == phase}
        for key in sorted(mass, key=lambda k: -mass[k])[:top]:
            per_run = cells[key]
            print(f"| {phase} | {key[1]} | {mass[key]:.1f} | "
                  + " | ".join(_cell(per_run.get(run, [])) for run in RUNS) + " |")


def _cell(logs: Sequence[float]) -> str:
    if not logs:
        return ""
    error = math.exp(math.fsum(map(abs, logs)) / len(logs)) - 1
    return f"{math.exp(math.fsum(logs) / len(logs)):.2f} / {_pct(error)} ({len(logs)})"


def fit(runs: Sequence[Run], table: dict[Key, dict[Run, dict[str, float]]]) -> Key:
    """The grid point (winograd_efficiency, winograd_fused_efficiency, wgrad_run_overhead_bytes, wgrad_min_split_k)
    minimising the mean per-phase error over ``runs``."""
    def objective(key: Key) -> float:
        errors = [e for run in runs for e in table[key][run].values()]
        return sum(errors) / len(errors)

    return min(table, key=lambda key: (round(objective(key), 9), key))


def error_table(data: Path = DATA) -> dict[Key, dict[Run, dict[str, float]]]:
    """Per-phase errors of every run at every grid point. The fused Winograd efficiency moves only fprop and dgrad
    rows (no fused backward-filter kernel), the wgrad run overhead and split floor only wgrad rows, so fprop/dgrad
    are scored once per (Winograd, fused Winograd) efficiency and wgrad once per (Winograd efficiency, run overhead,
    split floor); NeuSight has no wgrad rows."""
    forward: dict[tuple[float, float], dict[Run, dict[str, float]]] = {}
    backward: dict[tuple[float, float, float], dict[Run, dict[str, float]]] = {}
    for eff in FIT_GRID["winograd_efficiency"]:
        for fused in FIT_GRID["winograd_fused_efficiency"]:
            cal = dataclasses.replace(CALIBRATION, winograd_efficiency=eff, winograd_fused_efficiency=fused)
            forward[eff, fused] = {run: phase_errors(run_rows(run, cal, data, phases=("fprop", "dgrad")))
                                   for run in RUNS}
        for run_bytes in FIT_GRID["wgrad_run_overhead_bytes"]:
            for min_split in FIT_GRID["wgrad_min_split_k"]:
                cal_w = dataclasses.replace(CALIBRATION, winograd_efficiency=eff, wgrad_run_overhead_bytes=run_bytes,
                                            wgrad_min_split_k=int(min_split))
                backward[eff, run_bytes, min_split] = {
                    run: phase_errors(run_rows(run, cal_w, data, phases=("wgrad",)))
                    for run in RUNS if run.harness != "neusight"}
    return {(eff, fused, run_bytes, min_split): {run: forward[eff, fused][run]
                                                 | backward[eff, run_bytes, min_split].get(run, {}) for run in RUNS}
            for eff, fused in forward for (e, run_bytes, min_split) in backward if e == eff}


def leave_one_gpu_out(data: Path = DATA) -> None:
    """Print table 2: each GPU predicted with the constants fitted on the others."""
    table = error_table(data)
    print("| held-out GPU | precision | fitted winograd_efficiency, fused Winograd efficiency, wgrad run overhead B, "
          "wgrad split floor "
          "| held-out error f / d / w "
          "| with all-GPU fit f / d / w |")
    print("|---|---|---|---|---|")
    everyone = fit(RUNS, table)
    for gpu in dict.fromkeys(run.gpu for run in RUNS):
        key = fit([run for run in RUNS if run.gpu != gpu], table)
        for run in (r for r in RUNS if r.gpu == gpu):
            print(f"| {gpu} | {run.precision} | {', '.join(f'{k:g}' for k in key)} | {_fmt(table[key][run])} "
                  f"| {_fmt(table[everyone][run])} |")
    print(f"\nall-GPU fit: winograd_efficiency = {everyone[0]:g}, winograd_fused_efficiency = {everyone[1]:g}, "
          f"wgrad_run_overhead_bytes = {everyone[2]:g}, wgrad_min_split_k = {everyone[3]:g}")


CLOCK_REFERENCE = "p100"  # P100 SXM2 runs at its 1480 MHz boost clock on DeepBench (its rows' bias is 0.95–1.03)
CLOCK_CELLS = (("1x1", "fprop"), ("1x1", "dgrad"), ("3x3", "fprop"), ("3x3", "dgrad"))


def _measured_by_key(run: Run, data: Path) -> dict[tuple[str, int, str], tuple[Layer | GemmLayer, float]]:
    return {(o.layer.name, o.layer.N, o.phase): (o.layer, o.measured_s)
            for o in observations(read_deepbench_csv(data / run.file, run.precision))}


def implied_clocks(data: Path = DATA) -> dict[str, dict[tuple[str, str], tuple[float, int, float]]]:
    """Per DeepBench fp32 card but the reference: (filter, phase) → (median measured time over the reference
    card's on the same layers, rows, the SM clock in MHz that ratio implies).

    On the same layer, a card's measured time over the reference card's should be the ratio of their FP32
    peaks if both ran at their boost clocks; the clock that makes it so is ``boost × peak ratio / time ratio``
    (docs/gpu_scale.md §2). 1×1 layers are implicit GEMMs on every library; 3×3 layers mix GEMM and Winograd.
    """
    runs = {r.gpu: r for r in RUNS if r.harness == "deepbench" and r.precision == "fp32"}
    ref_peak = load_gpu(CLOCK_REFERENCE).peak("fp32")
    ref = _measured_by_key(runs[CLOCK_REFERENCE], data)
    table: dict[str, dict[tuple[str, str], tuple[float, int, float]]] = {}
    for name, run in runs.items():
        if name == CLOCK_REFERENCE:
            continue
        gpu, mine = load_gpu(name), _measured_by_key(run, data)
        table[name] = {}
        for filt, phase in CLOCK_CELLS:
            ratios = [t / ref[k][1] for k, (layer, t) in mine.items() if k in ref and k[2] == phase
                      and isinstance(layer, Layer) and f"{layer.R}x{layer.S}" == filt]
            if ratios:
                median = statistics.median(ratios)
                table[name][filt, phase] = (median, len(ratios), gpu.clock_mhz * ref_peak / gpu.peak("fp32") / median)
    return table


def clock_table(data: Path = DATA) -> None:
    """Print table 5: ``implied_clocks`` beside each card's boost clock and the model's SM clock."""
    print(f"| GPU | boost MHz | model's SM clock MHz | measured time GPU / {CLOCK_REFERENCE}: 1×1 fprop / dgrad / "
          "3×3 fprop / dgrad (rows) | clock those imply (MHz) |")
    print("|---|---|---|---|---|")
    for name, cells in implied_clocks(data).items():
        gpu = load_gpu(name)
        ratios = " / ".join(f"{cells[c][0]:.2f} ({cells[c][1]})" if c in cells else "–" for c in CLOCK_CELLS)
        clocks = " / ".join(f"{cells[c][2]:.0f}" if c in cells else "–" for c in CLOCK_CELLS)
        print(f"| {name} | {gpu.clock_mhz:g} | {gpu.sm_clock_hz / 1e6:g} | {ratios} | {clocks} |")


# Multiples of the TDP-derived core energy per FLOP tried by ``power_table`` (1: the energy model's own).
POWER_CORE_SCALES = (1.0, 2.0, 3.0)


def power_rows(run: Run, data: Path = DATA) -> list[tuple[str, float, float, float, float, float]]:
    """Per row of a run: (phase, measured s, kernel s, harness host s, core J, DRAM J)."""
    gpu = load_gpu(run.gpu)
    measured = padded_channels(observations(read_deepbench_csv(data / run.file, run.precision)), run.pad_channels)
    host = harness_host_s(run, measured)
    out = []
    for o, host_s in zip(measured, host, strict=True):
        r = estimate_layer(gpu, o.layer, o.phase, run.modelled, CALIBRATION, None, run.selection, run.library, o.algo)
        energy = r.energy_breakdown_j
        out.append((o.phase, o.measured_s, r.time_s, host_s, energy["core"], energy["dram"]))
    return out


def power_table(data: Path = DATA) -> None:
    """Print table 6: the board-power floor, kernel time ≥ (core + DRAM J) / (TDP − static), on every run,
    with the energy model's core energy per FLOP and with multiples of it (docs/gpu_scale.md §6)."""
    print("| GPU | precision | phase | error without floor | " + " | ".join(
        f"with floor, core J × {k:g} (rows it binds)" for k in POWER_CORE_SCALES) + " |")
    print("|---|---|---|---|" + "---|" * len(POWER_CORE_SCALES))
    for run in RUNS:
        gpu = load_gpu(run.gpu)
        budget = gpu.power.tdp_w - gpu.power.static_w
        rows = power_rows(run, data)
        for phase in PHASES:
            mine = [r for r in rows if r[0] == phase]
            if not mine:
                continue
            cells = []
            for k in POWER_CORE_SCALES:
                floors = [(k * core + dram) / budget for *_, core, dram in mine]
                capped = [(max(r[2], f) + r[3]) / r[1] for r, f in zip(mine, floors, strict=True)]
                binds = sum(f > r[2] for r, f in zip(mine, floors, strict=True))
                cells.append(f"{_pct(geomean_abs_error(capped))} ({binds})")
            plain = geomean_abs_error([(r[2] + r[3]) / r[1] for r in mine])
            print(f"| {run.gpu} | {run.precision} | {phase} | {_pct(plain)} | {' | '.join(cells)} |")


def _fmt(errors: dict[str, float]) -> str:
    return " / ".join(f"{errors[p] * 100:.1f}" if p in errors else "–" for p in PHASES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loo", action="store_true", help="also the leave-one-GPU-out check of the fitted constants")
    parser.add_argument("--gemm", action="store_true",
                        help="also the GEMM-layer path on DeepBench's 1x1 stride-1 rows beside the conv path")
    parser.add_argument("--families", action="store_true",
                        help="also, per phase, the families holding the most error (bias / error (rows) per run)")
    parser.add_argument("--data", type=Path, default=DATA,
                        help="folder holding deepbench/ and neusight/ (default tests/data; the full NeuSight files "
                             "live in the team's shared data folder)")
    parser.add_argument("--clocks", action="store_true",
                        help="also the SM clock each DeepBench card ran at, from its measured times against the P100's")
    parser.add_argument("--power", action="store_true",
                        help="also the board-power floor (time >= energy / (TDP - static)) on every run")
    parser.add_argument("--gpu-correction", default="none", choices=CORRECTIONS,
                        help="table 1 with the learned correction (antsim.gpu.learned; its own leave-one-GPU-out: "
                             "scripts/fit_gpu_correction.py); the other tables stay the physical model's")
    args = parser.parse_args()
    score_table(args.data, resolve_correction(args.gpu_correction))
    print()
    print("calibration:", ", ".join(f"{k}={v}" for k, v in CALIBRATION.to_dict().items()))
    print("NeuSight host time per call, first → last row (each file's least-work rows):", ", ".join(
        "{} {:.0f} → {:.0f} µs".format(run.gpu, *host_time_us(run, args.data)) for run in RUNS
        if run.harness == "neusight"))
    if args.gpu_correction != "none":
        print("table 1 with the learned correction (antsim/gpu/learned_table.py); floor and other tables without")
    if args.gemm:
        print()
        gemm_table(args.data)
    if args.families:
        print()
        family_table(args.data)
    if args.loo:
        print()
        leave_one_gpu_out(args.data)
    if args.power:
        print()
        power_table(args.data)
    if args.clocks:
        print()
        clock_table(args.data)


if __name__ == "__main__":
    main()
