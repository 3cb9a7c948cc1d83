"""Comparison math checked against ratios computed independently from the records."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import replace

import pytest
from report_factories import LAYERS

from antsim.errors import AntsimError
from antsim.report.compare import SCHEMA, compare_results, default_baseline, format_summary
from antsim.results import NetworkResult
from antsim.workloads.layers import PHASES


def _times(result: NetworkResult, layer: str | None = None, phase: str | None = None) -> float:
    return sum(r.time_s for r in result.records if layer in (None, r.layer) and phase in (None, r.phase))


def _energy(result: NetworkResult, layer: str | None = None, phase: str | None = None) -> float:
    return sum(r.energy_j for r in result.records if layer in (None, r.layer) and phase in (None, r.phase))


def test_ratios_equal_time_and_energy_ratios_of_the_records(results: list[NetworkResult]) -> None:
    comparison = compare_results(results)
    scnn = results[0]
    assert comparison.baseline == "scnn"
    for result in results:
        for row in comparison.rows_for("layer_phase", result.design):
            assert row.speedup == pytest.approx(scnn.record(row.layer, row.phase).time_s
                                                / result.record(row.layer, row.phase).time_s, rel=1e-12)
        for row in comparison.rows_for("layer", result.design):
            assert row.speedup == pytest.approx(_times(scnn, layer=row.layer) / _times(result, layer=row.layer))
            assert row.energy_reduction == pytest.approx(_energy(scnn, layer=row.layer)
                                                         / _energy(result, layer=row.layer))
        for row in comparison.rows_for("phase", result.design):
            assert row.speedup == pytest.approx(_times(scnn, phase=row.phase) / _times(result, phase=row.phase))
        summary = comparison.summary(result.design)
        assert summary.speedup == pytest.approx(_times(scnn) / _times(result))
        assert summary.energy_reduction == pytest.approx(_energy(scnn) / _energy(result))
    assert comparison.summary("scnn").speedup == pytest.approx(1.0)


def test_geomean_is_the_nth_root_of_the_product_of_layer_ratios(results: list[NetworkResult]) -> None:
    comparison = compare_results(results)
    ant, scnn = results[1], results[0]
    ratios = [_times(scnn, layer=layer.name) / _times(ant, layer=layer.name) for layer in LAYERS]
    by_hand = (ratios[0] * ratios[1] * ratios[2]) ** (1 / 3)
    assert comparison.summary("ant").geomean_speedup_layers == pytest.approx(by_hand, rel=1e-12)
    per_record = [scnn.record(*k).time_s / ant.record(*k).time_s for k in scnn.keys()]
    assert comparison.summary("ant").geomean_speedup_layer_phases == pytest.approx(
        math.prod(per_record) ** (1 / len(per_record)), rel=1e-12)


def test_rows_cover_every_scope_once_per_design(results: list[NetworkResult]) -> None:
    comparison = compare_results(results)
    per_design = len(LAYERS) * 3 + len(LAYERS) + 3 + 1
    assert len(comparison.rows) == per_design * len(results)
    assert comparison.layers == tuple(layer.name for layer in LAYERS)
    assert comparison.phases == PHASES


def test_default_baseline_is_scnn_else_the_first(results: list[NetworkResult]) -> None:
    assert default_baseline(results[::-1]) == "scnn"
    assert default_baseline(results[1:]) == "ant"
    assert compare_results(results, baseline="v100").summary("v100").speedup == pytest.approx(1.0)


def test_a_design_without_energy_gets_no_energy_ratio(results: list[NetworkResult]) -> None:
    timing_only = replace(results[3], design="measured",
                          records=tuple(replace(r, energy_j=None) for r in results[3].records), backend="measured")
    comparison = compare_results([*results[:2], timing_only])
    summary = comparison.summary("measured")
    assert summary.energy_reduction is None and summary.geomean_energy_reduction_layers is None
    assert summary.speedup == pytest.approx(_times(results[0]) / _times(timing_only))


def test_json_follows_the_schema_and_csv_holds_the_rows(results: list[NetworkResult]) -> None:
    comparison = compare_results(results, sources=[f"{r.design}.json" for r in results])
    data = json.loads(comparison.to_json())
    assert data["schema"] == SCHEMA and data["baseline"] == "scnn"
    assert data["workload"]["network"] == "tiny-cifar" and data["workload"]["densities"]["g"] == 0.1
    assert [d["design"] for d in data["designs"]] == ["scnn", "ant", "ant_oracle", "v100"]
    assert data["designs"][3]["source"] == "v100.json"
    network = [r for r in data["rows"] if r["scope"] == "network" and r["design"] == "v100"][0]
    assert network["speedup"] == pytest.approx(_times(results[0]) / _times(results[3]))
    rows = list(csv.DictReader(io.StringIO(comparison.to_csv())))
    assert len(rows) == len(data["rows"])
    assert float(rows[-1]["speedup"]) == pytest.approx(data["rows"][-1]["speedup"])
    assert "v100" in format_summary(comparison) and "scnn" in format_summary(comparison)


def test_unknown_baseline_is_a_user_error(results: list[NetworkResult]) -> None:
    with pytest.raises(AntsimError, match="unknown baseline design 'dcnn'") as info:
        compare_results(results, baseline="dcnn")
    assert info.value.subject == "baseline"  # the CLI names its --baseline flag


def test_the_comparison_says_which_timing_tier_made_its_results(results: list[NetworkResult]) -> None:
    assert "timing" not in json.loads(compare_results(results).to_json())["workload"]  # the default, not echoed
    tiered = [replace(r, workload=r.echo.with_keys(timing="closed_form")) if r.backend == "accelerator" else r
              for r in results]
    assert json.loads(compare_results(tiered).to_json())["workload"]["timing"] == "closed_form"
