"""Sweep figures: figure data (``_get_<fig>_info`` → NamedTuple, testable) apart from thin matplotlib renderers.

Figures: ``pareto.png`` (2-D projections of every objective pair, Pareto points highlighted),
``tradeoff.png`` (area vs energy coloured by time), ``importance.png`` (parameter importances per objective
from Optuna's default evaluator; a note instead of bars when they cannot be computed, e.g. with too few
trials) and
``history.png`` (each objective over trial number). matplotlib is imported lazily, and only its
``Figure`` (never pyplot or ``matplotlib.use``), so drawing leaves the caller's backend as it was.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from antsim.dse.pareto import pareto_trials
from antsim.dse.spec import SweepSpec


class ParetoInfo(NamedTuple):
    objectives: list[str]
    values: np.ndarray  # (n feasible complete trials, n objectives)
    numbers: list[int]
    on_front: np.ndarray  # bool per row


class TradeoffInfo(NamedTuple):
    area_mm2: np.ndarray
    energy_j: np.ndarray
    time_s: np.ndarray
    on_front: np.ndarray


class ImportanceInfo(NamedTuple):
    objectives: list[str]
    importances: list[dict[str, float]]  # one per objective ({} when not computable)
    notes: list[str]  # why an importance could not be computed ('' when it could)


class HistoryInfo(NamedTuple):
    objectives: list[str]
    numbers: np.ndarray
    values: np.ndarray  # (n complete trials, n objectives)
    feasible: np.ndarray


def _feasible(trials: list[FrozenTrial]) -> list[FrozenTrial]:
    return [t for t in trials if t.state == TrialState.COMPLETE and t.user_attrs.get("feasible")]


def _get_pareto_info(spec: SweepSpec, trials: list[FrozenTrial]) -> ParetoInfo:
    feasible = _feasible(trials)
    front = {t.number for t in pareto_trials(spec, trials)}
    values = np.array([t.values for t in feasible], dtype=float).reshape(len(feasible), len(spec.objectives))
    return ParetoInfo(list(spec.objectives), values, [t.number for t in feasible],
                      np.array([t.number in front for t in feasible], dtype=bool))


def _get_tradeoff_info(spec: SweepSpec, trials: list[FrozenTrial]) -> TradeoffInfo:
    feasible = [t for t in _feasible(trials) if "metrics" in t.user_attrs]
    front = {t.number for t in pareto_trials(spec, trials)}

    def col(name: str) -> np.ndarray:
        return np.array([t.user_attrs["metrics"].get(name, math.nan) for t in feasible], dtype=float)

    return TradeoffInfo(col("area_mm2"), col("energy_j"), col("time_s"),
                        np.array([t.number in front for t in feasible], dtype=bool))


def _oriented(sign: float, index: int) -> Callable[[FrozenTrial], float]:
    """Objective ``index`` of a trial, times ``sign`` (the importance target for one objective)."""
    return lambda trial: sign * trial.values[index]


def _get_importance_info(spec: SweepSpec, study: optuna.Study) -> ImportanceInfo:
    importances: list[dict[str, float]] = []
    notes: list[str] = []
    complete = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
    signs = [1.0 if d == "minimize" else -1.0 for d in spec.directions]
    for i, _name in enumerate(spec.objectives):
        if len(complete) < 2 or len(spec.space) < 1:
            importances.append({})
            notes.append(f"not computable: {len(complete)} complete trial(s)")
            continue
        try:  # the evaluator ranks params by how they lower the target: orient maximised objectives
            imp = optuna.importance.get_param_importances(study, target=_oriented(signs[i], i))
            importances.append({k: float(v) for k, v in imp.items()})
            notes.append("")
        except Exception as exc:  # importance evaluators fail in several ways with few or constant trials
            importances.append({})
            notes.append(f"not computable: {type(exc).__name__}: {exc}".splitlines()[0][:120])
    return ImportanceInfo(list(spec.objectives), importances, notes)


def _get_history_info(spec: SweepSpec, trials: list[FrozenTrial]) -> HistoryInfo:
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    values = np.array([t.values for t in complete], dtype=float).reshape(len(complete), len(spec.objectives))
    return HistoryInfo(list(spec.objectives), np.array([t.number for t in complete]), values,
                       np.array([bool(t.user_attrs.get("feasible")) for t in complete], dtype=bool))


def _figure(width: float, height: float) -> Any:
    """A figure outside pyplot: saved through its own Agg canvas, so the user's backend is never touched."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _finish(fig: Any, path: Path) -> None:
    """Lay out and write one figure (every sweep figure is saved the same way)."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _draw_pareto(info: ParetoInfo, path: Path) -> None:
    pairs = list(itertools.combinations(range(len(info.objectives)), 2)) or [(0, 0)]
    fig = _figure(4.5 * len(pairs), 4)
    axes = fig.subplots(1, len(pairs), squeeze=False)
    for ax, (i, j) in zip(axes[0], pairs, strict=True):
        v = info.values
        ax.scatter(v[~info.on_front, i], v[~info.on_front, j], s=12, c="0.7", label="feasible")
        ax.scatter(v[info.on_front, i], v[info.on_front, j], s=24, c="C3", label="Pareto")
        ax.set_xlabel(info.objectives[i])
        ax.set_ylabel(info.objectives[j])
        ax.legend(fontsize=8)
    fig.suptitle("Pareto front projections")
    _finish(fig, path)


def _draw_tradeoff(info: TradeoffInfo, path: Path) -> None:
    fig = _figure(5.5, 4.2)
    ax = fig.subplots()
    sc = ax.scatter(info.area_mm2, info.energy_j, c=info.time_s, s=14, cmap="viridis")
    ax.scatter(info.area_mm2[info.on_front], info.energy_j[info.on_front], s=60, facecolors="none",
               edgecolors="C3", label="Pareto")
    fig.colorbar(sc, ax=ax, label="time_s")
    ax.set_xlabel("area_mm2")
    ax.set_ylabel("energy_j")
    ax.legend(fontsize=8)
    ax.set_title("area / energy / time trade-off")
    _finish(fig, path)


def _draw_importance(info: ImportanceInfo, path: Path) -> None:
    n = len(info.objectives)
    fig = _figure(4.5 * n, 3.5)
    axes = fig.subplots(1, n, squeeze=False)
    for ax, name, imp, note in zip(axes[0], info.objectives, info.importances, info.notes, strict=True):
        if imp:
            keys = list(imp)[::-1]
            ax.barh(keys, [imp[k] for k in keys], color="C0")
        else:
            ax.text(0.5, 0.5, note, ha="center", va="center", wrap=True, fontsize=8, transform=ax.transAxes)
            ax.set_axis_off()
        ax.set_title(f"importance for {name}")
    _finish(fig, path)


def _draw_history(info: HistoryInfo, path: Path) -> None:
    n = len(info.objectives)
    fig = _figure(4.5 * n, 3.5)
    axes = fig.subplots(1, n, squeeze=False)
    for i, ax in enumerate(axes[0]):
        ax.scatter(info.numbers[info.feasible], info.values[info.feasible, i], s=10, c="C0", label="feasible")
        ax.scatter(info.numbers[~info.feasible], info.values[~info.feasible, i], s=10, c="C1", marker="x",
                   label="constraint violated")
        ax.set_xlabel("trial")
        ax.set_ylabel(info.objectives[i])
        ax.legend(fontsize=8)
    fig.suptitle("optimisation history")
    _finish(fig, path)


def write_figures(spec: SweepSpec, study: optuna.Study, trials: list[FrozenTrial], folder: Path) -> list[Path]:
    """Render the four figures into ``folder``; return their paths."""
    jobs: list[tuple[str, Callable[[Any, Path], None], Any]] = [
        ("pareto.png", _draw_pareto, _get_pareto_info(spec, trials)),
        ("tradeoff.png", _draw_tradeoff, _get_tradeoff_info(spec, trials)),
        ("importance.png", _draw_importance, _get_importance_info(spec, study)),
        ("history.png", _draw_history, _get_history_info(spec, trials))]
    paths = []
    for name, draw, info in jobs:
        tmp = folder / f".{name}.tmp.png"
        draw(info, tmp)
        tmp.replace(folder / name)
        paths.append(folder / name)
    return paths
