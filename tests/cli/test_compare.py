"""``antsim compare``: result files to JSON or CSV; with ``--arch … --gpu …`` it runs the simulator and the GPU
model in-process on a tiny workload."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from report_factories import five_designs, write_result_files

from antsim.cli import main
from antsim.results import NetworkResult

LAYERS_CSV = "name,N,C,K,H,W,R,S,stride,pad\nc1,1,8,8,8,8,3,3,1,1\nc2,1,8,16,8,8,3,3,2,1\n"
ARCHS = ("arch_configs/scnn.yaml", "arch_configs/ant.yaml")


def _layers(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.csv"
    path.write_text(LAYERS_CSV)
    return path


def test_compare_runs_designs_and_writes_a_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    layers = _layers(tmp_path)
    out = tmp_path / "reports" / "tiny"
    status = main(["compare", "--arch", *ARCHS, "--gpu", "v100", "--layers-csv", str(layers), "--batch", "2",
                   "--density-w", "0.3", "--density-a", "0.4", "--density-g", "0.5", "--seed", "3",
                   "--no-progress", "--out", str(tmp_path / "cmp.json"), "--report-out", str(out)])
    assert status == 0
    stdout = capsys.readouterr().out
    assert "baseline scnn" in stdout and "v100" in stdout
    data = json.loads((tmp_path / "cmp.json").read_text())
    assert [d["design"] for d in data["designs"]] == ["scnn", "ant", "v100"]
    assert data["workload"]["densities"]["g"] == 0.5 and data["workload"]["batch"] == 2
    ant = NetworkResult.read_json(out / "results" / "ant.json")
    scnn = NetworkResult.read_json(out / "results" / "scnn.json")
    assert ant.workload["seed"] == 3 and ant.workload["network"] == "tiny"
    assert len(ant.records) == 6 and all(r.products is not None for r in ant.records)
    network = next(d for d in data["designs"] if d["design"] == "ant")
    assert network["speedup"] == pytest.approx(scnn.totals["time_s"] / ant.totals["time_s"])
    assert (out / "index.html").is_file()


def test_parallel_and_serial_simulation_give_identical_results(tmp_path: Path) -> None:
    layers = _layers(tmp_path)
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"cmp{jobs}.json"
        assert main(["compare", "--arch", *ARCHS, "--layers-csv", str(layers), "--jobs", jobs, "--no-progress",
                     "--out", str(out)]) == 0
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


def test_compare_rejects_a_result_file_of_another_workload_before_simulating(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    layers = _layers(tmp_path)
    batch4 = tmp_path / "ant_batch4.json"
    assert main(["simulate", "--arch", ARCHS[1], "--layers-csv", str(layers), "--batch", "4", "--no-progress",
                 "--out", str(batch4)]) == 0
    capsys.readouterr()
    status = main(["compare", str(batch4), "--arch", ARCHS[0], "--layers-csv", str(layers), "--no-progress",
                   "--out", str(tmp_path / "mixed.json")])
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("antsim compare: error: ") and len(err.splitlines()) == 1
    assert f"{batch4}: workload.layers: layer 'c1' is N4" in err and "simulating" not in err
    assert not (tmp_path / "mixed.json").exists()


def test_compare_rejects_an_unknown_gpu_before_simulating(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["compare", "--arch", ARCHS[0], "--gpu", "v999", "--layers-csv", str(_layers(tmp_path)),
                   "--out", str(tmp_path / "x.json")])
    assert status == 2
    err = capsys.readouterr().err
    assert "v999" in err and "unknown GPU" in err and "simulating" not in err
    assert not (tmp_path / "x.json").exists()


def test_compare_rejects_structured_sparsity_on_a_gpu_without_it(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["compare", "--arch", ARCHS[0], "--gpu", "a100", "v100", "--gpu-precision", "fp16",
                   "--gpu-structured", "2:4", "--layers-csv", str(_layers(tmp_path)),
                   "--out", str(tmp_path / "x.json")])
    assert status == 2
    err = capsys.readouterr().err
    assert "gpu v100: 2:4 structured sparsity needs sparse tensor cores" in err and "simulating" not in err
    assert not (tmp_path / "x.json").exists()


def test_compare_models_each_gpu_at_each_precision(tmp_path: Path) -> None:
    out = tmp_path / "cmp.json"
    assert main(["compare", "--gpu", "v100", "h100", "--gpu-precision", "fp32", "fp16", "--layers-csv",
                 str(_layers(tmp_path)), "--batch", "8", "--no-progress", "--out", str(out)]) == 0
    designs = {d["design"]: d for d in json.loads(out.read_text())["designs"]}
    assert list(designs) == ["v100", "v100-fp16", "h100", "h100-fp16"]
    assert designs["v100-fp16"]["speedup"] > 1  # tensor cores over v100's fp32 lanes (the baseline)


def test_compare_passes_the_tensor_layout_to_the_gpu_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # NCHW tensors: each tensor-core conv also pays cuDNN's transposes (antsim.gpu.step.layout_kernels), so the
    # step takes longer by their time; the comparison's source names the flag that reproduces it
    times = {}
    for layout in ("nchw", "nhwc"):
        out = tmp_path / f"{layout}.json"
        assert main(["compare", "--gpu", "v100", "--gpu-precision", "fp16", "--gpu-step", "--gpu-layout", layout,
                     "--layers-csv", str(_layers(tmp_path)), "--batch", "8", "--no-progress", "--out", str(out)]) == 0
        design = json.loads(out.read_text())["designs"][0]
        assert design["design"] == "v100-fp16-step" and f"--gpu-layout {layout}" in design["source"]
        times[layout] = design["time_s"]
    assert times["nchw"] > times["nhwc"]
    out = tmp_path / "xla.json"  # the step's fusion goes through the same way
    assert main(["compare", "--gpu", "v100", "--gpu-precision", "fp16", "--gpu-step", "--gpu-fusion", "xla",
                 "--layers-csv", str(_layers(tmp_path)), "--batch", "8", "--no-progress", "--out", str(out)]) == 0
    design = json.loads(out.read_text())["designs"][0]
    assert "--gpu-fusion xla" in design["source"] and design["time_s"] < times["nhwc"]  # nhwc + eager: the defaults
    capsys.readouterr()
    status = main(["compare", "--gpu", "v100", "--gpu-layout", "nchw", "--layers-csv", str(_layers(tmp_path)),
                   "--out", str(tmp_path / "x.json")])
    err = capsys.readouterr().err.strip()
    assert status == 2 and "--gpu-layout goes with --gpu-step" in err and "\n" not in err
    assert not (tmp_path / "x.json").exists()


def test_gpu_options_without_a_gpu_are_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["compare", "--arch", ARCHS[0], "--gpu-precision", "fp16", "--layers-csv", str(_layers(tmp_path)),
                   "--out", str(tmp_path / "x.json")])
    err = capsys.readouterr().err
    assert status == 2 and "--gpu-precision" in err and "need --gpu NAME" in err


def test_compare_command_writes_json_or_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_result_files(tmp_path, five_designs())
    assert main(["compare", *paths, "--baseline", "v100", "--out", str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    assert "baseline v100" in out and "ant_oracle" in out
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["baseline"] == "v100" and len(data["designs"]) == 5
    assert main(["compare", *paths, "--out", str(tmp_path / "c.csv")]) == 0
    rows = list(csv.DictReader((tmp_path / "c.csv").open()))
    assert len(rows) == len(data["rows"]) and rows[0]["design"] == "scnn"
    assert main(["compare", *paths, "--out", str(tmp_path / "c.txt")]) == 2
    assert main(["compare", *paths, "--baseline", "dcnn", "--out", str(tmp_path / "d.json")]) == 2
    assert not (tmp_path / "d.json").exists() and not (tmp_path / "c.txt").exists()
