"""Figure infos checked against the records they summarise (independent sums), and the sweep reader."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from report_factories import LAYERS

from antsim.dse.metrics import readable_axis
from antsim.errors import AntsimError
from antsim.report.compare import compare_results
from antsim.report.data import (
    UNATTRIBUTED,
    _get_cycle_info,
    _get_energy_breakdown_info,
    _get_headline_info,
    _get_product_info,
    _get_ratio_info,
)
from antsim.report.sweep import _get_sweep_info
from antsim.results import NetworkResult


def test_speedup_info_equals_per_layer_time_ratios(results: list[NetworkResult]) -> None:
    info = _get_ratio_info(compare_results(results), "speedup")
    assert info.designs == ("ant", "ant_oracle", "v100") and info.baseline == "scnn"
    scnn = results[0]
    for d, result in enumerate(results[1:]):
        for l, layer in enumerate(LAYERS):
            expected = (sum(r.time_s for r in scnn.records if r.layer == layer.name)
                        / sum(r.time_s for r in result.records if r.layer == layer.name))
            assert info.per_layer[d, l] == pytest.approx(expected, rel=1e-12)
        assert info.network[d] == pytest.approx(scnn.totals["time_s"] / result.totals["time_s"])
        assert info.geomean[d] == pytest.approx(np.prod(info.per_layer[d]) ** (1 / len(LAYERS)))


def test_energy_reduction_info_equals_energy_ratios(results: list[NetworkResult]) -> None:
    info = _get_ratio_info(compare_results(results), "energy_reduction")
    assert info.network[2] == pytest.approx(results[0].totals["energy_j"] / results[3].totals["energy_j"])


def test_energy_breakdown_stacks_sum_to_energy_and_match_records(results: list[NetworkResult]) -> None:
    info = _get_energy_breakdown_info(compare_results(results))
    assert info.designs == ("scnn", "ant", "ant_oracle")  # the GPU has no component breakdown
    assert info.components[0] == "multiplier" and info.components[-1] == "leakage"
    np.testing.assert_allclose(info.energy_j.sum(axis=1), info.totals_j, rtol=1e-12)
    ant = results[1]
    crossbar = sum(r.energy_breakdown_j["crossbar"] for r in ant.records)
    assert info.energy_j[1, info.components.index("crossbar")] == pytest.approx(crossbar)


def test_product_composition_sums_to_total(results: list[NetworkResult]) -> None:
    info = _get_product_info(compare_results(results))
    assert info.designs == ("scnn", "ant", "ant_oracle")
    np.testing.assert_array_equal(info.valid + info.rcp_skipped + info.rcp_issued, info.total)
    wgrad = info.phases.index("wgrad")
    ant = [r for r in results[1].records if r.phase == "wgrad"]
    assert info.total[1, wgrad] == sum(r.products.total for r in ant)
    assert info.rcp_skipped[1, wgrad] == sum(r.products.skipped for r in ant)
    assert info.rcp_issued[2].sum() <= 3  # the oracle skips every RCP (up to integer rounding in the factory)
    assert np.all(info.rcp_skipped[0] == 0)


def test_cycle_breakdown_stacks_to_the_records_cycles(results: list[NetworkResult]) -> None:
    info = _get_cycle_info(compare_results(results))
    assert info.categories[0] == "busy" and info.categories[-1] == UNATTRIBUTED
    np.testing.assert_allclose(info.cycles.sum(axis=2), info.total_cycles)
    fprop = info.phases.index("fprop")
    expected = sum(r.cycles for r in results[0].records if r.phase == "fprop")
    assert info.total_cycles[0, fprop] == expected
    halo = sum(r.stalls["halo"] for r in results[0].records if r.phase == "fprop")
    assert info.cycles[0, fprop, info.categories.index("halo")] == halo


def test_headline_is_ant_over_scnn_and_over_each_gpu(results: list[NetworkResult]) -> None:
    info = _get_headline_info(compare_results(results))
    assert info.subject == "ant" and info.references == ("scnn", "v100")
    ant, scnn, gpu = results[1].totals, results[0].totals, results[3].totals
    assert info.speedup[0] == pytest.approx(scnn["time_s"] / ant["time_s"])
    assert info.speedup[1] == pytest.approx(gpu["time_s"] / ant["time_s"])
    assert info.energy_reduction[1] == pytest.approx(gpu["energy_j"] / ant["energy_j"])


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_sweep_reader_takes_pareto_and_feasibility_from_the_export(tmp_path: Path) -> None:
    _write(tmp_path / "trials.csv", "number,params_F,time_s,energy_j,area_mm2,feasible\n"
           "0,4,1.0,5.0,2.0,True\n1,8,2.0,1.0,3.0,true\n2,2,3.0,6.0,1.0,False\n3,4,1.5,5.5,2.5,True\n")
    _write(tmp_path / "pareto.csv", "number,time_s,energy_j\n0,1.0,5.0\n1,2.0,1.0\n")
    info = _get_sweep_info(tmp_path)
    assert info.objectives == ("time_s", "energy_j", "area_mm2")
    assert info.feasible.tolist() == [True, True, False, True]
    assert info.pareto.tolist() == [True, True, False, False]
    assert info.pairs() == [(0, 1), (0, 2), (1, 2)]


def test_sweep_reader_reads_the_antsim_exporter_columns(tmp_path: Path) -> None:
    _write(tmp_path / "trials.csv", "number,state,param.F,objective.time_s,objective.energy_j,feasible,metric.edp\n"
           "0,COMPLETE,4,1.0,5.0,True,5\n1,COMPLETE,8,2.0,1.0,True,2\n2,PRUNED,2,,,False,\n")
    _write(tmp_path / "pareto.csv", "number,param.F,objective.time_s,objective.energy_j,arch\n1,8,2.0,1.0,a.yaml\n")
    info = _get_sweep_info(tmp_path)
    assert info.objectives == ("time_s", "energy_j")
    np.testing.assert_array_equal(info.values[:2], [[1.0, 5.0], [2.0, 1.0]])
    assert info.feasible.tolist() == [True, True, False] and info.pareto.tolist() == [False, True, False]


def test_sweep_reader_computes_the_front_without_pareto_csv(tmp_path: Path) -> None:
    _write(tmp_path / "trials.csv", "number,state,values_0,values_1\n0,COMPLETE,1,5\n1,COMPLETE,2,1\n"
           "2,PRUNED,0.5,0.5\n3,COMPLETE,1.5,5.5\n4,COMPLETE,,\n")
    info = _get_sweep_info(tmp_path)
    assert info.objectives == ("values_0", "values_1")
    # trial 2 would dominate everything but is pruned; trial 3 is dominated by trial 0; 4 has no values
    assert info.pareto.tolist() == [True, True, False, False, False]


def test_sweep_reader_reads_old_metric_names_as_todays(tmp_path: Path) -> None:
    # an earlier report's vocabulary: the energy-delay product as edp_js, bare or as an objective column
    _write(tmp_path / "a" / "trials.csv", "number,time_s,edp_js\n0,1.0,5.0\n1,2.0,1.0\n2,3.0,6.0\n")
    _write(tmp_path / "b" / "trials.csv", "number,state,objective.time_s,objective.edp_js,feasible\n"
           "0,COMPLETE,1.0,5.0,True\n1,COMPLETE,2.0,1.0,True\n2,COMPLETE,3.0,6.0,True\n")
    for folder in ("a", "b"):
        info = _get_sweep_info(tmp_path / folder)
        assert info.objectives == ("time_s", "edp") and info.directions == ("minimize", "minimize")
        assert info.pareto.tolist() == [True, True, False]
        assert readable_axis(info.objectives[1], info.values[:, 1]).label == "energy-delay product (J·s)"


def test_sweep_reader_computes_the_front_by_the_directions_pareto_json_records(tmp_path: Path) -> None:
    _write(tmp_path / "trials.csv", "number,state,objective.time_s,objective.power_w,feasible\n"
           "0,COMPLETE,1.0,5.0,True\n1,COMPLETE,2.0,6.0,True\n2,COMPLETE,2.0,4.0,True\n3,COMPLETE,0.5,9.0,False\n")
    minimised = _get_sweep_info(tmp_path)  # no record: each metric's own direction (power is a cost)
    assert minimised.directions == ("minimize", "minimize")
    assert minimised.pareto.tolist() == [True, False, True, False]
    _write(tmp_path / "pareto.json", json.dumps({"objectives": {"time_s": "minimize", "power_w": "maximize"}}))
    info = _get_sweep_info(tmp_path)
    assert info.directions == ("minimize", "maximize") and info.pareto.tolist() == [True, True, False, False]


@pytest.mark.parametrize("files, message", [
    ({}, "no trials.csv"),
    ({"trials.csv": "id,time_s,energy_j\n0,1,2\n"}, "no 'number' column"),
    ({"trials.csv": "number,time_s\n0,1\n"}, "needs two objective columns"),
])
def test_sweep_reader_rejects_unusable_exports(tmp_path: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        _write(tmp_path / name, text)
    with pytest.raises(AntsimError, match=message):
        _get_sweep_info(tmp_path)
