"""``antsim measure``: without PyTorch one line and exit 2; bad flags are one-line user errors naming the flag."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from antsim.cli import main


def test_measure_without_torch_is_one_line_exit_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    assert main(["measure", "--network", "resnet18-cifar", "--out", str(tmp_path / "m.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'antsim[measure]'" in err and "torch==2.13.0" in err
    assert not (tmp_path / "m.csv").exists()


@pytest.mark.torch
def test_measure_user_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    import torch

    out = str(tmp_path / "m.csv")
    assert main(["measure", "--network", "nosuch", "--out", out]) == 2
    assert "nosuch" in capsys.readouterr().err
    assert main(["measure", "--network", "resnet18-cifar", "--repeats", "0", "--out", out]) == 2
    assert "--repeats" in capsys.readouterr().err
    assert main(["measure", "--network", "resnet18-cifar", "--out", str(tmp_path / "m.json")]) == 2
    assert "must end in .csv" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert main(["measure", "--network", "resnet18-cifar", "--device", "cuda", "--out", out]) == 2
        err = capsys.readouterr().err
        assert "--device: device 'cuda'" in err and err.count("\n") == 1
    assert not (tmp_path / "m.csv").exists()
