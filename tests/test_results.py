from __future__ import annotations

import json

import pytest

from antsim.errors import AntsimError
from antsim.results import LayerResult, NetworkResult, ProductCounts, geomean


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
