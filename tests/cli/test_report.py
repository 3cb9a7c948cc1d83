"""``antsim report``: inputs of other workloads, a missing file, and an --out folder the report did not write are
refused in one line with exit 2, before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_factories import accelerator_result, five_designs, gpu_result, write_result_files

from antsim.cli import main
from antsim.report.build import MANIFEST


@pytest.mark.parametrize("make_bad, message", [
    (lambda: gpu_result("v100", 4, batch=8), "workload.layers: layer 'conv1' is N8"),
    (lambda: accelerator_result("scnn", 9, 0.0), "design name 'scnn' also comes from"),
])
def test_mismatched_inputs_exit_2_and_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    make_bad, message: str) -> None:
    paths = write_result_files(tmp_path, five_designs()[:2])
    bad = tmp_path / "bad" / "bad.json"
    bad.parent.mkdir()
    make_bad().write_json(bad)
    out = tmp_path / "reports" / "r"
    assert main(["report", *paths, str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and str(bad) in err and len(err.splitlines()) == 1
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").iterdir())


def test_missing_file_and_non_report_folder_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_result_files(tmp_path, five_designs()[:2])
    assert main(["report", *paths, str(tmp_path / "nope.json"), "--out", str(tmp_path / "r")]) == 2
    assert "nope.json: result file not found" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("keep me")
    assert main(["report", *paths, "--out", str(precious)]) == 2
    assert f"holds no {MANIFEST}" in capsys.readouterr().err
    assert (precious / "thesis.tex").read_text() == "keep me"


def test_a_folder_that_only_looks_like_a_report_is_never_replaced(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """index.html + report.md are not proof: without the manifest the folder (and thesis.tex) stays."""
    paths = write_result_files(tmp_path, five_designs()[:2])
    lookalike = tmp_path / "lookalike"
    lookalike.mkdir()
    for name, text in (("index.html", "mine"), ("report.md", "mine"), ("thesis.tex", "keep me")):
        (lookalike / name).write_text(text)
    assert main(["report", *paths, "--out", str(lookalike)]) == 2
    assert f"holds no {MANIFEST}" in capsys.readouterr().err
    assert sorted(p.name for p in lookalike.iterdir()) == ["index.html", "report.md", "thesis.tex"]
    assert (lookalike / "thesis.tex").read_text() == "keep me"


def test_a_report_holding_a_users_file_is_not_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_result_files(tmp_path, five_designs()[:2])
    out = tmp_path / "r"
    assert main(["report", *paths, "--out", str(out)]) == 0
    capsys.readouterr()
    (out / "notes").mkdir()
    (out / "notes" / "thesis.tex").write_text("keep me")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert main(["report", *paths, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "holds notes/thesis.tex, which the report did not write" in err and len(err.splitlines()) == 1
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
