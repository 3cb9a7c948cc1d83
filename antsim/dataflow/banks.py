"""Accumulator bank-conflict estimate for the ``fast`` path (balls into bins).

Model: a vector pair with ``s`` products (``s`` = the slot's mean products per issued pair, rounded)
has ``v ~ Binomial(s, f)`` valid products, ``f`` = the slot's valid / issued products; they go to
uniformly random banks, and the pair stalls ``E[max bank load | v] − 1`` cycles (0 for v ≤ 1).
``E[max load]`` of v balls in B bins comes from a seeded Monte Carlo (deterministic, ≈1 %).
Ignored: products of one pair that hit the *same* output (same bank whatever the hash) and the
spread of valid products across pairs (RCP-heavy pairs hold none) — see the dataflow benchmark
section for the measured fast-vs-exact error.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.stats import binom

_TRIALS = 8192
_SEED = 20240601


@lru_cache(maxsize=4096)
def expected_extra(balls: int, bins: int) -> float:
    """E[max(1, max load) − 1] when ``balls`` go uniformly into ``bins`` bins."""
    if balls <= 1:
        return 0.0
    if bins == 1:
        return float(balls - 1)
    rng = np.random.default_rng(_SEED + 7919 * balls + bins)
    trials = max(64, min(_TRIALS, (1 << 24) // max(balls, bins)))
    draws = rng.integers(0, bins, size=(trials, balls))
    loads = np.bincount((np.arange(trials)[:, None] * bins + draws).ravel(), minlength=trials * bins)
    return float(loads.reshape(trials, bins).max(axis=1).mean() - 1.0)


def _extra_table(size: int, bins: int) -> np.ndarray:
    return np.array([expected_extra(v, bins) for v in range(size + 1)])


def estimate_conflicts(issued_pairs: np.ndarray, issued_products: np.ndarray, valid: np.ndarray,
                       bins: int) -> np.ndarray:
    """Estimated conflict cycles per slot (see the module docstring), int64."""
    out = np.zeros(len(issued_pairs), np.float64)
    active = issued_pairs > 0
    size = np.zeros(len(issued_pairs), np.int64)
    size[active] = np.rint(issued_products[active] / issued_pairs[active]).astype(np.int64)
    frac = np.where(issued_products > 0, valid / np.maximum(issued_products, 1), 0.0)
    for s in np.unique(size[active]):
        sel = active & (size == s)
        table = _extra_table(int(s), bins)
        v = np.arange(int(s) + 1)
        pmf = binom.pmf(v[None, :], int(s), np.clip(frac[sel], 0.0, 1.0)[:, None])
        out[sel] = issued_pairs[sel] * (pmf @ table)
    return np.rint(out).astype(np.int64)
