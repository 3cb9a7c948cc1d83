"""Valid products and output footprints without enumerating products (the ``fast`` path).

Mask correlation over kernel offsets: for each tap (a streamed position ``(u, v)`` for fprop/dgrad,
an output position ``(r, s)`` for wgrad) the linked stationary/other coordinates form a fixed
one-to-one index set, so the non-zero pairs linked by that tap are a small matrix product of masks.
Summing products gives valid counts per (chunk, PE) — exact, the same integers the ``exact`` path
finds by enumeration — and thresholding them gives the distinct outputs each PE touches (partial
outputs, halo, outputs per chunk).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.sparse import csr_matrix

from antsim.dataflow.tiling import Tiling
from antsim.phases import DimMap, PhaseProblem

_TOUCH_BUDGET = 1 << 24  # booleans in one touched-output array (bounds memory on large planes)
_DENSE_SWITCH = 0.05  # product of mask densities above which the dense per-tap path is faster


def distinct(keys: np.ndarray, space: int) -> np.ndarray:
    """Sorted distinct values of non-negative int ``keys`` < ``space`` (a bitmap when it is small)."""
    if space <= 1 << 26:
        seen = np.zeros(space, bool)
        seen[keys] = True
        return np.flatnonzero(seen)
    keys = np.sort(keys)
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys


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


def plane_footprint_dense(problem: PhaseProblem, tiling: Tiling, S: np.ndarray, T: np.ndarray) -> Footprint:
    """fprop/dgrad with dense matrix products per tap (cost ∝ planes × channels; for dense masks)."""
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


def _forward(pairs: tuple[np.ndarray, np.ndarray], n_y: int) -> np.ndarray:
    """Map stationary coordinate y → linked output coordinate o (−1 where none) for one tap."""
    fwd = np.full(n_y, -1, dtype=np.int64)
    fwd[pairs[0]] = pairs[1]
    return fwd


def plane_footprint_sparse(problem: PhaseProblem, tiling: Tiling, S: np.ndarray, T: np.ndarray) -> Footprint:
    """fprop/dgrad with sparse products per tap ``W_tap (Ko × Cs) @ S_tap (Cs × outputs)`` (cost ∝ valid
    products); touched outputs are keyed by the PE whose stationary value produced them."""
    N, Cs, Ys, Xs = S.shape
    Ko, U, V = T.shape[2:]
    O = tiling.out_plane[0] * tiling.out_plane[1]
    npe, G = tiling.n_pes, tiling.n_groups
    pe_stat = tiling.pe_of_stationary()
    own = tiling.pe_of_output().ravel()
    fwd_h = [_forward(pair, Ys) for pair in links(problem.dims[0], Ys, U, False)]
    fwd_w = [_forward(pair, Xs) for pair in links(problem.dims[1], Xs, V, False)]
    valid = np.zeros((N, G * npe))
    partial, halo = np.zeros((N, G * npe), np.int64), np.zeros((N, G * npe), np.int64)
    out_values = np.zeros((N, G), np.int64)
    for n in range(N):
        c, y, x = np.nonzero(S[n])
        keys = []
        for u, f1 in enumerate(fwd_h):
            o1 = f1[y]
            for v, f2 in enumerate(fwd_w):
                o2 = f2[x]
                ok = (o1 >= 0) & (o2 >= 0)
                ko_w, c_w = np.nonzero(T[0, :, :, u, v].T)
                if not ok.any() or len(ko_w) == 0:
                    continue
                o = o1[ok] * tiling.out_plane[1] + o2[ok]
                s_tap = csr_matrix((np.ones(len(o)), (c[ok], o)), shape=(Cs, O))
                w_tap = csr_matrix((np.ones(len(ko_w)), (ko_w, c_w)), shape=(Ko, Cs))
                z = (w_tap @ s_tap).tocoo()
                src = np.full(O, -1, dtype=np.int64)
                src[o] = pe_stat[y[ok], x[ok]]
                pe = src[z.col]
                valid[n] += np.bincount((z.row // tiling.kc) * npe + pe, weights=z.data, minlength=G * npe)
                keys.append((pe * Ko + z.row) * O + z.col)
        if not keys:
            continue
        touched = distinct(np.concatenate(keys), npe * Ko * O)
        rest, o = np.divmod(touched, O)
        pe, ko = np.divmod(rest, Ko)
        slot = (ko // tiling.kc) * npe + pe
        partial[n] += np.bincount(slot, minlength=G * npe)
        halo[n] += np.bincount(slot[own[o] != pe], minlength=G * npe)
        outs = distinct(ko * O + o, Ko * O)
        out_values[n] += np.bincount((outs // O) // tiling.kc, minlength=G)
    return Footprint(np.rint(valid).astype(np.int64).ravel(), partial.ravel(), halo.ravel(), out_values.ravel())


def _inverse(pairs: tuple[np.ndarray, np.ndarray], n_u: int) -> np.ndarray:
    """Map streamed coordinate u → linked stationary coordinate y (−1 where none) for one tap."""
    inv = np.full(n_u, -1, dtype=np.int64)
    inv[pairs[1]] = pairs[0]
    return inv


def tap_footprint(problem: PhaseProblem, tiling: Tiling, S: np.ndarray, T: np.ndarray,
                  tile_of_image: np.ndarray | None = None) -> Footprint:
    """wgrad: ``S`` (N, Cs, Ys, Xs) and ``T`` (N, 1, Ko, U, V) non-zero masks (bool).

    Per tap, a sparse product ``(PE·Cs × plane) @ (plane × Ko)`` of the stationary mask (rows keyed by
    the PE holding each position) and the streamed mask moved onto its linked stationary positions: its
    entries are the contributing pair counts per (PE, ch, ko) — cost ∝ valid products.

    ``tile_of_image`` (N,) groups consecutive images into batch tiles whose partial sums accumulate in
    the same accumulator entries: a tile's partial and written outputs are the union of its images'
    (summed product patterns), reported on the chunks of the tile's last image (0 on the others).
    Valid products stay per image. Default: every image its own tile.
    """
    N, Cs, Ys, Xs = S.shape
    Ko, U, V = T.shape[2:]
    npe, G = tiling.n_pes, tiling.n_groups
    tiles = np.arange(N) if tile_of_image is None else np.asarray(tile_of_image)
    pe_stat = tiling.pe_of_stationary().ravel()
    inv_h = [_inverse(pair, U) for pair in links(problem.dims[0], Ys, U, True)]
    inv_w = [_inverse(pair, V) for pair in links(problem.dims[1], Xs, V, True)]
    valid, partial = np.zeros((N, G * npe)), np.zeros((N, G * npe), np.int64)
    out_values = np.zeros((N, G), np.int64)
    for tile in np.unique(tiles):
        images = np.flatnonzero(tiles == tile)
        s_mats, d_keys = [], []
        for n in images:
            c, y, x = np.nonzero(S[n])
            pos = y * Xs + x
            s_mats.append(csr_matrix((np.ones(len(c)), (pe_stat[pos] * Cs + c, pos)), shape=(npe * Cs, Ys * Xs)))
            d_keys.append(np.nonzero(T[n, 0]))
        last = images[-1]
        for i1 in inv_h:
            for i2 in inv_w:
                union = None
                for n, s_mat, (k, p, q) in zip(images, s_mats, d_keys, strict=True):
                    yy, xx = i1[p], i2[q]
                    ok = (yy >= 0) & (xx >= 0)
                    d_mat = csr_matrix((np.ones(int(ok.sum())), (yy[ok] * Xs + xx[ok], k[ok])), shape=(Ys * Xs, Ko))
                    prod = s_mat @ d_mat
                    coo = prod.tocoo()
                    valid[n] += np.bincount((coo.col // tiling.kc) * npe + coo.row // Cs, weights=coo.data,
                                            minlength=G * npe)
                    union = prod if union is None else union + prod
                assert union is not None, "every batch tile holds at least one image"
                held = union.tocoo()
                slot = (held.col // tiling.kc) * npe + held.row // Cs
                partial[last] += np.bincount(slot, minlength=G * npe)
                outs = distinct((held.row % Cs) * Ko + held.col, Cs * Ko)
                out_values[last] += np.bincount((outs % Ko) // tiling.kc, minlength=G)
    return Footprint(np.rint(valid).astype(np.int64).ravel(), partial.ravel(), np.zeros(N * G * npe, np.int64),
                     out_values.ravel())


def fast_footprint(problem: PhaseProblem, tiling: Tiling, S_mask: np.ndarray, T_mask: np.ndarray,
                   tile_of_image: np.ndarray | None = None) -> Footprint:
    """Valid products and output footprints of the phase from the operands' non-zero masks (wgrad
    partial sums accumulated over the batch tiles ``tile_of_image``, see ``tap_footprint``)."""
    if problem.output_is_plane:
        # Sparse products cost ∝ valid products, dense ones ∝ planes × channels: pick by mask density.
        if S_mask.mean() * T_mask.mean() > _DENSE_SWITCH:
            return plane_footprint_dense(problem, tiling, S_mask, T_mask)
        return plane_footprint_sparse(problem, tiling, S_mask, T_mask)
    return tap_footprint(problem, tiling, S_mask, T_mask, tile_of_image)


def dense_footprint(problem: PhaseProblem, tiling: Tiling, tile_of_image: np.ndarray | None = None) -> Footprint:
    """``fast_footprint`` of all-ones masks (a dense design), from a one-channel problem.

    With every element a non-zero, a phase's footprint is geometry times channel counts: per slot, the
    valid pairs are the stationary channels × the group's output channels × the one-channel count of
    linked positions; the distinct outputs a PE holds (and its halo, and the outputs written) are the
    group's channels × the one-channel count for fprop/dgrad, and also × the stationary channels for
    wgrad, whose outputs (dW) are indexed by both. Tested equal to the mask correlation of all-ones masks.
    """
    N, Cs, Ys, Xs = problem.stationary_shape
    Nt, _, Ko, U, V = problem.streamed_shape
    one = replace(problem, stationary_shape=(N, 1, Ys, Xs), streamed_shape=(Nt, 1, 1, U, V),
                  output_shape=(problem.output_shape[0] if problem.output_is_plane else 1, 1,
                                *problem.output_shape[2:]))
    base = fast_footprint(one, replace(tiling, kc=1, n_groups=1), np.ones(one.stationary_shape, bool),
                          np.ones(one.streamed_shape, bool), tile_of_image)
    npe, G = tiling.n_pes, tiling.n_groups
    per_group = np.array([len(range(Ko)[tiling.group_slice(g, Ko)]) for g in range(G)], dtype=np.int64)
    held_scale = per_group * (1 if problem.output_is_plane else Cs)

    def per_slot(values: np.ndarray, scale: np.ndarray) -> np.ndarray:
        return (values.reshape(N, 1, npe) * scale[None, :, None]).ravel()

    return Footprint(per_slot(base.valid_products, per_group * Cs), per_slot(base.partial_outputs, held_scale),
                     per_slot(base.halo_outputs, held_scale), (base.output_values.reshape(N, 1) * held_scale).ravel())
