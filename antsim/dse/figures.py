"""Sweep figures: figure data (``_get_<fig>_info`` → NamedTuple, testable) apart from thin matplotlib renderers.

Figures: ``pareto.png`` (2-D projections of every objective pair, Pareto points highlighted),
``tradeoff.png`` (area vs energy coloured by time), ``importance.png`` (parameter importances per objective
from PED-ANOVA, named in the figure, with a warning below ``IMPORTANCE_MIN_TRIALS`` and a note instead of
bars when they cannot be computed) and ``history.png`` (each objective over trial number). Axes read in
units a person reads (``ms``, ``mJ``, ``mm²``: ``readable_axis``), on a log scale where the values span
more than two decades. matplotlib is imported lazily, and only its
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

# Stored unit and words of the objectives/metrics antsim's evaluators report (antsim.dse.evaluators).
_UNITS: dict[str, tuple[str, str]] = {
    "time_s": ("s", "time per step"), "energy_j": ("J", "energy per step"), "area_mm2": ("mm²", "area"),
    "edp_js": ("J·s", "energy-delay product"), "cycles": ("", "cycles"), "rcp_fraction": ("", "RCP fraction"),
}
_PREFIXES = ((1e-15, "f"), (1e-12, "p"), (1e-9, "n"), (1e-6, "µ"), (1e-3, "m"), (1.0, ""), (1e3, "k"))
LOG_SPAN = 100.0  # a log axis once the largest positive value is more than 100x the smallest (two decades)

#: PED-ANOVA (Watanabe et al., "PED-ANOVA: Efficiently Quantifying Hyperparameter Importance in Arbitrary
#: Subspaces", IJCAI 2023; Optuna's PedAnovaImportanceEvaluator, its default since Optuna 5) with Optuna's
#: default target quantile: the importance of a parameter is how far its distribution among the best 10 %
#: of trials departs from its distribution among all. Named explicitly so the figure says which ran.
IMPORTANCE_QUANTILE = 0.1
IMPORTANCE_EVALUATOR = "PED-ANOVA (top 10 % of trials vs all)"
#: Below this many complete trials the best-10 % set holds fewer than 5 trials, and a Parzen estimator of
#: under 5 points ranks parameters largely by chance (our threshold: 5 / IMPORTANCE_QUANTILE).
IMPORTANCE_MIN_TRIALS = 50


class Axis(NamedTuple):
    """Divide the stored values by ``divisor`` to plot them under ``label``; ``log``: a log scale."""

    divisor: float
    label: str
    log: bool


def readable_axis(name: str, values: np.ndarray) -> Axis:
    """The axis of objective/metric ``name``: seconds and joules with the SI prefix that puts the largest
    value between 1 and 1000 (``ms``, ``µJ``), area in mm², a log scale where the values span decades."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    unit, words = _UNITS.get(name, ("", name))
    log = bool(finite.size >= 2 and np.all(finite > 0) and finite.max() > LOG_SPAN * finite.min())
    suffix = ", log scale" if log else ""
    if unit in ("s", "J", "J·s") and finite.size and np.abs(finite).max() > 0:
        top = float(np.abs(finite).max())
        divisor, prefix = next(((f, p) for f, p in reversed(_PREFIXES) if top >= f), _PREFIXES[0])
        return Axis(divisor, f"{words} ({prefix}{unit}){suffix}", log)
    return Axis(1.0, f"{words} ({unit}){suffix}" if unit else f"{words}{suffix}", log)


