"""``antsim simulate``: bad input exits 2 and writes nothing; the same seed gives the same bytes; CSV out; a
tensors file replaces generation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from antsim.cli import main
from antsim.simulate import simulate_network
from antsim.sparsity.generators import make_tensors
from antsim.sparsity.tensors import save_tensors
from antsim.spec.arch import load_arch
from antsim.workloads.layers import Layer

ROOT = Path(__file__).resolve().parents[2]
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
    (["--timing", "simpy"], "--timing: unknown 'simpy'; known: events, closed_form"),
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


def run_cli(args: list[str]) -> int:
    return main(["simulate", "--no-progress", *args])


def test_same_seed_gives_byte_identical_json(tmp_path, small_csv, capsys):
    outs = [tmp_path / f"r{i}.json" for i in range(3)]
    common = ["--arch", str(ARCH["ant"]), "--layers-csv", str(small_csv)]
    assert run_cli([*common, "--seed", "5", "--out", str(outs[0])]) == 0
    assert run_cli([*common, "--seed", "5", "--out", str(outs[1])]) == 0
    assert run_cli([*common, "--seed", "6", "--out", str(outs[2])]) == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()
    assert outs[0].read_bytes() != outs[2].read_bytes()
    stdout = capsys.readouterr().out
    assert "cycles" in stdout and "RCP" in stdout and "skipped" in stdout
    data = json.loads(outs[0].read_text())
    assert data["schema"] == "antsim.result/1" and data["backend"] == "accelerator" and data["design"] == "ant"
    assert [(r["layer"], r["phase"]) for r in data["records"]] == [
        (layer, phase) for layer in ("c1", "c2") for phase in ("fprop", "dgrad", "wgrad")]
    work = data["workload"]
    assert work["densities"] == {"w": 0.1, "a": 0.1, "g": 0.1} and work["sparsity"] == "swat"
    assert work["seed"] == 5 and work["fidelity"] == "fast" and work["network"] == "small"


def test_csv_out_flattens_records(tmp_path, small_csv):
    out = tmp_path / "r.csv"
    assert run_cli(["--arch", str(ARCH["scnn"]), "--layers-csv", str(small_csv), "--phases", "wgrad",
                    "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0].startswith("name,phase,time_s,cycles,energy_j") and len(lines) == 3


def test_tensors_file_overrides_generation(tmp_path, small_csv):
    from antsim.workloads.layers import read_layers_csv

    layers = read_layers_csv(small_csv)
    tensors = {layer.name: make_tensors(layer, 0.3, 0.2, 0.5, seed=i) for i, layer in enumerate(layers)}
    arch = load_arch(ARCH["scnn"])
    direct = simulate_network(arch, layers, tensors=tensors)
    file = tmp_path / "t.npz"
    save_tensors(file, tensors)
    out = tmp_path / "r.json"
    assert run_cli(["--arch", str(ARCH["scnn"]), "--layers-csv", str(small_csv), "--tensors", str(file),
                    "--out", str(out)]) == 0
    from_file = json.loads(out.read_text())
    assert [r["cycles"] for r in from_file["records"]] == [r.cycles for r in direct.records]
    assert from_file["workload"]["tensors"] == str(file) and from_file["workload"]["sparsity"] is None
