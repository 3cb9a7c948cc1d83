"""``antsim capture``: its choices and defaults are the library's; bad flags are one-line user errors; --report."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from antsim.cli import main  # noqa: E402


def test_cli_network_choices_are_the_buildable_ones() -> None:
    from antsim.capture.models import CAPTURE_NETWORKS
    from antsim.cli.capture import _NETWORKS

    assert _NETWORKS == CAPTURE_NETWORKS


def test_bad_arguments_are_user_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base = ["capture", "--network", "resnet18-cifar", "--data", "synthetic", "--out", str(tmp_path / "x.npz")]
    for extra, text in ((["--density", "0"], "--density"), (["--steps", "0"], "--steps"),
                        (["--width-mult", "-1"], "--width-mult")):
        assert main([*base, *extra]) == 2
        assert text in capsys.readouterr().err
    assert not (tmp_path / "x.npz").exists()


def test_cli_report_markdown_csv_and_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import csv

    from antsim.capture.report import windows

    base = ["capture", "--network", "resnet18-cifar", "--steps", "4", "--batch", "2", "--width-mult", "0.125",
            "--data", "synthetic", "--lr", "0.05", "--schedule", "step", "--warmup", "1"]
    assert main([*base, "--out", str(tmp_path / "a.npz"), "--report", str(tmp_path / "sub" / "a.md")]) == 0
    out = capsys.readouterr().out
    assert "loss curve" in out and "chance: loss ln(10)" in out and "data: synthetic" in out
    assert main([*base, "--out", str(tmp_path / "b.npz"), "--report", str(tmp_path / "b.csv")]) == 0
    rows = list(csv.DictReader((tmp_path / "b.csv").open()))
    assert [float(r["lr"]) for r in rows] == pytest.approx([0.05, 0.05, 0.005, 0.0005])  # /10 at 50 % and 75 %
    losses = [float(r["loss"]) for r in rows]
    text = (tmp_path / "sub" / "a.md").read_text()
    for w in windows(losses, [float(r["accuracy"]) for r in rows], [float(r["lr"]) for r in rows]):
        assert f"| {w.first}–{w.last} | {w.lr:.5g} | {w.loss:.4f} |" in text  # same seed, same curve
    assert "step, peak lr 0.05, warm-up 1 steps" in text
    for png in (tmp_path / "sub" / "a.png", tmp_path / "b.png"):
        assert png.read_bytes()[:4] == b"\x89PNG"


def test_cli_refuses_bad_report_and_optimizer_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["capture", "--network", "resnet18-cifar", "--data", "synthetic", "--out", str(tmp_path / "x.npz")]
    for extra, text in ((["--report", str(tmp_path / "r.txt")], "--report"), (["--lr", "-1"], "--lr"),
                        (["--momentum", "1.5"], "--momentum"), (["--weight-decay", "-0.1"], "--weight-decay"),
                        (["--warmup", "20"], "--warmup")):
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and text in err, err
    assert not any(tmp_path.iterdir())


def test_cli_defaults_are_the_library_ones() -> None:
    from antsim.capture import run as run_module
    from antsim.capture.data import DATA_SOURCES
    from antsim.capture.schedule import SCHEDULES
    from antsim.cli import capture as cli

    assert cli._DATA == DATA_SOURCES and cli._SCHEDULES == SCHEDULES
    assert (cli._LR, cli._MOMENTUM, cli._WEIGHT_DECAY) == (run_module.DEFAULT_LR, run_module.MOMENTUM,
                                                           run_module.WEIGHT_DECAY)
