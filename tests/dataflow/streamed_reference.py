"""The streamed operand as it was built before it stopped replicating elements per fetch set (commit
0ab16c6, ``antsim/dataflow/fibers.py``): every streamed non-zero is copied into each fetch set that can
reach it, the copies are sorted by fiber key and cut into vectors. Kept only as the reference that
``test_fibers.py`` compares the shared representation against, vector by vector. Also the stationary
vectors as built before session 9 (a 4-D ``np.nonzero``, a class test per element, a stable sort of the
fiber keys), the reference ``test_fibers_cells.py`` compares ``stationary_vectors`` against.
"""

from __future__ import annotations

import numpy as np

from antsim.dataflow.fibers import (
    Elements,
    StreamedLayout,
    StreamedOperand,
    Vectors,
    _reach_patterns,
    nonzero_mask,
)
from antsim.dataflow.options import MappingOptions
from antsim.dataflow.tiling import StrideClasses, Tiling
from antsim.phases import PhaseProblem


def reference_stationary_vectors(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses,
                                 stationary_tensor: np.ndarray, dense: bool, width: int) -> Vectors:
    """I-vectors of the stationary plane: every non-zero's ``(n, ch, y, x)``, those in classes that pair with
    nothing dropped, sorted (stably) by fiber key ``((n · Cs + ch) · n_pes + pe) · n_classes + class``."""
    n, ch, y, x = np.nonzero(nonzero_mask(stationary_tensor, dense))
    cls = classes.stationary_class(y, x)
    used = np.isin(cls, [a for a, _ in classes.groups])
    n, ch, y, x, cls = n[used], ch[used], y[used], x[used], cls[used]
    pe = tiling.pe_of_stationary()[y, x]
    Cs = problem.stationary_shape[1] if problem.channel_matched else 1
    ch_key = ch if problem.channel_matched else np.zeros_like(ch)
    fiber = ((n * Cs + ch_key) * tiling.n_pes + pe) * classes.n_stationary + cls
    order = np.argsort(fiber, kind="stable")
    values = np.asarray(stationary_tensor, dtype=np.float64)[n, ch, y, x]
    return reference_pack_vectors(fiber[order], Elements(y[order], x[order], ch[order], n[order], values[order]),
                                  width)


def reference_pack_vectors(fiber: np.ndarray, elements: Elements, width: int) -> Vectors:
    """Cut fibers into vectors of ≤ ``width`` consecutive elements (per-element ranks, as at 0ab16c6)."""
    n = len(fiber)
    idx = np.arange(n)
    new_fiber = np.ones(n, bool)
    new_fiber[1:] = fiber[1:] != fiber[:-1]
    fiber_start = idx[new_fiber]
    fiber_id = np.cumsum(new_fiber) - 1
    rank = (idx - fiber_start[fiber_id]) % width
    new_vec = (rank == 0) | new_fiber
    vec_start = idx[new_vec]
    vec_size = np.diff(np.append(vec_start, n))
    nvec = np.bincount(fiber_id[vec_start], minlength=len(fiber_start))
    vec0 = np.concatenate(([0], np.cumsum(nvec)[:-1])) if len(nvec) else nvec
    if len(vec_start):
        box = np.stack([np.minimum.reduceat(elements.sp1, vec_start), np.maximum.reduceat(elements.sp1, vec_start),
                        np.minimum.reduceat(elements.sp2, vec_start), np.maximum.reduceat(elements.sp2, vec_start)])
    else:
        box = np.zeros((4, 0), dtype=np.int64)
    return Vectors(fiber[fiber_start], vec0.astype(np.int64), nvec.astype(np.int64),
                   np.diff(np.append(fiber_start, n)).astype(np.int64), vec_start.astype(np.int64),
                   vec_size.astype(np.int64), box, elements.sp1, elements.sp2, elements.chan, elements.image,
                   elements.value)


def _reference_fetch_sets(problem: PhaseProblem, tiling: Tiling, u: np.ndarray, v: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(set, element) pairs, set-major with elements in order; the set of each PE; the set count."""
    row_pat, col_pat, set_of_pe = _reach_patterns(problem, tiling)
    sets, elems = [], []
    for a in range(len(row_pat)):
        in_row = np.nonzero(row_pat[a, u])[0]
        for b in range(len(col_pat)):
            sel = in_row[col_pat[b, v[in_row]]]
            sets.append(np.full(len(sel), a * len(col_pat) + b))
            elems.append(sel)
    return (np.concatenate(sets).astype(np.int64), np.concatenate(elems).astype(np.int64), set_of_pe,
            len(row_pat) * len(col_pat))


def reference_streamed_vectors(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses,
                               streamed_tensor: np.ndarray, options: MappingOptions, width: int) -> StreamedOperand:
    """F-vectors of the streamed operand with every element replicated into each fetch set it reaches."""
    Nt, Ct = streamed_tensor.shape[:2]
    image, channel, out_channel, u, v = np.nonzero(nonzero_mask(streamed_tensor, options.dense))
    block = (image * Ct + channel) * tiling.n_groups + out_channel // tiling.kc
    cls = classes.streamed_class(u, v)
    values = np.asarray(streamed_tensor, dtype=np.float64)[image, channel, out_channel, u, v]
    n_blocks = Nt * Ct * tiling.n_groups
    unfiltered = np.bincount(block * classes.n_streamed + cls, minlength=n_blocks * classes.n_streamed)
    if options.fetch_filter:
        fetch_set, elem, set_of_pe, n_sets = _reference_fetch_sets(problem, tiling, u, v)
        reached = np.zeros(len(u), bool)
        reached[elem] = True
        fetched = np.bincount(block, weights=reached, minlength=n_blocks)
        layout = StreamedLayout(n_blocks, classes.n_streamed, n_sets, set_of_pe)
    else:
        fetch_set, elem = np.zeros(len(u), dtype=np.int64), np.arange(len(u))
        fetched = np.bincount(block, minlength=n_blocks)
        layout = StreamedLayout(n_blocks, classes.n_streamed, 1, np.zeros(tiling.n_pes, np.int64))
    fiber = layout.key(block[elem], cls[elem], fetch_set)
    if options.channel_inner:
        order = np.lexsort((out_channel[elem], v[elem], u[elem], fiber))
    else:
        order = np.argsort(fiber, kind="stable")  # np.nonzero's (ko, u, v) order within a fiber
    picked = elem[order]
    elements = Elements(u[picked], v[picked], out_channel[picked], image[picked], values[picked])
    vectors = reference_pack_vectors(fiber[order], elements, width)
    delivered = np.zeros((n_blocks, layout.n_sets), np.int64)  # summed over the fibers, as mapper._delivered did
    rest, fiber_set = np.divmod(vectors.fiber_keys, layout.n_sets)
    np.add.at(delivered, (rest // layout.n_classes, fiber_set), vectors.fiber_nnz)
    return StreamedOperand(vectors, layout, unfiltered.reshape(n_blocks, classes.n_streamed),
                           np.rint(fetched).astype(np.int64), delivered)
