from __future__ import annotations

import pytest


@pytest.fixture
def no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import torch`` fail as if PyTorch were not installed."""
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)
