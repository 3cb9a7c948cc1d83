"""``antsim compare``: speedup and energy reduction of designs over a baseline on one workload.

Reads ``antsim.result/1`` JSON / measurement CSV files, and/or runs designs itself: ``--arch`` files
through the simulator and ``--gpu`` names through the GPU model, on the workload given by the workload
arguments. Writes ``antsim.compare/1`` JSON or CSV (``--out``) and optionally a full report folder
(``--report-out``); prints a summary table on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from antsim.cli._common import (
    add_sparsity_arguments,
    add_workload_arguments,
    check_out_path,
    check_sparsity_model,
    csv_batch_hint,
    resolve_densities,
    resolve_tensors,
    resolve_workload,
)
from antsim.errors import AntsimError
from antsim.gpu.learned import CORRECTIONS, DEFAULT_CORRECTION
from antsim.gpu.menus import DEFAULT_LIBRARY, DEFAULT_SELECTION, LIBRARIES, SELECTIONS
from antsim.vocabulary import LAYOUTS, STEP_FUSIONS, parse_timing

if TYPE_CHECKING:
    from antsim.compare import ArchDesign, DesignComparison, GpuDesign, GpuOptions, SimulationOptions

HELP = "compare designs on one workload (result files, --arch, --gpu): speedups and energy reductions"
# An error's subject (antsim.errors.AntsimError) -> the flag that gave it; main() adds it to the message.
FLAGS = {"baseline": "--baseline", "sweep": "--sweep", "force": "{message} (--force)",
         "gpu_correction": "--gpu-correction"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="*", type=Path, metavar="RESULTS",
                        help="result files: antsim.result/1 .json (simulate, gpu) or measurement .csv")
    parser.add_argument("--arch", action="extend", nargs="+", type=Path, default=[], metavar="PATH",
                        help="simulate these arch YAML files on the workload (repeatable)")
    parser.add_argument("--gpu", action="extend", nargs="+", default=[], metavar="NAME",
                        help="run the GPU model for these GPUs (builtin name such as v100, h100, or a YAML path)")
    parser.add_argument("--gpu-precision", action="extend", nargs="+", default=None, metavar="PRECISION",
                        help="GPU arithmetic precision(s), each GPU modelled at each (default fp32; e.g. fp32 fp16)")
    parser.add_argument("--gpu-structured", default=None, metavar="2:4",
                        help="model the GPUs with 2:4 structured-sparse weights (sparse tensor cores, fprop and "
                             "dgrad; needs a tensor-core --gpu-precision)")
    parser.add_argument("--gpu-step", action="store_true",
                        help="model each GPU's whole training step: the convolutions plus BatchNorm, ReLU, residual"
                             " add, pooling and the SGD-momentum update (designs named GPU[-PRECISION]-step;"
                             " default: convolutions only)")
    parser.add_argument("--gpu-layout", default=None, choices=LAYOUTS,
                        help="with --gpu-step: the framework's tensor layout (antsim gpu --layout): nchw = every "
                             "tensor-core conv also pays cuDNN's NCHW<->NHWC transposes | nhwc = none (default)")
    parser.add_argument("--gpu-fusion", default=None, choices=STEP_FUSIONS,
                        help="with --gpu-step: how the framework runs the memory-bound kernels (antsim gpu --fusion):"
                             " eager = one kernel per op (default) | xla = ReLU and residual adds fused into BatchNorm")
    parser.add_argument("--gpu-selection", default=DEFAULT_SELECTION, choices=SELECTIONS,
                        help="GPU kernel selection: timed = fastest plan of the library's menu (cudnn.benchmark; "
                             "default) | heuristic = the library's algorithm family")
    parser.add_argument("--gpu-library", default=DEFAULT_LIBRARY, choices=LIBRARIES,
                        help="library generation whose kernel menu the GPUs run (default cudnn8)")
    parser.add_argument("--gpu-correction", default=DEFAULT_CORRECTION, choices=CORRECTIONS,
                        help="none = the physical GPU model (default) | learned = its fitted correction "
                             "(experimental: no better than the physical model on a GPU held out of its fit; "
                             "docs/gpu_learned.md)")
    parser.add_argument("--baseline", default=None,
                        help="design the ratios are over (default: scnn if present, else the first design)")
    parser.add_argument("--out", type=Path, default=None, help="comparison file: .json (antsim.compare/1) or .csv")
    parser.add_argument("--report-out", type=Path, default=None,
                        help="also write a report folder here (as 'antsim report --out')")
    parser.add_argument("--sweep", type=Path, default=None,
                        help="with --report-out: add the Pareto plots of an 'antsim sweep --export' folder")
    add_workload_arguments(parser)
    _add_simulation_arguments(parser)


def _add_simulation_arguments(parser: argparse.ArgumentParser) -> None:
    add_sparsity_arguments(parser, title="sparsity and simulation (for --arch)")
    parser.add_argument("--jobs", type=int, default=0,
                        help="simulate up to N designs at once in worker processes (default: one per design,"
                             " at most the CPU count; 1 = in this process)")
    from antsim.cli.simulate import add_force_argument, add_timing_argument

    add_timing_argument(parser)
    add_force_argument(parser)


def run(args: argparse.Namespace) -> int:
    _check_outputs(args)
    comparison = gather_results(args).comparison
    from antsim.report.build import build_report
    from antsim.report.compare import format_summary

    if args.out is None and args.report_out is None:  # noted once the inputs are good: an error stays one line
        _note("no --out or --report-out: printing the summary only")
    if args.out is not None:
        comparison.write(str(args.out))
    if args.report_out is not None:
        build_report(comparison, args.report_out, sweep_dir=args.sweep, progress=_note, command=command_line())
        _note(f"report written to {args.report_out}/index.html")
    sys.stdout.write(format_summary(comparison) + "\n")
    return 0


def command_line() -> str:
    """The command as typed (for the report's rerun section)."""
    return "antsim " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def _note(message: str) -> None:
    sys.stderr.write(f"antsim: {message}\n")
    sys.stderr.flush()


def _check_outputs(args: argparse.Namespace) -> None:
    """Reject bad output paths before any work (and outputs that the report folder would swallow)."""
    if args.out is not None:
        check_out_path(args.out, (".json", ".csv"))
    if args.sweep is not None and args.report_out is None:
        raise AntsimError("--sweep needs --report-out")
    if args.report_out is not None:
        from antsim.report.build import check_report_target

        check_report_target(args.report_out, what="--report-out")
        if args.out is not None and args.report_out.resolve() in args.out.resolve().parents:
            raise AntsimError(f"--out {args.out}: inside --report-out {args.report_out}, which is replaced whole;"
                              " the report holds data/comparison.json already")


def gather_results(args: argparse.Namespace) -> DesignComparison:
    """Results from files, then from ``--arch`` simulations, then from ``--gpu`` models, compared
    (``antsim.compare.compare_designs``).

    Every spec is loaded and every file checked against the workload before the first (slow) simulation.
    """
    from antsim.compare import compare_designs
    from antsim.report.build import check_sweep_workload
    from antsim.report.inputs import load_results

    cache: dict[str, Any] = {}

    def workload() -> tuple[list[Any], Mapping[str, Any]]:
        if not cache:
            cache["value"] = resolve_workload(args, batch_hint=csv_batch_hint(args.results))
        return cache["value"]

    results, sources = load_results(args.results, fallback_layers=lambda: workload()[0])
    if not (results or args.arch or args.gpu):
        raise AntsimError("nothing to compare: give result files, --arch PATH or --gpu NAME")
    if not args.gpu and (args.gpu_precision or args.gpu_structured or args.gpu_step
                         or args.gpu_correction != DEFAULT_CORRECTION):
        raise AntsimError("--gpu-precision / --gpu-structured / --gpu-step / --gpu-correction need --gpu NAME")
    for flag, value in (("--gpu-layout", args.gpu_layout), ("--gpu-fusion", args.gpu_fusion)):
        if value is not None and not args.gpu_step:
            raise AntsimError(f"{flag} goes with --gpu-step (the step's memory-bound kernels)")
    archs, gpus = _load_specs(args)
    if not (archs or gpus):
        return compare_designs(results=results, sources=sources, baseline=args.baseline)
    layers, echo = workload()
    simulation = _simulation_options(args, layers) if archs else None
    if args.sweep is not None:  # a sweep of another workload fails before any simulation
        check_sweep_workload(args.sweep, {"network": echo.get("network"), "phases": echo.get("phases"),
                                          "layers": [layer.to_dict() for layer in layers]})
    return compare_designs(layers, echo, results=results, sources=sources, archs=archs, gpus=gpus,
                           simulation=simulation, gpu_options=_gpu_options(args), baseline=args.baseline,
                           jobs=args.jobs, progress=not args.no_progress, note=_note, force=args.force,
                           workload_source="the workload arguments")


def _load_specs(args: argparse.Namespace) -> tuple[list[ArchDesign], list[GpuDesign]]:
    """The ``--arch`` and ``--gpu`` designs, each checked alone as it is loaded (``check_specs``)."""
    from antsim.compare import ArchDesign, GpuDesign, check_specs
    from antsim.gpu import load_gpu
    from antsim.spec.arch import load_arch

    options = _gpu_options(args)
    archs = [ArchDesign(load_arch(path), label=str(path), source=f"--arch {path}") for path in args.arch]
    check_specs(archs, [], options)
    precisions = list(dict.fromkeys(args.gpu_precision or ["fp32"]))
    gpus = [GpuDesign(load_gpu(name), name, precision, _gpu_source(args, name, precision))
            for name in args.gpu for precision in precisions]
    check_specs([], gpus, options)
    return archs, gpus


def _gpu_options(args: argparse.Namespace) -> GpuOptions:
    from antsim.compare import GpuOptions

    step = {key: value for key, value in (("layout", args.gpu_layout), ("fusion", args.gpu_fusion)) if value}
    return GpuOptions(structured=args.gpu_structured, step=args.gpu_step, selection=args.gpu_selection,
                      library=args.gpu_library, correction=args.gpu_correction, **step)


def _gpu_source(args: argparse.Namespace, name: str, precision: str) -> str:
    """The flags that reproduce one GPU design (the comparison's source of its result)."""
    structured = f" --gpu-structured {args.gpu_structured}" if args.gpu_structured else ""
    step = " --gpu-step" if args.gpu_step else ""
    step += f" --gpu-layout {args.gpu_layout}" if args.gpu_layout else ""
    step += f" --gpu-fusion {args.gpu_fusion}" if args.gpu_fusion else ""
    menu = f" --gpu-selection {args.gpu_selection} --gpu-library {args.gpu_library}"
    correction = f" --gpu-correction {args.gpu_correction}" if args.gpu_correction != DEFAULT_CORRECTION else ""
    return f"--gpu {name} --gpu-precision {precision}{structured}{step}{menu}{correction}"


def _simulation_options(args: argparse.Namespace, layers: list[Any]) -> SimulationOptions:
    """The simulations' options, checked as ``antsim simulate`` checks them."""
    # The checks are antsim simulate's own, so both commands accept and reject the same values.
    from antsim.compare import SimulationOptions

    timing = parse_timing(args.timing, "--timing")
    densities = resolve_densities(args)
    tensors = resolve_tensors(args, layers)
    if tensors is None:
        check_sparsity_model(args.sparsity)
    echo = {"tensors": str(args.tensors) if args.tensors else None,
            "sparsity": None if tensors is not None else args.sparsity, "regime": args.regime}
    return SimulationOptions(densities=densities, sparsity=args.sparsity, tensors=tensors, fidelity=args.fidelity,
                             seed=args.seed, batch_sample=args.batch_sample, timing=timing, echo=echo)
