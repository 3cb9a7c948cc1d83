"""Shared fixtures of the GPU-model tests."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "deepbench"


@pytest.fixture
def deepbench() -> Path:
    """Folder of the DeepBench CSVs copied into the repository."""
    return DATA
