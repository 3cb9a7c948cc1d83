"""A sweep over a layers CSV with GEMM rows (a conv network's FC head, an attention product): both
evaluators run it, and a simulator trial is what `antsim simulate` gives on the exported arch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from sweep_helpers import REPO

from antsim.cli import main
from antsim.workloads.gemm import Gemm
from antsim.workloads.layers import Layer, write_layers_csv

LAYERS = [Layer(name="conv", N=2, C=8, K=16, H=8, W=8, R=3, S=3, stride=1, pad=1),
          Gemm(name="fc", M=10, N=2, K=64, a="weights", batch=2),
          Gemm(name="scores", M=8, N=8, K=4, count=4, a="activations", batch=2, batch_dim="count")]


def _spec(folder: Path, evaluator: dict) -> Path:
    layers_csv = folder / "layers.csv"
    write_layers_csv(LAYERS, layers_csv)
    spec = yaml.safe_load((REPO / "sweeps" / "smoke.yaml").read_text())
    spec["base_arch"] = str(REPO / "arch_configs" / "ant.yaml")
    spec["workload"] = {"layers_csv": str(layers_csv), "phases": ["fprop", "dgrad", "wgrad"],
                        "densities": {"w": 0.2, "a": 0.3, "g": 0.4}, "sparsity": "uniform"}
    spec.update(evaluator=evaluator, n_trials=3, constraints={})
    path = folder / "gemm.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.mark.parametrize("evaluator", ["analytic", "simulator"])
def test_gemm_rows_are_evaluated_not_failed(tmp_path: Path, evaluator: str) -> None:
    out = tmp_path / "out"
    assert main(["sweep", str(_spec(tmp_path, {"name": evaluator})), "--export", str(out), "--no-figures"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failed"] == 0 and summary["finished"] == 3
    assert [layer.get("kind", "conv") for layer in summary["workload"]["layers"]] == ["conv", "gemm", "gemm"]


def test_a_simulator_trial_reruns_with_antsim_simulate(tmp_path: Path) -> None:
    out = tmp_path / "out"
    spec = _spec(tmp_path, {"name": "simulator"})
    assert main(["sweep", str(spec), "--export", str(out), "--no-figures"]) == 0
    point = json.loads((out / "pareto.json").read_text())["points"][0]
    result = tmp_path / "rerun.json"
    assert main(["simulate", "--arch", str(out / point["arch"]), "--layers-csv", str(tmp_path / "layers.csv"),
                 "--density-w", "0.2", "--density-a", "0.3", "--density-g", "0.4", "--sparsity", "uniform",
                 "--seed", "0", "--out", str(result), "--no-progress"]) == 0
    totals = json.loads(result.read_text())["totals"]
    assert {k: totals[k] for k in ("time_s", "energy_j", "area_mm2")} == point["objectives"]
