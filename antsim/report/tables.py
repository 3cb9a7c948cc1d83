"""The report's tables beyond the figures: area per component, per layer, the headline's utilisation and
stall shares, throughput and energy per mm², and the assumptions behind every number (issue 15).

Each function returns rows (a header row, then one row per design or layer) of plain strings or numbers;
the documents render them and the build ships each as ``data/<name>.csv``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from antsim.energy.areas import area
from antsim.energy.tables import load_table
from antsim.errors import AntsimError
from antsim.report.compare import Comparison, fmt_energy, fmt_ratio, fmt_time
from antsim.results import NetworkResult
from antsim.spec.arch import arch_from_dict

Rows = list[list[Any]]


def area_by_component(result: NetworkResult) -> dict[str, float] | None:
    """mm² per component of an accelerator result, from its echoed arch spec (None when not rebuildable)."""
    if result.backend != "accelerator" or not result.spec:
        return None
    try:
        return area(arch_from_dict(dict(result.spec), source=f"{result.design} spec echo"))
    except AntsimError:  # a spec an older antsim accepted and this one refuses: no table row, not a crash
        return None


def area_rows(comparison: Comparison) -> Rows:
    """Area (mm²) of every accelerator design per component, with the total the result reports."""
    tables = [(r.design, a, r.area_mm2) for r in comparison.results if (a := area_by_component(r)) is not None]
    if not tables:
        return []
    components = list(tables[0][1])
    rows: Rows = [["design", *components, "total (mm²)"]]
    for design, parts, total in tables:
        rows.append([design, *[f"{parts.get(c, 0.0):.4f}" for c in components],
                     f"{total if total is not None else sum(parts.values()):.4f}"])
    return rows


def layer_rows(comparison: Comparison) -> Rows:
    """Per layer: each design's time (fprop + dgrad + wgrad) and its speedup / energy reduction."""
    designs = [s.design for s in comparison.designs]
    by = {d: {row.layer: row for row in comparison.rows_for("layer", d)} for d in designs}
    others = [d for d in designs if d != comparison.baseline]
    rows: Rows = [["layer", *[f"{d} time" for d in designs], *[f"{d} speedup" for d in others],
                   *[f"{d} energy red." for d in others]]]
    for layer in comparison.layers:
        rows.append([layer, *[fmt_time(by[d][layer].time_s) if layer in by[d] else "n/a" for d in designs],
                     *[fmt_ratio(by[d][layer].speedup) if layer in by[d] else "n/a" for d in others],
                     *[fmt_ratio(by[d][layer].energy_reduction) if layer in by[d] else "n/a" for d in others]])
    return rows


def kind_rows(comparison: Comparison) -> Rows:
    """Per design, layer kind (conv / gemm) and phase: Cartesian products, RCPs and the share the anticipation
    unit removed; empty unless a record is a GEMM layer (so conv-only reports are unchanged)."""
    if not any(r.kind != "conv" for result in comparison.results for r in result.records):
        return []
    rows: Rows = [["design", "kind", "phase", "products", "valid", "RCPs (% of products)", "skipped (% of RCPs)",
                   "time"]]
    for result in comparison.results:
        groups: dict[tuple[str, str], list[Any]] = {}
        for r in result.records:
            if r.products is not None:
                groups.setdefault((r.kind, r.phase), []).append(r)
        for (kind, phase), records in groups.items():
            total = sum(r.products.total for r in records)
            valid = sum(r.products.valid for r in records)
            skipped = sum(r.products.skipped for r in records)
            rcp = total - valid
            rows.append([result.design, kind, phase, f"{total:,}", f"{valid:,}",
                         f"{100 * rcp / total:.1f}%" if total else "n/a",
                         f"{100 * skipped / rcp:.1f}%" if rcp else "n/a",
                         fmt_time(math.fsum(r.time_s for r in records))])
    return rows


def utilisation(result: NetworkResult) -> tuple[float, dict[str, float]] | None:
    """Cycle-weighted multiplier utilisation and each stall category's share of all cycles, or None."""
    records = [r for r in result.records if r.cycles and r.stalls]
    total = sum(r.cycles for r in records)  # type: ignore[misc]
    if not records or not total:
        return None
    util = math.fsum(float(r.details.get("multiplier_utilization", math.nan)) * (r.cycles or 0)
                     for r in records) / total
    shares: dict[str, float] = {}
    for r in records:
        for name, cycles in r.stalls.items():
            shares[name] = shares.get(name, 0.0) + float(cycles) / total
    return util, shares


