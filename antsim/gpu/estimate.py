"""The GPU baseline's public entry points: one (layer, phase) → ``LayerResult``; a network → ``NetworkResult``.

A GPU runs every convolution dense (unstructured sparsity gives no speedup), so the estimate
depends only on the layer shape, the phase and the precision. GEMM layers
(``antsim.workloads.gemm.Gemm``) run as one cuBLAS GEMM per phase (``antsim.gpu.gemm_layer``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from antsim.errors import AntsimError
from antsim.gpu.energy import energy_breakdown
from antsim.gpu.gemm import Gemm
from antsim.gpu.gemm_layer import gemm_formulation, structured_phase
from antsim.gpu.menus import (
    DEFAULT_LIBRARY,
    DEFAULT_SELECTION,
    FAMILY,
    check_library,
    check_selection,
    formulations,
    heuristic_formulations,
    heuristic_tile,
)
from antsim.gpu.model import CALIBRATION, Calibration, Plan, best_plan, candidate_plans
from antsim.gpu.spec import PRECISIONS, GpuSpec, load_gpu, precision_key
from antsim.results import GpuLayerDetails, LayerResult, NetworkResult, WorkloadEcho
from antsim.vocabulary import Library, Phase, Precision, Selection
from antsim.workloads.gemm import Gemm as GemmLayer
from antsim.workloads.gemm import layer_kind
from antsim.workloads.layers import PHASES, Layer

MODEL_NAME = ("antsim.gpu tile/wave/traffic model (DeLTA-style) over cuDNN's menu (implicit GEMM, Winograd, FFT), "
              "TDP-bounded power")
STRUCTURED = ("2:4",)
# Phases whose GEMM B operand is the weights (fprop: W along C·R·S; dgrad: Wᵀ along K·R·S). Both can
# be 2:4 along their reduction only with *transposable* 2:4 masks [assumption: weights pruned so that
# W and Wᵀ are both 2:4, as in Hubara et al., NeurIPS 2021]; wgrad's operands (dY, X) are not
# structured, so it runs dense.
STRUCTURED_PHASES = ("fprop", "dgrad")


class KernelCorrection(Protocol):
    """A correction of the chosen plan's time (``antsim.gpu.learned.resolve_correction``)."""

    def factor(self, gpu: GpuSpec, layer: Layer | GemmLayer, phase: Phase, details: GpuLayerDetails,
               time_s: float) -> float: ...

    def echo(self) -> dict[str, Any]: ...


def gpu_design_name(gpu: str, precision: Precision, structured: str | None) -> str:
    """A GPU result's design name: the GPU at fp32, else ``GPU-PRECISION``, plus ``-2:4`` when structured."""
    name = gpu if precision == "fp32" else f"{gpu}-{precision}"
    return name if structured is None else f"{name}-{structured}"


def check_structured(gpu: GpuSpec, precision: Precision, structured: str | None) -> None:
    """One-line error unless ``structured`` is None or a pattern this GPU and precision run sparse.

    Raises:
        AntsimError: unknown pattern, a GPU without sparse tensor cores, or a SIMT precision.
    """
    if structured is None:
        return
    if structured not in STRUCTURED:
        raise AntsimError(f"structured sparsity: unknown {structured!r}; known: {', '.join(STRUCTURED)}")
    if not gpu.sparse_tensor_cores:
        raise AntsimError(f"gpu {gpu.name}: {structured} structured sparsity needs sparse tensor cores "
                          "(sparse_tensor_cores: true; Ampere and later)")
    if not gpu.uses_tensor_cores(precision):
        raise AntsimError(f"gpu {gpu.name}: precision {precision!r} runs on the SIMT lanes; {structured} "
                          "structured sparsity needs a tensor-core precision (tf32, fp16, bf16)")


