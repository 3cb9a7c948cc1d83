"""The accelerator backend end to end: tensors → dataflow → discrete-event timing → energy → results.

``simulate_layer`` runs one (layer, phase); ``simulate_network`` runs every layer and phase of a
network (generating sparse operands per layer with a seed derived from the run seed and the layer
index, unless tensors are given) and returns the ``antsim.result/1`` ``NetworkResult``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from antsim.dataflow.gemm import gemm_stream_densities, map_gemm_phase
from antsim.dataflow.sampling import check_batch_sample
from antsim.energy.pricing import PriceList, price_list
from antsim.errors import AntsimError, WorkloadError
from antsim.progress import Progress, track
from antsim.results import AcceleratorLayerDetails, LayerResult, NetworkResult, WorkloadEcho
from antsim.sim import Densities as StreamDensities
from antsim.sim import SimParams, simulate_phase
from antsim.sparsity.densities import Densities, DensityError
from antsim.sparsity.gemm import make_gemm_tensors
from antsim.sparsity.tensors import Tensors
from antsim.spec.arch import ArchSpec
from antsim.vocabulary import PHASES, Fidelity, Phase, TimingModel, parse_fidelity, parse_phase, parse_timing
from antsim.workloads.gemm import Gemm, layer_kind
from antsim.workloads.layers import Layer

# The densities of generated operands when none are given: W, A and dY at 0.1 (antsim.sparsity.densities).
DEFAULT_DENSITIES: Mapping[str, float] = Densities()


def operand_array(tensors: Tensors, operand: str, phase: Phase) -> np.ndarray:
    """The array a phase uses for ``operand`` (wgrad reads the SWAT-saved copy of A when there is one)."""
    if operand == "activations" and phase == "wgrad":
        return tensors.wgrad_activations
    return getattr(tensors, operand)


def _density(array: np.ndarray) -> float:
    return float(np.count_nonzero(array)) / array.size if array.size else 1.0


class SharedWork:
    """What one ``simulate_network`` call works out once for its ``simulate_layer`` calls: the design's prices
    (``antsim.energy.PriceList``) and the non-zero fraction of each operand array of the layer in flight.

    Densities are keyed by array identity and held with the array, so a key cannot be reused by another array
    while its entry lives; ``next_layer`` empties them (the layer's arrays are not kept past it).
    """

    def __init__(self, arch: ArchSpec) -> None:
        self.arch = arch
        self._prices: PriceList | None = None
        self._densities: dict[int, tuple[np.ndarray, float]] = {}

    def prices(self) -> PriceList:
        if self._prices is None:
            self._prices = price_list(self.arch)
        return self._prices

    def density(self, array: np.ndarray) -> float:
        held = self._densities.get(id(array))
        if held is not None and held[0] is array:
            return held[1]
        value = _density(array)
        self._densities[id(array)] = (array, value)
        return value

    def next_layer(self) -> None:
        self._densities.clear()


def output_density(tensors: Tensors, phase: Phase, density: Callable[[np.ndarray], float] = _density) -> float:
    """Density of a phase's outputs as written back (after the post-processing unit sparsifies them).

    [assumption] fprop: Y leaves through ReLU / top-k at the density of this layer's own input A (the
    regime's activation density); dgrad: dA leaves at this layer's dY density (gradient sparsification,
    docs/sources.md §1.2); wgrad: dW is written dense.
    """
    if phase == "fprop":
        return density(tensors.activations)
    if phase == "dgrad":
        return density(tensors.grad_output)
    return 1.0


def stream_densities(arch: ArchSpec, work: Any, tensors: Tensors, phase: Phase,
                     density: Callable[[np.ndarray], float] = _density) -> StreamDensities:
    """Densities that set the compressed sizes of the stationary, streamed and output streams (``density``:
    an array's non-zero fraction, e.g. ``SharedWork.density``).

    A dense design (``sparsity_support: false``) stores and moves every value, so its streams have
    density 1 whatever the tensors hold.
    """
    if not arch.sparsity_support:
        return StreamDensities(1.0, 1.0, 1.0)
    return StreamDensities(
        stationary=density(operand_array(tensors, work.stationary_operand, phase)),
        streamed=density(operand_array(tensors, work.streamed_operand, phase)),
        output=max(output_density(tensors, phase, density), 1e-6),
    )


def _check_choice(name: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise AntsimError(f"{name}: unknown value {value!r}; known: {', '.join(allowed)}")


def _price(prices: PriceList, actions: Mapping[str, Mapping[str, float]], time_s: float) -> dict[str, float]:
    return {k: float(v) for k, v in prices.price(actions, time_s).items()}


def design_area_mm2(arch: ArchSpec) -> float:
    """Total area of the design (mm²) from the area table."""
    from antsim.energy import area

    return float(math.fsum(area(arch).values()))


def simulate_layer(arch: ArchSpec, layer: Layer, phase: Phase, tensors: Tensors, fidelity: Fidelity = "exact",
                   seed: int = 0, params: SimParams | None = None, batch_sample: int = 0,
                   timing: TimingModel = "events", shared: SharedWork | None = None) -> LayerResult:
    """Simulate one (layer, phase) of a training step on ``arch``.

    Args:
        arch: The design.
        layer: The convolution (batch included).
        phase: ``fprop`` | ``dgrad`` | ``wgrad``.
        tensors: W, A, dY (zeros are sparsity), shapes matching ``layer``.
        fidelity: ``exact`` (every product enumerated; functional output) or ``fast`` (vector granularity).
        seed: Echoed in ``details`` (the dataflow itself is deterministic).
        params: Timing parameters not in the arch spec (link widths, staging, lookahead).
        batch_sample: ``fast`` only: map this many images of the batch and estimate the rest
            (``antsim.dataflow.sampling``; recorded in ``details.batch_sample``); 0 = every image.
        timing: ``events`` (simpy) or ``closed_form`` (the same timing as a recurrence).
        shared: Prices and operand densities a caller works out once for many calls on ``arch`` (``SharedWork``
            of this ``arch``); ``None`` works them out here.

    Returns:
        The ``LayerResult`` with cycles, time, energy (and breakdown), area, products, stalls, actions.

    Raises:
        AntsimError: unknown phase, fidelity or timing; WorkloadError: tensor shapes do not match the layer.
    """
    from antsim.dataflow import map_phase

    if shared is not None and shared.arch is not arch:
        raise AntsimError("simulate_layer: shared= was made for another arch (SharedWork(arch) of this one)")
    parse_phase(phase)  # a library caller may pass any string: refuse it before any work
    parse_fidelity(fidelity)
    parse_timing(timing)
    tensors.check_shapes(layer)
    if isinstance(layer, Gemm):  # a GEMM layer: its own mapping onto the same PhaseWork (antsim.dataflow.gemm)
        work = map_gemm_phase(arch, layer, phase, tensors, fidelity)
        densities = StreamDensities(*gemm_stream_densities(arch, layer, phase, tensors))
    else:
        work = map_phase(arch, layer, phase, tensors, fidelity, batch_sample=batch_sample)
        densities = stream_densities(arch, work, tensors, phase, _density if shared is None else shared.density)
    timed = simulate_phase(arch, work, densities, params, timing=timing)
    time_s = timed.cycles / (arch.technology.clock_ghz * 1e9)
    energy = _price(price_list(arch) if shared is None else shared.prices(), timed.actions, time_s)
    details = AcceleratorLayerDetails(
        fidelity=fidelity, seed=int(seed), tiling=dict(work.tiling), notes=tuple(work.notes),
        stationary_operand=work.stationary_operand, streamed_operand=work.streamed_operand, chunks=work.n_chunks,
        **timed.details, batch_sample=work.tiling.get("batch_sample"),
    )
    return LayerResult(
        layer=layer.name, phase=phase, time_s=time_s, cycles=timed.cycles,
        energy_j=math.fsum(energy.values()), energy_breakdown_j=energy, products=work.products,
        stalls=dict(timed.stalls), actions=timed.actions, details=details,
        area_mm2=design_area_mm2(arch), output=work.output, kind=layer_kind(layer),
    )


def layer_seed(seed: int, index: int) -> int:
    """Seed of layer ``index`` in a run seeded with ``seed`` (independent streams per layer)."""
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1)[0])


def check_densities(densities: Mapping[str, object] | None) -> dict[str, float]:
    """Fill the defaults (``w``, ``a``, ``g`` at 0.1) and validate by the rule of ``antsim.sparsity.densities``
    (keys ``DENSITY_KEYS``, each density in (0, 1]); returns ``{key: float}``, the ``workload.densities`` echo.

    Raises:
        AntsimError: an unknown key or a density outside (0, 1]: ``"densities.a: density of activations must
            be in (0, 1]; got 0"``.
    """
    try:
        return Densities.from_mapping({**DEFAULT_DENSITIES, **(densities or {})}).to_dict()
    except DensityError as exc:
        raise AntsimError(f"{exc.at('densities')}: {exc}") from None


def _layer_tensors(layer: Layer, index: int, densities: Mapping[str, float], sparsity: str,
                   tensors: Mapping[str, Tensors] | None, seed: int) -> Tensors:
    if tensors is not None:
        if layer.name not in tensors:
            raise WorkloadError(f"tensors: no entry for layer {layer.name!r}")
        return tensors[layer.name]
    if isinstance(layer, Gemm):
        return make_gemm_tensors(layer, densities, sparsity, layer_seed(seed, index))
    from antsim.sparsity.generators import make_tensors

    return make_tensors(layer, densities["w"], densities["a"], densities["g"], model=sparsity,
                        seed=layer_seed(seed, index), density_a_saved=densities.get("a_saved"))


def _iterate(layers: Sequence[Layer], progress: Progress | bool, desc: str) -> Iterable[tuple[int, Layer]]:
    return track(enumerate(layers), progress, total=len(layers), desc=desc, unit="layer")


def simulate_network(arch: ArchSpec, layers: Sequence[Layer], phases: Sequence[Phase] = PHASES,
                     densities: Mapping[str, float] | None = None, sparsity: str = "swat",
                     tensors: Mapping[str, Tensors] | None = None, fidelity: Fidelity = "fast", seed: int = 0,
                     progress: Progress | bool = False, params: SimParams | None = None,
                     workload: Mapping[str, Any] | None = None, batch_sample: int = 0,
                     timing: TimingModel = "events") -> NetworkResult:
    """Simulate every (layer, phase) of ``layers`` on ``arch``.

    Args:
        arch: The design.
        layers: Conv layers in network order (batch included).
        phases: Subset of ``PHASES`` (run in canonical order).
        densities: ``{"w", "a", "g"[, "a_saved", "attn"]}`` (or a ``Densities``) for generated operands, each
            in (0, 1] (``antsim.sparsity.densities``; w, a, g default to 0.1).
        sparsity: Generator model name (``antsim.sparsity.generators``) when ``tensors`` is not given.
        tensors: ``{layer name: Tensors}`` overriding generation (every layer must be present).
        fidelity: ``fast`` (default) or ``exact``.
        seed: Run seed; layer ``i`` uses ``layer_seed(seed, i)``.
        progress: Progress over layers: ``True`` a tqdm bar on stderr, or a callable that wraps the
            ``(index, layer)`` iterable (``antsim.progress``).
        params: Timing parameters not in the arch spec.
        workload: Extra keys echoed in the result's workload (``network``, ``tensors`` file, ``batch``…).
        batch_sample: ``fast`` only: per conv layer, map this many of the batch's images and estimate
            the others (``antsim.dataflow.sampling``; GEMM layers are mapped whole); echoed in the
            workload when a layer was estimated. 0 = all.
        timing: ``events`` (simpy, default) or ``closed_form`` (``antsim.sim.closed_form``); echoed in the
            workload when it is not the default.

    Returns:
        A ``NetworkResult`` (backend ``accelerator``), records layer-major then phase.

    Raises:
        AntsimError: bad phase, fidelity, timing, density or sparsity model; WorkloadError: a layer missing
            from ``tensors`` or tensors of the wrong shape.
    """
    dens = check_densities(densities)
    ordered = _check_run(arch, phases, fidelity, batch_sample, None if tensors is not None else sparsity, timing)
    records: list[LayerResult] = []
    used: list[Tensors] = []
    shared = SharedWork(arch)
    for index, layer in _iterate(layers, progress, arch.name):
        shared.next_layer()  # the previous layer's operands are not held past it
        t = _layer_tensors(layer, index, dens, sparsity, tensors, seed)
        if tensors is not None:  # generated operands are not kept: a network's worth would stay in memory
            used.append(t)
        measured = operand_densities(t) if tensors is not None else None
        records.extend(_without_output(simulate_layer(arch, layer, phase, t, fidelity=fidelity, seed=seed,
                                                      params=params, batch_sample=batch_sample, timing=timing,
                                                      shared=shared), measured) for phase in ordered)
    if tensors is not None:
        # A tensors file's operands carry their own densities: echo those, never the generator defaults.
        dens = overall_densities(used)
    echo = WorkloadEcho.of(
        network=None, layers=[layer.to_dict() for layer in layers], batch=_batch_of(layers[0]) if layers else None,
        phases=ordered, densities=dens, sparsity=None if tensors is not None else sparsity, tensors=None,
        seed=int(seed), fidelity=fidelity,
    ).with_keys(**{**dict(workload or {}), **_run_keys(records, batch_sample, timing)})
    return NetworkResult(design=arch.name, backend="accelerator", records=tuple(records),
                         spec=arch.to_dict(), workload=echo, area_mm2=design_area_mm2(arch),
                         meta={"sim_params": _params_dict(params)})


def _run_keys(records: Sequence[LayerResult], batch_sample: int, timing: TimingModel) -> dict[str, Any]:
    """Echo keys for how a run departed from the defaults: the batch sample where a layer was estimated, a
    timing tier other than ``events`` (never echoed, so results made before the option stay byte-equal)."""
    keys: dict[str, Any] = {}
    if any(AcceleratorLayerDetails.of(r).batch_sample is not None for r in records):
        keys["batch_sample"] = int(batch_sample)
    if timing != "events":
        keys["timing"] = timing
    return keys


def _check_run(arch: ArchSpec, phases: Sequence[Phase], fidelity: Fidelity, batch_sample: int,
               sparsity: str | None, timing: TimingModel = "events") -> list[Phase]:
    """Refuse a bad fidelity, batch sample, phase, generator (``None``: tensors are given), timing tier or
    DRAM technology before any layer runs; returns the phases in canonical order."""
    parse_fidelity(fidelity)
    parse_timing(timing)
    check_batch_sample(batch_sample, fidelity)
    for phase in phases:
        parse_phase(phase)
    if sparsity is not None:
        from antsim.sparsity.generators import sparsity_models

        _check_choice("sparsity", sparsity, sparsity_models())
    check_dram_technology(arch)
    return [p for p in PHASES if p in phases]


def _batch_of(layer: Layer | Gemm) -> int:
    """The training batch a layer holds (a conv's N; a GEMM's ``batch``: its N is a matrix dimension)."""
    return layer.batch if isinstance(layer, Gemm) else layer.N


def check_dram_technology(arch: ArchSpec, source: str | None = None) -> None:
    """Raise ``SpecError`` (naming ``source``, default the arch name) unless the energy table prices
    ``dram.technology`` — checked before the first layer runs, not when its energy is priced."""
    from antsim.energy.tables import load_table
    from antsim.errors import SpecError

    try:
        load_table(arch.technology.energy_table).dram_pj(arch.dram.technology)
    except SpecError as exc:
        raise SpecError(source or f"arch {arch.name}", "dram.technology", str(exc)) from None


def _without_output(result: LayerResult, densities: Mapping[str, float] | None = None) -> LayerResult:
    from dataclasses import replace

    if densities is None:
        return replace(result, output=None)
    details = replace(AcceleratorLayerDetails.of(result), operand_densities=dict(densities))
    return replace(result, output=None, details=details)


_DENSITY_OPERANDS = (("w", "weights"), ("a", "activations"), ("g", "grad_output"), ("a_saved", "saved_activations"))


def operand_densities(tensors: Tensors) -> dict[str, float]:
    """Measured non-zero fraction of each operand present, keyed like ``densities`` (w, a, g[, a_saved])."""
    return {key: _density(array) for key, name in _DENSITY_OPERANDS if (array := getattr(tensors, name)) is not None}


def overall_densities(used: Sequence[Tensors]) -> dict[str, float]:
    """Non-zeros over elements of each operand, summed over the layers (keys w, a, g[, a_saved])."""
    out: dict[str, float] = {}
    for key, name in _DENSITY_OPERANDS:
        arrays = [a for t in used if (a := getattr(t, name)) is not None]
        size = sum(a.size for a in arrays)
        if arrays and size:
            out[key] = sum(int(np.count_nonzero(a)) for a in arrays) / size
    return out


def _params_dict(params: SimParams | None) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(params or SimParams())
