"""End-to-end accelerator simulation: API, CLI, determinism, fidelities and SCNN/ANT sanity checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from antsim.cli import main
from antsim.errors import AntsimError, WorkloadError
from antsim.simulate import check_densities, layer_seed, simulate_network
from antsim.sparsity.generators import make_tensors
from antsim.sparsity.tensors import save_tensors
from antsim.spec.arch import load_arch
from antsim.workloads.layers import Layer

ROOT = Path(__file__).resolve().parents[1]
ARCH = {name: ROOT / "arch_configs" / f"{name}.yaml" for name in ("scnn", "ant", "ant_oracle", "dense")}


def write_layers_csv(path: Path, rows: list[str]) -> Path:
    path.write_text("name,N,C,K,H,W,R,S,stride,pad\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture
def small_csv(tmp_path: Path) -> Path:
    return write_layers_csv(tmp_path / "small.csv", ["c1,1,4,8,8,8,3,3,1,1", "c2,1,8,8,8,8,3,3,2,1"])


@pytest.mark.parametrize("flags, message", [
    (["--density-w", "1.5"], "--density-w"),
    (["--density-g", "-0.1"], "--density-g"),
    (["--sparsity", "gausian"], "gausian"),
    (["--phases", "fprop,backward"], "backward"),
])
def test_cli_bad_input_exits_2_and_writes_nothing(tmp_path, small_csv, capsys, flags, message):
    out = tmp_path / "r.json"
    code = main(["simulate", "--arch", str(ARCH["scnn"]), "--layers-csv", str(small_csv), "--out", str(out),
                 *flags])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_cli_missing_arch_file_exits_2(tmp_path, small_csv, capsys):
    out = tmp_path / "r.json"
    code = main(["simulate", "--arch", str(tmp_path / "nope.yaml"), "--layers-csv", str(small_csv),
                 "--out", str(out)])
    assert code == 2 and "nope.yaml" in capsys.readouterr().err
    assert not out.exists()


def test_cli_tensors_file_lacking_a_layer_exits_2(tmp_path, small_csv, capsys):
    layer = Layer(name="c1", N=1, C=4, K=8, H=8, W=8, R=3, S=3, stride=1, pad=1)
    tensors_file = tmp_path / "t.npz"
    save_tensors(tensors_file, {"c1": make_tensors(layer, seed=3)})
    out = tmp_path / "r.json"
    code = main(["simulate", "--arch", str(ARCH["scnn"]), "--layers-csv", str(small_csv),
                 "--tensors", str(tensors_file), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "c2" in err and "t.npz" in err
    assert not out.exists()


def test_density_checks_name_the_key():
    assert check_densities(None) == {"w": 0.1, "a": 0.1, "g": 0.1}
    with pytest.raises(AntsimError, match="densities.g"):
        check_densities({"g": 2.0})
    with pytest.raises(AntsimError, match="'x'"):
        check_densities({"x": 0.5})


def test_layer_seeds_are_deterministic_and_distinct():
    seeds = [layer_seed(0, i) for i in range(20)]
    assert seeds == [layer_seed(0, i) for i in range(20)]
    assert len(set(seeds)) == 20 and layer_seed(1, 0) != seeds[0]


def test_network_tensors_mapping_must_cover_every_layer():
    layer = Layer(name="a", N=1, C=2, K=2, H=4, W=4, R=3, S=3, stride=1, pad=1)
    with pytest.raises(WorkloadError, match="'a'"):
        simulate_network(load_arch(ARCH["scnn"]), [layer], tensors={})


def test_arch_configs_differ_only_where_documented():
    scnn, ant, oracle, dense = (load_arch(ARCH[n]).to_dict() for n in ("scnn", "ant", "ant_oracle", "dense"))
    for other in (ant, oracle):
        assert {k: v for k, v in other.items() if k not in ("name", "description", "anticipation")} == \
            {k: v for k, v in scnn.items() if k not in ("name", "description", "anticipation")}
    assert oracle["anticipation"]["policy"] == "oracle" and ant["anticipation"]["policy"] == "ant"
    assert dense["sparsity_support"] is False and dense["compression"]["format"] == "dense"
    assert dense["pe_array"] == scnn["pe_array"]
