"""Report tables (issue 15): area per component, per layer, utilisation and stall shares, per-mm² figures and
the assumptions section, each checked against the records or specs they summarise."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import pytest
from report_factories import LAYERS, accelerator_result, gpu_result

from antsim.energy.areas import area
from antsim.report import tables as tb
from antsim.report.build import build_report
from antsim.report.compare import compare_results, fmt_ratio
from antsim.spec.arch import load_arch

REPO = Path(__file__).resolve().parents[2]


def _with_real_spec(design: str, seed: int, skip: float, util: float, **extra: object):
    result = accelerator_result(design, seed, skip, batch_source="layers.csv column N", regime="swat", **extra)
    spec = load_arch(REPO / "arch_configs" / f"{design}.yaml")
    records = tuple(dataclasses.replace(r, details={**r.details, "multiplier_utilization": util})
                    for r in result.records)
    return dataclasses.replace(result, spec=spec.to_dict(), records=records)


@pytest.fixture(scope="module")
def comparison():
    gpu = gpu_result("v100", 4)
    gpu = dataclasses.replace(gpu, meta={"precision": "fp16", "selection": "timed", "library": "cudnn8",
                                         "scope": "step"}, spec={"name": "v100", "sms": 80,
                                                                 "dram": {"type": "hbm2", "pj_per_bit": 3.9}})
    results = [_with_real_spec("scnn", 1, 0.0, 0.25), _with_real_spec("ant", 2, 0.9, 0.5), gpu]
    return compare_results(results, ["a", "b", "c"], baseline="scnn")


def test_area_rows_are_the_area_model_of_each_spec(comparison) -> None:
    rows = tb.area_rows(comparison)
    header, body = rows[0], rows[1:]
    assert [r[0] for r in body] == ["scnn", "ant"]  # GPUs have no component area
    for row in body:
        parts = area(load_arch(REPO / "arch_configs" / f"{row[0]}.yaml"))
        for name, value in zip(header[1:-1], row[1:-1], strict=True):
            assert float(value) == pytest.approx(parts[name], abs=5e-5)
    ant = dict(zip(header, body[1], strict=True))
    assert float(ant["anticipation"]) > 0 and float(dict(zip(header, body[0], strict=True))["anticipation"]) == 0


def test_layer_rows_are_sums_of_the_records(comparison) -> None:
    rows = tb.layer_rows(comparison)
    assert [r[0] for r in rows[1:]] == [layer.name for layer in LAYERS]
    scnn, ant = comparison.results[0], comparison.results[1]
    col = rows[0].index("ant speedup")
    for row in rows[1:]:
        t_scnn = sum(r.time_s for r in scnn.records if r.layer == row[0])
        t_ant = sum(r.time_s for r in ant.records if r.layer == row[0])
        assert row[col] == fmt_ratio(t_scnn / t_ant)


def test_utilisation_and_stall_shares_are_cycle_weighted(comparison) -> None:
    ant = comparison.results[1]
    util, shares = tb.utilisation(ant)
    total = sum(r.cycles for r in ant.records)
    assert util == pytest.approx(0.5)
    for name in ("busy", "memory_stall"):
        assert shares[name] == pytest.approx(sum(r.stalls[name] for r in ant.records) / total)
    assert sum(shares.values()) <= 1.0 + 1e-12
    assert tb.utilisation(comparison.results[2]) is None  # a GPU reports no PE cycles


def test_efficiency_rows_divide_by_batch_time_and_area(comparison) -> None:
    header, *body = tb.efficiency_rows(comparison)
    rows = {r[0]: dict(zip(header, r, strict=True)) for r in body}
    s = next(d for d in comparison.designs if d.design == "ant")
    assert float(rows["ant"]["images/s"]) == pytest.approx(1 / s.time_s, rel=1e-3)
    assert float(rows["ant"]["images/s per mm²"]) == pytest.approx(1 / s.time_s / s.area_mm2, rel=1e-3)
    assert rows["ant"]["multiplier utilisation"] == "50.0%" and rows["v100"]["images/s per mm²"] == "n/a"


def test_assumptions_name_regime_batch_dram_fidelity_and_gpu_settings(comparison) -> None:
    text = "\n".join(" | ".join(r) for r in tb.assumption_rows(comparison))
    assert "1 (from layers.csv column N)" in text and "swat" in text and "fast" in text
    assert "lpddr4, 25.6 GB/s, 8 pJ/bit" in text  # scnn.yaml's DRAM priced by default_16nm
    assert "precision fp16, kernel selection timed, library cudnn8" in text and "hbm2 3.9 pJ/bit" in text
    assert "whole training step" in text


def test_the_report_ships_the_tables(comparison, tmp_path: Path) -> None:
    out = build_report(comparison, tmp_path / "r")
    for name in ("area", "layers", "efficiency", "assumptions"):
        with (out / "data" / f"{name}.csv").open() as handle:
            assert len(list(csv.reader(handle))) > 1
    html, md = (out / "index.html").read_text(), (out / "report.md").read_text()
    for title in ("Area by component", "Per layer", "Assumptions", "Throughput, energy and utilisation"):
        assert title in html and f"## {title}" in md
    assert "ANT&#x27;s multipliers are busy 50.0% of the cycles" in html  # escaped apostrophe
    assert "SCNN's multipliers are busy 25.0% of the cycles" in md


def test_the_baseline_leads_whatever_the_input_order(tmp_path: Path) -> None:
    # a report rebuilt from its results/*.json reads them in file-name order: ant, scnn, v100
    results = [accelerator_result("ant", 2, 0.9), gpu_result("v100", 4), accelerator_result("scnn", 1, 0.0)]
    c = compare_results(results, ["ant.json", "v100.json", "scnn.json"], baseline="scnn")
    assert [s.design for s in c.designs] == ["scnn", "ant", "v100"]
    assert c.sources == ("scnn.json", "ant.json", "v100.json")
    assert [r.design for r in c.results] == ["scnn", "ant", "v100"]
    scnn_time = sum(r.time_s for r in results[2].records)
    assert c.designs[1].speedup == pytest.approx(scnn_time / sum(r.time_s for r in results[0].records))


def test_a_sweep_of_another_workload_is_refused(tmp_path: Path) -> None:
    import json

    from antsim.errors import AntsimError
    from antsim.report.sweep import check_sweep_workload

    c = compare_results([accelerator_result("scnn", 1, 0.0), accelerator_result("ant", 2, 0.9)])
    folder = tmp_path / "sweep"
    folder.mkdir()
    mine = {**c.workload, "layers": c.results[0].workload["layers"]}
    same = {"name": "tiny-cifar", "phases": list(c.workload["phases"]), "layers": mine["layers"]}
    (folder / "summary.json").write_text(json.dumps({"workload": same}))
    check_sweep_workload(folder, mine)
    other = {**same, "layers": [{**layer, "N": 8} for layer in same["layers"]]}
    (folder / "summary.json").write_text(json.dumps({"workload": other}))
    with pytest.raises(AntsimError, match=r"its trials ran tiny-cifar \(3 layers, batch 8, .*report's tiny-cifar"
                                          r" \(3 layers, batch 1"):
        check_sweep_workload(folder, mine)
    with pytest.raises(AntsimError, match="sweep export .*: its trials ran") as info:
        build_report(c, tmp_path / "r", sweep_dir=folder)
    assert info.value.subject == "sweep"  # the CLI names its --sweep flag
    assert not (tmp_path / "r").exists()


def test_gpu_energy_split_and_dense_products_reach_the_figures(tmp_path: Path) -> None:
    import numpy as np

    from antsim.report.data import _get_energy_breakdown_info, _get_product_info

    gpu = gpu_result("v100", 4)
    split = {"static": 3e-4, "core": 1e-5, "dram": 2e-6}
    gpu = dataclasses.replace(gpu, records=tuple(dataclasses.replace(r, energy_j=sum(split.values()),
                                                                     energy_breakdown_j=split) for r in gpu.records))
    dense = _with_real_spec("dense", 3, 0.0, 1.0)
    c = compare_results([_with_real_spec("scnn", 1, 0.0, 0.25), dense, gpu], baseline="scnn")
    info = _get_energy_breakdown_info(c)
    assert info.designs == ("scnn", "dense", "v100")
    row = info.energy_j[2]
    n = len(gpu.records)
    assert row[info.components.index("gpu_static")] == pytest.approx(n * 3e-4)
    assert row[info.components.index("gpu_core_dynamic")] == pytest.approx(n * 1e-5)
    assert row[info.components.index("dram")] == pytest.approx(n * 2e-6)
    np.testing.assert_allclose(info.energy_j.sum(axis=1), info.totals_j, rtol=1e-12)
    products = _get_product_info(c)
    assert products.dense == (False, True)
    scnn_valid = sum(r.products.valid for r in c.results[0].records if r.phase == "fprop")
    fprop = products.phases.index("fprop")
    dense_total = sum(r.products.total for r in dense.records if r.phase == "fprop")
    # the dense design's non-zero products are the sparse design's valid ones; the rest had a zero operand
    assert products.valid[1, fprop] == min(scnn_valid, dense_total)
    assert products.rcp_issued[1, fprop] == dense_total - min(scnn_valid, dense_total)
    out = build_report(c, tmp_path / "r")
    md = (out / "report.md").read_text()
    assert "dense (dense): " in md and "have a zero operand" in md and "gpu_static" in md
    assert (out / "figures" / "products.png").read_bytes()[:4] == b"\x89PNG"


def test_compare_refuses_a_sweep_of_another_workload_before_simulating(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture) -> None:
    import json

    from antsim.cli import main
    from antsim.workloads.layers import write_layers_csv

    layers = tmp_path / "l.csv"
    write_layers_csv(LAYERS[:1], layers)
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    other = [LAYERS[1].to_dict()]
    (sweep / "summary.json").write_text(json.dumps({"workload": {"name": "x", "phases": ["fprop"], "layers": other}}))
    (sweep / "trials.csv").write_text("number,objective.time_s,objective.area_mm2\n0,1,2\n")
    capsys.readouterr()
    status = main(["compare", "--arch", str(REPO / "arch_configs/scnn.yaml"), "--layers-csv", str(layers),
                   "--report-out", str(tmp_path / "r"), "--sweep", str(sweep), "--no-progress"])
    err = capsys.readouterr().err
    assert status == 2 and "its trials ran x (1 layers" in err and "simulating" not in err
    assert not (tmp_path / "r").exists()
