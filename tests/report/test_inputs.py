"""``antsim.report.inputs``: results of another workload are refused naming the file and what differs; result
files are read by suffix, a CSV taking its layers from the JSON results beside it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from report_factories import LAYERS, accelerator_result, gpu_result

from antsim.errors import AntsimError
from antsim.report.compare import compare_results
from antsim.report.inputs import layers_of, load_result, load_results
from antsim.results import NetworkResult
from antsim.workloads.layers import PHASES, Layer


def _measured_csv(path: Path, time_s: float) -> Path:
    rows = [f"{layer.name},{phase},{time_s}" for layer in LAYERS for phase in PHASES]
    path.write_text("name,phase,time_s\n" + "\n".join(rows) + "\n")
    return path


def test_a_csv_takes_its_layers_from_the_json_results_in_any_order(tmp_path: Path) -> None:
    scnn = accelerator_result("scnn", 1, 0.0)
    scnn.write_json(tmp_path / "scnn.json")
    csv_path = _measured_csv(tmp_path / "gpu.csv", 2e-6)
    results, sources = load_results([csv_path, tmp_path / "scnn.json"])
    assert sources == [str(csv_path), str(tmp_path / "scnn.json")]
    assert results[1] == scnn and layers_of(results[0]) == LAYERS == layers_of(scnn)
    assert [(r.layer, r.phase, r.time_s) for r in results[0].records] == [
        (layer.name, phase, 2e-6) for layer in LAYERS for phase in PHASES]
    alone, _ = load_results([csv_path], fallback_layers=lambda: list(LAYERS))
    assert alone[0].records == results[0].records


def test_unreadable_inputs_are_one_line_naming_the_file(tmp_path: Path) -> None:
    csv_path = _measured_csv(tmp_path / "gpu.csv", 1e-6)
    (tmp_path / "r.txt").write_text("x")
    for path, message in ((tmp_path / "nope.json", "nope.json: result file not found"),
                          (tmp_path / "r.txt", "r.txt: result files must end in .json or .csv; got '.txt'"),
                          (csv_path, "gpu.csv: a CSV result needs the workload's layers")):
        with pytest.raises(AntsimError) as info:
            load_result(path)
        assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("bad, message", [
    (lambda r: gpu_result("v100", 4, layers=LAYERS[:2]), "lacks layer 'layer3.conv'"),
    (lambda r: gpu_result("v100", 4, batch=4), "workload.layers: layer 'conv1' is N4"),
    (lambda r: replace(r[3], workload={**r[3].workload, "batch": 2}), "workload.batch is 2 but 1"),
    (lambda r: accelerator_result("ant", 5, 0.9, layers=[replace(LAYERS[0], K=8), *LAYERS[1:]]),
     "layer 'conv1' is N1 C3 K8"),
    (lambda r: replace(r[3], records=r[3].records[:-1]), "lacks (layer, phase) ('layer3.conv', 'wgrad')"),
    (lambda r: replace(r[3], design="scnn"), "design name 'scnn' also comes from"),
    (lambda r: accelerator_result("ant", 5, 0.9, densities={"w": 0.1, "a": 0.5, "g": 1.0}), "workload.densities"),
    (lambda r: accelerator_result("ant", 5, 0.9, layers=[*LAYERS, Layer("fc", 1, 64, 10, 1, 1, 1, 1)]),
     "layer 'fc' is not in"),
])
def test_mismatched_inputs_are_rejected_naming_the_file(results: list[NetworkResult], bad, message: str) -> None:
    inputs = [results[0], bad(results)]
    with pytest.raises(AntsimError, match=r".*") as info:
        compare_results(inputs, sources=["a.json", "b.json"])
    assert str(info.value).startswith("b.json: ") and message in str(info.value)
    assert "\n" not in str(info.value)
