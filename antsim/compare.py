"""Comparing designs on one workload: simulate accelerator specs, model GPUs, join them with given results.

``compare_designs`` is what ``antsim compare`` runs once its flags are parsed and its inputs loaded::

    layers = antsim.network("resnet18-cifar")
    workload = {"network": "resnet18-cifar", "batch": 1, "phases": ["fprop", "dgrad", "wgrad"]}
    archs = [ArchDesign(antsim.load_arch(p), label=p) for p in ("arch_configs/scnn.yaml", "arch_configs/ant.yaml")]
    done = compare_designs(layers, workload, archs=archs, gpus=[GpuDesign(load_gpu("v100"), "v100", "fp16")])
    done.comparison.designs  # speedup and energy reduction of each design over the baseline (scnn)

Every given result is checked against the workload and every spec against its own limits before the
first (slow) simulation; the designs are then checked against the machine (``antsim.guard``), simulated
(several at once in worker processes when ``jobs`` allows: each design's result does not depend on it),
the GPUs modelled, and all of them joined by ``antsim.report.compare.compare_results``. Nothing is
written and nothing is drawn: progress goes to the caller's ``progress`` hook and ``note`` callable.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, fields
from typing import Any

from antsim.gpu.estimate import check_structured, estimate_gpu
from antsim.gpu.learned import DEFAULT_CORRECTION, Correction, resolve_correction
from antsim.gpu.menus import DEFAULT_LIBRARY, DEFAULT_SELECTION, check_library, check_selection
from antsim.gpu.spec import GpuSpec
from antsim.gpu.step import DEFAULT_FUSION, DEFAULT_LAYOUT, estimate_step
from antsim.guard import guard_run
from antsim.parallel import one_blas_thread_per_worker
from antsim.progress import Progress
from antsim.report.compare import Comparison, compare_results
from antsim.report.inputs import check_layers, layers_of
from antsim.results import NetworkResult
from antsim.simulate import DEFAULT_DENSITIES, check_dram_technology, simulate_network
from antsim.sparsity.tensors import Tensors
from antsim.spec.arch import ArchSpec
from antsim.vocabulary import Fidelity, Library, Precision, Selection, StepFusion, TensorLayout, TimingModel
from antsim.workloads.layers import Layer

Note = Callable[[str], None]


def _silent(_message: str) -> None:
    """The default ``note``: a library call says nothing unless its caller asks."""


@dataclass(frozen=True)
class ArchDesign:
    """An accelerator design to simulate.

    Attributes:
        arch: The spec.
        label: How progress notes name it (``antsim compare``: the YAML path as given).
        source: Where the comparison says its result came from (default: ``label``).
    """

    arch: ArchSpec
    label: str
    source: str = ""

    @property
    def origin(self) -> str:
        return self.source or self.label


@dataclass(frozen=True)
class GpuDesign:
    """A GPU to model at one precision.

    Attributes:
        gpu: The spec (``antsim.gpu.load_gpu``).
        name: How progress notes name it (the builtin name or YAML path as given).
        precision: Arithmetic precision (``GpuSpec.peak`` knows which the GPU has).
        source: Where the comparison says its result came from (default: ``name``).
    """

    gpu: GpuSpec
    name: str
    precision: Precision = "fp32"
    source: str = ""

    @property
    def origin(self) -> str:
        return self.source or self.name


@dataclass(frozen=True)
class GpuOptions:
    """How every GPU is modelled (``antsim.gpu``): 2:4 structured-sparse weights or not, the whole
    training step or the convolutions only (and, for the step, the framework's tensor layout and kernel
    fusion: ``antsim.gpu.step``), the kernel selection, the library generation and the kernel-time correction
    (``antsim.gpu.learned``)."""

    structured: str | None = None
    step: bool = False
    layout: TensorLayout = DEFAULT_LAYOUT
    fusion: StepFusion = DEFAULT_FUSION
    selection: Selection = DEFAULT_SELECTION
    library: Library = DEFAULT_LIBRARY
    correction: Correction = DEFAULT_CORRECTION


@dataclass(frozen=True)
class SimulationOptions:
    """The keyword arguments of ``antsim.simulate.simulate_network`` that every design shares.

    ``echo`` holds keys added to the accelerator results' workload echo beside the workload's own
    (``antsim compare``: the tensors file, the generator and the regime).
    """

    densities: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_DENSITIES))
    sparsity: str = "swat"
    tensors: Mapping[str, Tensors] | None = None
    fidelity: Fidelity = "fast"
    seed: int = 0
    batch_sample: int = 0
    timing: TimingModel = "events"
    echo: Mapping[str, Any] = field(default_factory=dict)

    def keywords(self, workload: Mapping[str, Any]) -> dict[str, Any]:
        """``simulate_network``'s keyword arguments on ``workload`` (progress aside)."""
        given = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "echo"}
        return {"phases": tuple(workload["phases"]), **given, "workload": {**workload, **self.echo}}


