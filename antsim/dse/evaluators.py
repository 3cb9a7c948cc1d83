"""Evaluators: an arch and a workload in, the sweep's metrics out.

An evaluator is any callable ``(arch, workload, fidelity, seed) -> dict[str, float]`` returning at least
``time_s``, ``energy_j`` and ``area_mm2`` (``antsim.dse.objective.complete_metrics`` derives the rest). It
raises ``MappingError`` for a design the workload cannot be mapped onto (the trial is then recorded as
infeasible, not failed). Registered names: ``simulator`` (the real model, ``antsim.simulate``) and
``analytic`` (a closed-form toy, cheap and deterministic, for tests of the sweep machinery only); any
``package.module:function`` path also works, so worker processes can import it.
"""

from __future__ import annotations

import functools
import importlib
import math
import time
from collections.abc import Callable
from typing import Any

from antsim.dataflow.gemm import guard_layer
from antsim.dse.workload import Workload
from antsim.errors import MappingError, SpecError
from antsim.guard import MAX_PASSES, phase_steps
from antsim.results import AcceleratorLayerDetails, NetworkResult
from antsim.simulate import check_densities, layer_seed, simulate_network
from antsim.sparsity.gemm import make_gemm_tensors
from antsim.sparsity.generators import make_tensors
from antsim.sparsity.tensors import load_tensors
from antsim.spec.arch import ArchSpec
from antsim.vocabulary import Fidelity, TimingModel
from antsim.workloads.gemm import Gemm
from antsim.workloads.layers import Layer

Evaluator = Callable[[ArchSpec, Workload, Fidelity, int], dict[str, float]]


@functools.lru_cache(maxsize=4)
def _tensors(path: str) -> dict[str, Any]:
    return load_tensors(path)


def network_metrics(result: NetworkResult) -> dict[str, float]:
    """``time_s``, ``energy_j``, ``area_mm2``, ``cycles``, ``rcp_fraction``, ``stationary_passes`` and
    ``accumulator_restreams`` of a simulator result (the last two: worst over its records)."""
    totals = result.totals
    products = [r.products for r in result.records if r.products is not None]
    # Measured on the mapped design: the RCPs it multiplies over the products it multiplies (a policy that
    # skips RCPs lowers it; ``total`` alone is the unfiltered mapping, the same for every policy).
    multiplied = sum(p.total - p.skipped for p in products)
    out = {"time_s": float(totals.time_s or 0.0), "energy_j": float(totals.energy_j or 0.0),
           "area_mm2": float(totals.area_mm2 or 0.0)}
    if totals.cycles is not None:
        out["cycles"] = float(totals.cycles)
    if multiplied:
        out["rcp_fraction"] = sum(p.rcp - p.skipped for p in products) / multiplied
    details = [AcceleratorLayerDetails.of(r) for r in result.records]
    if details:
        out["stationary_passes"] = max(float(d.passes) for d in details)
        out["accumulator_restreams"] = max(float(d.accumulator_restreams) for d in details)
    return out


_GENERATED: dict[tuple[Any, ...], Any] = {}


def _generated(workload: Workload, seed: int) -> dict[str, Any]:
    """Operands of every layer, made once per worker process and reused by every trial.

    Layer ``i`` of the sweep's workload gets ``layer_seed(seed, i)`` — the seed ``simulate_network``
    gives it — also inside a proxy subset, so proxy and full evaluations see the same operands and an
    exported arch re-run with ``antsim simulate`` on the same layers and seed reproduces the trial.
    """
    return {layer.name: generated_tensors(workload, position, seed) for position, layer in enumerate(workload.layers)}


def generated_key(workload: Workload, position: int, seed: int) -> tuple[Any, ...]:
    """The cache key of the operands of ``workload.layers[position]``: everything they are made from."""
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in workload.layers[position].to_dict().items()}
    dens = check_densities(workload.densities)  # (an unequal stride or padding is a list in to_dict: made a tuple)
    return (tuple(sorted(fields.items(), key=str)), tuple(sorted(dens.items())), workload.sparsity, seed,
            workload.indices[position])


def generated_tensors(workload: Workload, position: int, seed: int) -> Any:
    """The operands of ``workload.layers[position]`` (``Tensors``; ``GemmTensors`` for a GEMM layer), made on
    first use in this process and kept."""
    key = generated_key(workload, position, seed)
    if key not in _GENERATED:
        layer, index = workload.layers[position], workload.indices[position]
        dens = check_densities(workload.densities)
        if isinstance(layer, Gemm):  # as simulate_network makes a GEMM layer's
            _GENERATED[key] = make_gemm_tensors(layer, dens, workload.sparsity, layer_seed(seed, index))
        else:
            _GENERATED[key] = make_tensors(layer, dens["w"], dens["a"], dens["g"], model=workload.sparsity,
                                           seed=layer_seed(seed, index), density_a_saved=dens.get("a_saved"))
    return _GENERATED[key]


def install_generated(workload: Workload, position: int, seed: int, tensors: Any) -> None:
    """Keep ``tensors`` as the operands of ``workload.layers[position]`` in this process (made by another worker
    of the sweep, ``antsim.dse.operand_share``: the same arrays this process would make)."""
    _GENERATED.setdefault(generated_key(workload, position, seed), tensors)


