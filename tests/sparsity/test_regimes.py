"""Named sparsity regimes: the densities a run uses are the regime's, and the result says so."""

from __future__ import annotations

import json

import numpy as np
import pytest

from antsim.cli import main
from antsim.sparsity.regimes import REGIMES, regime


def _layers_csv(tmp_path):  # type: ignore[no-untyped-def]
    path = tmp_path / "l.csv"
    path.write_text("name,N,C,K,H,W,R,S,stride,pad\nc1,2,8,8,8,8,3,3,1,1\n")
    return path


@pytest.mark.parametrize("name", list(REGIMES))
def test_a_regime_sets_the_densities_and_generator_the_run_records(tmp_path, name: str) -> None:
    out = tmp_path / "r.json"
    assert main(["simulate", "--arch", "arch_configs/scnn.yaml", "--layers-csv", str(_layers_csv(tmp_path)),
                 "--regime", name, "--no-progress", "--out", str(out)]) == 0
    workload = json.loads(out.read_text())["workload"]
    expected = regime(name)
    assert workload["regime"] == name and workload["sparsity"] == expected.sparsity
    for key, value in expected.densities.items():
        assert workload["densities"][key] == value, key


def test_swat_regime_operands_have_its_densities() -> None:
    from antsim.sparsity.generators import make_tensors
    from antsim.workloads.layers import Layer

    layer = Layer(name="c", N=2, C=16, K=16, H=8, W=8, R=3, S=3, stride=1, pad=1)
    d = regime("swat").densities
    t = make_tensors(layer, d["w"], d["a"], d["g"], model="swat", seed=0, density_a_saved=d["a_saved"])
    density = lambda a: np.count_nonzero(a) / a.size  # noqa: E731
    assert density(t.weights) == pytest.approx(0.1, abs=0.01)
    assert density(t.activations) == pytest.approx(0.5, abs=0.01)
    assert density(t.wgrad_activations) == pytest.approx(0.1, abs=0.01)
    assert density(t.grad_output) == 1.0


def test_a_density_flag_overrides_its_regime_value_and_unknown_regimes_are_refused(tmp_path, capsys) -> None:
    out = tmp_path / "r.json"
    assert main(["simulate", "--arch", "arch_configs/scnn.yaml", "--layers-csv", str(_layers_csv(tmp_path)),
                 "--regime", "swat", "--density-g", "0.3", "--no-progress", "--out", str(out)]) == 0
    densities = json.loads(out.read_text())["workload"]["densities"]
    assert densities["g"] == 0.3 and densities["w"] == 0.1
    assert main(["simulate", "--arch", "arch_configs/scnn.yaml", "--layers-csv", str(_layers_csv(tmp_path)),
                 "--regime", "dense", "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "regime" in err[0] and "'dense'" in err[0]
    assert not (tmp_path / "x.json").exists()
