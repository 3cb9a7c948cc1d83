"""Reading an ``antsim sweep --export`` folder (``trials.csv``, ``pareto.csv``) into the ``SweepInfo``
the export draws its own figures from (``antsim.dse.figures``), so both draw the same Pareto figure.

The exporter is another module's (``antsim.dse.export``: ``number``, ``state``, ``param.*``,
``objective.*``, ``feasible``, ``metric.*`` …); this reader is deliberately tolerant: it needs a
``number`` column and at least two numeric objective columns (``objective.*``, else metric names of
``antsim.dse.metrics`` such as ``time_s``/``energy_j``/``area_mm2``, else Optuna's ``values_*``); a name
an earlier version used (``edp_js``) is read as today's (``edp``). It takes feasibility from a
boolean-ish column when there is one (else every trial with all objectives is feasible), and the Pareto
set from ``pareto.csv`` when present (else it computes the non-dominated feasible trials itself, with
the directions ``pareto.json`` records, else each metric's own direction, minimise for other names).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from antsim.dse.figures import DesignMark, SweepInfo, evaluator_text
from antsim.dse.metrics import METRICS, OBJECTIVE_PREFIX, Direction, canonical_name
from antsim.dse.pareto import pareto_mask
from antsim.errors import AntsimError

__all__ = ["DesignMark", "SweepInfo", "_get_sweep_info", "check_sweep_workload", "design_marks", "sweep_rows"]

_FEASIBLE_COLUMNS = ("feasible", "is_feasible", "user_attrs_feasible", "constraints_satisfied")
_TRUE = {"true", "1", "yes", "y", "t"}


def _get_sweep_info(folder: str | Path) -> SweepInfo:
    """Trials, feasibility and Pareto set of an exported sweep.

    Raises:
        AntsimError: the folder or ``trials.csv`` is missing, or it lacks ``number`` / two objectives.
    """
    folder = Path(folder)
    trials_path = folder / "trials.csv"
    if not trials_path.is_file():
        raise AntsimError(f"sweep export {folder}: no trials.csv there (not a sweep's export folder)",
                          subject="sweep")
    header, rows = _read_csv(trials_path)
    if "number" not in header:
        raise AntsimError(f"{trials_path}: no 'number' column; columns: {', '.join(header)}")
    columns = _objective_columns(header, rows)
    if len(columns) < 2:
        raise AntsimError(f"{trials_path}: needs two objective columns among {', '.join(METRICS)} or values_*;"
                          f" found {columns or 'none'}")
    numbers = np.array([int(float(r["number"])) for r in rows], dtype=np.int64)
    values = np.array([[_float(r.get(c)) for c in columns] for r in rows], dtype=float).reshape(len(rows), -1)
    feasible = _feasibility(header, rows) & ~np.isnan(values).any(axis=1)
    names = tuple(canonical_name(c.removeprefix(OBJECTIVE_PREFIX)) for c in columns)
    directions = _directions(folder / "pareto.json", names)
    pareto = _pareto_from_file(folder / "pareto.csv", numbers)
    if pareto is None:  # no exported front: compute it
        pareto = pareto_mask(values, directions, feasible)
    return SweepInfo(str(folder), names, directions, numbers, values, feasible, pareto & feasible,
                     _evaluator(folder))


def _directions(path: Path, names: tuple[str, ...]) -> tuple[Direction, ...]:
    """Each objective's direction as the export's ``pareto.json`` records it (its ``objectives`` map),
    else the metric's own (``antsim.dse.metrics``), else minimise."""
    try:
        recorded = json.loads(path.read_text(encoding="utf-8")).get("objectives")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        recorded = None
    recorded = {canonical_name(k): v for k, v in recorded.items()} if isinstance(recorded, dict) else {}
    out: list[Direction] = []
    for name in names:
        metric = METRICS.get(name)
        given = recorded.get(name)
        out.append(given if given in ("minimize", "maximize") else metric.direction if metric else "minimize")
    return tuple(out)


def _evaluator(folder: Path) -> str:
    """``simulator, fast fidelity`` from the export's summary.json, '' when it does not record one."""
    try:
        recorded = json.loads((folder / "summary.json").read_text(encoding="utf-8")).get("evaluator")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return ""
    if not isinstance(recorded, dict) or not recorded.get("name"):
        return ""
    return evaluator_text(str(recorded["name"]), recorded.get("fidelity"))


