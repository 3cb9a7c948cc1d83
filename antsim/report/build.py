"""Build a report folder from a ``Comparison`` (and optionally a sweep export), atomically.

Layout of ``reports/NAME/``::

    .antsim-report.json   manifest: the files below (only a folder carrying it is ever replaced)
    index.html            self-contained: figures inlined as base64 PNG, inline CSS, no scripts
    report.md             the same content, linking figures/*.png and data/*.csv
    figures/<fig>.png|svg one per figure
    data/<fig>.csv        the numbers behind each figure; data/comparison.json|csv (antsim.compare/1)
    results/<design>.json the input results (antsim.result/1) — rerun with `antsim report results/*.json`

Everything is rendered in memory, written to a temporary folder next to the target and renamed into
place, so an error never leaves a half-written report.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from antsim.errors import AntsimError
from antsim.report import data as d
from antsim.report import figures as f
from antsim.report import tables as tb
from antsim.report.compare import Comparison, fmt_ratio
from antsim.report.document import render_html, render_markdown
from antsim.report.sweep import (
    DesignMark,
    SweepInfo,
    _get_sweep_info,
    check_sweep_workload,
    design_marks,
    sweep_rows,
)
from antsim.results import check_writable_folder


class RenderedFigure(NamedTuple):
    """One figure of the report: files, title and caption (plain text)."""

    name: str
    title: str
    caption: str
    png: bytes
    svg: bytes
    csv_text: str


class ReportContent(NamedTuple):
    """Everything a document renderer needs."""

    comparison: Comparison
    headline: d.HeadlineInfo
    figures: tuple[RenderedFigure, ...]
    sweep: SweepInfo | None
    result_files: Mapping[str, str]  # design → results/<file>.json inside the report
    command: str | None  # the command line that produced the report, echoed for rerunning


def build_report(comparison: Comparison, out: str | Path, sweep_dir: str | Path | None = None,
                 progress: Callable[[str], None] | None = None, command: str | None = None) -> Path:
    """Render the report of ``comparison`` into the folder ``out`` (replaced atomically if it holds a report).

    Args:
        comparison: The joined results.
        out: Report folder (e.g. ``reports/main``).
        sweep_dir: Optional ``antsim sweep --export`` folder (trials.csv, pareto.csv).
        progress: Called with a short message before each figure (the CLI prints it on stderr).
        command: The command line to echo in the report's inputs section.

    Raises:
        AntsimError: ``out`` is a file, a non-empty folder that is not a report (no manifest) or a report
            holding files it did not write; unreadable sweep export.
    """
    out = Path(out)
    check_report_target(out)
    if sweep_dir is not None:
        # the joined results share their layers (compare checked it): the baseline's echo names them
        check_sweep_workload(sweep_dir, {**comparison.workload, "layers": comparison.results[0].workload.get("layers")})
    sweep = _get_sweep_info(sweep_dir) if sweep_dir is not None else None
    note = progress or (lambda _message: None)
    figures = []
    for name, make in _figure_makers(comparison, sweep):
        note(f"figure {name}")
        figure = make()
        if figure is not None:
            figures.append(figure)
    result_files = _result_file_names(comparison)
    content = ReportContent(comparison, d._get_headline_info(comparison), tuple(figures), sweep, result_files,
                            command)
    files: dict[str, bytes] = {"index.html": render_html(content).encode(),
                               "report.md": render_markdown(content).encode(),
                               "data/comparison.json": comparison.to_json().encode(),
                               "data/comparison.csv": comparison.to_csv().encode()}
    for fig in figures:
        files[f"figures/{fig.name}.png"] = fig.png
        files[f"figures/{fig.name}.svg"] = fig.svg
        files[f"data/{fig.name}.csv"] = fig.csv_text.encode()
    files["data/records.csv"] = _csv(d.network_result_rows(comparison.results)).encode()
    files["data/headline.csv"] = _csv(d.headline_rows(content.headline)).encode()
    table_rows: tuple[tuple[str, Callable[[Comparison], list[list[Any]]]], ...] = (
        ("area", tb.area_rows), ("layers", tb.layer_rows), ("efficiency", tb.efficiency_rows),
        ("assumptions", tb.assumption_rows), ("kinds", tb.kind_rows))
    for name, make_rows in table_rows:
        rows = make_rows(comparison)
        if rows:
            files[f"data/{name}.csv"] = _csv(rows).encode()
    for result in comparison.results:
        files[result_files[result.design]] = _result_json(result).encode()
    write_folder_atomic(out, {**files, MANIFEST: _manifest(files)})
    return out


def _manifest(files: Mapping[str, bytes]) -> bytes:
    doc = {"schema": MANIFEST_SCHEMA, "files": sorted(files)}
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()


def _figure_makers(comparison: Comparison, sweep: SweepInfo | None) -> list[tuple[str, Callable[[], Any]]]:
    makers: list[tuple[str, Callable[[], Any]]] = [
        ("speedup", lambda: _ratio_figure(comparison, "speedup")),
        ("energy_reduction", lambda: _ratio_figure(comparison, "energy_reduction")),
        ("energy_breakdown", lambda: _energy_figure(comparison)),
        ("products", lambda: _product_figure(comparison)),
        ("cycles", lambda: _cycle_figure(comparison)),
    ]
    if sweep is not None:
        marks = design_marks(sweep, [comparison.summary(r.design) for r in comparison.results])
        makers += [("pareto", lambda: _pareto_figure(sweep, marks)),
                   ("tradeoffs", lambda: _tradeoff_figure(sweep, marks))]
    return makers


def _rendered(name: str, title: str, caption: str, fig: Any, rows: list[list[object]]) -> RenderedFigure:
    return RenderedFigure(name, title, caption, f.figure_bytes(fig, "png"), f.figure_bytes(fig, "svg"), _csv(rows))


def _ratio_figure(comparison: Comparison, metric: str) -> RenderedFigure | None:
    info = d._get_ratio_info(comparison, metric)
    if not info.designs or np.all(np.isnan(info.per_layer)):
        return None
    colors = f.design_colors([s.design for s in comparison.designs])
    what = "speedup" if metric == "speedup" else "energy reduction"
    quantity = "time" if metric == "speedup" else "energy"
    best = int(np.nanargmax(info.network)) if np.any(np.isfinite(info.network)) else 0
    caption = (f"{what.capitalize()} of each design over {info.baseline} = {info.baseline}'s {quantity} ÷ the"
               f" design's {quantity}, per layer (fprop + dgrad + wgrad), for the whole network (sums of all"
               f" layers) and as the geometric mean of the per-layer ratios; log scale, the dashed line is"
               f" parity (1×). Highest network {what}: {info.designs[best]} at {fmt_ratio(_f(info.network[best]))}.")
    title = f"{what.capitalize()} over {info.baseline}"
    return _rendered(metric, title, caption, f.render_ratio(info, colors), d.ratio_rows(info))


def _energy_figure(comparison: Comparison) -> RenderedFigure | None:
    info = d._get_energy_breakdown_info(comparison)
    if not info.designs:
        return None
    shares = info.energy_j / np.maximum(info.energy_j.sum(axis=1, keepdims=True), 1e-300)
    top = [f"{design}: {info.components[int(np.argmax(shares[i]))]} {100 * shares[i].max():.0f}%"
           for i, design in enumerate(info.designs)]
    caption = ("Energy of one training step (all layers, all phases) by hardware component: for the"
               " accelerators every priced action and leakage; for the GPU models their static power x time"
               " (gpu_static), the dynamic core energy of the executed FLOPs (gpu_core_dynamic) and DRAM."
               " Left: joules; right: shares. Largest component — " + "; ".join(top) + ".")
    return _rendered("energy_breakdown", "Energy breakdown by component", caption,
                     f.render_energy_breakdown(info), d.energy_rows(info))


def _product_figure(comparison: Comparison) -> RenderedFigure | None:
    info = d._get_product_info(comparison)
    if not info.designs:
        return None
    facts = []
    for i, design in enumerate(info.designs):
        rcp = int((info.rcp_skipped[i] + info.rcp_issued[i]).sum())
        total = max(int(info.total[i].sum()), 1)
        skipped = 100 * int(info.rcp_skipped[i].sum()) / max(rcp, 1)
        if info.dense and info.dense[i]:
            facts.append(f"{design} (dense): {100 * rcp / total:.0f}% of its products have a zero operand")
        else:
            facts.append(f"{design}: RCPs {100 * rcp / total:.0f}% of products, {skipped:.0f}% of them skipped")
    caption = ("Cartesian products per phase (summed over layers): valid products, redundant Cartesian"
               " products (RCPs) the anticipation unit skipped before issue, and RCPs issued to the multipliers"
               " anyway; a dense design's other products are products with a zero operand, multiplied anyway."
               " Left: counts (log scale); right: shares. " + "; ".join(facts) + ".")
    return _rendered("products", "Product composition per phase", caption, f.render_products(info),
                     d.product_rows(info))


def _cycle_figure(comparison: Comparison) -> RenderedFigure | None:
    info = d._get_cycle_info(comparison)
    if not info.designs:
        return None
    caption = ("Where the cycles of each phase go (summed over layers), per design: multiplier-busy cycles and"
               " the stall categories the simulator reports (bank conflicts, anticipation, barrier wait, halo"
               " exchange, wgrad reduction, memory). 'unattributed' is the part of the cycles no category"
               " covers. Left: cycles; right: shares.")
    return _rendered("cycles", "Cycle breakdown per design and phase", caption, f.render_cycles(info),
                     d.cycle_rows(info))


def _marks_caption(sweep: SweepInfo, marks: tuple[DesignMark, ...]) -> str:
    """Which of the report's designs are marked, and what priced the trials beside them."""
    if not marks:
        return ""
    priced = (f" The trials were priced by the sweep's {sweep.evaluator} evaluator, the marked designs by this"
              " report's runs: compare them only where both are the simulator at one fidelity."
              if sweep.evaluator else " The export does not record its evaluator.")
    return (f" Black markers: this report's designs ({', '.join(m.design for m in marks)}), where both of a"
            f" panel's values are known (a GPU has no area).{priced}")


