from __future__ import annotations

import json
import math
import pickle
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import results_golden as golden

from antsim.errors import AntsimError
from antsim.results import (
    AcceleratorLayerDetails,
    GpuLayerDetails,
    LayerDetails,
    LayerResult,
    MeasuredLayerDetails,
    NetworkResult,
    ProductCounts,
    Totals,
    WorkloadEcho,
    geomean,
)


def _result() -> NetworkResult:
    records = [
        LayerResult("a", "fprop", time_s=1e-3, cycles=1000, energy_j=2e-6, energy_breakdown_j={"multiplier": 2e-6},
                    products=ProductCounts(100, 60, 30), stalls={"busy": 900, "memory_stall": 100}),
        LayerResult("a", "wgrad", time_s=3e-3, cycles=3000, energy_j=1e-6, products=ProductCounts(50, 5, 0)),
    ]
    return NetworkResult("scnn", "accelerator", records, spec={"name": "scnn"}, workload={"batch": 1}, area_mm2=7.9)


def test_products_invariants() -> None:
    p = ProductCounts(100, 60, 30)
    assert (p.rcp, p.issued) == (40, 70)
    with pytest.raises(ValueError):
        ProductCounts(100, 60, 41)  # would skip a valid product


def test_totals_and_json_round_trip(tmp_path) -> None:
    r = _result()
    assert r.totals == {"cycles": 4000, "time_s": 4e-3, "energy_j": 3e-6, "area_mm2": 7.9}
    r.write_json(tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["schema"] == "antsim.result/1" and data["records"][0]["products"]["rcp"] == 40
    back = NetworkResult.read_json(tmp_path / "r.json")
    assert back.records == r.records and back.totals == r.totals
    r.write_csv(tmp_path / "r.csv")
    header = (tmp_path / "r.csv").read_text().splitlines()[0].split(",")
    assert header[:5] == ["name", "phase", "time_s", "cycles", "energy_j"] and "products_rcp" in header


def test_bad_result_files(tmp_path) -> None:
    (tmp_path / "x.json").write_text("{")
    with pytest.raises(AntsimError, match="not valid JSON"):
        NetworkResult.read_json(tmp_path / "x.json")
    (tmp_path / "y.json").write_text('{"schema": "other"}')
    with pytest.raises(AntsimError, match="schema"):
        NetworkResult.read_json(tmp_path / "y.json")


def test_geomean() -> None:
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    with pytest.raises(ValueError):
        geomean([1.0, 0.0])


# --- typed records against the files the code wrote before them (tests/data/results/golden, commit 0ab16c6) ----

_RECORD = {"accelerator": AcceleratorLayerDetails, "gpu": GpuLayerDetails, "measured": MeasuredLayerDetails,
           "external": MeasuredLayerDetails}
_JSON_GOLDEN = sorted(p.name for p in golden.GOLDEN.glob("*.json"))


def _typed(result: NetworkResult) -> NetworkResult:
    """``result`` with every record's details parsed into its backend's record."""
    record = _RECORD[result.backend]
    return replace(result, records=tuple(replace(r, details=record.of(r)) for r in result.records))


def _golden(name: str) -> NetworkResult:
    return NetworkResult.read_json(golden.GOLDEN / name)


@pytest.mark.parametrize("name", _JSON_GOLDEN)
def test_old_files_load_and_the_records_write_the_same_bytes(name: str, tmp_path: Path) -> None:
    read = _golden(name)
    typed = _typed(read)
    assert isinstance(typed.workload, WorkloadEcho) and typed == read  # the records read as the mappings
    for before, after in zip(read.records, typed.records, strict=True):
        assert dict(after.details) == dict(before.details)
    typed.write_json(tmp_path / name)
    assert golden.normalised(tmp_path / name) == (golden.GOLDEN / name).read_bytes()


@pytest.mark.parametrize("name", ["sim_cli_fast.json", "sim_cli_exact.csv", "sim_lib_tensors.json", "measured.json",
                                  "deepbench.json"])
def test_producers_write_the_bytes_written_before_the_records(name: str, tmp_path: Path) -> None:
    """Simulator and measurement results, written through the CLI and the library: byte for byte."""
    written = golden.write_case(name, tmp_path)
    assert written
    for path in written:
        assert golden.normalised(path) == (golden.GOLDEN / path.name).read_bytes(), path.name


def _shape(value: Any) -> Any:
    """Keys in order and value types, not values (the GPU model's numbers may be tuned; its format may not)."""
    if isinstance(value, dict):
        return [(k, _shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


@pytest.mark.parametrize("name", ["gpu_cli.json", "gpu_cli_step.json", "gpu_lib.json"])
def test_gpu_results_keep_their_format(name: str, tmp_path: Path) -> None:
    golden.write_case(name, tmp_path)
    fresh = json.loads((tmp_path / name).read_text())
    before = json.loads((golden.GOLDEN / name).read_text())
    assert fresh["workload"] == before["workload"]
    assert [_shape(r["details"]) for r in fresh["records"]] == [_shape(r["details"]) for r in before["records"]]


def test_gpu_details_parse_in_the_producers_key_order() -> None:
    from antsim.gpu import estimate_gpu
    from antsim.gpu.step import estimate_step
    from antsim.workloads.layers import read_layers_csv

    layers = read_layers_csv(golden.ROOT / golden.LAYERS_CSV)
    for result in (estimate_gpu("v100", layers), estimate_step("a100", layers, precision="fp16")):
        for r in result.records:  # in memory: the producer's key order, which a CSV's columns follow
            assert list(GpuLayerDetails.of(r).to_dict().items()) == list(r.details.items())


def test_producers_store_typed_records() -> None:
    fast = json.loads((golden.GOLDEN / "sim_cli_fast.json").read_text())
    from antsim.simulate import simulate_network
    from antsim.spec.arch import load_arch
    from antsim.workloads.layers import read_layers_csv

    layers = read_layers_csv(golden.ROOT / golden.LAYERS_CSV)
    result = simulate_network(load_arch(golden.ROOT / golden.ARCH / "ant.yaml"), layers, phases=("wgrad", "fprop"),
                              batch_sample=1, seed=3)
    details = result.records[0].details
    assert isinstance(details, AcceleratorLayerDetails) and details.batch_sample == 1
    assert details.passes == fast["records"][0]["details"]["passes"] and details.operand_densities is None
    echo = result.echo
    assert echo.phases == ("fprop", "wgrad") and echo.batch == 2 and echo.batch_sample == 1
    assert echo["phases"] == ["fprop", "wgrad"] and echo.network is None and echo.regime is None
    assert list(echo) == ["network", "layers", "batch", "phases", "densities", "sparsity", "tensors", "seed",
                          "fidelity", "batch_sample"]  # no regime, layers_csv or batch_source: not given
    assert pickle.loads(pickle.dumps(result)) == result  # worker processes send results back pickled
    measured = golden.ROOT / golden.DATA / "measured.csv"
    from antsim.measure.external import read_results_csv

    rows = read_results_csv(measured, layers).records
    assert all(isinstance(r.details, MeasuredLayerDetails) for r in rows)
    assert [MeasuredLayerDetails.of(r).algorithm for r in rows] == ["IMPLICIT_GEMM", "FFT", "WINOGRAD", "GEMM"]


def _record(name: str, index: int = 0) -> LayerResult:
    return _golden(name).records[index]


@pytest.mark.parametrize("record_type, name, key, value, message", [
    (AcceleratorLayerDetails, "sim_cli_fast.json", "passes", None, "record c1/fprop: details.passes: missing"),
    (AcceleratorLayerDetails, "sim_cli_fast.json", "passes", "3",
     "record c1/fprop: details.passes: expected an integer; got '3'"),
    (AcceleratorLayerDetails, "sim_cli_fast.json", "multiplier_utilization", True,
     "details.multiplier_utilization: expected a number; got True"),
    (AcceleratorLayerDetails, "sim_cli_fast.json", "notes", "one note", "details.notes: expected a list; got 'one"),
    (AcceleratorLayerDetails, "sim_cli_fast.json", "notes", ["ok", 2], "details.notes[1]: expected a string; got 2"),
    (AcceleratorLayerDetails, "sim_cli_fast.json", "pases", 1, "details: unknown key 'pases'; known: fidelity, seed"),
    (AcceleratorLayerDetails, "sim_cli_fast.json", "batch_sample", 1.5,
     "details.batch_sample: expected an integer or null; got 1.5"),
    (GpuLayerDetails, "gpu_cli.json", "M", 32.5, "record c1/fprop: details.M: expected an integer; got 32.5"),
    (GpuLayerDetails, "gpu_cli.json", "tensor_cores", "no", "details.tensor_cores: expected true or false; got 'no'"),
    (GpuLayerDetails, "gpu_cli.json", "algo", None, "details.algo: missing"),
    (GpuLayerDetails, "gpu_cli.json", "precision", "fp8",
     "details.precision: expected one of fp32, tf32, fp16, bf16, fp16_pseudo; got 'fp8'"),
    (GpuLayerDetails, "gpu_cli.json", "selection", "fastest", "details.selection: expected one of timed, heuristic;"),
    (GpuLayerDetails, "gpu_cli.json", "library", "cudnn9", "details.library: expected one of cudnn5, cudnn6,"),
    (AcceleratorLayerDetails, "sim_cli_fast.json", "fidelity", "slow",
     "details.fidelity: expected one of fast, exact; got 'slow'"),
    (GpuLayerDetails, "gpu_cli_step.json", "step_relu_forward_s", "5 us",
     "details.step_relu_forward_s: expected a number; got '5 us'"),
    (GpuLayerDetails, "gpu_cli_step.json", "step_kernels", {"name": "relu"}, "details.step_kernels: expected a list"),
    (GpuLayerDetails, "gpu_cli_step.json", "step_kernels", ["relu"], "details.step_kernels[0]: expected an object"),
    (MeasuredLayerDetails, "measured.json", "device", ["cpu"], "details.device: expected a number or a string"),
])
def test_a_missing_or_ill_typed_detail_is_refused_in_one_line(record_type: type[LayerDetails], name: str, key: str,
                                                              value: Any, message: str) -> None:
    record = _record(name)
    details = {k: v for k, v in record.details.items() if k != key}
    if value is not None:
        details[key] = value
    with pytest.raises(AntsimError) as caught:
        record_type.of(replace(record, details=details))
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_record_built_with_a_wrong_type_is_refused() -> None:
    good = AcceleratorLayerDetails.of(_record("sim_cli_fast.json"))
    with pytest.raises(AntsimError, match=r"^details.chunks: expected an integer; got '2'$"):
        replace(good, chunks="2")
    assert replace(good, operand_densities={"w": 0.5})["operand_densities"] == {"w": 0.5}
    assert "operand_densities" not in good and good["notes"] == list(good.notes)  # None: left out of the JSON


def _write_with(tmp_path: Path, name: str, **workload: Any) -> Path:
    data = json.loads((golden.GOLDEN / name).read_text())
    data["workload"].update(workload)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("key, value, message", [
    ("batch", "2", "workload.batch: expected an integer or null; got '2'"),
    ("batch_size", 2, "workload: unknown key 'batch_size'; known: network, layers_csv, batch,"),
    ("phases", ["fprop", 1], "workload.phases[1]: expected one of fprop, dgrad, wgrad; got 1"),
    ("phases", ["fprop", "bprop"], "workload.phases[1]: expected one of fprop, dgrad, wgrad; got 'bprop'"),
    ("fidelity", "slow", "workload.fidelity: expected one of fast, exact or null; got 'slow'"),
    ("timing", "rtl", "workload.timing: expected one of events, closed_form or null; got 'rtl'"),
    ("densities", 0.1, "workload.densities: expected an object or null; got 0.1"),
    ("seed", 1.0, "workload.seed: expected an integer or null; got 1.0"),
    ("densities", {"w": "0.1"}, "workload.densities.w: expected a number; got '0.1'"),
    ("layers", [3], "workload.layers[0]: expected an object; got 3"),
])
def test_an_ill_typed_workload_echo_is_refused_naming_the_file(tmp_path: Path, key: str, value: Any,
                                                               message: str) -> None:
    path = _write_with(tmp_path, "sim_cli_fast.json", **{key: value})
    with pytest.raises(AntsimError) as caught:
        NetworkResult.read_json(path)
    assert str(caught.value) == f"{path}: {message}" or str(caught.value).startswith(f"{path}: {message}")


def test_workload_echo_keeps_the_keys_given_in_their_order() -> None:
    echo = WorkloadEcho.of(network="resnet18", layers_csv=None, batch=4, phases=["fprop"], layers=[])
    assert echo.to_dict() == {"network": "resnet18", "layers_csv": None, "batch": 4, "phases": ["fprop"], "layers": []}
    assert "densities" not in echo and echo.densities is None and echo.get("layers_csv", "absent") is None
    more = echo.with_keys(batch=8, regime="swat")
    assert list(more) == ["network", "layers_csv", "batch", "phases", "layers", "regime"] and more["batch"] == 8
    assert echo == {"network": "resnet18", "layers_csv": None, "batch": 4, "phases": ["fprop"], "layers": []}
    assert NetworkResult("x", "gpu", (), workload={"batch": 1}).echo == WorkloadEcho.of(batch=1)


def test_totals_are_the_sums_of_the_records() -> None:
    result = _golden("sim_cli_fast.json")
    totals = result.totals
    assert isinstance(totals, Totals) and totals.cycles == sum(r.cycles or 0 for r in result.records)
    assert totals.time_s == math.fsum(r.time_s for r in result.records) and totals.area_mm2 == result.area_mm2
    assert totals.energy_j == pytest.approx(sum(r.energy_j or 0.0 for r in result.records), rel=1e-12)
    measured = _golden("measured.json").totals
    assert measured.cycles is None and measured.energy_j is None  # a record without energy: no total
    assert measured.to_dict() == json.loads((golden.GOLDEN / "measured.json").read_text())["totals"]
