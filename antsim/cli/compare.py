"""``antsim compare``: speedup and energy reduction of designs over a baseline on one workload.

Reads ``antsim.result/1`` JSON / measurement CSV files, and/or runs designs itself: ``--arch`` files
through the simulator and ``--gpu`` names through the GPU model, on the workload given by the workload
arguments. Writes ``antsim.compare/1`` JSON or CSV (``--out``) and optionally a full report folder
(``--report-out``); prints a summary table on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
from antsim.gpu.menus import DEFAULT_LIBRARY, DEFAULT_SELECTION, LIBRARIES, SELECTIONS
from antsim.results import NetworkResult

HELP = "compare designs on one workload (result files, --arch, --gpu): speedups and energy reductions"


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
    parser.add_argument("--gpu-selection", default=DEFAULT_SELECTION, choices=SELECTIONS,
                        help="GPU kernel selection: timed = fastest plan of the library's menu (cudnn.benchmark; "
                             "default) | heuristic = the library's algorithm family")
    parser.add_argument("--gpu-library", default=DEFAULT_LIBRARY, choices=LIBRARIES,
                        help="library generation whose kernel menu the GPUs run (default cudnn8)")
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
    from antsim.cli.simulate import add_force_argument

    add_force_argument(parser)


def run(args: argparse.Namespace) -> int:
    _check_outputs(args)
    results, sources = gather_results(args)
    from antsim.report.compare import compare_results, format_summary

    comparison = compare_results(results, sources, baseline=args.baseline)
    if args.out is None and args.report_out is None:  # noted once the inputs are good: an error stays one line
        _note("no --out or --report-out: printing the summary only")
    if args.out is not None:
        comparison.write(str(args.out))
    if args.report_out is not None:
        from antsim.report.build import build_report

        build_report(comparison, args.report_out, sweep_dir=args.sweep, progress=_note,
                     command=command_line())
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

        check_report_target(args.report_out, flag="--report-out")
        if args.out is not None and args.report_out.resolve() in args.out.resolve().parents:
            raise AntsimError(f"--out {args.out}: inside --report-out {args.report_out}, which is replaced whole;"
                              " the report holds data/comparison.json already")


def gather_results(args: argparse.Namespace) -> tuple[list[NetworkResult], list[str]]:
    """Results from files, then from ``--arch`` simulations, then from ``--gpu`` models.

    Every spec is loaded and every file checked against the workload before the first (slow) simulation.
    """
    from antsim.report.inputs import check_layers, layers_of, load_results

    cache: dict[str, Any] = {}

    def workload() -> tuple[list[Any], dict[str, Any]]:
        if not cache:
            cache["value"] = resolve_workload(args, batch_hint=csv_batch_hint(args.results))
        return cache["value"]

    results, sources = load_results(args.results, fallback_layers=lambda: workload()[0])
    if not (results or args.arch or args.gpu):
        raise AntsimError("nothing to compare: give result files, --arch PATH or --gpu NAME")
    if not args.gpu and (args.gpu_precision or args.gpu_structured or args.gpu_step):
        raise AntsimError("--gpu-precision / --gpu-structured / --gpu-step need --gpu NAME")
    archs, gpus = _load_specs(args)
    if archs or gpus:
        for result, source in zip(results, sources, strict=True):
            check_layers(workload()[0], layers_of(result, source), "the workload arguments", source)
    if args.sweep is not None and (archs or gpus):  # a sweep of another workload fails before any simulation
        from antsim.report.build import check_sweep_workload

        layers, echo = workload()
        check_sweep_workload(args.sweep, {"network": echo.get("network"), "phases": echo.get("phases"),
                                          "layers": [layer.to_dict() for layer in layers]})
    if archs:
        results += _simulate_all(archs, args, *workload())
        sources += [f"--arch {path}" for path, _arch in archs]
    for name, gpu, precision in gpus:
        _note(f"GPU model {name} ({precision}{', ' + args.gpu_structured if args.gpu_structured else ''})")
        results.append(_gpu(gpu, precision, args, *workload()))
        structured = f" --gpu-structured {args.gpu_structured}" if args.gpu_structured else ""
        step = " --gpu-step" if args.gpu_step else ""
        menu = f" --gpu-selection {args.gpu_selection} --gpu-library {args.gpu_library}"
        sources.append(f"--gpu {name} --gpu-precision {precision}{structured}{step}{menu}")
    return results, sources


def _load_specs(args: argparse.Namespace) -> tuple[list[tuple[Path, Any]], list[tuple[str, Any, str]]]:
    archs: list[tuple[Path, Any]] = []
    gpus: list[tuple[str, Any, str]] = []
    if args.arch:
        from antsim.simulate import check_dram_technology
        from antsim.spec.arch import load_arch

        archs = [(path, load_arch(path)) for path in args.arch]
        for path, arch in archs:
            check_dram_technology(arch, str(path))
    if args.gpu:
        from antsim.gpu import load_gpu
        from antsim.gpu.estimate import check_structured
        from antsim.gpu.menus import check_library

        precisions = list(dict.fromkeys(args.gpu_precision or ["fp32"]))
        gpus = [(name, load_gpu(name), precision) for name in args.gpu for precision in precisions]
        for _name, gpu, precision in gpus:
            gpu.peak(precision)  # an unknown precision fails here, before any simulation
            check_structured(gpu, precision, args.gpu_structured)
            check_library(gpu, precision, args.gpu_library)
    return archs, gpus


def _simulate_all(archs: list[tuple[Path, Any]], args: argparse.Namespace, layers: list[Any],
                  echo: dict[str, Any]) -> list[NetworkResult]:
    """Simulate every arch; several at once in worker processes when ``--jobs`` allows (same results)."""
    from antsim.simulate import simulate_network

    options = _simulation_options(args, layers, echo)
    jobs = args.jobs if args.jobs > 0 else min(len(archs), os.cpu_count() or 1)
    from antsim.guard import guard_run

    guard_run([arch for _path, arch in archs], layers, options["phases"], options["densities"], options["tensors"],
              options["fidelity"], concurrent=1 if len(archs) == 1 else jobs, force=args.force)
    if jobs <= 1 or len(archs) == 1:
        results = []
        for path, arch in archs:
            _note(f"simulating {path} on {echo['network']} (batch {echo['batch']})")
            results.append(simulate_network(arch, layers, progress=not args.no_progress, **options))
        return results
    from concurrent.futures import ProcessPoolExecutor, as_completed

    _note(f"simulating {len(archs)} designs on {echo['network']} (batch {echo['batch']}), {jobs} at a time")
    start = time.monotonic()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(simulate_network, arch, layers, progress=False, **options): path
                   for path, arch in archs}
        for future in as_completed(futures):
            future.result()  # re-raises a worker's error here
            _note(f"simulated {futures[future]} ({time.monotonic() - start:.0f} s)")
        return [future.result() for future in futures]


def _simulation_options(args: argparse.Namespace, layers: list[Any], echo: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments of ``simulate_network``, checked as ``antsim simulate`` checks them."""
    # The checks are antsim simulate's own, so both commands accept and reject the same values.

    densities = resolve_densities(args)
    tensors = resolve_tensors(args, layers)
    if tensors is None:
        check_sparsity_model(args.sparsity)
    workload = {**echo, "tensors": str(args.tensors) if args.tensors else None,
                "sparsity": None if tensors is not None else args.sparsity, "regime": args.regime}
    return {"phases": tuple(echo["phases"]), "densities": densities, "sparsity": args.sparsity,
            "tensors": tensors, "fidelity": args.fidelity, "seed": args.seed, "workload": workload,
            "batch_sample": args.batch_sample}


def _gpu(gpu: Any, precision: str, args: argparse.Namespace, layers: list[Any],
         echo: dict[str, Any]) -> NetworkResult:
    from antsim.gpu import estimate_gpu

    estimate: Callable[..., NetworkResult] = estimate_gpu
    if args.gpu_step:
        from antsim.gpu.step import estimate_step

        estimate = estimate_step
    return estimate(gpu, layers, phases=tuple(echo["phases"]), precision=precision, workload=echo,
                    structured=args.gpu_structured, selection=args.gpu_selection, library=args.gpu_library)