def check_passes(arch: ArchSpec, workload: Workload) -> None:
    """Refuse a sampled design whose input buffer would tile some (layer, phase) into more than
    ``antsim.guard.MAX_PASSES`` passes (a tiny ``buffers.input_kb``: minutes to hours of timing for one
    trial, see ``antsim.guard``) — the trial is recorded infeasible with the reason.

    Raises:
        MappingError: naming the layer, phase and pass count.
    """
    for layer in workload.layers:
        for phase in workload.phases:  # a GEMM layer as the conv view it is mapped as (what the guard sizes)
            _, passes = phase_steps(arch, guard_layer(arch, layer), phase, workload.densities)
            if passes > MAX_PASSES:
                raise MappingError(f"buffers.input_kb {arch.buffers.input_kb}: {layer.name}/{phase} needs about"
                                   f" {passes} stationary passes (limit {MAX_PASSES})")


def workload_tensors(workload: Workload, seed: int) -> dict[str, Any]:
    """The operands every evaluation of ``workload`` uses: its tensors file, else the generated ones (each
    made once per worker process)."""
    return _tensors(workload.tensors_path) if workload.tensors_path else _generated(workload, seed)


def simulator(arch: ArchSpec, workload: Workload, fidelity: Fidelity = "fast", seed: int = 0,
              timing: TimingModel = "events") -> dict[str, float]:
    """Evaluate with ``antsim.simulate.simulate_network`` (the real model; ``timing``: its discrete-event
    tier or the closed-form one, docs/timing_tier.md); designs past the pass limit are refused first
    (``check_passes``)."""
    check_passes(arch, workload)
    tensors = workload_tensors(workload, seed)
    result = simulate_network(arch, list(workload.layers), phases=workload.phases,
                              densities=dict(workload.densities), sparsity=workload.sparsity,
                              tensors=tensors, fidelity=fidelity, seed=seed, batch_sample=workload.batch_sample,
                              timing=timing)
    return network_metrics(result)


def analytic(arch: ArchSpec, workload: Workload, fidelity: Fidelity = "fast", seed: int = 0,
             delay_s: float = 0.0, min_input_bytes_per_pe: float = 0.0) -> dict[str, float]:
    """A closed-form toy model for testing sweep mechanics (NOT a model of any accelerator).

    time = Σ non-zero MACs / (multipliers · clock) + bytes / DRAM bandwidth; energy = MACs · 1 pJ ·
    (bits/16)² + bytes · 20 pJ + 50 mW leakage · time; area = PEs · (F·I · 0.002 + SRAM KB · 0.01)
    mm². ``delay_s`` sleeps that long (to exercise kills mid-trial); a design whose input buffer holds
    fewer than ``min_input_bytes_per_pe`` bytes raises ``MappingError``.
    """
    if delay_s > 0:
        time.sleep(delay_s)
    pe, buf = arch.pe_array, arch.buffers
    if buf.input_kb * 1024 < min_input_bytes_per_pe:
        raise MappingError(f"input buffer {buf.input_kb} KB < {min_input_bytes_per_pe:.0f} B per PE")
    dens = workload.densities
    macs = sum(layer.macs for layer in workload.layers) * len(workload.phases)
    nz_macs = macs * dens.get("w", 1.0) * max(dens.get("a", 1.0), dens.get("g", 1.0))
    bytes_moved = sum(_operand_values(layer) for layer in workload.layers) * 2.0 * len(workload.phases)
    # A toy stand-in for anticipation: fewer RCP slots with ant/oracle, an imbalance term for big arrays.
    waste = {"none": 3.0, "ant": 1.4, "oracle": 1.0}[arch.anticipation.policy]
    imbalance = 1.0 + 0.02 * math.sqrt(pe.n_pes) + 0.1 / max(arch.mapping.output_channel_group, 1)
    compute_s = nz_macs * waste * imbalance / (pe.multipliers * arch.technology.clock_ghz * 1e9)
    memory_s = bytes_moved / (arch.dram.bandwidth_gbps * 1e9)
    t = compute_s + memory_s
    bits = (pe.multiplier_bits / 16.0) ** 2
    energy = nz_macs * waste * 1e-12 * bits + bytes_moved * 20e-12 + 0.05 * t * arch.technology.clock_ghz
    area = pe.n_pes * (pe.F * pe.I * 0.002 * bits + (buf.input_kb + buf.output_kb) * 0.01
                       + arch.accumulators.banks * 0.0005)
    return {"time_s": t, "energy_j": energy, "area_mm2": area, "cycles": t * arch.technology.clock_ghz * 1e9,
            "stationary_passes": 1.0}


def _operand_values(layer: Layer | Gemm) -> int:
    """Input and weight values of one phase's operands (the analytic toy model's traffic)."""
    if isinstance(layer, Gemm):
        return layer.count * layer.K * layer.N + layer.M * layer.K * (1 if layer.weight_shared else layer.count)
    return layer.N * layer.C * layer.H * layer.W + layer.K * layer.C * layer.R * layer.S


_BUILTIN: dict[str, Evaluator] = {"simulator": simulator, "analytic": analytic}


def resolve_evaluator(name: str, options: dict[str, Any] | None = None, source: str = "<sweep>") -> Evaluator:
    """The evaluator called ``name`` (a builtin or ``module:function``) with ``options`` bound.

    Raises:
        SpecError: unknown name, or a ``module:function`` that cannot be imported.
    """
    if name in _BUILTIN:
        func = _BUILTIN[name]
    elif ":" in name:
        module_name, _, attr = name.partition(":")
        try:
            func = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise SpecError(source, "evaluator.name", f"cannot import evaluator ({exc})", name) from None
    else:
        raise SpecError(source, "evaluator.name",
                        f"unknown evaluator; known: {', '.join(_BUILTIN)} or module:function", name)
    return functools.partial(func, **(options or {})) if options else func
