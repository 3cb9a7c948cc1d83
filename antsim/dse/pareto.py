"""Non-dominated sets (all objectives oriented to minimise)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


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
