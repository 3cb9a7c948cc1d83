"""Shared fixtures of the energy/area tests: the shipped SCNN and ANT designs."""

from __future__ import annotations

from pathlib import Path

import pytest

from antsim.spec.arch import ArchSpec, load_arch

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def scnn() -> ArchSpec:
    return load_arch(ROOT / "arch_configs/scnn.yaml")


@pytest.fixture(scope="module")
def ant() -> ArchSpec:
    return load_arch(ROOT / "arch_configs/ant.yaml")