def estimate_layer(gpu: GpuSpec | str | Path, layer: Layer | GemmLayer, phase: Phase, precision: Precision = "fp32",
                   calibration: Calibration = CALIBRATION, structured: str | None = None,
                   selection: Selection = DEFAULT_SELECTION, library: Library = DEFAULT_LIBRARY,
                   forward_algo: str = "", correction: KernelCorrection | None = None) -> LayerResult:
    """Predict time and energy of one training convolution on a GPU.

    Args:
        gpu: A ``GpuSpec``, a builtin GPU name or a GPU YAML path.
        layer: The convolution (its ``N`` is the batch).
        phase: ``fprop`` | ``dgrad`` | ``wgrad``.
        precision: ``fp32`` | ``tf32`` | ``fp16`` | ``bf16`` | ``fp16_pseudo``.
        calibration: Model constants (default: the calibrated ones).
        structured: ``"2:4"``: the weights are 2:4 structured-sparse (transposable), so fprop and
            dgrad run sparse tensor-core MMA at twice the math rate on half the weight bytes (+ 2-bit
            indices); wgrad runs dense. ``None`` (default): dense.
        selection: ``timed`` (default: the fastest plan of the library's menu, as
            ``cudnn.benchmark``) or ``heuristic`` (the family the library's heuristics pick, see
            ``antsim.gpu.menus``).
        library: ``cudnn5`` | ``cudnn6`` | ``cudnn7`` | ``cudnn8`` (default): which algorithms exist.
        forward_algo: The forward algorithm a measurement recorded (heuristic selection follows it).
        correction: Multiplies the chosen plan's time (``antsim.gpu.learned``; default None: the physical
            model alone). ``details`` keep the physical plan's terms.

    Returns:
        A ``LayerResult`` with ``time_s`` (s), ``energy_j`` (J), ``energy_breakdown_j`` (``core``,
        ``dram``, ``static``) and ``details``: the chosen GEMM (``M``, ``N``, ``K``, ``algorithm``),
        ``tile``, ``split_k``, ``ctas``, ``waves``, ``bound``, ``structured``, the time terms, and what
        ran: ``algo`` (cuDNN's name), ``family``, ``tensor_cores``, ``run_precision``,
        ``workspace_bytes``, ``selection``, ``library``.

    Raises:
        AntsimError: unknown precision or one the GPU lacks; bad GPU spec; unknown phase; a
            structured pattern the GPU or precision cannot run sparse; unknown selection or library.
    """
    spec = gpu if isinstance(gpu, GpuSpec) else load_gpu(gpu)
    precision_key(precision)
    check_structured(spec, precision, structured)
    check_selection(selection)
    check_library(spec, precision, library)
    gemms = _gemms(spec, layer, phase, precision, structured, library)
    if selection == "heuristic" and not isinstance(layer, GemmLayer):
        gemms = heuristic_formulations(gemms, layer, phase, forward_algo, library)
    candidates = [(best_plan(spec, g, precision, calibration, _heuristic_keep(g, selection, layer, forward_algo)), g)
                  for g in gemms]
    plan, gemm = min(candidates, key=lambda pg: pg[0].time_s)
    details = _details(plan, gemm, precision, selection, library)
    time_s = plan.time_s if correction is None else plan.time_s * correction.factor(spec, layer, phase, details,
                                                                                    plan.time_s)
    energy = energy_breakdown(spec, precision, time_s, 2.0 * plan.executed_macs, plan.dram_bytes)
    return LayerResult(layer=layer.name, phase=phase, time_s=time_s, energy_j=sum(energy.values()),
                       energy_breakdown_j=energy, details=details, kind=layer_kind(layer))


def _heuristic_keep(g: Gemm, selection: Selection, layer: Layer | GemmLayer,
                    forward_algo: str = "") -> Callable[[Plan], bool] | None:
    """The tiles a heuristic selection lets a convolution's GEMM run (``menus.heuristic_tile``, which follows the
    recorded forward algorithm); None: any."""
    if selection != "heuristic" or isinstance(layer, GemmLayer):
        return None
    return lambda plan: heuristic_tile(g, plan.tile, forward_algo)


def layer_plans(gpu: GpuSpec, layer: Layer | GemmLayer, phase: Phase, precision: Precision = "fp32",
                calibration: Calibration = CALIBRATION, structured: str | None = None,
                library: Library = DEFAULT_LIBRARY) -> list[tuple[Plan, Gemm]]:
    """Every plan the model weighs for one (layer, phase): each formulation of the menu × tile × split-K.

    ``estimate_layer`` keeps the fastest (``timed``); ``antsim.gpu.check.oracle_rows`` asks how close
    the closest of them comes to a measurement (what a perfect kernel-selection rule could reach).
    """
    check_structured(gpu, precision, structured)
    check_library(gpu, precision, library)
    return [(plan, g) for g in _gemms(gpu, layer, phase, precision, structured, library)
            for plan in candidate_plans(gpu, g, precision, calibration)]


def _gemms(gpu: GpuSpec, layer: Layer | GemmLayer, phase: Phase, precision: Precision, structured: str | None,
           library: Library) -> list[Gemm]:
    if isinstance(layer, GemmLayer):  # one cuBLAS GEMM; 2:4 only where the weight is its B operand
        g = gemm_formulation(gpu, layer, phase, precision, library)
        return [replace(g, structured=structured is not None and structured_phase(layer, phase))]
    gemms = formulations(gpu, layer, phase, precision, library)
    if structured is None or phase not in STRUCTURED_PHASES:
        return gemms
    # 2:4 sparse MMA exists for the GEMM formulations' weight operand only (Winograd and FFT
    # transform W into dense values, which the sparse tensor cores cannot skip: they stay dense).
    return [replace(g, structured=True) if FAMILY[g.algorithm] == "gemm" else g for g in gemms]