def _goals(sweep: SweepInfo) -> str:
    """``min time_s, max power_w``: the directions the Pareto set is taken in."""
    return ", ".join(f"{d[:3]} {o}" for o, d in zip(sweep.objectives, sweep.directions, strict=True))


def _pareto_figure(sweep: SweepInfo, marks: tuple[DesignMark, ...] = ()) -> RenderedFigure:
    third = (f" Pareto points are filled by their {sweep.objectives[2]} (colour bar)."
             if len(sweep.objectives) > 2 else "")
    caption = (f"Sweep trials ({len(sweep.numbers)}, {int(sweep.feasible.sum())} feasible) on the first two"
               f" objectives; ringed in orange: the {int(sweep.pareto.sum())} Pareto-optimal trials (as exported,"
               f" or computed for {_goals(sweep)}); grey crosses: infeasible trials.{third}"
               f"{_marks_caption(sweep, marks)} Axes on a log scale where the values span more than two decades."
               f" Source: {sweep.source}.")
    return _rendered("pareto", "Sweep: Pareto front", caption, f.render_pareto(sweep, marks),
                     sweep_rows(sweep, marks))


def _tradeoff_figure(sweep: SweepInfo, marks: tuple[DesignMark, ...] = ()) -> RenderedFigure:
    caption = ("Every pair of sweep objectives; the Pareto set (of all objectives together) in orange, so some"
               f" Pareto points sit inside a two-objective cloud.{_marks_caption(sweep, marks)}")
    return _rendered("tradeoffs", "Sweep: objective trade-offs", caption, f.render_tradeoffs(sweep, marks),
                     sweep_rows(sweep, marks))