@dataclass(frozen=True)
class DesignComparison:
    """What ``compare_designs`` returns.

    Attributes:
        results: Every design's result in input order: the given ones, the simulated, the modelled GPUs.
        sources: Where each came from, in the same order.
        comparison: The joined comparison over the baseline (``antsim.compare/1`` when written).
    """

    results: tuple[NetworkResult, ...]
    sources: tuple[str, ...]
    comparison: Comparison


def compare_designs(layers: Sequence[Layer] | None = None, workload: Mapping[str, Any] | None = None, *,
                    results: Sequence[NetworkResult] = (), sources: Sequence[str] | None = None,
                    archs: Sequence[ArchDesign] = (), gpus: Sequence[GpuDesign] = (),
                    simulation: SimulationOptions | None = None, gpu_options: GpuOptions | None = None,
                    baseline: str | None = None, jobs: int = 0, progress: Progress | bool = False,
                    note: Note = _silent, force: bool = False, workload_source: str = "the workload",
                    ) -> DesignComparison:
    """Simulate ``archs`` and model ``gpus`` on the workload, and compare them with ``results``.

    Args:
        layers: The workload's layers (batch included); needed with ``archs`` or ``gpus``.
        workload: Its echo (``network``, ``batch``, ``phases``, ``layers``…), recorded in every new result;
            its ``phases`` are the phases run.
        results: Results computed before (files read by ``antsim.report.inputs.load_results``).
        sources: Where each of ``results`` came from (default: its design name).
        archs: Accelerator designs to simulate.
        gpus: GPUs to model.
        simulation: Densities, generator, tensors, fidelity, seed of the simulations.
        gpu_options: How the GPUs are modelled.
        baseline: The design the ratios are over (default: ``antsim.report.compare.default_baseline``).
        jobs: Designs simulated at once in worker processes (0: one per design, at most the CPU count;
            1: in this process).
        progress: Progress over each design's layers when simulated in this process (``antsim.progress``).
        note: Called with one line per step (which design runs, how long it took).
        force: Run designs ``antsim.guard`` would refuse as too large for the machine.
        workload_source: How errors name the workload that given results must match.

    Raises:
        AntsimError: a given result of another workload, a spec the workload or machine cannot run,
            results that do not compare (``compare_results``), or an unknown baseline.
        ValueError: ``archs`` or ``gpus`` without ``layers`` and ``workload``.
    """
    simulation = simulation or SimulationOptions()
    gpu_options = gpu_options or GpuOptions()
    given, given_sources = list(results), list(sources) if sources is not None else [r.design for r in results]
    new: list[NetworkResult] = []
    if archs or gpus:
        if layers is None or workload is None:
            raise ValueError("compare_designs: archs and gpus need the workload's layers and its echo")
        check_specs(archs, gpus, gpu_options)
        for result, source in zip(given, given_sources, strict=True):
            check_layers(list(layers), layers_of(result, source), workload_source, source)
        new += simulate_designs(archs, layers, workload, simulation, jobs=jobs, progress=progress, note=note,
                                force=force)
        new += [model_gpu(design, layers, workload, gpu_options, note) for design in gpus]
    all_results = (*given, *new)
    all_sources = (*given_sources, *(d.origin for d in archs), *(d.origin for d in gpus))
    comparison = compare_results(all_results, all_sources, baseline=baseline)
    return DesignComparison(results=all_results, sources=all_sources, comparison=comparison)


