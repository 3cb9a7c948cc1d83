"""Sweep figures, one stack for the export and the report: a ``SweepInfo`` (every trial's objectives,
feasibility and Pareto membership) and the renderers that draw it.

``antsim sweep --export`` builds the info from the study (``sweep_info``) and writes ``pareto.png`` (the
first two objectives, the Pareto set joined for two objectives or coloured by the third),
``tradeoff.png`` (every pair of objectives), ``importance.png`` (parameter importances per objective
from PED-ANOVA, named in the figure, with a warning below ``IMPORTANCE_MIN_TRIALS`` and a note instead
of bars when they cannot be computed) and ``history.png`` (each objective over trial number).
``antsim report --sweep`` reads the exported folder into the same info (``antsim.report.sweep``) and
draws its Pareto and trade-off figures with the same renderers, its own designs marked. Axes read in
units a person reads (``antsim.dse.metrics.readable_axis``). matplotlib is imported lazily, and only
its ``Figure`` (never pyplot or ``matplotlib.use``), so drawing leaves the caller's backend as it was.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import combinations
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from antsim.dse import attrs
from antsim.dse.metrics import Axis, Direction, metric_label, readable_axis
from antsim.dse.pareto import direction_sign, pareto_mask
from antsim.dse.spec import SweepSpec

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: PED-ANOVA (Watanabe et al., "PED-ANOVA: Efficiently Quantifying Hyperparameter Importance in Arbitrary
#: Subspaces", IJCAI 2023; Optuna's PedAnovaImportanceEvaluator, its default since Optuna 5) with Optuna's
#: default target quantile: the importance of a parameter is how far its distribution among the best 10 %
#: of trials departs from its distribution among all. Named explicitly so the figure says which ran.
IMPORTANCE_QUANTILE = 0.1
IMPORTANCE_EVALUATOR = "PED-ANOVA (top 10 % of trials vs all)"
#: Below this many complete trials the best-10 % set holds fewer than 5 trials, and a Parzen estimator of
#: under 5 points ranks parameters largely by chance (our threshold: 5 / IMPORTANCE_QUANTILE).
IMPORTANCE_MIN_TRIALS = 50
PNG_DPI = 110  # ~1000 px across a 9-inch figure: readable on a laptop page, a few hundred kB per figure
_MARKERS = ("*", "P", "D", "X", "^", "v", "s", "p")


class SweepInfo(NamedTuple):
    """Every trial of a sweep: ``values[t, o]`` of ``objectives[o]`` (NaN where trial ``t`` has none),
    improving toward ``directions[o]``; boolean masks per trial (``pareto`` ⊆ ``feasible``)."""

    source: str
    objectives: tuple[str, ...]
    directions: tuple[Direction, ...]
    numbers: np.ndarray
    values: np.ndarray
    feasible: np.ndarray
    pareto: np.ndarray
    evaluator: str = ""  # what priced the trials ('simulator, fast fidelity'), '' if unknown

    def pairs(self) -> list[tuple[int, int]]:
        """Objective index pairs of the trade-off plots."""
        return list(combinations(range(len(self.objectives)), 2))


class DesignMark(NamedTuple):
    """A design placed among the sweep's trials: its value of each objective."""

    design: str
    values: tuple[float, ...]  # per SweepInfo.objectives; NaN where the design has no such value (a GPU's area)


class ImportanceInfo(NamedTuple):
    objectives: list[str]
    importances: list[dict[str, float]]  # one per objective ({} when not computable)
    notes: list[str]  # why an importance could not be computed, or a warning ('' when neither)
    evaluator: str = IMPORTANCE_EVALUATOR
    n_trials: int = 0  # complete trials the importances were computed from


def evaluator_text(name: str, fidelity: str | None) -> str:
    """``simulator, fast fidelity``: what priced a sweep's trials, as the figures and the report name it."""
    return f"{name}{f', {fidelity} fidelity' if fidelity else ''}"


def sweep_info(spec: SweepSpec, trials: Sequence[FrozenTrial], source: str = "") -> SweepInfo:
    """Every trial of a study as the export's ``trials.csv`` records it (feasible: a complete trial the
    constraints accept, with every objective a number); the Pareto set by the spec's directions."""
    n = len(spec.objectives)
    values = np.array([t.values if t.values is not None else [math.nan] * n for t in trials],
                      dtype=float).reshape(len(trials), n)
    flags = np.array([t.state == TrialState.COMPLETE and attrs.is_feasible(t) for t in trials], dtype=bool)
    feasible = flags & ~np.isnan(values).any(axis=1)
    return SweepInfo(source, tuple(spec.objectives), tuple(spec.directions),
                     np.array([t.number for t in trials], dtype=np.int64), values, feasible,
                     pareto_mask(values, spec.directions, feasible),
                     evaluator_text(spec.evaluator.name, spec.fidelity))


