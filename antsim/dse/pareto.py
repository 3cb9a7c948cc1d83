"""Non-dominated sets (all objectives oriented to minimise) and the Pareto trials of a sweep."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from optuna.trial import FrozenTrial, TrialState

from antsim.dse.spec import SweepSpec


def non_dominated(points: Sequence[Sequence[float]]) -> list[int]:
    """Indices of the points no other point dominates (≤ in every objective, < in one); minimisation.

    Duplicated points are all kept (none dominates the other).
    """
    if len(points) == 0:
        return []
    p = np.asarray(points, dtype=float)
    keep = []
    for i in range(len(p)):
        dominated = np.all(p <= p[i], axis=1) & np.any(p < p[i], axis=1)
        if not dominated.any():
            keep.append(i)
    return keep


def pareto_trials(spec: SweepSpec, trials: list[FrozenTrial]) -> list[FrozenTrial]:
    """Feasible complete trials that no other feasible complete trial dominates, by trial number."""
    feasible = [t for t in trials if t.state == TrialState.COMPLETE and t.user_attrs.get("feasible")]
    signs = [1.0 if d == "minimize" else -1.0 for d in spec.directions]
    points = [[s * v for s, v in zip(signs, t.values, strict=True)] for t in feasible]
    return sorted((feasible[i] for i in non_dominated(points)), key=lambda t: t.number)
