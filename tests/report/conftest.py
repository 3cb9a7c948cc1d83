"""Fixtures of the compare/report tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from report_factories import accelerator_result, gpu_result

from antsim.results import NetworkResult


@pytest.fixture
def results() -> list[NetworkResult]:
    return [accelerator_result("scnn", 1, 0.0), accelerator_result("ant", 2, 0.9),
            accelerator_result("ant_oracle", 3, 1.0), gpu_result("v100", 4)]


@pytest.fixture
def write_results(tmp_path: Path) -> Callable[[list[NetworkResult]], list[Path]]:
    def write(items: list[NetworkResult]) -> list[Path]:
        paths = []
        for result in items:
            path = tmp_path / "in" / f"{result.design}.json"
            result.write_json(path)
            paths.append(path)
        return paths

    return write
