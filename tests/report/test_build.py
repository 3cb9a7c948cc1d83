"""The report folder: self-contained HTML, resolvable Markdown, figure data, atomic writes (the command's refusals:
tests/cli/test_report.py)."""

from __future__ import annotations

import base64
import csv
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from report_factories import LAYERS, five_designs, write_result_files

from antsim.cli import main
from antsim.report import build as build_module
from antsim.report.build import MANIFEST, build_report
from antsim.report.compare import compare_results, fmt_ratio
from antsim.results import NetworkResult
from antsim.workloads.layers import PHASES

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FIGURES = ("speedup", "energy_reduction", "energy_breakdown", "products", "cycles", "pareto", "tradeoffs")


def _write_sweep(folder: Path) -> Path:
    folder.mkdir(parents=True)
    # the columns of antsim.dse.export (antsim sweep --export)
    (folder / "trials.csv").write_text(
        "number,state,param.pe_array.F,objective.time_s,objective.energy_j,objective.area_mm2,feasible,reason\n"
        "0,COMPLETE,4,1e-6,5e-6,2.0,True,\n1,COMPLETE,8,2e-6,1e-6,3.0,True,\n"
        "2,COMPLETE,2,3e-6,6e-6,9.0,False,area_mm2 > 8\n3,COMPLETE,4,1.5e-6,5.5e-6,2.5,True,\n4,FAIL,2,,,,False,x\n")
    (folder / "pareto.csv").write_text("number,param.pe_array.F,objective.time_s,arch\n0,4,1e-6,a0.yaml\n"
                                       "1,8,2e-6,a1.yaml\n")
    return folder


def _write_measured_csv(path: Path, time_s: float) -> str:
    """A timing-only measurement (no energy) in the antsim CSV format of antsim.measure.external."""
    lines = ["name,phase,time_s"] + [f"{layer.name},{phase},{time_s}" for layer in LAYERS for phase in PHASES]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """One report of three accelerators, two GPU models and a timing-only measurement, with a sweep."""
    root = tmp_path_factory.mktemp("report")
    paths = write_result_files(root, five_designs())
    measured = _write_measured_csv(root / "titanxp_measured.csv", 2e-5)
    sweep = _write_sweep(root / "sweep")
    status = main(["report", *paths, measured, "--sweep", str(sweep), "--out", str(root / "reports" / "main")])
    assert status == 0
    return root / "reports" / "main", [*paths, measured]


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None], int]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs), len(self.tags)))


def test_html_is_self_contained_with_embedded_pngs(report: tuple[Path, list[str]]) -> None:
    folder, _ = report
    parser = _Collector()
    parser.feed((folder / "index.html").read_text())
    parser.close()
    images = [attrs for tag, attrs, _ in parser.tags if tag == "img"]
    assert len(images) == len(FIGURES)
    for attrs in images:
        src = attrs["src"] or ""
        assert src.startswith("data:image/png;base64,")
        payload = base64.b64decode(src.split(",", 1)[1], validate=True)
        assert payload.startswith(PNG_MAGIC) and len(payload) > 1000
    assert not any(tag in ("script", "link", "iframe") for tag, _, _ in parser.tags)
    assert not any(str(v).startswith(("http:", "https:", "//")) for _, attrs, _ in parser.tags for v in attrs.values())


def test_headline_box_comes_first_and_names_ant_over_scnn_and_gpus(report: tuple[Path, list[str]]) -> None:
    folder, paths = report
    html = (folder / "index.html").read_text()
    headline_at = html.index('id="headline"')
    assert headline_at < html.index("<figure") and headline_at < html.index("<img")
    box = html[headline_at:html.index("</div></div>", headline_at)]
    results = [NetworkResult.read_json(p) for p in paths[:-1]]
    ant, scnn, v100, h100 = (results[i].totals for i in (1, 0, 3, 4))
    for reference, totals in (("SCNN", scnn), ("V100 (GPU)", v100), ("H100 (GPU)", h100)):
        row = box[box.index(f"ANT over {reference}"):]
        row = row[:row.index("</tr>")]
        assert fmt_ratio(totals["time_s"] / ant["time_s"]) in row
        assert fmt_ratio(totals["energy_j"] / ant["energy_j"]) in row
    assert "speedup" in box and "energy reduction" in box