def check_specs(archs: Sequence[ArchDesign], gpus: Sequence[GpuDesign], options: GpuOptions) -> None:
    """What each spec alone can refuse before any work: an unpriced DRAM technology, a GPU without the
    precision, the structured sparsity or the library generation asked for, an unknown kernel selection."""
    for arch in archs:
        check_dram_technology(arch.arch, arch.label)
    for gpu in gpus:
        gpu.gpu.peak(gpu.precision)  # an unknown precision fails here
        check_structured(gpu.gpu, gpu.precision, options.structured)
        check_library(gpu.gpu, gpu.precision, options.library)
    if gpus:
        check_selection(options.selection)
        resolve_correction(options.correction)  # a stale correction table fails before any work


def simulate_designs(archs: Sequence[ArchDesign], layers: Sequence[Layer], workload: Mapping[str, Any],
                     simulation: SimulationOptions, *, jobs: int = 0, progress: Progress | bool = False,
                     note: Note = _silent, force: bool = False) -> list[NetworkResult]:
    """Every design's ``simulate_network`` result, in the order given; several at once in worker
    processes when ``jobs`` allows (each result is the same either way)."""
    if not archs:
        return []
    keywords = simulation.keywords(workload)
    jobs = jobs if jobs > 0 else min(len(archs), os.cpu_count() or 1)
    concurrent = 1 if len(archs) == 1 else jobs
    guard_run([d.arch for d in archs], layers, keywords["phases"], keywords["densities"], keywords["tensors"],
              keywords["fidelity"], concurrent=concurrent, force=force)
    where = f"{workload.get('network')} (batch {workload.get('batch')})"
    if concurrent <= 1:
        done = []
        for design in archs:
            note(f"simulating {design.label} on {where}")
            done.append(simulate_network(design.arch, layers, progress=progress, **keywords))
        return done
    note(f"simulating {len(archs)} designs on {where}, {jobs} at a time")
    start = time.monotonic()
    with one_blas_thread_per_worker(), ProcessPoolExecutor(max_workers=jobs,
                                                           mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(simulate_network, d.arch, layers, progress=False, **keywords): d.label for d in archs}
        for future in as_completed(futures):
            future.result()  # re-raises a worker's error here
            note(f"simulated {futures[future]} ({time.monotonic() - start:.0f} s)")
        return [future.result() for future in futures]


def model_gpu(design: GpuDesign, layers: Sequence[Layer], workload: Mapping[str, Any], options: GpuOptions,
              note: Note = _silent) -> NetworkResult:
    """The GPU model's result for one GPU at one precision: the convolutions (``estimate_gpu``) or the
    whole training step (``estimate_step``)."""
    note(f"GPU model {design.name} ({design.precision}{', ' + options.structured if options.structured else ''})")
    estimate: Callable[..., NetworkResult] = estimate_gpu
    step_options: dict[str, Any] = {}
    if options.step:
        estimate, step_options = estimate_step, {"layout": options.layout, "fusion": options.fusion}
    return estimate(design.gpu, layers, phases=tuple(workload["phases"]), precision=design.precision,
                    workload=workload, structured=options.structured, selection=options.selection,
                    library=options.library, correction=resolve_correction(options.correction), **step_options)


__all__ = ["ArchDesign", "DesignComparison", "GpuDesign", "GpuOptions", "SimulationOptions", "check_specs",
           "compare_designs", "model_gpu", "simulate_designs"]
