"""Speedup and energy reduction of every design over a baseline (schema ``antsim.compare/1``).

Definitions (the way the ANT paper presents results):

- ``speedup`` of design D over baseline B on a scope = ``time_s(B) / time_s(D)``;
- ``energy_reduction`` = ``energy_j(B) / energy_j(D)`` (> 1: D uses less energy).

Scopes: ``layer_phase`` (one record), ``layer`` (the three phases of a layer summed), ``phase`` (one
phase summed over layers) and ``network`` (everything summed: one training step). Times and energies
are summed before dividing, so ``network`` is the end-to-end ratio; the geometric means of the
per-layer and per-(layer, phase) ratios are reported next to it.

``antsim.compare/1`` JSON::

    {"schema": "antsim.compare/1", "antsim_version": str, "baseline": str,
     "workload": {network, batch, phases, layers: [names], densities, sparsity, seed, fidelity},
     "designs": [{"design", "backend", "source", "area_mm2", "time_s", "energy_j",
                  "speedup", "energy_reduction",                      # network scope
                  "geomean_speedup_layers", "geomean_energy_reduction_layers",
                  "geomean_speedup_layer_phases", "geomean_energy_reduction_layer_phases"}],
     "rows": [{"scope", "layer", "phase", "design", "backend", "time_s", "energy_j",
               "baseline_time_s", "baseline_energy_j", "speedup", "energy_reduction"}]}

``layer``/``phase`` are null where the scope sums over them; energies and ratios are null where a
backend does not report energy. The CSV output holds the ``rows`` (one line each).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from antsim.errors import AntsimError
from antsim.report.inputs import check_same_workload
from antsim.results import NetworkResult, geomean, write_text_atomic
from antsim.version import __version__
from antsim.vocabulary import Phase
from antsim.workloads.layers import PHASES

SCHEMA = "antsim.compare/1"
SCOPES = ("layer_phase", "layer", "phase", "network")
DEFAULT_BASELINE = "scnn"
# Workload keys echoed into the comparison so a reader can rerun it.
_WORKLOAD_ECHO = ("network", "layers_csv", "batch", "phases", "densities", "sparsity", "tensors", "seed", "fidelity",
                  "batch_sample", "timing")


@dataclass(frozen=True)
class CompareRow:
    """One design on one scope, next to the baseline (times in s, energies in J, ratios ×)."""

    scope: str
    layer: str | None
    phase: Phase | None
    design: str
    backend: str
    time_s: float
    energy_j: float | None
    baseline_time_s: float
    baseline_energy_j: float | None
    speedup: float | None
    energy_reduction: float | None


@dataclass(frozen=True)
class DesignSummary:
    """Network-level figures of one design (ratios over the baseline; geomeans over layers / records)."""

    design: str
    backend: str
    source: str
    area_mm2: float | None
    time_s: float
    energy_j: float | None
    speedup: float | None
    energy_reduction: float | None
    geomean_speedup_layers: float | None
    geomean_energy_reduction_layers: float | None
    geomean_speedup_layer_phases: float | None
    geomean_energy_reduction_layer_phases: float | None


@dataclass(frozen=True)
class Comparison:
    """Every design joined per (layer, phase) against ``baseline``.

    Attributes:
        baseline: Name of the baseline design.
        results: The inputs, in the order given. sources: Where each came from (file or ``--arch``/``--gpu``).
        layers: Layer names in network order. phases: Phases present, in ``PHASES`` order.
        rows: ``CompareRow`` for every design (baseline included) and scope.
        designs: ``DesignSummary`` per design, input order.
        workload: The workload echoed from the inputs.
    """

    baseline: str
    results: tuple[NetworkResult, ...]
    sources: tuple[str, ...]
    layers: tuple[str, ...]
    phases: tuple[Phase, ...]
    rows: tuple[CompareRow, ...]
    designs: tuple[DesignSummary, ...]
    workload: Mapping[str, Any]

    def result(self, design: str) -> NetworkResult:
        return next(r for r in self.results if r.design == design)

    def summary(self, design: str) -> DesignSummary:
        return next(s for s in self.designs if s.design == design)

    def rows_for(self, scope: str, design: str | None = None) -> list[CompareRow]:
        return [r for r in self.rows if r.scope == scope and (design is None or r.design == design)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "antsim_version": __version__, "baseline": self.baseline,
            "workload": {**self.workload, "layers": list(self.layers)},
            "designs": [asdict(s) for s in self.designs],
            "rows": [asdict(r) for r in self.rows],
        }

    def to_json(self) -> str:
        return json.dumps(_finite(self.to_dict()), indent=1, sort_keys=True) + "\n"

    def to_csv(self) -> str:
        buffer = io.StringIO()
        columns = list(CompareRow.__dataclass_fields__)
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        for row in self.rows:
            writer.writerow(["" if v is None else v for v in asdict(row).values()])
        return buffer.getvalue()

    def write(self, path: str) -> None:
        """Write JSON (``.json``) or CSV (``.csv``) atomically."""
        write_text_atomic(path, self.to_csv() if str(path).lower().endswith(".csv") else self.to_json())


def default_baseline(results: Sequence[NetworkResult]) -> str:
    """``scnn`` when one of the designs is named so, else the first design."""
    names = [r.design for r in results]
    return DEFAULT_BASELINE if DEFAULT_BASELINE in names else names[0]


def compare_results(results: Sequence[NetworkResult], sources: Sequence[str] | None = None,
                    baseline: str | None = None) -> Comparison:
    """Join results per (layer, phase) and compute every design's ratios over ``baseline``.

    Args:
        results: One ``NetworkResult`` per design, all on the same workload.
        sources: Where each result came from (defaults to its design name); named in errors and reports.
        baseline: Baseline design name (default: ``default_baseline``).

    Raises:
        AntsimError: inputs of different workloads, duplicate designs, an unknown baseline, or a
            baseline time of zero.
    """
    sources = tuple(sources) if sources is not None else tuple(r.design for r in results)
    check_same_workload(results, sources)
    check_same_simulation(results, sources)
    baseline = baseline or default_baseline(results)
    names = [r.design for r in results]
    if baseline not in names:
        raise AntsimError(f"unknown baseline design {baseline!r}; designs: {', '.join(names)}", subject="baseline")
    # the baseline leads every table and figure, however the inputs were ordered (a report rebuilt from its
    # results/*.json reads them in file-name order); the other designs keep their order
    first = names.index(baseline)
    order = [first, *[i for i in range(len(results)) if i != first]]
    results, sources = [results[i] for i in order], tuple(sources[i] for i in order)
    base = results[0]
    keys = base.keys()
    layers = tuple(dict.fromkeys(k[0] for k in keys))
    phases = tuple(p for p in PHASES if any(k[1] == p for k in keys))
    rows: list[CompareRow] = []
    for result in results:
        rows += _design_rows(result, base, keys, layers, phases)
    designs = tuple(_summary(r, s, rows) for r, s in zip(results, sources, strict=True))
    return Comparison(baseline=baseline, results=tuple(results), sources=sources, layers=layers,
                      phases=phases, rows=tuple(rows), designs=designs, workload=_echo_workload(results))


# Echoed keys that change a simulated result while the layers stay the same: the operand generator's seed,
# the simulation fidelity (fast overestimates some phases; BENCHMARKS.md), the generator model and the
# tensors file. Results that differ in any of them are not one workload, so their ratios would mislead.
_SIMULATION_KEYS = ("seed", "fidelity", "sparsity", "tensors", "batch_sample")


def check_same_simulation(results: Sequence[NetworkResult], sources: Sequence[str]) -> None:
    """Raise unless every accelerator result shares seed, fidelity, sparsity model and tensors file.

    Raises:
        AntsimError: one line naming both files and the differing key with both values.
    """
    simulated = [(r, s) for r, s in zip(results, sources, strict=True) if r.backend == "accelerator"]
    if not simulated:
        return
    (ref, ref_src), others = simulated[0], simulated[1:]
    for result, source in others:
        for key in _SIMULATION_KEYS:
            mine, theirs = result.workload.get(key), ref.workload.get(key)
            if mine != theirs:
                raise AntsimError(f"{source}: workload.{key} is {mine!r} but {ref_src} has {theirs!r};"
                                  " compare results simulated the same way")


def _design_rows(result: NetworkResult, base: NetworkResult, keys: list[tuple[str, Phase]],
                 layers: tuple[str, ...], phases: tuple[Phase, ...]) -> list[CompareRow]:
    """Rows of one design for every scope, in scope order then network order."""
    groups: list[tuple[str, str | None, Phase | None, list[tuple[str, Phase]]]] = []
    groups += [("layer_phase", layer, phase, [(layer, phase)]) for layer, phase in keys]
    groups += [("layer", layer, None, [k for k in keys if k[0] == layer]) for layer in layers]
    groups += [("phase", None, phase, [k for k in keys if k[1] == phase]) for phase in phases]
    groups.append(("network", None, None, list(keys)))
    rows = []
    for scope, layer, phase, members in groups:
        time_s, energy_j = _sum(result, members)
        base_time, base_energy = _sum(base, members)
        rows.append(CompareRow(scope=scope, layer=layer, phase=phase, design=result.design,
                               backend=result.backend, time_s=time_s, energy_j=energy_j,
                               baseline_time_s=base_time, baseline_energy_j=base_energy,
                               speedup=_ratio(base_time, time_s), energy_reduction=_ratio(base_energy, energy_j)))
    return rows


def _sum(result: NetworkResult, members: list[tuple[str, Phase]]) -> tuple[float, float | None]:
    records = [result.record(layer, phase) for layer, phase in members]
    energies = [r.energy_j for r in records]
    energy = None if any(e is None for e in energies) else math.fsum(energies)  # type: ignore[arg-type]
    return math.fsum(r.time_s for r in records), energy


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``; None when either is unknown or not positive (no meaningful ratio)."""
    if numerator is None or denominator is None or numerator <= 0 or denominator <= 0:
        return None
    return numerator / denominator


