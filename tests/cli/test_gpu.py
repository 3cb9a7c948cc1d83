"""``antsim gpu`` through ``antsim.cli.main``: results, --check, and one-line user errors (exit 2)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from antsim.cli import main
from antsim.gpu import load_gpu
from antsim.gpu.check import check_measured, observations, padded_channels
from antsim.measure.deepbench import read_deepbench_csv
from antsim.workloads.layers import Layer

REPO = Path(__file__).resolve().parents[2]
LAYERS_CSV = "name,N,C,K,H,W,R,S,stride,pad\nc1,1,3,16,32,32,3,3,1,1\nc2,1,16,32,32,32,3,3,2,1\n"


@pytest.fixture
def layers_csv(tmp_path: Path) -> Path:
    path = tmp_path / "layers.csv"
    path.write_text(LAYERS_CSV)
    return path


def test_json_result_and_summary(tmp_path: Path, layers_csv: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "r.json"
    code = main(["gpu", "--gpu", "h100", "--layers-csv", str(layers_csv), "--batch", "16", "--precision", "bf16",
                 "--out", str(out), "--no-progress"])
    assert code == 0
    data = json.loads(out.read_text())
    assert data["schema"] == "antsim.result/1" and data["backend"] == "gpu" and data["design"] == "h100-bf16"
    assert data["workload"]["batch"] == 16 and data["workload"]["network"] == "layers"
    assert [(r["layer"], r["phase"]) for r in data["records"]] == [
        (l, p) for l in ("c1", "c2") for p in ("fprop", "dgrad", "wgrad")]
    assert data["meta"]["precision"] == "bf16"
    stdout = capsys.readouterr().out
    assert "h100-bf16: 6 (layer, phase) records at bf16" in stdout and "wrote" in stdout


def test_csv_result_has_one_row_per_layer_phase_with_gemm_shape(tmp_path: Path, layers_csv: Path) -> None:
    out = tmp_path / "r.csv"
    # heuristic selection keeps the GEMM algorithms for a C = 3 layer (timed may pick Winograd, whose GEMM is
    # (tiles, K, C) per transform point)
    assert main(["gpu", "--gpu", "p100", "--layers-csv", str(layers_csv), "--phases", "wgrad,fprop",
                 "--selection", "heuristic", "--out", str(out), "--no-progress"]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [(r["name"], r["phase"]) for r in rows] == [("c1", "fprop"), ("c1", "wgrad"), ("c2", "fprop"),
                                                       ("c2", "wgrad")]
    first = rows[0]  # fprop of c1: (N·P·Q, K, C·R·S) = (1024, 16, 27)
    assert (first["M"], first["N"], first["K"]) == ("1024", "16", "27")
    assert float(first["time_s"]) > 0 and float(first["energy_j"]) > 0


def test_check_against_deepbench(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "errors.csv"
    db = REPO / "tests" / "data" / "deepbench" / "deepbench_conv_TitanXp.csv"
    assert main(["gpu", "--gpu", "titanxp", "--check", str(db), "--out", str(out), "--worst", "3"]) == 0
    stdout = capsys.readouterr().out
    assert "exp(mean |ln(pred/meas)|) - 1" in stdout and stdout.count("\n  ") == 3
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 94 * 3
    assert all(abs(float(r["ratio"]) - float(r["predicted_s"]) / float(r["measured_s"])) < 1e-3 * float(r["ratio"])
               for r in rows)


def test_check_generic_csv_joined_by_layer_name(tmp_path: Path, layers_csv: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    measured = tmp_path / "m.csv"
    measured.write_text("name,phase,time_s\nc1,fprop,2e-5\nc2,fprop,4e-5\n")
    assert main(["gpu", "--gpu", "p100", "--check", str(measured), "--layers-csv", str(layers_csv),
                 "--phases", "fprop"]) == 0
    stdout = capsys.readouterr().out
    assert "c1 fprop: measured 0.020 ms" in stdout and "c2 fprop: measured 0.040 ms" in stdout
    assert main(["gpu", "--gpu", "p100", "--check", str(measured), "--layers-csv", str(layers_csv),
                 "--phases", "fprop", "--rows-precision", "fp16_pseudo"]) == 2  # no precision column to read
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--rows-precision fp16_pseudo: only a DeepBench CSV" in err


def test_check_floor_finds_the_plan_that_matches_a_measurement(tmp_path: Path, layers_csv: Path,
                                                                capsys: pytest.CaptureFixture) -> None:
    from antsim.gpu.estimate import layer_plans
    from antsim.workloads.layers import read_layers_csv

    lines = ["name,phase,time_s"]
    for layer in read_layers_csv(layers_csv):  # each measured as the model's slowest plan for it
        slowest = max(p.time_s for p, _ in layer_plans(load_gpu("p100"), layer, "wgrad"))
        lines.append(f"{layer.name},wgrad,{slowest!r}")
    measured = tmp_path / "m.csv"
    measured.write_text("\n".join(lines) + "\n")
    assert main(["gpu", "--gpu", "p100", "--check", str(measured), "--layers-csv", str(layers_csv),
                 "--phases", "wgrad", "--floor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    model = next(line for line in lines if line.startswith("wgrad"))
    floor = lines[lines.index(next(line for line in lines if line.startswith("plan-space floor"))) + 1]
    assert float(model.split()[-2].rstrip("%")) > 10  # the model keeps a faster plan
    assert floor.split() == ["wgrad", "-", "0.0%"]


def _bad_spec(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    data = yaml.safe_load((REPO / "arch_configs" / "gpus" / "a100.yaml").read_text())
    edit(data)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda d: d["peak_tflops"].pop("fp32"), "peak_tflops.fp32: required key is missing"),
    (lambda d: d["l2"].__setitem__("bandwidth_gbs", -1.0), "l2.bandwidth_gbs: Input should be greater than 0"),
])
def test_bad_gpu_spec_exits_2_with_one_line(tmp_path: Path, layers_csv: Path, capsys: pytest.CaptureFixture,
                                            edit, expected: str) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "r.json"
    code = main(["gpu", "--gpu", str(_bad_spec(tmp_path, edit)), "--layers-csv", str(layers_csv), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and expected in err and "bad.yaml" in err and "\n" not in err and not out.exists()


@pytest.mark.parametrize(("args", "expected"), [
    (["--gpu", "p100", "--precision", "bf16"], "gpu p100: precision 'bf16' not available"),
    (["--gpu", "v100", "--precision", "fp8"], "precision: unknown 'fp8'"),
    (["--gpu", "rtx9090"], "rtx9090: unknown GPU; known:"),
    (["--gpu", "v100", "--precision", "fp16", "--structured", "2:4"], "gpu v100: 2:4 structured sparsity needs"),
    (["--gpu", "a100", "--structured", "2:4"], "precision 'fp32' runs on the SIMT lanes"),
])
def test_user_errors_exit_2(tmp_path: Path, layers_csv: Path, capsys: pytest.CaptureFixture, args: list,
                            expected: str) -> None:
    out = tmp_path / "r.json"
    code = main(["gpu", *args, "--layers-csv", str(layers_csv), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and expected in err and err.count("\n") == 0 and not out.exists()


def test_out_suffix_and_missing_measurement_file_are_user_errors(tmp_path: Path, layers_csv: Path,
                                                                 capsys: pytest.CaptureFixture) -> None:
    assert main(["gpu", "--gpu", "p100", "--layers-csv", str(layers_csv), "--out", str(tmp_path / "r.txt")]) == 2
    assert "--out" in capsys.readouterr().err
    assert main(["gpu", "--gpu", "p100", "--check", str(tmp_path / "none.csv")]) == 2
    assert "measurement CSV not found" in capsys.readouterr().err


def test_structured_sparsity_names_the_design_and_speeds_fprop(tmp_path: Path, layers_csv: Path) -> None:
    dense, sparse = tmp_path / "d.json", tmp_path / "s.json"
    common = ["gpu", "--gpu", "a100", "--precision", "fp16", "--layers-csv", str(layers_csv), "--batch", "64",
              "--no-progress", "--out"]
    assert main([*common, str(dense)]) == 0 and main([*common, str(sparse), "--structured", "2:4"]) == 0
    d, s = json.loads(dense.read_text()), json.loads(sparse.read_text())
    assert s["design"] == "a100-fp16-2:4" and d["design"] == "a100-fp16"
    assert s["meta"]["structured"] == "2:4" and d["meta"]["structured"] is None
    time = {(r["layer"], r["phase"]): r["time_s"] for r in d["records"]}
    for r in s["records"]:
        assert r["time_s"] <= time[r["layer"], r["phase"]]
        # equal for wgrad (dense) and where no 2:4 tensor-core GEMM ran (c1: C = 3 is no multiple of 8);
        # where it ran, faster unless the main loop is bound by the gather's integer issue (c2: N = 32)
        sparse_ran = r["details"]["structured"] == "2:4"
        if not sparse_ran:
            assert r["time_s"] == time[r["layer"], r["phase"]], r["layer"]
        assert sparse_ran == (r["phase"] != "wgrad" and r["layer"] != "c1")


def test_floor_without_check_and_structured_check_on_a_gpu_without_it_exit_2(
        tmp_path: Path, layers_csv: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["gpu", "--gpu", "p100", "--layers-csv", str(layers_csv), "--floor",
                 "--out", str(tmp_path / "r.json")]) == 2
    assert "--floor goes with --check" in capsys.readouterr().err
    db = REPO / "tests" / "data" / "deepbench" / "deepbench_conv_P100.csv"
    assert main(["gpu", "--gpu", "p100", "--check", str(db), "--structured", "2:4"]) == 2
    assert "needs sparse tensor cores" in capsys.readouterr().err
    garbled = tmp_path / "garbled.csv"
    garbled.write_bytes(b"\xff\xfe\x00bad")
    assert main(["gpu", "--gpu", "p100", "--check", str(garbled)]) == 2
    err = capsys.readouterr().err
    assert "not a readable CSV" in err and err.count("\n") == 1


def test_check_pads_channels_as_the_harness_did(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """``--pad-channels 8`` predicts the C, K-padded layers DeepBench's conv_bench timed at fp16: the check's
    predictions equal the model's on those padded layers, and differ from the unpadded check on a C = 3 row."""
    db = REPO / "tests" / "data" / "deepbench" / "deepbench_conv_T4.csv"
    padded_out, plain_out = tmp_path / "padded.csv", tmp_path / "plain.csv"
    base = ["gpu", "--gpu", "t4", "--check", str(db), "--precision", "fp16", "--library", "cudnn7",
            "--selection", "heuristic"]
    assert main([*base, "--pad-channels", "8", "--out", str(padded_out)]) == 0
    assert "channels padded to 8" in capsys.readouterr().out
    assert main([*base, "--out", str(plain_out)]) == 0
    padded = {(r["name"], r["phase"]): float(r["predicted_s"]) for r in csv.DictReader(padded_out.open())}
    plain = {(r["name"], r["phase"]): float(r["predicted_s"]) for r in csv.DictReader(plain_out.open())}
    measured = read_deepbench_csv(db, "fp16")
    rows = check_measured(load_gpu("t4"), padded_channels(observations(measured), 8), "fp16",
                          selection="heuristic", library="cudnn7")
    assert {(r.name, r.phase): r.predicted_s for r in rows} == pytest.approx(padded, rel=1e-5)  # CSV: 6 digits
    odd = [m for m in observations(measured) if isinstance(m.layer, Layer) and m.layer.C % 8]
    assert odd and any(padded[(o.layer.name, o.phase)] != plain[(o.layer.name, o.phase)] for o in odd)


