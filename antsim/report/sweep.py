"""Reading an ``antsim sweep --export`` folder (``trials.csv``, ``pareto.csv``) for the report.

The exporter is another module's (``antsim.dse.export``: ``number``, ``state``, ``param.*``,
``objective.*``, ``feasible``, ``metric.*`` …); this reader is deliberately tolerant: it needs a
``number`` column and at least two numeric objective columns (``objective.*``, else known names such as
``time_s``/``energy_j``/``area_mm2``, else Optuna's ``values_*``), takes feasibility from a
boolean-ish column when there is one (else every trial with all objectives is feasible), and takes
the Pareto set from ``pareto.csv`` when present (else it computes the non-dominated feasible trials
itself, all objectives minimised).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from antsim.errors import AntsimError

# Objective columns recognised by name (all minimised), in display order, with their axis labels.
OBJECTIVES: dict[str, str] = {
    "time_s": "training-step time (s)",
    "energy_j": "energy per step (J)",
    "area_mm2": "area (mm²)",
    "edp_js": "energy-delay product (J·s)",
    "cycles": "cycles",
}
_FEASIBLE_COLUMNS = ("feasible", "is_feasible", "user_attrs_feasible", "constraints_satisfied")
_TRUE = {"true", "1", "yes", "y", "t"}


class SweepInfo(NamedTuple):
    """Trials of a sweep: ``values[t, o]`` for ``objectives[o]``; boolean masks per trial."""

    source: str
    objectives: tuple[str, ...]
    numbers: np.ndarray
    values: np.ndarray
    feasible: np.ndarray
    pareto: np.ndarray
    evaluator: str = ""  # what priced the trials (summary.json's evaluator name and fidelity), '' if unknown

    def pairs(self) -> list[tuple[int, int]]:
        """Objective index pairs of the trade-off plots."""
        return list(combinations(range(len(self.objectives)), 2))


def _get_sweep_info(folder: str | Path) -> SweepInfo:
    """Trials, feasibility and Pareto set of an exported sweep.

    Raises:
        AntsimError: the folder or ``trials.csv`` is missing, or it lacks ``number`` / two objectives.
    """
    folder = Path(folder)
    trials_path = folder / "trials.csv"
    if not trials_path.is_file():
        raise AntsimError(f"--sweep {folder}: no trials.csv there (expected 'antsim sweep --export' output)")
    header, rows = _read_csv(trials_path)
    if "number" not in header:
        raise AntsimError(f"{trials_path}: no 'number' column; columns: {', '.join(header)}")
    objectives = _objective_columns(header, rows)
    if len(objectives) < 2:
        raise AntsimError(f"{trials_path}: needs two objective columns among {', '.join(OBJECTIVES)} or values_*;"
                          f" found {objectives or 'none'}")
    numbers = np.array([int(float(r["number"])) for r in rows], dtype=np.int64)
    values = np.array([[_float(r.get(o)) for o in objectives] for r in rows], dtype=float).reshape(len(rows), -1)
    feasible = _feasibility(header, rows) & np.all(np.isfinite(values), axis=1)
    pareto = _pareto_from_file(folder / "pareto.csv", numbers)
    if pareto is None:  # no exported front: compute it, every objective minimised
        pareto = pareto_mask(values, feasible)
    names = tuple(o.removeprefix("objective.") for o in objectives)
    return SweepInfo(str(folder), names, numbers, values, feasible, pareto & feasible, _evaluator(folder))


def _evaluator(folder: Path) -> str:
    """``simulator, fast fidelity`` from the export's summary.json, '' when it does not record one."""
    try:
        recorded = json.loads((folder / "summary.json").read_text(encoding="utf-8")).get("evaluator")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return ""
    if not isinstance(recorded, dict) or not recorded.get("name"):
        return ""
    fidelity = recorded.get("fidelity")
    return f"{recorded['name']}{f', {fidelity} fidelity' if fidelity else ''}"


class DesignMark(NamedTuple):
    """One of the report's own designs placed among the sweep's trials: its value of each objective."""

    design: str
    values: tuple[float, ...]  # per SweepInfo.objectives; NaN where the design has no such value (a GPU's area)


def design_marks(info: SweepInfo, summaries: Sequence[Any]) -> tuple[DesignMark, ...]:
    """The report's designs (``DesignSummary``: ``design``, ``time_s``, ``energy_j``, ``area_mm2``) on the
    sweep's objectives; a design with none of them is left out."""
    marks = []
    for summary in summaries:
        known = {"time_s": summary.time_s, "energy_j": summary.energy_j, "area_mm2": summary.area_mm2}
        if known["time_s"] is not None and known["energy_j"] is not None:
            known["edp_js"] = known["time_s"] * known["energy_j"]
        values = tuple(float(known[o]) if known.get(o) is not None else math.nan for o in info.objectives)
        if any(math.isfinite(v) for v in values):
            marks.append(DesignMark(summary.design, values))
    return tuple(marks)


def pareto_mask(values: np.ndarray, feasible: np.ndarray) -> np.ndarray:
    """Non-dominated feasible rows of ``values`` (all columns minimised)."""
    mask = np.zeros(len(values), dtype=bool)
    candidates = np.flatnonzero(feasible)
    for i in candidates:
        others = values[candidates]
        dominated = np.any(np.all(others <= values[i], axis=1) & np.any(others < values[i], axis=1))
        mask[i] = not dominated
    return mask


def _read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        rows = [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in reader]
        header = [h.strip() for h in (reader.fieldnames or [])]
    return header, rows


def _objective_columns(header: list[str], rows: list[dict[str, str]]) -> list[str]:
    """``objective.<name>`` columns (antsim's exporter), else known names, else Optuna's ``values_*``."""
    exported = [c for c in header if c.startswith("objective.")]
    if len(exported) >= 2:
        return exported
    named = [c for c in OBJECTIVES if c in header]
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
        raise AntsimError(f"--sweep {folder}: its trials ran {ran}, not the report's"
                          f" {describe(workload.get('network'), mine, workload.get('phases'))}")
