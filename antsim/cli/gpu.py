"""``antsim gpu``: the analytical GPU baseline on a workload, or checked against measured layer times."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from antsim.cli._common import add_workload_arguments, check_out_path, parse_phases, progress, resolve_workload
from antsim.gpu.learned import CORRECTIONS, DEFAULT_CORRECTION, resolve_correction
from antsim.gpu.menus import DEFAULT_LIBRARY, DEFAULT_SELECTION, LIBRARIES, SELECTIONS
from antsim.results import GpuLayerDetails
from antsim.vocabulary import LAYOUTS, PHASES, STEP_FUSIONS, parse_word

if TYPE_CHECKING:
    from antsim.gpu.check import CheckRow
    from antsim.results import NetworkResult

FLAGS = {"pad_channels": "--pad-channels", "gpu_correction": "--gpu-correction"}
HELP = ("model a network's training convolutions (cuDNN's menu) and GEMM layers (cuBLAS GEMMs) on a GPU, or --check "
        "it against measurements")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpu", required=True,
                        help="builtin GPU (titanxp, p100, p100-pcie, v100, a100, a100-80gb-pcie, h100, h200, t4, "
                             "gtx1080ti, titanx-maxwell, m40, p4) or a GPU YAML path")
    add_workload_arguments(parser)
    parser.add_argument("--precision", default="fp32",
                        help="fp32 | tf32 | fp16 | bf16 | fp16_pseudo (fp16 storage, fp32 math); default fp32")
    parser.add_argument("--structured", default=None, metavar="2:4",
                        help="weights 2:4 structured-sparse (transposable): fprop and dgrad of convs and weight GEMM "
                             "layers run sparse tensor-core MMA (GPUs with sparse_tensor_cores, tensor-core "
                             "precisions); wgrad and activation x activation GEMMs run dense")
    parser.add_argument("--out", type=Path, default=None,
                        help="result file: .json (antsim.result/1) or .csv; with --check: per-layer errors .csv")
    parser.add_argument("--check", type=Path, default=None, metavar="MEASURED.csv",
                        help="compare the model with measured times: a DeepBench CSV (shapes inside) or a "
                             "name,phase,time_s CSV joined by layer name to --network/--layers-csv")
    parser.add_argument("--worst", type=int, default=5, help="with --check: how many worst layers to list")
    parser.add_argument("--floor", action="store_true",
                        help="with --check: also the plan-space floor per phase — the error if every row were "
                             "predicted by the model's plan (GEMM form, tile, split-K) closest to it, i.e. what "
                             "better kernel selection alone could reach")
    _add_step_arguments(parser)
    parser.add_argument("--selection", default=DEFAULT_SELECTION, choices=SELECTIONS,
                        help="how the library picks a kernel: timed = the fastest plan of the menu (cudnn.benchmark; "
                             "default) | heuristic = the library's algorithm family (DeepBench), fastest within it")
    parser.add_argument("--library", default=DEFAULT_LIBRARY, choices=LIBRARIES,
                        help="library generation whose kernel menu the GPU runs (default cudnn8)")
    parser.add_argument("--host-overhead-us", default="0", metavar="US|auto|drift",
                        help="with --check: per-call host time of the measurement harness inside each timed "
                             "interval, added to every prediction (e.g. a framework call timed with CUDA events); "
                             "auto: read off the file's own least-work rows (antsim.gpu.check.harness_host_time_s, "
                             "the median of measured - kernel over the 5%% fewest-MAC rows; printed in the report); "
                             "drift: a harness whose host time grows along the file's row order (NeuSight's): "
                             "a Theil-Sen line of the same gaps against the row's place "
                             "(antsim.gpu.check.harness_host_times_s; first and last row's value printed)")
    parser.add_argument("--pad-channels", type=int, default=0, metavar="M",
                        help="with --check: the multiple the measurement harness padded C and K to before timing "
                             "(DeepBench's conv_bench pads fp16 tensor-core runs to 8); the model predicts those "
                             "layers")
    parser.add_argument("--rows-precision", default=None, metavar="LABEL",
                        help="with --check on a DeepBench CSV: read the rows of this precision label and model them "
                             "at --precision (default: --precision's own rows). DeepBench's P100 half rows, labelled "
                             "fp16_pseudo, ran true half (docs/gpu_precision.md): --precision fp16 --rows-precision "
                             "fp16_pseudo")
    parser.add_argument("--gpu-correction", default=DEFAULT_CORRECTION, choices=CORRECTIONS,
                        help="none = the physical model (default) | learned = times the fitted correction "
                             "exp(w . features) of antsim/gpu/learned_table.py (docs/gpu_learned.md); refused when "
                             "the table was fitted on another version of the physical model. Experimental: it "
                             "lowers the error on the GPUs it was fitted on, not on a GPU held out")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _add_step_arguments(parser: argparse.ArgumentParser) -> None:
    """``--step`` and the options that go with it."""
    parser.add_argument("--step", action="store_true",
                        help="a whole training step: each conv record also holds its layer's memory-bound kernels "
                             "(BatchNorm, ReLU, residual add, pooling, SGD-momentum update; a weight GEMM layer: "
                             "its update only) and their launch overheads; the design is named "
                             "GPU[-PRECISION]-step (default: the conv and GEMM kernels only)")
    parser.add_argument("--layout", default=None, metavar="nchw|nhwc",
                        help="with --step: the framework's tensor layout. nchw (PyTorch's default memory format; "
                             "TensorFlow's for fp32/TF32 convolutions): every conv that runs on tensor cores also "
                             "pays cuDNN's NCHW<->NHWC transposes (antsim.gpu.step.layout_kernels); nhwc "
                             "(channels_last, NVIDIA's AMP recipes; default): none. SIMT convolutions pay none")
    parser.add_argument("--fusion", default=None, metavar="eager|xla",
                        help="with --step: how the framework runs the memory-bound kernels. eager (PyTorch; "
                             "default): one kernel per op | xla (TensorFlow + XLA): ReLU and residual adds fused "
                             "into BatchNorm's kernels (antsim.gpu.step.DEFAULT_FUSION)")


def run(args: argparse.Namespace) -> int:
    from antsim.errors import AntsimError
    from antsim.gpu import estimate_gpu, load_gpu
    from antsim.gpu.estimate import check_structured

    if args.check is not None:
        if args.step:
            raise AntsimError("--step goes without --check (the check compares convolution kernels)")
        _refuse_step_options(args)
        return _run_check(args)
    if not args.step:
        _refuse_step_options(args)
    if args.floor:
        raise AntsimError("--floor goes with --check MEASURED.csv")
    if args.host_overhead_us != "0":
        raise AntsimError("--host-overhead-us goes with --check MEASURED.csv")
    if args.pad_channels:
        raise AntsimError("--pad-channels goes with --check MEASURED.csv")
    if args.rows_precision is not None:
        raise AntsimError("--rows-precision goes with --check MEASURED.csv")
    if args.out is None:
        raise AntsimError("--out FILE is required (or use --check MEASURED.csv)")
    out = check_out_path(args.out, (".json", ".csv"))
    gpu = load_gpu(args.gpu)
    gpu.peak(args.precision)
    check_structured(gpu, args.precision, args.structured)
    correction = resolve_correction(args.gpu_correction)
    layers, workload = resolve_workload(args)
    phases = parse_phases(args.phases)
    bar = None if args.no_progress else (lambda items: progress(items, total=len(layers), desc="gpu", unit="layer"))
    estimate: Callable[..., NetworkResult] = estimate_gpu
    step_options: dict[str, str] = {}
    if args.step:
        from antsim.gpu.step import DEFAULT_FUSION, DEFAULT_LAYOUT, estimate_step

        layout = DEFAULT_LAYOUT if args.layout is None else parse_word("--layout", args.layout, LAYOUTS)
        fusion = DEFAULT_FUSION if args.fusion is None else parse_word("--fusion", args.fusion, STEP_FUSIONS)
        estimate, step_options = estimate_step, {"layout": layout, "fusion": fusion}
    result = estimate(gpu, layers, phases, args.precision, workload=workload, progress=bar,
                      structured=args.structured, selection=args.selection, library=args.library,
                      correction=correction, **step_options)
    result.write_csv(out) if out.suffix.lower() == ".csv" else result.write_json(out)
    _print_summary(result, out)
    return 0


def _refuse_step_options(args: argparse.Namespace) -> None:
    """The options of ``--step`` alone are a user error without it (their kernels are step kernels)."""
    from antsim.errors import AntsimError

    for flag, value in (("--layout", args.layout), ("--fusion", args.fusion)):
        if value is not None:
            raise AntsimError(f"{flag} goes with --step (the step's memory-bound kernels)")


def _print_summary(result: NetworkResult, out: Path) -> None:
    totals = result.totals
    time_s, energy_j = totals["time_s"], totals["energy_j"]
    assert time_s is not None and energy_j is not None, "the GPU model times and prices every record"
    lines = [f"{result.design}: {len(result.records)} (layer, phase) records at {result.meta['precision']} "
             f"({result.meta.get('library')}, {result.meta.get('selection')} selection"
             f"{', learned correction' if 'gpu_correction' in result.meta else ''}), "
             f"{time_s * 1e3:.3f} ms, {energy_j:.4g} J"]
    for phase in PHASES:
        recs = [r for r in result.records if r.phase == phase]
        if recs:
            energies = [r.energy_j for r in recs if r.energy_j is not None]
            assert len(energies) == len(recs), "the GPU model prices every record"
            lines.append(f"  {phase}: {sum(r.time_s for r in recs) * 1e3:.3f} ms, {sum(energies):.4g} J")
    if result.meta.get("scope") == "step":
        step = result.meta["step"]
        kernels = [k for r in result.records for k in GpuLayerDetails.of(r).step_kernels or ()]
        lines.append(f"  of which memory-bound step kernels: {sum(k['time_s'] for k in kernels) * 1e3:.3f} ms "
                     f"({sum(k['launches'] for k in kernels)} launches; {step['layout']} tensors, "
                     f"{step['fusion']} kernels)")
    lines.append(f"wrote {out}")
    sys.stdout.write("\n".join(lines) + "\n")


def _run_check(args: argparse.Namespace) -> int:
    from antsim.errors import AntsimError
    from antsim.gpu import load_gpu
    from antsim.gpu.check import (
        check_measured,
        harness_host_time_s,
        harness_host_times_s,
        observations,
        oracle_rows,
        padded_channels,
        result_observations,
        write_check_csv,
    )
    from antsim.gpu.estimate import check_structured
    from antsim.gpu.menus import check_library
    from antsim.measure.deepbench import is_deepbench_csv, read_deepbench_csv

    out = check_out_path(args.out, (".csv",)) if args.out is not None else None
    gpu = load_gpu(args.gpu)
    gpu.peak(args.precision)
    check_structured(gpu, args.precision, args.structured)
    check_library(gpu, args.precision, args.library)
    correction = resolve_correction(args.gpu_correction)
    host_us = _host_overhead_us(args.host_overhead_us)
    if not args.check.is_file():
        from antsim.errors import WorkloadError

        raise WorkloadError(f"{args.check}: measurement CSV not found")
    if is_deepbench_csv(args.check):
        measured = observations(read_deepbench_csv(args.check, args.rows_precision or args.precision))
    elif args.rows_precision is not None:
        raise AntsimError(f"--rows-precision {args.rows_precision}: only a DeepBench CSV labels its rows' precision;"
                          f" {args.check} is a name,phase,time_s CSV")
    else:
        from antsim.measure.external import measured_batch, read_results_csv

        layers, _ = resolve_workload(args, batch_hint=measured_batch(args.check))  # the CSV's N is the batch
        measured = result_observations(read_results_csv(args.check, layers, phases=parse_phases(args.phases)),
                                       layers)
    measured = padded_channels(measured, args.pad_channels)
    host: float | list[float]
    if args.host_overhead_us == "drift":
        host = harness_host_times_s(gpu, measured, args.precision, selection=args.selection, library=args.library)
        args.host_overhead_us = f"{host[0] * 1e6:.1f} (first row) to {host[-1] * 1e6:.1f} (last row)"
    elif host_us is None:
        host = harness_host_time_s(gpu, measured, args.precision, selection=args.selection, library=args.library)
        args.host_overhead_us = f"{host * 1e6:.1f}"
    else:
        host = host_us * 1e-6
        args.host_overhead_us = f"{host_us:g}"
    rows = check_measured(gpu, measured, args.precision, structured=args.structured, selection=args.selection,
                          library=args.library, host_overhead_s=host, correction=correction)
    floor = oracle_rows(gpu, measured, args.precision, structured=args.structured, library=args.library,
                        host_overhead_s=host) if args.floor else None
    if out is not None:
        write_check_csv(rows, out)
    sys.stdout.write(_check_report(gpu.name, args, rows, floor, out))
    return 0


def _host_overhead_us(value: str) -> float | None:
    """``--host-overhead-us`` in microseconds; None for ``auto`` and ``drift`` (read off the measured file)."""
    from antsim.errors import AntsimError

    if value in ("auto", "drift"):
        return None
    try:
        host_us = float(value)
    except ValueError:
        raise AntsimError(f"--host-overhead-us: microseconds, auto or drift; got {value!r}") from None
    if not 0 <= host_us < 1e6:  # also refuses NaN
        raise AntsimError(f"--host-overhead-us: must be microseconds in [0, 1e6); got {value}")
    return host_us


def _check_report(name: str, args: argparse.Namespace, rows: Sequence[CheckRow], floor: Sequence[CheckRow] | None,
                  out: Path | None) -> str:
    from antsim.gpu.check import summarize, worst

    rows_of = f" rows {args.rows_precision}," if args.rows_precision else ""
    lines = [f"{name} vs {args.check} ({args.precision},{rows_of} {args.library}, {args.selection} selection, "
             f"host overhead {args.host_overhead_us} us, channels padded to {args.pad_channels or 'none'}"
             f"{', learned correction' if args.gpu_correction != 'none' else ''}); "
             "error = exp(mean |ln(pred/meas)|) - 1, bias = exp(mean ln(pred/meas))",
             f"{'phase':6s} {'n impl':>6s} {'err impl':>8s} {'bias':>5s} {'n all':>6s} {'err all':>8s} {'bias':>5s}"]
    for s in summarize(rows):
        impl = (f"{s.n_implicit:6d} {s.err_implicit * 100:7.1f}% {s.bias_implicit:5.2f}"
                if s.n_implicit else f"{0:6d} {'-':>8s} {'-':>5s}")
        lines.append(f"{s.phase:6s} {impl} {s.n_all:6d} {s.err_all * 100:7.1f}% {s.bias_all:5.2f}")
    if floor is not None:
        lines.append("plan-space floor (each row predicted by the model's plan closest to it):")
        for s in summarize(floor):
            impl = f"{s.err_implicit * 100:7.1f}%" if s.n_implicit else f"{'-':>8s}"
            lines.append(f"{s.phase:6s} {'':6s} {impl} {'':5s} {'':6s} {s.err_all * 100:7.1f}%")
    lines.append(f"worst {args.worst}:")
    for r in worst(rows, args.worst):
        lines.append(f"  {r.name} {r.phase}: measured {r.measured_s * 1e3:.3f} ms, predicted "
                     f"{r.predicted_s * 1e3:.3f} ms (x{r.ratio:.2f}), {r.model_algo} GEMM {r.M}x{r.N}x{r.K}"
                     f"{' on tensor cores' if r.tensor_cores else ''}")
    if out is not None:
        lines.append(f"wrote {out}")
    return "\n".join(lines) + "\n"