def _geomean_or_none(values: Sequence[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return geomean([float(v) for v in values])  # type: ignore[arg-type]


def _summary(result: NetworkResult, source: str, rows: list[CompareRow]) -> DesignSummary:
    mine = [r for r in rows if r.design == result.design]
    network = next(r for r in mine if r.scope == "network")
    per_layer = [r for r in mine if r.scope == "layer"]
    per_record = [r for r in mine if r.scope == "layer_phase"]
    return DesignSummary(
        design=result.design, backend=result.backend, source=source, area_mm2=result.area_mm2,
        time_s=network.time_s, energy_j=network.energy_j, speedup=network.speedup,
        energy_reduction=network.energy_reduction,
        geomean_speedup_layers=_geomean_or_none([r.speedup for r in per_layer]),
        geomean_energy_reduction_layers=_geomean_or_none([r.energy_reduction for r in per_layer]),
        geomean_speedup_layer_phases=_geomean_or_none([r.speedup for r in per_record]),
        geomean_energy_reduction_layer_phases=_geomean_or_none([r.energy_reduction for r in per_record]),
    )


def _echo_workload(results: Sequence[NetworkResult]) -> dict[str, Any]:
    """Workload keys from the first accelerator result (it carries densities, seed…), else the first."""
    ordered = sorted(results, key=lambda r: r.backend != "accelerator")
    echo: dict[str, Any] = {}
    for result in ordered:
        for key in _WORKLOAD_ECHO:
            if key not in echo and result.workload.get(key) is not None:
                echo[key] = result.workload[key]
    return echo


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def format_summary(comparison: Comparison) -> str:
    """A few lines for a terminal: every design's network time, energy and ratios over the baseline."""
    w = comparison.workload
    lines = [f"{w.get('network', '?')}, batch {w.get('batch', '?')}, phases {','.join(comparison.phases)};"
             f" baseline {comparison.baseline}",
             f"{'design':<16}{'backend':<12}{'time':>12}{'energy':>12}{'speedup':>10}{'energy red.':>13}"
             f"{'geo spd':>10}{'geo E':>11}"]
    for s in comparison.designs:
        lines.append(f"{s.design:<16}{s.backend:<12}{fmt_time(s.time_s):>12}{fmt_energy(s.energy_j):>12}"
                     f"{fmt_ratio(s.speedup):>10}{fmt_ratio(s.energy_reduction):>13}"
                     f"{fmt_ratio(s.geomean_speedup_layers):>10}{fmt_ratio(s.geomean_energy_reduction_layers):>11}")
    lines.append("speedup / energy red. = baseline time / energy over the design's (whole training step);"
                 " geo = geometric mean over layers")
    return "\n".join(lines)


def fmt_ratio(value: float | None) -> str:
    """``3.71×``; ``n/a`` when unknown."""
    if value is None:
        return "n/a"
    return f"{value:.3g}×" if value < 100 else f"{value:.0f}×"


def fmt_time(seconds: float | None) -> str:
    """Seconds with an SI prefix (``12.3 ms``)."""
    return _si(seconds, "s")


def fmt_energy(joules: float | None) -> str:
    """Joules with an SI prefix (``4.56 mJ``)."""
    return _si(joules, "J")


def _si(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    for scale, prefix in ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"