def _set_axis(ax: Any, which: str, axis: Axis) -> None:
    """Label and scale one axis; plain tick labels (no ``1e-5`` offset text) on a linear one."""
    getattr(ax, f"set_{which}label")(axis.label)
    if axis.log:
        getattr(ax, f"set_{which}scale")("log")
    else:
        ax.ticklabel_format(axis=which, style="plain", useOffset=False)


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
    notes: list[str]  # why an importance could not be computed, or a warning ('' when neither)
    evaluator: str = IMPORTANCE_EVALUATOR
    n_trials: int = 0  # complete trials the importances were computed from


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
    few = (f"warning: {len(complete)} complete trials, under {IMPORTANCE_MIN_TRIALS}: the best 10 % hold"
           f" {math.ceil(IMPORTANCE_QUANTILE * len(complete))}, so the ranking is largely chance"
           if len(complete) < IMPORTANCE_MIN_TRIALS else "")
    for i, _name in enumerate(spec.objectives):
        if len(complete) < 2 or len(spec.space) < 1:
            importances.append({})
            notes.append(f"not computable: {len(complete)} complete trial(s)")
            continue
        try:  # the evaluator ranks params by how they lower the target: orient maximised objectives
            evaluator = optuna.importance.PedAnovaImportanceEvaluator(target_quantile=IMPORTANCE_QUANTILE)
            imp = optuna.importance.get_param_importances(study, evaluator=evaluator, target=_oriented(signs[i], i))
            importances.append({k: float(v) for k, v in imp.items()})
            notes.append(few)
        except Exception as exc:  # importance evaluators fail in several ways with few or constant trials
            importances.append({})
            notes.append(f"not computable: {type(exc).__name__}: {exc}".splitlines()[0][:120])
    return ImportanceInfo(list(spec.objectives), importances, notes, IMPORTANCE_EVALUATOR, len(complete))


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
        ax_i, ax_j = readable_axis(info.objectives[i], v[:, i]), readable_axis(info.objectives[j], v[:, j])
        x, y = v[:, i] / ax_i.divisor, v[:, j] / ax_j.divisor
        ax.scatter(x[~info.on_front], y[~info.on_front], s=12, c="0.7", label="feasible")
        ax.scatter(x[info.on_front], y[info.on_front], s=24, c="C3", label="Pareto")
        _set_axis(ax, "x", ax_i)
        _set_axis(ax, "y", ax_j)
        ax.legend(fontsize=8)
    fig.suptitle("Pareto front projections")
    _finish(fig, path)


def _draw_tradeoff(info: TradeoffInfo, path: Path) -> None:
    fig = _figure(5.5, 4.2)
    ax = fig.subplots()
    area, energy, time = (readable_axis("area_mm2", info.area_mm2), readable_axis("energy_j", info.energy_j),
                          readable_axis("time_s", info.time_s))
    x, y = info.area_mm2 / area.divisor, info.energy_j / energy.divisor
    sc = ax.scatter(x, y, c=info.time_s / time.divisor, s=14, cmap="viridis")
    ax.scatter(x[info.on_front], y[info.on_front], s=60, facecolors="none", edgecolors="C3", label="Pareto")
    fig.colorbar(sc, ax=ax, label=time.label.replace(", log scale", ""))
    _set_axis(ax, "x", area)
    _set_axis(ax, "y", energy)
    ax.legend(fontsize=8)
    ax.set_title("area / energy / time trade-off")
    _finish(fig, path)


def _draw_importance(info: ImportanceInfo, path: Path) -> None:
    n = len(info.objectives)
    fig = _figure(4.5 * n, 3.9)
    axes = fig.subplots(1, n, squeeze=False)
    warnings = sorted({note for note in info.notes if note.startswith("warning:")})
    for ax, name, imp, note in zip(axes[0], info.objectives, info.importances, info.notes, strict=True):
        if imp:
            keys = list(imp)[::-1]
            ax.barh(keys, [imp[k] for k in keys], color="C1" if note else "C0")
            ax.set_xlabel("importance (shares sum to 1)")
        else:
            ax.text(0.5, 0.5, note, ha="center", va="center", wrap=True, fontsize=8, transform=ax.transAxes)
            ax.set_axis_off()
        ax.set_title(f"importance for {_UNITS.get(name, ('', name))[1]}", fontsize=10)
    title = f"Parameter importance: {info.evaluator}, {info.n_trials} complete trials"
    fig.suptitle("\n".join([title, *warnings]), fontsize=10, color="C3" if warnings else "black")
    _finish(fig, path)


def _draw_history(info: HistoryInfo, path: Path) -> None:
    n = len(info.objectives)
    fig = _figure(4.5 * n, 3.5)
    axes = fig.subplots(1, n, squeeze=False)
    for i, ax in enumerate(axes[0]):
        axis = readable_axis(info.objectives[i], info.values[:, i])
        y = info.values[:, i] / axis.divisor
        ax.scatter(info.numbers[info.feasible], y[info.feasible], s=10, c="C0", label="feasible")
        ax.scatter(info.numbers[~info.feasible], y[~info.feasible], s=10, c="C1", marker="x",
                   label="constraint violated")
        ax.set_xlabel("trial")
        _set_axis(ax, "y", axis)
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