def efficiency_rows(comparison: Comparison) -> Rows:
    """Throughput and energy per image and per mm², multiplier utilisation and stall shares of each design."""
    batch = comparison.workload.get("batch")
    images = float(batch) if isinstance(batch, (int, float)) and batch > 0 else math.nan
    rows: Rows = [["design", "images/s", "images/s per mm²", "energy / image", "energy per step per mm²",
                   "multiplier utilisation", "cycle shares"]]
    for result, s in zip(comparison.results, comparison.designs, strict=True):
        rate = images / s.time_s if s.time_s else math.nan
        area = s.area_mm2
        used = utilisation(result)
        shares = "n/a" if used is None else ", ".join(
            f"{k} {100 * v:.0f}%" for k, v in sorted(used[1].items(), key=lambda kv: -kv[1]) if v >= 0.005)
        rows.append([s.design, _num(rate), _num(rate / area) if area else "n/a",
                     fmt_energy(s.energy_j / images) if s.energy_j is not None and images == images else "n/a",
                     f"{fmt_energy(s.energy_j / area)}/mm²" if area and s.energy_j is not None else "n/a",
                     "n/a" if used is None else f"{100 * used[0]:.1f}%", shares])
    return rows


def _num(value: float, unit: str = "") -> str:
    if not math.isfinite(value):
        return "n/a"
    return f"{value:.4g}{' ' + unit if unit else ''}"


def _dram_line(spec: Mapping[str, Any]) -> str:
    dram = spec.get("dram") or {}
    tech, bw = dram.get("technology"), dram.get("bandwidth_gbps")
    pj = "?"
    try:
        if isinstance(tech, str):
            table = load_table((spec.get("technology") or {}).get("energy_table", "default_16nm"))
            pj = f"{table.dram_pj(tech):g}"
    except (AntsimError, TypeError):
        pass
    return f"{tech}, {bw} GB/s, {pj} pJ/bit"


def _gpu_line(result: NetworkResult) -> str:
    meta = result.meta or {}
    details = result.records[0].details if result.records else {}
    dram = (result.spec or {}).get("dram") or {}
    scope = meta.get("scope") or "conv"
    what = ("the whole training step (convolutions + BatchNorm, ReLU, residual add, pooling, SGD update)"
            if scope == "step" else "the convolutions only")
    return (f"precision {meta.get('precision', details.get('precision', '?'))}, kernel selection"
            f" {meta.get('selection', details.get('selection', '?'))}, library {meta.get('library', '?')};"
            f" {dram.get('type', 'DRAM')} {dram.get('pj_per_bit', '?')} pJ/bit; times {what}; energy = static W x"
            " time + DRAM bytes x pJ/bit + core dynamic (TDP-bounded)")


def assumption_rows(comparison: Comparison) -> Rows:
    """What each number rests on: workload, regime, batch, fidelity, DRAM and energy scope per design."""
    # the comparison's workload holds what every input shares; accelerator-only keys (regime, batch source,
    # densities) come from the first result that records them
    w = dict(comparison.workload)
    for result in comparison.results:
        for key, value in result.workload.items():
            if w.get(key) is None and value is not None:
                w[key] = value
    rows: Rows = [["item", "value"],
                  ["network", str(w.get("network", "?"))],
                  ["batch", f"{w.get('batch', '?')} (from {w.get('batch_source') or 'not recorded'})"],
                  ["sparsity regime", str(w.get("regime") or "none named (densities below)")],
                  ["densities", str(w.get("densities", "n/a"))],
                  ["operands", str(w.get("tensors") or f"generated ({w.get('sparsity', 'n/a')})")],
                  ["fidelity", str(w.get("fidelity", "n/a"))], ["seed", str(w.get("seed", "n/a"))]]
    for result in comparison.results:
        if result.backend == "accelerator":
            rows.append([f"{result.design} (accelerator)",
                         f"DRAM {_dram_line(result.spec or {})}; energy = every priced on-chip action + DRAM"
                         " traffic + leakage over the run time; times the convolutions only"])
        elif result.backend == "gpu":
            rows.append([f"{result.design} (GPU model)", _gpu_line(result)])
        else:
            rows.append([f"{result.design} ({result.backend})", "as measured / given in the file"])
    return rows


__all__ = ["area_by_component", "area_rows", "assumption_rows", "efficiency_rows", "layer_rows", "utilisation"]