def test_pad_channels_goes_with_check_and_is_never_negative(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["gpu", "--gpu", "t4", "--network", "resnet18-cifar", "--pad-channels", "8",
                 "--out", str(tmp_path / "r.json")]) == 2
    assert "--pad-channels goes with --check" in capsys.readouterr().err
    db = REPO / "tests" / "data" / "deepbench" / "deepbench_conv_TitanXp.csv"
    assert main(["gpu", "--gpu", "titanxp", "--check", str(db), "--pad-channels", "-8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--pad-channels" in err and "-8" in err


def test_check_reads_the_host_overhead_off_the_file_when_auto(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """``--host-overhead-us auto``: the harness time ``harness_host_time_s`` reads off the file's least-work rows,
    added to every prediction and printed in the report's header."""
    from antsim.gpu.check import harness_host_time_s

    db = REPO / "tests" / "data" / "deepbench" / "deepbench_conv_TitanXp.csv"
    out = tmp_path / "errors.csv"
    assert main(["gpu", "--gpu", "titanxp", "--check", str(db), "--host-overhead-us", "auto", "--out", str(out)]) == 0
    gpu, measured = load_gpu("titanxp"), observations(read_deepbench_csv(db, "fp32"))
    host_s = harness_host_time_s(gpu, measured, "fp32")
    assert f"host overhead {host_s * 1e6:.1f} us" in capsys.readouterr().out
    want = check_measured(gpu, measured, "fp32", host_overhead_s=host_s)
    got = list(csv.DictReader(out.open()))
    assert len(got) == len(want)
    # the CSV writes 6 significant digits: a relative 5e-6 at most
    for g, w in zip(got, want, strict=True):
        assert abs(float(g["predicted_s"]) - w.predicted_s) <= 5e-6 * w.predicted_s
    for bad in ("soon", "-1", "nan"):
        assert main(["gpu", "--gpu", "titanxp", "--check", str(db), "--host-overhead-us", bad]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--host-overhead-us" in err and bad in err


def test_check_reads_a_drifting_host_time_off_the_file_when_drift(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture) -> None:
    """``--host-overhead-us drift``: one host time per row on the Theil-Sen line ``harness_host_times_s`` reads off
    the file's least-work rows against their place in the file (NeuSight's harness), first and last printed."""
    from antsim.gpu.check import harness_host_times_s

    ns = REPO / "tests" / "data" / "neusight" / "neusight_conv_fwd_P4.csv"
    out = tmp_path / "errors.csv"
    assert main(["gpu", "--gpu", "p4", "--check", str(ns), "--host-overhead-us", "drift", "--out", str(out)]) == 0
    gpu, measured = load_gpu("p4"), observations(read_deepbench_csv(ns, "fp32"))
    hosts = harness_host_times_s(gpu, measured, "fp32")
    assert hosts[-1] > hosts[0] + 100e-6  # the file's drift (docs/gpu_scale.md §8), not one value
    report = capsys.readouterr().out
    assert f"host overhead {hosts[0] * 1e6:.1f} (first row) to {hosts[-1] * 1e6:.1f} (last row) us" in report
    want = check_measured(gpu, measured, "fp32", host_overhead_s=hosts)
    got = list(csv.DictReader(out.open()))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):  # the CSV writes 6 significant digits
        assert abs(float(g["predicted_s"]) - w.predicted_s) <= 5e-6 * w.predicted_s


def test_rows_precision_models_a_files_rows_at_another_precision(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """DeepBench's P100 half rows are labelled ``fp16_pseudo`` but ran true half: ``--rows-precision`` reads them
    and the model predicts them at ``--precision`` (what ``scripts/validate_gpu.py`` scores)."""
    db = REPO / "tests" / "data" / "deepbench" / "deepbench_conv_P100.csv"
    out = tmp_path / "half.csv"
    assert main(["gpu", "--gpu", "p100", "--check", str(db), "--precision", "fp16", "--rows-precision", "fp16_pseudo",
                 "--library", "cudnn7", "--selection", "heuristic", "--out", str(out)]) == 0
    assert "(fp16, rows fp16_pseudo, cudnn7" in capsys.readouterr().out
    measured = observations(read_deepbench_csv(db, "fp16_pseudo"))
    want = check_measured(load_gpu("p100"), measured, "fp16", selection="heuristic", library="cudnn7")
    got = {(r["name"], r["phase"]): float(r["predicted_s"]) for r in csv.DictReader(out.open())}
    assert got == pytest.approx({(r.name, r.phase): r.predicted_s for r in want}, rel=1e-5)  # CSV: 6 digits
    pseudo = check_measured(load_gpu("p100"), measured, "fp16_pseudo", selection="heuristic", library="cudnn7")
    assert any(p.predicted_s != pytest.approx(got[(p.name, p.phase)], rel=1e-3) for p in pseudo)
    assert main(["gpu", "--gpu", "p100", "--check", str(db), "--precision", "fp16"]) == 2  # the file has no fp16 rows
    assert "no rows of 'fp16'" in capsys.readouterr().err
    assert main(["gpu", "--gpu", "p100", "--network", "resnet18-cifar", "--rows-precision", "fp16_pseudo",
                 "--out", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--rows-precision goes with --check" in err


def test_step_layout_option(tmp_path: Path, layers_csv: Path, capsys: pytest.CaptureFixture) -> None:
    times = {}
    for layout in ("nhwc", "nchw"):
        out = tmp_path / f"{layout}.json"
        assert main(["gpu", "--gpu", "v100", "--precision", "fp16", "--layers-csv", str(layers_csv), "--step",
                     "--layout", layout, "--out", str(out), "--no-progress"]) == 0
        assert f"; {layout} tensors, eager kernels)" in capsys.readouterr().out
        result = json.loads(out.read_text())
        assert result["meta"]["step"]["layout"] == layout
        times[layout] = sum(r["time_s"] for r in result["records"])
    assert times["nchw"] > times["nhwc"]  # tensor-core convolutions on NCHW tensors pay cuDNN's transposes


def test_step_fusion_option(tmp_path: Path, layers_csv: Path, capsys: pytest.CaptureFixture) -> None:
    # xla: ReLU and the residual add run inside BatchNorm's kernels (antsim.gpu.step.role_kernels), so the step
    # has fewer memory-bound launches than eager's one kernel per op; the result says which it used
    launches = {}
    for fusion in ("eager", "xla"):
        out = tmp_path / f"{fusion}.json"
        assert main(["gpu", "--gpu", "v100", "--precision", "fp16", "--layers-csv", str(layers_csv), "--step",
                     "--fusion", fusion, "--out", str(out), "--no-progress"]) == 0
        assert f"nhwc tensors, {fusion} kernels)" in capsys.readouterr().out  # the summary names what was used
        result = json.loads(out.read_text())
        assert result["meta"]["step"]["fusion"] == fusion
        launches[fusion] = sum(k["launches"] for r in result["records"] for k in r["details"]["step_kernels"])
    assert launches["xla"] < launches["eager"]


@pytest.mark.parametrize(("args", "expected"), [
    (["--step", "--layout", "NCHW"], "--layout: unknown 'NCHW'; known: nchw, nhwc"),
    (["--layout", "nchw"], "--layout goes with --step"),
    (["--fusion", "xla"], "--fusion goes with --step"),
    (["--step", "--fusion", "XLA"], "--fusion: unknown 'XLA'; known: eager, xla"),
])
def test_bad_layout_exits_2_with_one_line(tmp_path: Path, layers_csv: Path, capsys: pytest.CaptureFixture,
                                          args: list, expected: str) -> None:
    out = tmp_path / "r.json"
    code = main(["gpu", "--gpu", "v100", *args, "--layers-csv", str(layers_csv), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and expected in err and err.count("\n") == 0 and not out.exists()