def design_marks(info: SweepInfo, summaries: Sequence[Any]) -> tuple[DesignMark, ...]:
    """The report's designs (``DesignSummary``: ``design``, ``time_s``, ``energy_j``, ``area_mm2``) on the
    sweep's objectives; a design with none of them is left out."""
    marks = []
    for summary in summaries:
        known = {"time_s": summary.time_s, "energy_j": summary.energy_j, "area_mm2": summary.area_mm2}
        if known["time_s"] is not None and known["energy_j"] is not None:
            known["edp"] = known["time_s"] * known["energy_j"]
        values = tuple(float(known[o]) if known.get(o) is not None else math.nan for o in info.objectives)
        if any(math.isfinite(v) for v in values):
            marks.append(DesignMark(summary.design, values))
    return tuple(marks)


def _read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        rows = [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in reader]
        header = [h.strip() for h in (reader.fieldnames or [])]
    return header, rows


def _objective_columns(header: list[str], rows: list[dict[str, str]]) -> list[str]:
    """``objective.<name>`` columns (antsim's exporter), else known names, else Optuna's ``values_*``."""
    exported = [c for c in header if c.startswith(OBJECTIVE_PREFIX)]
    if len(exported) >= 2:
        return exported
    by_name: dict[str, str] = {}
    for column in header:  # edp_js read as edp; the first column of a name wins
        by_name.setdefault(canonical_name(column), column)
    named = [by_name[name] for name in METRICS if name in by_name]  # in the table's order
    if len(named) >= 2:
        return named
    generic = [c for c in header if c.startswith("values_") or c == "value"]
    numeric = [c for c in generic if any(math.isfinite(_float(r.get(c))) for r in rows)]
    return named + numeric


def _feasibility(header: list[str], rows: list[dict[str, str]]) -> np.ndarray:
    column = next((c for c in _FEASIBLE_COLUMNS if c in header), None)
    if column is not None:
        return np.array([r.get(column, "").lower() in _TRUE for r in rows], dtype=bool)
    if "state" in header:
        return np.array([r.get("state", "").upper() in ("COMPLETE", "TRIALSTATE.COMPLETE") for r in rows], dtype=bool)
    return np.ones(len(rows), dtype=bool)


def _pareto_from_file(path: Path, numbers: np.ndarray) -> np.ndarray | None:
    if not path.is_file():
        return None
    header, rows = _read_csv(path)
    if "number" not in header:
        return None
    chosen = {int(float(r["number"])) for r in rows if r.get("number")}
    return np.isin(numbers, sorted(chosen))


def _float(text: str | None) -> float:
    try:
        return float(text) if text not in (None, "") else math.nan
    except ValueError:
        return math.nan


def sweep_rows(info: SweepInfo, marks: Sequence[DesignMark] = ()) -> list[list[object]]:
    """CSV rows (header first) behind the sweep figures; the report's own designs last, by name."""
    rows: list[list[object]] = [["number", *info.objectives, "feasible", "pareto"]]
    for t, number in enumerate(info.numbers):
        rows.append([int(number), *info.values[t], bool(info.feasible[t]), bool(info.pareto[t])])
    for mark in marks:
        rows.append([mark.design, *mark.values, "", ""])
    return rows


def _shape(layer: Any) -> tuple:
    return tuple(layer.get(k) for k in ("name", "N", "C", "K", "H", "W", "R", "S", "stride", "pad")) \
        if isinstance(layer, dict) else (layer,)


def check_sweep_workload(folder: str | Path, workload: dict[str, Any]) -> None:
    """Refuse a sweep export whose trials ran another workload than the report's (layers with their batch,
    or phases), as its ``summary.json`` records it; an export without the record is accepted as is.

    Raises:
        AntsimError: one line naming the folder and both workloads.
    """
    path = Path(folder) / "summary.json"
    try:
        recorded = json.loads(path.read_text(encoding="utf-8")).get("workload")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return
    if not isinstance(recorded, dict) or not isinstance(workload.get("layers"), list):
        return
    mine = [_shape(layer) for layer in workload["layers"]]
    theirs = [_shape(layer) for layer in recorded.get("layers") or []]
    phases_differ = recorded.get("phases") is not None and workload.get("phases") is not None \
        and list(recorded["phases"]) != list(workload["phases"])
    if mine != theirs or phases_differ:
        def describe(name: Any, layers: list[tuple], phases: Any) -> str:
            batch = sorted({layer[1] for layer in layers if len(layer) > 1})
            return f"{name} ({len(layers)} layers, batch {'/'.join(map(str, batch)) or '?'}, phases {phases})"

        ran = describe(recorded.get("name"), theirs, recorded.get("phases"))
        raise AntsimError(f"sweep export {folder}: its trials ran {ran}, not the report's"
                          f" {describe(workload.get('network'), mine, workload.get('phases'))}", subject="sweep")
