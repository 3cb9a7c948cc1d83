"""``antsim.version``: the release number every result records is pyproject's."""

from __future__ import annotations

import tomllib
from pathlib import Path

import antsim

PACKAGE = Path(antsim.__file__).parent


def test_version_matches_pyproject() -> None:
    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]
    assert antsim.__version__ == project["version"]