def _get_importance_info(spec: SweepSpec, study: optuna.Study) -> ImportanceInfo:
    importances: list[dict[str, float]] = []
    notes: list[str] = []
    complete = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
    signs = [direction_sign(d) for d in spec.directions]
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
            imp = optuna.importance.get_param_importances(study, evaluator=evaluator, target=_target(signs[i], i))
            importances.append({k: float(v) for k, v in imp.items()})
            notes.append(few)
        except Exception as exc:  # importance evaluators fail in several ways with few or constant trials
            importances.append({})
            notes.append(f"not computable: {type(exc).__name__}: {exc}".splitlines()[0][:120])
    return ImportanceInfo(list(spec.objectives), importances, notes, IMPORTANCE_EVALUATOR, len(complete))


def _target(sign: float, index: int) -> Callable[[FrozenTrial], float]:
    """Objective ``index`` of a trial, times ``sign`` (the importance target for one objective)."""
    return lambda trial: sign * trial.values[index]


def new_figure(width: float, height: float, ncols: int = 1, **kwargs: Any) -> tuple[Figure, Any]:
    """A figure outside pyplot (its own Agg canvas: the user's backend is never touched) and its axes."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    return fig, fig.subplots(1, ncols, **kwargs)


def write_png(fig: Figure, target: str | Path | IO[bytes]) -> None:
    """PNG without a version string, so the same figure gives the same bytes wherever it is saved."""
    fig.savefig(target, format="png", metadata={"Software": None}, dpi=PNG_DPI)


def _set_axis(ax: Axes, which: Literal["x", "y"], axis: Axis) -> None:
    """Label and scale one axis; plain tick labels (no ``1e-5`` offset text) on a linear one."""
    getattr(ax, f"set_{which}label")(axis.label)
    if axis.log:
        getattr(ax, f"set_{which}scale")("log")
    else:
        ax.ticklabel_format(axis=which, style="plain", useOffset=False)


def _axis(info: SweepInfo, index: int, marks: Sequence[DesignMark]) -> Axis:
    """The axis of objective ``index`` over the trials and the marked designs together."""
    values = np.concatenate([info.values[:, index], [m.values[index] for m in marks]])
    return readable_axis(info.objectives[index], values)


def _draw_marks(ax: Axes, marks: Sequence[DesignMark], i: int, j: int, axes: tuple[Axis, Axis]) -> None:
    """The marked designs as labelled black markers where both their values are known."""
    for k, mark in enumerate(marks):
        mx, my = mark.values[i] / axes[0].divisor, mark.values[j] / axes[1].divisor
        if np.isfinite(mx) and np.isfinite(my):
            ax.scatter([mx], [my], marker=_MARKERS[k % len(_MARKERS)], s=90, color="black", zorder=4,
                       label=f"report: {mark.design}")
            ax.annotate(mark.design, (mx, my), xytext=(5, 5), textcoords="offset points", fontsize=8)


def _scatter_pair(ax: Axes, info: SweepInfo, pair: tuple[int, int], third: int | None,
                  marks: Sequence[DesignMark] = ()) -> Any:
    """Trials on objectives ``pair`` (x, y); the Pareto set joined by a line when the sweep has two
    objectives, filled by objective ``third`` when one is given (returns that scatter for a colour bar)."""
    i, j = pair
    ax_x, ax_y = _axis(info, i, marks), _axis(info, j, marks)
    x, y = info.values[:, i] / ax_x.divisor, info.values[:, j] / ax_y.divisor
    feasible, pareto = info.feasible & ~info.pareto, info.pareto
    infeasible = ~info.feasible & np.isfinite(x) & np.isfinite(y)
    ax.scatter(x[infeasible], y[infeasible], marker="x", s=14, color="#BBBBBB", label="infeasible")
    ax.scatter(x[feasible], y[feasible], s=14, color="#56B4E9", alpha=0.7, label="feasible")
    if len(info.objectives) == 2:
        order = np.argsort(x[pareto])
        ax.plot(x[pareto][order], y[pareto][order], "-", color="#D55E00", linewidth=1)
    fill: dict[str, Any] = {"color": "#D55E00"}
    if third is not None:
        fill = {"c": info.values[pareto, third] / _axis(info, third, ()).divisor, "cmap": "viridis"}
    points = ax.scatter(x[pareto], y[pareto], s=30, edgecolors="#D55E00", linewidths=1.2, label="Pareto set",
                        zorder=3, **fill)
    _draw_marks(ax, marks, i, j, (ax_x, ax_y))
    _set_axis(ax, "x", ax_x)
    _set_axis(ax, "y", ax_y)
    ax.grid(alpha=0.3)
    return points


def render_pareto(info: SweepInfo, marks: Sequence[DesignMark] = ()) -> Figure:
    """The first two objectives of every trial; the Pareto set is a line for two objectives, else it is
    coloured by the third objective; ``marks`` (a report's own designs) marked."""
    fig, ax = new_figure(7.5, 5.0)
    third = 2 if len(info.objectives) > 2 else None
    points = _scatter_pair(ax, info, (info.pairs() or [(0, 0)])[0], third, marks)
    if third is not None:
        label = _axis(info, third, ()).label.replace(", log scale", "")
        fig.colorbar(points, ax=ax, label=f"Pareto points: {label}")
    ax.set_title(f"Pareto front: {info.objectives[0]} vs {info.objectives[min(1, len(info.objectives) - 1)]}")
    ax.legend(fontsize=8)
    return fig


def render_tradeoffs(info: SweepInfo, marks: Sequence[DesignMark] = ()) -> Figure:
    """Every pair of objectives side by side, ``marks`` marked."""
    pairs = info.pairs() or [(0, 0)]  # a one-objective sweep: its objective against itself
    fig, axes = new_figure(min(15.0, 5.0 * len(pairs)), 4.4, ncols=len(pairs), squeeze=False)
    for ax, pair in zip(axes[0], pairs, strict=True):
        _scatter_pair(ax, info, pair, None, marks)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Trade-offs between objectives (orange: the Pareto set of all objectives together)")
    return fig


def render_history(info: SweepInfo) -> Figure:
    """Each objective over trial number: feasible trials, and those that broke a constraint."""
    n = len(info.objectives)
    fig, axes = new_figure(4.5 * n, 3.5, ncols=n, squeeze=False)
    scored = ~np.isnan(info.values).all(axis=1)
    numbers, values, feasible = info.numbers[scored], info.values[scored], info.feasible[scored]
    for i, ax in enumerate(axes[0]):
        axis = readable_axis(info.objectives[i], values[:, i])
        y = values[:, i] / axis.divisor
        ax.scatter(numbers[feasible], y[feasible], s=10, c="C0", label="feasible")
        ax.scatter(numbers[~feasible], y[~feasible], s=10, c="C1", marker="x", label="constraint violated")
        ax.set_xlabel("trial")
        _set_axis(ax, "y", axis)
        ax.legend(fontsize=8)
    fig.suptitle("optimisation history")
    return fig


def render_importance(info: ImportanceInfo) -> Figure:
    n = len(info.objectives)
    fig, axes = new_figure(4.5 * n, 3.9, ncols=n, squeeze=False)
    warnings = sorted({note for note in info.notes if note.startswith("warning:")})
    for ax, name, imp, note in zip(axes[0], info.objectives, info.importances, info.notes, strict=True):
        if imp:
            keys = list(imp)[::-1]
            ax.barh(keys, [imp[k] for k in keys], color="C1" if note else "C0")
            ax.set_xlabel("importance (shares sum to 1)")
        else:
            ax.text(0.5, 0.5, note, ha="center", va="center", wrap=True, fontsize=8, transform=ax.transAxes)
            ax.set_axis_off()
        ax.set_title(f"importance for {metric_label(name)}", fontsize=10)
    title = f"Parameter importance: {info.evaluator}, {info.n_trials} complete trials"
    fig.suptitle("\n".join([title, *warnings]), fontsize=10, color="C3" if warnings else "black")
    return fig


def write_figures(spec: SweepSpec, study: optuna.Study, trials: list[FrozenTrial], folder: Path) -> list[Path]:
    """Render the four figures into ``folder``; return their paths."""
    info = sweep_info(spec, trials, study.study_name)
    jobs: list[tuple[str, Callable[[], Figure]]] = [
        ("pareto.png", lambda: render_pareto(info)),
        ("tradeoff.png", lambda: render_tradeoffs(info)),
        ("importance.png", lambda: render_importance(_get_importance_info(spec, study))),
        ("history.png", lambda: render_history(info))]
    paths = []
    for name, render in jobs:
        tmp = folder / f".{name}.tmp.png"
        write_png(render(), tmp)
        tmp.replace(folder / name)
        paths.append(folder / name)
    return paths
