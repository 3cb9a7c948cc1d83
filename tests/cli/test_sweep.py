"""``antsim sweep``: bad flags exit 2 in one line naming the flag, before any study is created."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweep_helpers import write_spec

from antsim.cli import main


@pytest.mark.parametrize(("argv", "words"), [
    (["--workers", "0"], "--workers must be >= 1"),
    (["--n-trials", "0"], "--n-trials must be >= 1"),
    (["--export-only"], "--export-only needs --export"),
    (["--storage", "nonsense"], "not an RDB URL"),
])
def test_bad_arguments_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture, argv: list[str], words: str) -> None:
    spec = write_spec(tmp_path, "args")
    assert main(["sweep", str(spec), *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "results").exists()
