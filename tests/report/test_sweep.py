"""The report's sweep figures: its own designs marked among the trials at their own values, readable
units with log axes across decades, and the caption naming what priced the trials."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from report_factories import accelerator_result, gpu_result

from antsim.report import figures as f
from antsim.report.build import build_report
from antsim.report.compare import compare_results
from antsim.report.sweep import _get_sweep_info, design_marks


def _sweep(folder: Path, evaluator: dict | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "trials.csv").write_text(
        "number,state,objective.time_s,objective.energy_j,objective.area_mm2,feasible\n"
        "0,COMPLETE,1.2e-5,2.0e-4,2.0,True\n1,COMPLETE,3.0e-5,1.0e-4,3.0,True\n"
        "2,COMPLETE,2.0e-5,3.0e-4,9.0,False\n")
    if evaluator is not None:
        (folder / "summary.json").write_text(json.dumps({"evaluator": evaluator}))
    return folder


@pytest.fixture
def comparison():  # type: ignore[no-untyped-def]
    return compare_results([accelerator_result("scnn", 1, 0.0), accelerator_result("ant", 2, 0.9),
                            gpu_result("v100", 4)])


def test_marks_carry_each_designs_own_totals(tmp_path: Path, comparison) -> None:  # type: ignore[no-untyped-def]
    info = _get_sweep_info(_sweep(tmp_path / "s", {"name": "simulator", "fidelity": "fast"}))
    assert info.evaluator == "simulator, fast fidelity"
    marks = design_marks(info, [comparison.summary(r.design) for r in comparison.results])
    assert [m.design for m in marks] == ["scnn", "ant", "v100"]
    for mark, result in zip(marks, comparison.results, strict=True):
        totals = result.totals
        assert mark.values[:2] == pytest.approx((totals["time_s"], totals["energy_j"]))
        assert mark.values[2] == 7.9 if result.backend == "accelerator" else math.isnan(mark.values[2])


def test_report_figure_data_and_caption_hold_the_marks(tmp_path: Path, comparison) -> None:  # type: ignore[no-untyped-def]
    sweep = _sweep(tmp_path / "s", {"name": "analytic", "fidelity": "fast"})
    out = build_report(comparison, tmp_path / "r", sweep_dir=sweep)
    rows = list(csv.DictReader(io.StringIO((out / "data" / "pareto.csv").read_text())))
    by_name = {r["number"]: r for r in rows}
    ant = comparison.result("ant").totals
    assert float(by_name["ant"]["time_s"]) == pytest.approx(ant["time_s"])
    assert by_name["v100"]["area_mm2"] == ""   # a GPU has no area: left empty, not zero
    markdown = (out / "report.md").read_text()
    assert "Black markers: this report's designs (scnn, ant, v100)" in markdown
    assert "priced by the sweep's analytic, fast fidelity evaluator" in markdown
    assert "computed for min time_s, min energy_j, min area_mm2)" in markdown  # no pareto.csv: the directions used


def test_axes_read_in_prefixed_units_and_go_log_across_decades(tmp_path: Path, comparison) -> None:  # type: ignore[no-untyped-def]
    info = _get_sweep_info(_sweep(tmp_path / "s"))
    marks = design_marks(info, [comparison.summary(r.design) for r in comparison.results])
    fig = f.render_pareto(info, marks)
    ax = fig.axes[0]
    times = np.array([*info.values[:, 0], *(m.values[0] for m in marks)])
    energies = np.array([*info.values[:, 1], *(m.values[1] for m in marks)])
    for values, scale, label in ((times, ax.get_xscale(), ax.get_xlabel()), (energies, ax.get_yscale(),
                                                                           ax.get_ylabel())):
        spans = bool(values.max() / values.min() > 100)
        assert (scale == "log") is spans and label.endswith(", log scale") is spans
    prefix = {1e-6: "µ", 1e-3: "m", 1.0: ""}
    top_t = next(s for s in (1.0, 1e-3, 1e-6) if times.max() >= s)
    assert f"({prefix[top_t]}s)" in ax.get_xlabel()
    marked = [c for c in ax.collections if str(c.get_label()).startswith("report: ")]
    assert sorted(c.get_label() for c in marked) == ["report: ant", "report: scnn", "report: v100"]
    ant = next(c for c in marked if c.get_label() == "report: ant").get_offsets()[0]
    assert ant[0] * top_t == pytest.approx(comparison.result("ant").totals["time_s"])
