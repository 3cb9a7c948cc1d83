"""The conflict sample's closed forms against plain references (issue 16, session 9): the systematic picks
(``exact._pairs_every``) against a search of every pick in the cells' pair ranges, the per-vector
distinctness test (``exact._distinct_columns``) against Python sets, the per-pair conflict proof's code
table (``exact._MAY_CONFLICT``) against its two conditions, and which widths share a grid
(``exact._width_spans``) against the padding each merge adds.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from antsim.dataflow import exact as exact_mod
from antsim.dataflow.pairing import Cells


def _cells(n_i: np.ndarray, n_f: np.ndarray, dtype: type) -> Cells:
    n = len(n_i)
    zero = np.zeros(n, dtype)
    i0 = np.cumsum(n_i) - n_i
    f0 = (np.arange(n) * 7) % 11  # cells share F-vectors: any start works
    return Cells(zero, i0.astype(dtype), n_i.astype(dtype), f0.astype(dtype), n_f.astype(dtype), zero, zero, zero,
                 zero)


def _searched(cells: Cells, picks: np.ndarray) -> list[tuple[int, int, int]]:
    """(cell, f, i) of each global pick, by walking the cells' pair ranges in Python."""
    out, start, cell = [], 0, 0
    counts = (cells.n_i.astype(np.int64) * cells.n_f).tolist()
    for pick in picks.tolist():
        while pick >= start + counts[cell]:
            start, cell = start + counts[cell], cell + 1
        f_local, i_local = divmod(pick - start, max(int(cells.n_i[cell]), 1))
        out.append((cell, int(cells.f0[cell]) + f_local, int(cells.i0[cell]) + i_local))
    return out


def test_systematic_picks_equal_the_searched_pairs() -> None:
    """Empty cells, one I-vector per cell or several, int32 and int64 cells, steps 1–9 and first picks past a
    cell or past every pair: the same (cell, f, i) as walking the ranges."""
    rng = np.random.default_rng(11)
    for trial, dtype in itertools.product(range(12), (np.int32, np.int64)):
        n = int(rng.integers(1, 40))
        n_i = rng.integers(0, 2 if trial % 3 == 0 else 5, n)
        n_f = rng.integers(0, 6, n) * (rng.random(n) < 0.8)
        cells = _cells(n_i, n_f, dtype)
        total = int((n_i * n_f).sum())
        for step in range(1, 10):
            for first in {0, step // 2, step - 1, step + 3, total + 1}:
                got = exact_mod._pairs_every(cells, first, step)
                want = _searched(cells, np.arange(first, total, step))
                assert list(zip(got.cell.tolist(), got.f.tolist(), got.i.tolist(), strict=True)) == want, (
                    trial, step, first)
                same = exact_mod._pairs_at(cells, np.arange(first, total, step, dtype=np.int64))
                assert all(np.array_equal(getattr(got, k), getattr(same, k)) for k in ("cell", "f", "i"))


def test_distinct_columns_equal_python_sets() -> None:
    """Bit words of 32 and 64 bits and the comparison paths past them, on 1–9 slots with padded tails."""
    rng = np.random.default_rng(12)
    for bound, slots in itertools.product((1, 2, 4, 8, 32, 33, 64, 65, 500), range(1, 10)):
        keys = rng.integers(0, bound, (slots, 300))
        size = rng.integers(0, slots + 1, 300)
        want = [len(set(keys[:s, c].tolist())) == s for c, s in enumerate(size.tolist())]
        assert exact_mod._distinct_columns(keys.astype(np.int32), size, bound).tolist() == want, (bound, slots)


def test_may_conflict_table_holds_the_two_proofs() -> None:
    """A pair is cleared when its I-vector has one element and its F-vector's banks are apart, or when it has
    several and both its F-vector's slices and its stationary parts are apart; nothing else clears it."""
    for banks_apart, slices_apart, single, entries_apart in itertools.product((0, 1), repeat=4):
        cleared = (single and banks_apart) or (not single and slices_apart and entries_apart)
        code = 4 * (banks_apart + 2 * slices_apart) + single + 2 * entries_apart
        assert bool(exact_mod._MAY_CONFLICT[code]) == (not cleared)


def test_width_spans_merge_a_width_while_its_padding_is_small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spans tile the sorted widths, each as wide as its widest pair; at every boundary between two widths
    the grid is cut exactly when merging would add more than ``_MERGE_SLOTS`` padded slots."""
    rng = np.random.default_rng(13)
    for _ in range(300):
        monkeypatch.setattr(exact_mod, "_MERGE_SLOTS", int(rng.integers(0, 120)))
        size = np.sort(rng.integers(1, 9, int(rng.integers(0, 60)))).astype(np.uint8)
        f_slots = int(rng.integers(1, 5))
        spans = exact_mod._width_spans(size, f_slots)
        starts = [first for first, _, _ in spans]
        assert starts == ([0] if len(size) else []) + [end for _, end, _ in spans[:-1]]
        assert (spans[-1][1] if spans else 0) == len(size)
        for first, end, width in spans:
            assert int(size[first:end].max()) == width
        cuts = {end for _, end, _ in spans}
        for boundary in np.flatnonzero(size[1:] != size[:-1]) + 1:  # first pair of a wider width
            span_first = max(start for start in starts if start < boundary)
            padding = (boundary - span_first) * f_slots * (int(size[boundary]) - int(size[boundary - 1]))
            assert (boundary in cuts) == (padding > exact_mod._MERGE_SLOTS), (size.tolist(), f_slots, boundary)
