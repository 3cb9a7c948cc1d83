"""References of the capture tests: top-k by a full sort, a direct float64 convolution."""

from __future__ import annotations

import numpy as np


def topk_ref(x: np.ndarray, density: float) -> np.ndarray:
    """Reference top-k by a full sort (float64)."""
    keep = int(round(density * x.size))
    order = np.argsort(-np.abs(x).ravel(), kind="stable")[:keep]
    out = np.zeros(x.size)
    out[order] = x.ravel()[order]
    return out.reshape(x.shape)


def conv_ref(a: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """Direct cross-correlation, float64: Y[n,k,p,q] = Σ W[k,c,r,s]·A[n,c,p·st+r−pad, q·st+s−pad]."""
    n, c, h, wd = a.shape
    k, _, r, s = w.shape
    padded = np.zeros((n, c, h + 2 * pad, wd + 2 * pad))
    padded[:, :, pad:pad + h, pad:pad + wd] = a
    p, q = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    y = np.zeros((n, k, p, q))
    for i in range(r):
        for j in range(s):
            window = padded[:, :, i:i + stride * p:stride, j:j + stride * q:stride]
            y += np.einsum("kc,ncpq->nkpq", w[:, :, i, j], window)
    return y
