"""The one Pareto function of antsim (direction-aware) and the Pareto trials of a sweep.

``pareto_mask`` serves the export (``pareto.csv`` / ``pareto.json``, the figures), the progress line
and the report's reading of an export that carries no ``pareto.csv``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike
from optuna.trial import FrozenTrial, TrialState

from antsim.dse import attrs
from antsim.dse.metrics import Direction
from antsim.dse.spec import SweepSpec

_SIGNS: dict[str, float] = {"minimize": 1.0, "maximize": -1.0}  # orient every objective to be minimised


def direction_sign(direction: Direction) -> float:
    """1 for an objective to minimise, -1 for one to maximise: multiplied in, lower is better.

    Raises:
        ValueError: a direction other than minimize / maximize.
    """
    if direction not in _SIGNS:
        raise ValueError(f"pareto: unknown direction {direction!r}; known: minimize, maximize")
    return _SIGNS[direction]


def oriented(values: ArrayLike, directions: Sequence[Direction]) -> np.ndarray:
    """``values`` (rows × objectives) with every maximised column negated, so lower is better everywhere.

    Raises:
        ValueError: not one direction per column, or a direction other than minimize / maximize.
    """
    points = np.asarray(values, dtype=float)
    if points.size == 0:  # no rows (an empty list has no second dimension to check)
        points = points.reshape(0, len(directions))
    if points.ndim != 2 or points.shape[1] != len(directions):
        raise ValueError(f"pareto: {len(directions)} direction(s) for values of shape {points.shape}")
    return points * np.array([direction_sign(d) for d in directions])


def pareto_mask(values: ArrayLike, directions: Sequence[Direction], feasible: ArrayLike | None = None) -> np.ndarray:
    """Rows on the Pareto front: feasible, no NaN, and dominated by no other such row.

    Row ``a`` dominates ``b`` when ``a`` is at least as good in every objective (``directions[k]``:
    lower is better for ``minimize``, higher for ``maximize``) and better in one; equal rows are all
    kept (neither dominates the other). An infeasible row or one with a NaN neither is on the front nor
    dominates another. ``feasible`` defaults to every row.
    """
    points = oriented(values, directions)
    candidates = ~np.isnan(points).any(axis=1)
    if feasible is not None:
        candidates &= np.asarray(feasible, dtype=bool)
    mask = np.zeros(len(points), dtype=bool)
    rivals = points[candidates]
    for i in np.flatnonzero(candidates):
        dominated = np.all(rivals <= points[i], axis=1) & np.any(rivals < points[i], axis=1)
        mask[i] = not dominated.any()
    return mask


def pareto_trials(spec: SweepSpec, trials: list[FrozenTrial]) -> list[FrozenTrial]:
    """Feasible complete trials that no other feasible complete trial dominates, by trial number."""
    feasible = [t for t in trials if t.state == TrialState.COMPLETE and attrs.is_feasible(t)]
    front = pareto_mask([t.values for t in feasible], spec.directions)
    return sorted((t for t, on in zip(feasible, front, strict=True) if on), key=lambda t: t.number)
