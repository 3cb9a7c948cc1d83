"""antsim.progress: the hook simulate_network takes instead of the CLI's progress bar."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from antsim.progress import tqdm_bar, track
from antsim.simulate import simulate_network
from antsim.spec.arch import load_arch
from antsim.workloads.layers import Layer

ARCH = Path(__file__).resolve().parents[1] / "arch_configs" / "scnn.yaml"
LAYERS = [Layer(name="a", N=1, C=4, K=8, H=6, W=6, R=3, S=3, stride=(1, 1), pad=(1, 1)),
          Layer(name="b", N=1, C=8, K=8, H=3, W=3, R=1, S=1)]


def test_track_passes_items_through_each_kind_of_hook(capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[object] = []

    def hook(items: Iterable[Any]) -> Iterator[Any]:
        for item in items:
            seen.append(item)
            yield item

    assert list(track(range(4), False)) == [0, 1, 2, 3]
    assert list(track(range(4), hook)) == [0, 1, 2, 3] and seen == [0, 1, 2, 3]
    assert list(track(range(4), True, total=4, desc="d")) == [0, 1, 2, 3]
    assert capsys.readouterr().out == ""  # a bar never writes to stdout (results go there)


def test_tqdm_bar_draws_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert list(tqdm_bar(range(3), total=3, desc="layers", unit="layer")) == [0, 1, 2]
    captured = capsys.readouterr()
    assert captured.out == "" and "layers" in captured.err


def test_simulate_network_calls_the_hook_once_per_layer_and_the_result_is_unchanged() -> None:
    arch = load_arch(ARCH)
    calls: list[tuple[int, str]] = []

    def hook(items: Iterable[Any]) -> Iterator[Any]:
        for index, layer in items:
            calls.append((index, layer.name))
            yield index, layer

    plain = simulate_network(arch, LAYERS, phases=("fprop",), seed=1)
    hooked = simulate_network(arch, LAYERS, phases=("fprop",), seed=1, progress=hook)
    assert calls == [(0, "a"), (1, "b")]
    assert hooked.to_dict() == plain.to_dict()


def test_simulate_network_bar_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    simulate_network(load_arch(ARCH), LAYERS[:1], phases=("fprop",), progress=True)
    assert capsys.readouterr().out == ""
