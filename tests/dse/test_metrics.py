"""The metric table: what the evaluators report is in it, the sweep spec accepts exactly its names, the
shipped doc lists it as it is, and the axis scales read as a person reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweep_helpers import REPO, write_spec

from antsim.dse import spec as sweep_spec
from antsim.dse.evaluators import analytic
from antsim.dse.metrics import LEGACY_NAMES, METRICS, canonical_name, metric_label, objective_column, scaled_unit
from antsim.dse.objective import complete_metrics
from antsim.dse.spec import load_sweep
from antsim.dse.workload import resolve_workload
from antsim.errors import SpecError
from antsim.spec.arch import load_arch


def test_every_metric_the_analytic_evaluator_reports_is_in_the_table(tmp_path: Path) -> None:
    spec = load_sweep(write_spec(tmp_path))
    arch = load_arch(REPO / "arch_configs" / "ant.yaml")
    reported = complete_metrics(analytic(arch, resolve_workload(spec), "fast", 0, min_input_bytes_per_pe=4096))
    assert set(reported) <= set(METRICS)


def test_the_spec_accepts_the_tables_names_and_refuses_an_old_one(tmp_path: Path) -> None:
    assert sweep_spec.METRICS is METRICS
    load_sweep(write_spec(tmp_path, "all", objectives=dict.fromkeys(METRICS, "min")))
    with pytest.raises(SpecError, match="objectives.edp_js"):  # an old report's name, not a spec name
        load_sweep(write_spec(tmp_path, "old", objectives={"time_s": "min", "edp_js": "min"}))


def test_the_shipped_doc_lists_the_table() -> None:
    text = (REPO / "docs" / "sweep_reporting.md").read_text()
    section = text.split("## Metrics", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
            if line.startswith("| `")]
    assert [r[0].strip("`") for r in rows] == list(METRICS)
    for name, unit, direction, label, _scale in rows:
        metric = METRICS[name.strip("`")]
        assert (unit if unit != "—" else "", direction, label) == (metric.unit, metric.direction, metric.label)


@pytest.mark.parametrize(("top", "unit", "scale", "divisor", "text"), [
    (0.4, "s", "si", 1e-3, "ms"), (999.0, "J", "si", 1.0, "J"), (1000.0, "J", "si", 1e3, "kJ"),
    (3e-14, "J·s", "si", 1e-15, "fJ·s"), (1e-17, "J·s", "si", 1e-15, "fJ·s"),   # below femto: still femto
    (2.5e7, "", "count", 1e6, "×10^6"), (2.5e10, "products", "count", 1e9, "×10^9 products"),
    (500.0, "products", "count", 1.0, "products"), (38.0, "mm²", "plain", 1.0, "mm²"), (0.0, "s", "si", 1.0, "s"),
])
def test_scaled_unit(top: float, unit: str, scale: str, divisor: float, text: str) -> None:
    assert scaled_unit(top, unit, scale) == (pytest.approx(divisor), text)  # type: ignore[arg-type]


def test_names() -> None:
    assert canonical_name("edp_js") == "edp" and canonical_name("time_s") == "time_s"
    assert all(new in METRICS for new in LEGACY_NAMES.values())
    assert metric_label("edp_js") == "energy-delay product" and metric_label("values_0") == "values_0"
    assert objective_column("time_s") == "objective.time_s"
