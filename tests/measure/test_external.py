"""read_results_csv: antsim-format and DeepBench CSVs joined to a workload by name or shape."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from antsim.errors import WorkloadError
from antsim.measure.external import read_deepbench_layers, read_results_csv
from antsim.results import LayerResult, NetworkResult
from antsim.workloads.layers import Layer

LAYERS = [
    Layer(name="conv1", N=2, C=3, K=8, H=8, W=8, R=3, S=3, stride=1, pad=1),
    Layer(name="conv2", N=2, C=8, K=16, H=8, W=8, R=3, S=3, stride=2, pad=1),
]
_SHAPE = ["N", "C", "K", "H", "W", "R", "S", "stride", "pad"]


def _write(path: Path, header: list[str], rows: list[list]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _shape(layer: Layer) -> list[int]:
    return [layer.N, layer.C, layer.K, layer.H, layer.W, layer.R, layer.S, layer.stride_h, layer.pad_h]


def _antsim_rows(names: list[str]) -> list[list]:
    rows = []
    for i, (name, layer) in enumerate(zip(names, LAYERS, strict=True)):
        for j, phase in enumerate(("fprop", "dgrad", "wgrad")):
            rows.append([name, phase, 1e-3 * (1 + i) + 1e-4 * j, 0.5 + i + 0.1 * j, "cpu", "TestCPU",
                         *_shape(layer)])
    return rows


HEADER = ["name", "phase", "time_s", "energy_j", "device", "device_name", *_SHAPE]


def test_join_by_name_keeps_times_energy_order_and_design(tmp_path: Path) -> None:
    path = _write(tmp_path / "m.csv", HEADER, _antsim_rows(["conv1", "conv2"])[::-1])  # file order reversed
    result = read_results_csv(path, LAYERS)
    assert result.backend == "measured" and result.design == "cpu:TestCPU"
    assert result.keys() == [(l.name, p) for l in LAYERS for p in ("fprop", "dgrad", "wgrad")]
    assert result.record("conv2", "dgrad").time_s == pytest.approx(2.1e-3)
    assert result.record("conv1", "wgrad").energy_j == pytest.approx(0.7)
    assert result.record("conv1", "fprop").details["device"] == "cpu"
    assert result.meta["device_name"] == "TestCPU"
    expected_total = sum(1e-3 * (1 + i) + 1e-4 * j for i in range(2) for j in range(3))
    assert result.totals["time_s"] == pytest.approx(expected_total)


def test_join_by_shape_when_names_differ(tmp_path: Path) -> None:
    path = _write(tmp_path / "m.csv", HEADER, _antsim_rows(["other_a", "other_b"]))
    result = read_results_csv(path, LAYERS, design="x", backend="external")
    assert result.design == "x" and result.backend == "external"
    assert result.record("conv2", "fprop").time_s == pytest.approx(2e-3)
    assert result.record("conv1", "fprop").time_s == pytest.approx(1e-3)


def test_missing_layer_names_the_first_missing_one(tmp_path: Path) -> None:
    rows = [r for r in _antsim_rows(["conv1", "zzz"])]
    rows = [r[:6] + [99] + r[7:] if r[0] == "zzz" else r for r in rows]  # zzz: another C, so no shape match
    path = _write(tmp_path / "m.csv", HEADER, rows)
    with pytest.raises(WorkloadError) as info:
        read_results_csv(path, LAYERS)
    message = str(info.value)
    assert "'conv2'" in message and "not found" in message and str(path) in message and "\n" not in message


def test_without_shape_columns_names_must_match(tmp_path: Path) -> None:
    path = _write(tmp_path / "m.csv", ["name", "phase", "time_s"],
                  [["conv1", p, 1.0] for p in ("fprop", "dgrad", "wgrad")])
    with pytest.raises(WorkloadError, match="'conv2'.*not found by name"):
        read_results_csv(path, LAYERS)
    only_first = read_results_csv(path, LAYERS[:1])
    assert [r.time_s for r in only_first.records] == [1.0, 1.0, 1.0]


def test_name_match_with_other_batch_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "m.csv", HEADER, _antsim_rows(["conv1", "conv2"]))
    with pytest.raises(WorkloadError, match="'conv1'.*differs"):
        read_results_csv(path, [l.with_batch(4) for l in LAYERS])


def test_missing_phase_and_bad_values_are_errors(tmp_path: Path) -> None:
    rows = [r for r in _antsim_rows(["conv1", "conv2"]) if not (r[0] == "conv2" and r[1] == "wgrad")]
    with pytest.raises(WorkloadError, match="'conv2' has no wgrad"):
        read_results_csv(_write(tmp_path / "a.csv", HEADER, rows), LAYERS)
    # Asking only for the phases present is fine.
    assert len(read_results_csv(tmp_path / "a.csv", LAYERS, phases=("fprop", "dgrad")).records) == 4
    bad = _antsim_rows(["conv1", "conv2"])
    bad[3][2] = "fast"
    with pytest.raises(WorkloadError, match="line 5: column time_s"):
        read_results_csv(_write(tmp_path / "b.csv", HEADER, bad), LAYERS)
    bad[3][2], bad[3][1] = 1.0, "backward"
    with pytest.raises(WorkloadError, match="line 5: column phase"):
        read_results_csv(_write(tmp_path / "c.csv", HEADER, bad), LAYERS)
    with pytest.raises(WorkloadError, match="lacks column 'time_s'"):
        read_results_csv(_write(tmp_path / "d.csv", ["name", "phase"], [["conv1", "fprop"]]), LAYERS)
    with pytest.raises(WorkloadError, match="not found"):
        read_results_csv(tmp_path / "missing.csv", LAYERS)


def test_network_result_csv_round_trips(tmp_path: Path) -> None:
    records = [LayerResult(layer=l.name, phase=p, time_s=0.25 * (i + 1), energy_j=0.5)
               for i, l in enumerate(LAYERS) for p in ("fprop", "wgrad")]
    original = NetworkResult(design="d", backend="gpu", records=tuple(records))
    original.write_csv(tmp_path / "r.csv")
    back = read_results_csv(tmp_path / "r.csv", LAYERS)
    assert back.keys() == original.keys()
    assert [r.time_s for r in back.records] == [r.time_s for r in original.records]
    assert [r.energy_j for r in back.records] == [0.5] * 4


DB_HEADER = ["gpu", "precision", "source", "W", "H", "C", "N", "K", "R", "S", "pad_h", "pad_w",
             "stride_h", "stride_w", "fwd_ms", "dgrad_ms", "wgrad_ms", "fwd_algo"]


def test_deepbench_three_phases_by_shape_and_precision(tmp_path: Path) -> None:
    rows = [
        ["P100", "fp32", "Vision", 8, 8, 3, 2, 8, 3, 3, 1, 1, 1, 1, 0.5, "", 0.7, "IMPLICIT_GEMM"],
        ["P100", "fp32", "Vision", 8, 8, 8, 2, 16, 3, 3, 1, 1, 2, 2, 1.5, 1.6, 1.7, "WINOGRAD"],
        ["P100", "fp16_pseudo", "Vision", 8, 8, 8, 2, 16, 3, 3, 1, 1, 2, 2, 9.5, 9.6, 9.7, "FFT"],
    ]
    path = _write(tmp_path / "db.csv", DB_HEADER, rows)
    result = read_results_csv(path, LAYERS)
    assert result.design == "P100" and result.meta["precision"] == "fp32"
    # conv1 has no dgrad in DeepBench (input layer): that record is absent, the others are in ms → s.
    assert result.keys() == [("conv1", "fprop"), ("conv1", "wgrad"),
                             ("conv2", "fprop"), ("conv2", "dgrad"), ("conv2", "wgrad")]
    assert result.record("conv2", "dgrad").time_s == pytest.approx(1.6e-3)
    assert result.record("conv2", "fprop").details["algorithm"] == "WINOGRAD"
    half = read_results_csv(path, LAYERS[1:], precision="fp16_pseudo")
    assert half.record("conv2", "wgrad").time_s == pytest.approx(9.7e-3)
    with pytest.raises(WorkloadError, match="'conv1'"):
        read_results_csv(path, LAYERS, precision="fp16_pseudo")
    with pytest.raises(WorkloadError, match="column precision: no rows of 'int8'; the file has fp16_pseudo, fp32"):
        read_results_csv(path, LAYERS, precision="int8")
    assert [(l.name, l.C) for l in read_deepbench_layers(path)] == [("Vision-2", 3), ("Vision-3", 8)]


# The repository's verbatim copy of DeepBench's TITAN Xp sheet (tests/data/deepbench/README.md).
DEEPBENCH_TITANXP = Path(__file__).resolve().parents[1] / "data" / "deepbench" / "deepbench_conv_TitanXp.csv"


def test_real_deepbench_file_loads() -> None:
    path = DEEPBENCH_TITANXP
    layers = read_deepbench_layers(path)
    result = read_results_csv(path, layers)
    with path.open() as handle:
        first = next(csv.DictReader(handle))
    assert result.record(layers[0].name, "fprop").time_s == pytest.approx(float(first["fwd_ms"]) * 1e-3)
    assert all(r.time_s > 0 for r in result.records)
    assert len(result.records) >= 2 * len(layers)


def test_compare_cli_rejects_a_csv_missing_a_layer_in_one_line(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from antsim.cli import main

    model = NetworkResult(design="model", backend="gpu", workload={"layers": [l.to_dict() for l in LAYERS],
                                                                   "batch": 2},
                          records=tuple(LayerResult(layer=l.name, phase=p, time_s=1e-3)
                                        for l in LAYERS for p in ("fprop", "dgrad", "wgrad")))
    model.write_json(tmp_path / "model.json")
    rows = [r for r in _antsim_rows(["conv1", "conv2"]) if r[0] == "conv1"]
    path = _write(tmp_path / "m.csv", ["name", "phase", "time_s"], [r[:3] for r in rows])
    assert main(["compare", str(tmp_path / "model.json"), str(path), "--out", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'conv2'" in err and "m.csv" in err
    assert not (tmp_path / "c.json").exists()