def _details(plan: Plan, gemm: Any, precision: Precision, selection: Selection, library: Library) -> GpuLayerDetails:
    return GpuLayerDetails(
        M=gemm.M, N=gemm.N, K=gemm.K, algorithm=gemm.algorithm, precision=precision, tile=plan.tile.name,
        split_k=plan.split_k, ctas=plan.ctas, ctas_per_sm=plan.ctas_per_sm, waves=plan.waves, bound=plan.bound,
        compute_s=plan.compute_s, l2_s=plan.l2_s, dram_s=plan.dram_s, store_s=plan.store_s, reduce_s=plan.reduce_s,
        kernels=plan.launches, dram_bytes=plan.dram_bytes, l2_bytes=plan.l2_bytes,
        executed_flops=2 * plan.executed_macs, useful_flops=2 * gemm.useful_macs,
        structured="2:4" if gemm.structured and plan.tensor_cores else None, algo=gemm.algo,
        family=FAMILY[gemm.algorithm], tensor_cores=plan.tensor_cores, run_precision=plan.precision,
        side_s=plan.side_s, workspace_bytes=gemm.workspace * PRECISIONS[plan.precision][0], selection=selection,
        library=library)


def estimate_gpu(gpu: GpuSpec | str | Path, layers: Sequence[Layer | GemmLayer], phases: Iterable[Phase] = PHASES,
                 precision: Precision = "fp32", workload: Mapping[str, Any] | None = None,
                 calibration: Calibration = CALIBRATION,
                 progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
                 structured: str | None = None, selection: Selection = DEFAULT_SELECTION,
                 library: Library = DEFAULT_LIBRARY, correction: KernelCorrection | None = None) -> NetworkResult:
    """Predict every (layer, phase) of a workload on a GPU.

    Args:
        gpu: A ``GpuSpec``, a builtin GPU name or a GPU YAML path.
        layers: The layers (at the batch size to model), in network order.
        phases: Which of ``fprop``, ``dgrad``, ``wgrad`` (kept in that order).
        precision: See ``estimate_layer``.
        workload: The workload echo (as ``antsim.cli._common.resolve_workload`` builds it); default
            built from ``layers`` and ``phases``.
        calibration: Model constants.
        progress: Optional wrapper of the layer iterable (a progress bar).
        structured, selection, library, correction: See ``estimate_layer``.

    Returns:
        A ``NetworkResult`` with ``backend="gpu"``, ``design`` = ``gpu_design_name`` (e.g. ``v100``,
        ``h100-bf16``, ``a100-fp16-2:4``), the spec echoed; ``meta["gpu_correction"]`` echoes a correction.

    Raises:
        AntsimError: see ``estimate_layer``.
    """
    spec = gpu if isinstance(gpu, GpuSpec) else load_gpu(gpu)
    spec.peak(precision)  # fail before any work
    check_structured(spec, precision, structured)
    check_selection(selection)
    check_library(spec, precision, library)
    phases = tuple(p for p in PHASES if p in tuple(phases))
    items: Iterable[Layer | GemmLayer] = progress(layers) if progress else layers
    records = [estimate_layer(spec, layer, phase, precision, calibration, structured, selection, library,
                              correction=correction) for layer in items for phase in phases]
    echo = {} if correction is None else {"gpu_correction": correction.echo()}
    return NetworkResult(design=gpu_design_name(spec.name, precision, structured), backend="gpu",
                         records=tuple(records), spec=spec.to_dict(),
                         workload=WorkloadEcho.from_mapping(workload) if workload is not None
                         else _workload(layers, phases),
                         meta={"precision": precision, "structured": structured, "selection": selection,
                               "library": library, "model": MODEL_NAME,
                               "calibration": calibration.to_dict(), **echo})


def _workload(layers: Sequence[Layer | GemmLayer], phases: Sequence[Phase]) -> WorkloadEcho:
    batches = {layer.batch if isinstance(layer, GemmLayer) else layer.N for layer in layers}
    return WorkloadEcho.of(network=None, layers_csv=None, batch=batches.pop() if len(batches) == 1 else None,
                           phases=list(phases), layers=[layer.to_dict() for layer in layers])
