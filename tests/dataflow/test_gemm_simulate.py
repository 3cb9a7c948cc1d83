"""GEMM layers end to end: simulate_layer / simulate_network, result kinds in JSON and CSV, the guard's view."""

from __future__ import annotations

import json

import numpy as np
import pytest
from dataflow_helpers import load_arch

from antsim.dataflow.gemm import conv_view, guard_layer
from antsim.guard import estimate_run
from antsim.results import NetworkResult
from antsim.simulate import simulate_layer, simulate_network
from antsim.sparsity.gemm import make_gemm_tensors
from antsim.workloads.gemm import Gemm, gemm_phase, reference
from antsim.workloads.layers import Layer

MIXED = [Layer("conv", N=2, C=3, K=8, H=6, W=6, R=3, S=3, stride=(1, 1), pad=(1, 1)),
         Gemm("fc", M=10, N=2, K=8 * 36, batch=2),
         Gemm("att", M=6, N=6, K=4, count=4, a="activations", batch=2, batch_dim="count")]
DENSITIES = {"w": 0.3, "a": 0.5, "g": 0.5, "attn": 0.5}


@pytest.mark.parametrize("design", ["scnn", "ant", "ant_oracle", "dense"])
def test_simulate_layer_output_and_kind(design: str) -> None:
    arch = load_arch(f"arch_configs/{design}.yaml")
    g = MIXED[2]
    t = make_gemm_tensors(g, DENSITIES, "swat", seed=3)
    for phase in ("fprop", "dgrad", "wgrad"):
        r = simulate_layer(arch, g, phase, t, fidelity="exact")
        np.testing.assert_allclose(r.output, reference(g, phase, t), atol=1e-9)
        assert r.kind == "gemm" and r.cycles > 0 and r.energy_j > 0
        assert r.details["tiling"]["gemm_mapping"] in ("scnn", "cartesian")
    if design == "dense":
        assert r.products.total == r.products.valid == g.macs


def test_network_records_carry_kind_through_json_and_csv(tmp_path) -> None:
    arch = load_arch("arch_configs/ant.yaml")
    result = simulate_network(arch, MIXED, densities=DENSITIES, seed=1)
    assert [r.kind for r in result.records] == ["conv"] * 3 + ["gemm"] * 6
    assert result.workload["batch"] == 2
    result.write_json(tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert "kind" not in data["records"][0] and data["records"][3]["kind"] == "gemm"
    assert [r.kind for r in NetworkResult.read_json(tmp_path / "r.json").records] == [r.kind for r in result.records]
    result.write_csv(tmp_path / "r.csv")
    lines = (tmp_path / "r.csv").read_text().splitlines()
    assert lines[0].startswith("name,kind,phase,") and lines[1].split(",")[1] == "conv"
    assert lines[4].split(",")[1] == "gemm"


def test_conv_only_results_are_written_as_before(tmp_path) -> None:
    """No ``kind`` key, no ``kind`` column and no ``mapping.gemm`` in the spec echo of a conv-only run."""
    result = simulate_network(load_arch("arch_configs/scnn.yaml"), MIXED[:1], densities=DENSITIES, seed=1)
    data = result.to_dict()
    assert all("kind" not in r for r in data["records"]) and "gemm" not in data["spec"]["mapping"]
    result.write_csv(tmp_path / "c.csv")
    assert "kind" not in (tmp_path / "c.csv").read_text().splitlines()[0].split(",")


def test_guard_sizes_a_gemm_as_its_conv_view() -> None:
    ant, scnn = load_arch("arch_configs/ant.yaml"), load_arch("arch_configs/scnn.yaml")
    g = MIXED[1]
    assert guard_layer(scnn, MIXED[0]) is MIXED[0]
    view = guard_layer(scnn, g)
    assert (view.N, view.C, view.K, view.H, view.W, view.R, view.S) == (1, g.K, g.M, g.N, 1, 1, 1)
    assert guard_layer(ant, g) == conv_view(g.name, gemm_phase(g, "fprop"), 1, "cartesian", 96)  # 288 = 3 x 96
    assert view.macs == g.macs == guard_layer(ant, g).macs
    estimate = estimate_run(ant, MIXED, ["fprop", "dgrad", "wgrad"], DENSITIES)
    assert estimate.peak_bytes > 0 and estimate.run_pe_steps > 0


@pytest.mark.slow  # builds a whole report with figures: ~25 s on the shared 2-core machine
def test_report_table_per_layer_kind(tmp_path) -> None:
    from antsim.report.build import build_report
    from antsim.report.compare import compare_results
    from antsim.report.tables import kind_rows

    results = [simulate_network(load_arch(f"arch_configs/{d}.yaml"), MIXED, densities=DENSITIES, seed=1)
               for d in ("scnn", "ant")]
    rows = kind_rows(compare_results(results))
    assert rows[0][:3] == ["design", "kind", "phase"] and len(rows) == 1 + 2 * 2 * 3
    ant_gemm = [r for r in rows[1:] if r[0] == "ant" and r[1] == "gemm"]
    record = [r for r in results[1].records if r.kind == "gemm" and r.phase == "fprop"]
    assert ant_gemm[0][3] == f"{sum(r.products.total for r in record):,}"
    out = build_report(compare_results(results), tmp_path / "rep")
    assert (out / "data" / "kinds.csv").is_file() and "Products per layer kind" in (out / "report.md").read_text()
    conv_only = [simulate_network(load_arch(f"arch_configs/{d}.yaml"), MIXED[:1], densities=DENSITIES, seed=1)
                 for d in ("scnn", "ant")]
    assert kind_rows(compare_results(conv_only)) == []
