"""``antsim zoo``: the network list, a network's layers CSV and MAC total, an unknown name in one line."""

from __future__ import annotations

import pytest

import antsim


def _total(name: str) -> int:
    return sum(layer.macs for layer in antsim.network(name))


def test_zoo_cli(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    from antsim.cli import main

    assert main(["zoo"]) == 0
    assert "resnet50-imagenet" in capsys.readouterr().out
    csv_path = tmp_path / "r18.csv"
    assert main(["zoo", "resnet18-cifar", "--batch", "2", "--csv", str(csv_path)]) == 0
    out = capsys.readouterr().out
    assert f"{2 * _total('resnet18-cifar') / 1e9:.3f} GMACs per phase" in out
    assert [l.name for l in antsim.read_layers_csv(csv_path)] == [l.name for l in antsim.network("resnet18-cifar")]
    assert main(["zoo", "nope"]) == 2
    assert "unknown network 'nope'" in capsys.readouterr().err
