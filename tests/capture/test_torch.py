"""Without PyTorch, capture says how to install it in one line and exit 2."""

from __future__ import annotations

import pytest

from antsim.cli import main


def test_capture_without_torch_is_one_line_exit_2(no_torch: None, capsys: pytest.CaptureFixture[str],
                                                  tmp_path) -> None:
    assert main(["capture", "--network", "resnet18-cifar", "--out", str(tmp_path / "x.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "pip install 'antsim[capture]'" in err and "torch==2.13.0" in err
    assert not any(tmp_path.iterdir())


def test_import_antsim_does_not_need_torch(no_torch: None) -> None:
    import importlib

    import antsim
    import antsim.capture
    import antsim.capture.stats
    import antsim.measure

    importlib.reload(antsim.capture)
    assert antsim.measure.read_results_csv is not None
