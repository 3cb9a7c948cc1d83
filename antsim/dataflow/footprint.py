"""Valid products and output footprints without enumerating products (the ``fast`` path).

Mask correlation over kernel offsets: for each tap (a streamed position ``(u, v)`` for fprop/dgrad,
an output position ``(r, s)`` for wgrad) the linked stationary/other coordinates form a fixed
one-to-one index set, so the non-zero pairs linked by that tap are a small matrix product of masks.
Summing products gives valid counts per (chunk, PE) — exact, the same integers the ``exact`` path
finds by enumeration — and thresholding them gives the distinct outputs each PE touches (partial
outputs, halo, outputs per chunk).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from antsim.dataflow.tiling import Tiling
from antsim.phases import DimMap, PhaseProblem

_TOUCH_BUDGET = 1 << 24  # booleans in one touched-output array (bounds memory on large planes)


@dataclass(frozen=True)
class Footprint:
    """Per slot (``chunk · n_pes + pe``): valid products, distinct outputs held, distinct halo outputs;
    per chunk: distinct outputs after halo exchange / reduction."""

    valid_products: np.ndarray
    partial_outputs: np.ndarray
    halo_outputs: np.ndarray
    output_values: np.ndarray


def links(dim: DimMap, n_y: int, n_u: int, by_output: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per tap, the linked index pairs of one dimension.

    ``by_output=False`` (fprop/dgrad): tap = streamed ``u``; returns ``(y, o)`` pairs per u.
    ``by_output=True`` (wgrad): tap = output ``o``; returns ``(y, u)`` pairs per o.
    """
    y, u = np.meshgrid(np.arange(n_y), np.arange(n_u), indexing="ij")
    o, ok = dim.output(y, u)
    out = []
    for t in range(dim.extent if by_output else n_u):
        if by_output:
            yy, uu = np.nonzero(ok & (o == t))
            out.append((yy, uu))
        else:
            sel = ok[:, t]
            out.append((np.nonzero(sel)[0], o[sel, t]))
    return out


def plane_footprint(problem: PhaseProblem, tiling: Tiling, S: np.ndarray, T: np.ndarray) -> Footprint:
    """fprop/dgrad: ``S`` (N, Cs, Ys, Xs) and ``T`` (1, Cs, Ko, U, V) non-zero masks (bool)."""
    N, Cs, Ys, Xs = S.shape
    Ko, U, V = T.shape[2:]
    O1, O2 = tiling.out_plane
    npe, G = tiling.n_pes, tiling.n_groups
    taps = [(u, v, a, b) for u, a in enumerate(links(problem.dims[0], Ys, U, False))
            for v, b in enumerate(links(problem.dims[1], Xs, V, False))]
    pe_stat = tiling.pe_of_stationary()
    not_own = tiling.pe_of_output().ravel()[None, :] != np.arange(npe)[:, None]  # (npe, O)
    weights = T[0].astype(np.float32)  # (Cs, Ko, U, V)
    valid, partial, halo = (np.zeros((N, G, npe), np.int64) for _ in range(3))
    out_values = np.zeros((N, G), np.int64)
    per_batch = max(1, _TOUCH_BUDGET // max(1, npe * O1 * O2 * tiling.kc))
    for n in range(N):
        plane = S[n].astype(np.float32)
        for g0 in range(0, G, per_batch):
            groups = range(g0, min(G, g0 + per_batch))
            ks = slice(groups[0] * tiling.kc, min(Ko, (groups[-1] + 1) * tiling.kc))
            touched = np.zeros((npe, O1 * O2, ks.stop - ks.start), bool)
            for u, v, (y1, o1), (y2, o2) in taps:
                w_tap = weights[:, ks, u, v]
                if len(y1) == 0 or len(y2) == 0 or not w_tap.any():
                    continue
                z = w_tap.T @ plane[:, y1[:, None], y2[None, :]].reshape(Cs, -1)  # (k, linked)
                src = pe_stat[y1[:, None], y2[None, :]].ravel()
                opos = (o1[:, None] * O2 + o2[None, :]).ravel()
                touched[src, opos, :] |= (z > 0).T
                for g in groups:
                    kg = tiling.group_slice(g, Ko)
                    kg = slice(kg.start - ks.start, kg.stop - ks.start)
                    valid[n, g] += np.rint(np.bincount(src, z[kg].sum(axis=0), minlength=npe)).astype(np.int64)
            for g in groups:
                kg = tiling.group_slice(g, Ko)
                part = touched[:, :, kg.start - ks.start:kg.stop - ks.start]
                per_pe_out = part.sum(axis=2)  # (npe, O)
                partial[n, g] = per_pe_out.sum(axis=1)
                halo[n, g] = (per_pe_out * not_own).sum(axis=1)
                out_values[n, g] = part.any(axis=0).sum()
    return Footprint(valid.ravel(), partial.ravel(), halo.ravel(), out_values.ravel())


def tap_footprint(problem: PhaseProblem, tiling: Tiling, S: np.ndarray, T: np.ndarray) -> Footprint:
    """wgrad: ``S`` (N, Cs, Ys, Xs) and ``T`` (N, 1, Ko, U, V) non-zero masks (bool)."""
    N, Cs, Ys, Xs = S.shape
    Ko, U, V = T.shape[2:]
    npe, G = tiling.n_pes, tiling.n_groups
    gather = tiling.tile_gather()  # (npe, E), sentinel Ys·Xs
    taps = [(a, b) for a in links(problem.dims[0], Ys, U, True) for b in links(problem.dims[1], Xs, V, True)]
    valid, partial = np.zeros((N, G, npe), np.int64), np.zeros((N, G, npe), np.int64)
    out_values = np.zeros((N, G), np.int64)
    for n in range(N):
        flat = np.concatenate([S[n].reshape(Cs, -1), np.zeros((Cs, 1), bool)], axis=1).astype(np.float32)
        s_tiles = flat[:, gather].transpose(1, 0, 2)  # (npe, Cs, E)
        for (y1, u1), (y2, u2) in taps:
            if len(y1) == 0 or len(y2) == 0:
                continue
            linked = np.zeros((Ko, Ys * Xs + 1), np.float32)
            linked[:, (y1[:, None] * Xs + y2[None, :]).ravel()] = \
                T[n, 0][:, u1[:, None], u2[None, :]].reshape(Ko, -1)
            x = s_tiles @ linked[:, gather].transpose(1, 2, 0)  # (npe, Cs, Ko)
            for g in range(G):
                xg = x[:, :, tiling.group_slice(g, Ko)]
                hit = xg > 0
                valid[n, g] += np.rint(xg.sum(axis=(1, 2), dtype=np.float64)).astype(np.int64)
                partial[n, g] += hit.sum(axis=(1, 2))
                out_values[n, g] += hit.any(axis=0).sum()
    return Footprint(valid.ravel(), partial.ravel(), np.zeros(N * G * npe, np.int64), out_values.ravel())


def fast_footprint(problem: PhaseProblem, tiling: Tiling, S_mask: np.ndarray, T_mask: np.ndarray) -> Footprint:
    """Valid products and output footprints of the phase from the operands' non-zero masks."""
    if problem.output_is_plane:
        return plane_footprint(problem, tiling, S_mask, T_mask)
    return tap_footprint(problem, tiling, S_mask, T_mask)