def _f(value: Any) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def _csv(rows: list[list[object]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in rows:
        writer.writerow(["" if isinstance(v, float) and np.isnan(v) else _plain(v) for v in row])
    return buffer.getvalue()


def _plain(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value


def _result_file_names(comparison: Comparison) -> dict[str, str]:
    names: dict[str, str] = {}
    for result in comparison.results:
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", result.design).strip("._") or "design"
        while f"results/{stem}.json" in names.values():
            stem += "_"
        names[result.design] = f"results/{stem}.json"
    return names


def _result_json(result: Any) -> str:
    return json.dumps(result.to_dict(), indent=1, sort_keys=True) + "\n"


MANIFEST = ".antsim-report.json"  # written into every report folder: the files the report wrote
MANIFEST_SCHEMA = "antsim.report-manifest/1"


def _manifest_files(out: Path) -> set[str] | None:
    """The relative paths ``out``'s manifest lists, or None when it has no readable antsim manifest."""
    try:
        doc = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != MANIFEST_SCHEMA or not isinstance(doc.get("files"), list):
        return None
    return {str(f) for f in doc["files"]}


def check_report_target(out: Path, what: str = "report folder") -> None:
    """Refuse to replace anything but a missing path, an empty folder or a folder a report wrote.

    A folder is an earlier report only when it carries the report's manifest (``.antsim-report.json``)
    and holds nothing the manifest does not list — a file someone added (a thesis.tex) is never deleted.

    Args:
        out: The report folder.
        what: How errors name it (the CLI: the flag that gave it).

    Raises:
        AntsimError: ``out`` is a file, a non-empty folder without the manifest, a report folder with files
            it did not write, or a parent that is not a writable folder.
    """
    if out.exists() and not out.is_dir():
        raise AntsimError(f"{what} {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        listed = _manifest_files(out)
        if listed is None:
            raise AntsimError(f"{what} {out}: folder exists and holds no {MANIFEST} (it was not written by"
                              " antsim report); refusing to replace it")
        for path in sorted(out.rglob("*")):
            rel = path.relative_to(out).as_posix()
            if rel != MANIFEST and not path.is_dir() and rel not in listed:
                raise AntsimError(f"{what} {out}: holds {rel}, which the report did not write; refusing to"
                                  " replace the folder (move the file out first)")
    check_writable_folder(out, what)


def write_folder_atomic(out: Path, files: Mapping[str, bytes]) -> None:
    """Write ``files`` (relative path → bytes) as folder ``out``: build a temporary sibling, then rename."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    try:
        for rel, payload in files.items():
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(payload)
        tmp.chmod(0o755)
        if out.exists():
            out.rename(old)
        tmp.rename(out)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not out.exists():
            old.rename(out)
        if isinstance(exc, OSError):  # full disk, permissions: one line; nothing half-written is left
            raise AntsimError(f"{out}: cannot write the report ({exc.strerror or exc})") from None
        raise
    shutil.rmtree(old, ignore_errors=True)
