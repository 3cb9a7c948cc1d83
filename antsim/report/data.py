"""Plot-ready data of every report figure: ``_get_<figure>_info(...) -> NamedTuple`` (docs/development.md habit 10).

The renderers in ``antsim.report.figures`` only draw these; the tests check them against the records
they came from. Each info also knows how to flatten itself into the CSV shipped next to the figure.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from antsim.energy.actions import ACTIONS
from antsim.report.compare import Comparison
from antsim.results import NetworkResult
from antsim.sim.pe import STALL_KEYS
from antsim.vocabulary import Phase

# Stack order of the energy breakdown: datapath first, then storage, then off-chip, then leakage.
ENERGY_COMPONENTS: tuple[str, ...] = (*ACTIONS, "leakage")
# Stack order of the cycle breakdown: the simulator's stall categories in its own order; categories a
# backend reports beyond these follow in name order.
CYCLE_CATEGORIES: tuple[str, ...] = STALL_KEYS
UNATTRIBUTED = "unattributed"
# A GPU model's energy split (antsim.gpu: static W x time, executed FLOPs x dynamic energy, DRAM bytes x pJ/bit).
GPU_COMPONENTS: dict[str, str] = {"static": "gpu_static", "core": "gpu_core_dynamic", "dram": "dram"}


class RatioInfo(NamedTuple):
    """Ratio of each design over the baseline per layer, for the whole network, and their geomean.

    ``per_layer[d, l]``, ``network[d]`` and ``geomean[d]`` are × (NaN where a design lacks the metric).
    """

    metric: str
    baseline: str
    designs: tuple[str, ...]
    backends: tuple[str, ...]
    layers: tuple[str, ...]
    per_layer: np.ndarray
    network: np.ndarray
    geomean: np.ndarray


class EnergyBreakdownInfo(NamedTuple):
    """Energy per component of each accelerator design over the whole step, J.

    ``energy_j[d, c]`` stacks to ``totals_j[d]`` (the designs' network energy).
    """

    designs: tuple[str, ...]
    components: tuple[str, ...]
    energy_j: np.ndarray
    totals_j: np.ndarray


class ProductInfo(NamedTuple):
    """Cartesian products per design and phase, summed over layers (products).

    ``valid + rcp_skipped + rcp_issued == total``; ``rcp_skipped`` never reached a multiplier. For a dense
    design (``dense[d]``, its spec's ``sparsity_support: false``) ``valid`` is the non-zero x non-zero
    products (a sparse design's valid count on the same operands, when one is compared) and ``rcp_issued``
    the products with a zero operand it multiplies anyway, not RCPs.
    """

    designs: tuple[str, ...]
    phases: tuple[Phase, ...]
    valid: np.ndarray
    rcp_skipped: np.ndarray
    rcp_issued: np.ndarray
    total: np.ndarray
    dense: tuple[bool, ...] = ()


class CycleInfo(NamedTuple):
    """Cycle breakdown per design and phase, summed over layers (cycles).

    ``cycles[d, p, k]`` over ``categories``; the last category, ``unattributed``, is the part of the
    records' cycles the stall categories do not cover (0 when they cover it all).
    """

    designs: tuple[str, ...]
    phases: tuple[Phase, ...]
    categories: tuple[str, ...]
    cycles: np.ndarray
    total_cycles: np.ndarray


def _get_ratio_info(comparison: Comparison, metric: str) -> RatioInfo:
    """Speedup (``metric="speedup"``) or energy reduction (``"energy_reduction"``) of every non-baseline design."""
    if metric not in ("speedup", "energy_reduction"):
        raise ValueError(f"unknown metric {metric!r}")
    others = [s for s in comparison.designs if s.design != comparison.baseline]
    layers = comparison.layers
    per_layer = np.full((len(others), len(layers)), np.nan)
    for d, summary in enumerate(others):
        for row in comparison.rows_for("layer", summary.design):
            value = getattr(row, metric)
            per_layer[d, layers.index(row.layer)] = np.nan if value is None else value
    geo_key = f"geomean_{metric}_layers"
    return RatioInfo(
        metric=metric, baseline=comparison.baseline, designs=tuple(s.design for s in others),
        backends=tuple(s.backend for s in others), layers=layers, per_layer=per_layer,
        network=np.array([_nan(getattr(s, metric)) for s in others]),
        geomean=np.array([_nan(getattr(s, geo_key)) for s in others]),
    )


def _component_name(result: NetworkResult, component: str) -> str:
    """A GPU's ``static`` / ``core`` parts are named as what they are; DRAM is DRAM on every backend."""
    if result.backend == "gpu":
        return GPU_COMPONENTS.get(component, f"gpu_{component}")
    return component


def _get_energy_breakdown_info(comparison: Comparison) -> EnergyBreakdownInfo:
    """Energy breakdown of every accelerator design and GPU model that reports one."""
    results = [r for r in comparison.results if r.backend in ("accelerator", "gpu")
               and any(rec.energy_breakdown_j for rec in r.records)]
    seen = {_component_name(r, c) for r in results for rec in r.records for c in rec.energy_breakdown_j}
    order = tuple(dict.fromkeys((*ENERGY_COMPONENTS, *GPU_COMPONENTS.values())))
    components = tuple(c for c in order if c in seen) + tuple(sorted(seen - set(order)))
    energy = np.zeros((len(results), len(components)))
    for d, result in enumerate(results):
        for rec in result.records:
            for component, joules in rec.energy_breakdown_j.items():
                energy[d, components.index(_component_name(result, component))] += joules
    totals = np.array([_nan(r.totals["energy_j"]) for r in results])
    return EnergyBreakdownInfo(tuple(r.design for r in results), components, energy, totals)


def _get_product_info(comparison: Comparison) -> ProductInfo:
    """Product composition of every design whose records carry product counts."""
    results = [r for r in comparison.results if any(rec.products is not None for rec in r.records)]
    phases = comparison.phases
    shape = (len(results), len(phases))
    valid, skipped, total = np.zeros(shape, np.int64), np.zeros(shape, np.int64), np.zeros(shape, np.int64)
    for d, result in enumerate(results):
        for rec in result.records:
            if rec.products is None:
                continue
            p = phases.index(rec.phase)
            valid[d, p] += rec.products.valid
            skipped[d, p] += rec.products.skipped
            total[d, p] += rec.products.total
    dense = tuple(isinstance(r.spec, dict) and r.spec.get("sparsity_support") is False for r in results)
    sparse = [d for d, r in enumerate(results) if r.backend == "accelerator" and not dense[d]]
    if sparse:
        # A dense design counts every product on a valid output as valid, zeros included. On the same operands
        # (compare checked seed, generator and tensors) a sparse design's valid products are exactly the
        # non-zero x non-zero ones, so the rest of the dense design's products had a zero operand.
        for d in (d for d, is_dense in enumerate(dense) if is_dense):
            valid[d] = np.minimum(valid[sparse[0]], total[d] - skipped[d])
    return ProductInfo(tuple(r.design for r in results), phases, valid, skipped,
                       total - valid - skipped, total, dense)


def _get_cycle_info(comparison: Comparison) -> CycleInfo:
    """Cycle breakdown of every design whose records carry stall categories."""
    results = [r for r in comparison.results if any(rec.stalls for rec in r.records)]
    seen = {k for r in results for rec in r.records for k in rec.stalls}
    categories = (tuple(c for c in CYCLE_CATEGORIES if c in seen) + tuple(sorted(seen - set(CYCLE_CATEGORIES)))
                  + (UNATTRIBUTED,))
    phases = comparison.phases
    cycles = np.zeros((len(results), len(phases), len(categories)))
    totals = np.zeros((len(results), len(phases)))
    for d, result in enumerate(results):
        for rec in result.records:
            p = phases.index(rec.phase)
            for category, count in rec.stalls.items():
                cycles[d, p, categories.index(category)] += count
            totals[d, p] += rec.cycles or 0
    cycles[:, :, -1] = np.maximum(totals - cycles[:, :, :-1].sum(axis=2), 0.0)
    return CycleInfo(tuple(r.design for r in results), phases, categories, cycles, totals)


def _nan(value: float | None) -> float:
    return np.nan if value is None else float(value)


def ratio_rows(info: RatioInfo) -> list[list[object]]:
    """CSV rows (header first) of a ``RatioInfo``: one per design and layer, plus network and geomean."""
    rows: list[list[object]] = [["design", "backend", "scope", "layer", info.metric]]
    for d, design in enumerate(info.designs):
        for l, layer in enumerate(info.layers):
            rows.append([design, info.backends[d], "layer", layer, info.per_layer[d, l]])
        rows.append([design, info.backends[d], "network", "", info.network[d]])
        rows.append([design, info.backends[d], "geomean_layers", "", info.geomean[d]])
    return rows


def energy_rows(info: EnergyBreakdownInfo) -> list[list[object]]:
    rows: list[list[object]] = [["design", "component", "energy_j"]]
    for d, design in enumerate(info.designs):
        rows += [[design, c, info.energy_j[d, k]] for k, c in enumerate(info.components)]
        rows.append([design, "total", info.totals_j[d]])
    return rows


def product_rows(info: ProductInfo) -> list[list[object]]:
    rows: list[list[object]] = [["design", "phase", "valid", "rcp_skipped", "rcp_issued", "total"]]
    for d, design in enumerate(info.designs):
        for p, phase in enumerate(info.phases):
            rows.append([design, phase, info.valid[d, p], info.rcp_skipped[d, p], info.rcp_issued[d, p],
                         info.total[d, p]])
    return rows


def cycle_rows(info: CycleInfo) -> list[list[object]]:
    rows: list[list[object]] = [["design", "phase", *info.categories, "total_cycles"]]
    for d, design in enumerate(info.designs):
        for p, phase in enumerate(info.phases):
            rows.append([design, phase, *info.cycles[d, p], info.total_cycles[d, p]])
    return rows


def network_result_rows(results: tuple[NetworkResult, ...]) -> list[list[object]]:
    """Per-(layer, phase) time and energy of every design — the raw data behind the ratio figures."""
    rows: list[list[object]] = [["design", "backend", "layer", "phase", "time_s", "energy_j", "cycles"]]
    for result in results:
        for rec in result.records:
            rows.append([result.design, result.backend, rec.layer, rec.phase, rec.time_s,
                         "" if rec.energy_j is None else rec.energy_j, "" if rec.cycles is None else rec.cycles])
    return rows


class HeadlineInfo(NamedTuple):
    """Network-level speedup and energy reduction of ``subject`` over each reference design (×)."""

    subject: str
    references: tuple[str, ...]
    backends: tuple[str, ...]
    speedup: np.ndarray
    energy_reduction: np.ndarray


def headline_subject(comparison: Comparison) -> str:
    """The design the headline is about: ``ant`` if present, else the first non-baseline accelerator."""
    names = [s.design for s in comparison.designs]
    if "ant" in names:
        return "ant"
    others = [s for s in comparison.designs if s.design != comparison.baseline]
    accelerators = [s.design for s in others if s.backend == "accelerator"]
    return (accelerators or [s.design for s in others] or names)[0]


def _get_headline_info(comparison: Comparison) -> HeadlineInfo:
    """``subject`` over the baseline, over ``scnn`` (if it is not the baseline) and over every GPU."""
    subject = comparison.summary(headline_subject(comparison))
    wanted = [comparison.baseline, "scnn"] + [s.design for s in comparison.designs if s.backend == "gpu"]
    names = [s.design for s in comparison.designs]
    references = [n for n in dict.fromkeys(wanted) if n in names and n != subject.design]
    refs = [comparison.summary(n) for n in references]
    speedup = np.array([_nan(_over(r.time_s, subject.time_s)) for r in refs])
    energy = np.array([_nan(_over(r.energy_j, subject.energy_j)) for r in refs])
    return HeadlineInfo(subject.design, tuple(references), tuple(r.backend for r in refs), speedup, energy)


def _over(reference: float | None, subject: float | None) -> float | None:
    if reference is None or subject is None or reference <= 0 or subject <= 0:
        return None
    return reference / subject


def headline_rows(info: HeadlineInfo) -> list[list[object]]:
    """CSV rows (header first) of the headline: subject over each reference, whole step."""
    rows: list[list[object]] = [["design", "over", "over_backend", "speedup", "energy_reduction"]]
    for i, reference in enumerate(info.references):
        rows.append([info.subject, reference, info.backends[i], info.speedup[i], info.energy_reduction[i]])
    return rows