def test_markdown_links_resolve_and_every_figure_has_files(report: tuple[Path, list[str]]) -> None:
    folder, _ = report
    markdown = (folder / "report.md").read_text()
    links = re.findall(r"\]\(([^)]+)\)", markdown)
    assert len(links) >= 3 * len(FIGURES)
    for link in links:
        assert (folder / link).is_file(), link
    for name in FIGURES:
        assert (folder / "figures" / f"{name}.png").read_bytes().startswith(PNG_MAGIC)
        assert b"<svg" in (folder / "figures" / f"{name}.svg").read_bytes()
        assert (folder / "data" / f"{name}.csv").stat().st_size > 0
    assert markdown.index("Headline") < markdown.index("![")


def test_figure_data_csv_matches_the_results(report: tuple[Path, list[str]]) -> None:
    folder, paths = report
    results = [NetworkResult.read_json(p) for p in paths[:-1]]
    rows = list(csv.DictReader((folder / "data" / "speedup.csv").open()))
    network = {r["design"]: float(r["speedup"]) for r in rows if r["scope"] == "network"}
    for result in results[1:]:
        assert network[result.design] == pytest.approx(results[0].totals["time_s"] / result.totals["time_s"])
    energy = list(csv.DictReader((folder / "data" / "energy_breakdown.csv").open()))
    for design in ("scnn", "ant", "ant_oracle"):
        parts = [float(r["energy_j"]) for r in energy if r["design"] == design and r["component"] != "total"]
        total = next(float(r["energy_j"]) for r in energy if r["design"] == design and r["component"] == "total")
        assert sum(parts) == pytest.approx(total)
    headline = list(csv.DictReader((folder / "data" / "headline.csv").open()))
    assert [(r["design"], r["over"]) for r in headline] == [("ant", "scnn"), ("ant", "v100"), ("ant", "h100")]
    assert float(headline[1]["energy_reduction"]) == pytest.approx(
        results[3].totals["energy_j"] / results[1].totals["energy_j"])
    comparison = json.loads((folder / "data" / "comparison.json").read_text())
    assert comparison["schema"] == "antsim.compare/1" and comparison["baseline"] == "scnn"
    copies = sorted(p.name for p in (folder / "results").iterdir())
    assert copies == sorted([*(f"{r.design}.json" for r in results), "titanxp_measured.json"])
    measured = next(r for r in rows if r["design"] == "titanxp_measured" and r["scope"] == "network")
    assert float(measured["speedup"]) == pytest.approx(results[0].totals["time_s"] / (2e-5 * 9))
    reduction = list(csv.DictReader((folder / "data" / "energy_reduction.csv").open()))
    assert {r["energy_reduction"] for r in reduction if r["design"] == "titanxp_measured"} == {""}
    assert NetworkResult.read_json(folder / "results" / "ant.json") == results[1]


def test_report_states_its_inputs(report: tuple[Path, list[str]]) -> None:
    folder, paths = report
    html = (folder / "index.html").read_text()
    for text in ("tiny-cifar", "batch 1", "topk_field", "seed 0", "fidelity fast", "antsim 0.1.0",
                 "8×8 PEs of 4×4 multipliers", "antsim report results/*.json", *paths):
        assert text in html, text


def test_same_inputs_give_the_same_report_data(report: tuple[Path, list[str]], tmp_path: Path) -> None:
    folder, paths = report
    again = tmp_path / "again"
    sweep = _write_sweep(tmp_path / "sweep")
    assert main(["report", *paths[:2], "--out", str(again)]) == 0  # an earlier report, of fewer designs
    manifest = again / MANIFEST
    doc = json.loads(manifest.read_text())
    assert sorted(doc["files"]) == sorted(p.relative_to(again).as_posix() for p in again.rglob("*")
                                          if p.is_file() and p != manifest)
    (again / "stale.txt").write_text("old")  # a file an earlier antsim version wrote and listed
    manifest.write_text(json.dumps({**doc, "files": [*doc["files"], "stale.txt"]}))
    assert main(["report", *paths, "--sweep", str(sweep), "--out", str(again)]) == 0
    assert not (again / "stale.txt").exists()  # an earlier report is replaced whole
    for sub in ("data", "figures", "results"):
        for path in sorted((folder / sub).iterdir()):
            assert (again / sub / path.name).read_bytes() == path.read_bytes(), path.name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again", "sweep"]  # no temporary folders left


def test_a_failure_while_rendering_leaves_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: object) -> None:
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr(build_module.f, "render_ratio", broken)
    with pytest.raises(RuntimeError):
        build_report(compare_results(five_designs()[:2]), tmp_path / "r")
    assert list(tmp_path.iterdir()) == []
