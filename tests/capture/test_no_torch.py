"""Without PyTorch, capture and measure say how to install it in one line and exit 2."""

from __future__ import annotations

import pytest

from antsim.cli import main


@pytest.mark.parametrize(("command", "extra"), [
    (["capture", "--network", "resnet18-cifar", "--out", "x.npz"], "capture"),
    (["measure", "--network", "resnet18-cifar", "--out", "x.csv"], "measure"),
])
def test_missing_torch_is_one_line_exit_2(no_torch: None, command: list[str], extra: str,
                                          capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    command = [*command[:-1], str(tmp_path / command[-1])]
    assert main(command) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"pip install 'antsim[{extra}]'" in err and "torch==2.13.0" in err
    assert not any(tmp_path.iterdir())


def test_import_antsim_does_not_need_torch(no_torch: None) -> None:
    import importlib

    import antsim
    import antsim.capture
    import antsim.capture.stats
    import antsim.measure

    importlib.reload(antsim.capture)
    assert antsim.measure.read_results_csv is not None
