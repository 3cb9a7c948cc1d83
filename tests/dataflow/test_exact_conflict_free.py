"""The conflict sample's per-pair counts (``exact._gridded_extra`` spread over every pair, ``exact._pair_loads``)
and its shortcut for pairs that cannot conflict (``exact._may_conflict``) against a brute-force reference: plain
Python loops over every (streamed element, stationary element) product of every candidate pair, the output
coordinate from ``o·δ = α·y + β·u + γ`` (antsim.phases), the accumulator entry and bank from the definitions in
antsim/dataflow/banks.py's docstring — none of it shared with the code under test.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter

import numpy as np
import pytest
from dataflow_helpers import random_tensors

from antsim.dataflow import exact as exact_mod
from antsim.dataflow.banks import BankMap
from antsim.dataflow.context import MappingContext
from antsim.dataflow.fibers import StreamedInput, stationary_vectors, streamed_vectors
from antsim.dataflow.options import MappingOptions
from antsim.dataflow.pairing import PairBatch, make_cells
from antsim.dataflow.tiling import make_tiling, output_window, stride_classes
from antsim.phases import phase_problem
from antsim.workloads.layers import Layer


def _pair_extra(context: MappingContext, pairs: PairBatch, screened: bool) -> np.ndarray:
    """Every pair's extra conflict cycles: ``_gridded_extra``'s at the gridded pairs, 0 elsewhere."""
    extra = np.zeros(len(pairs.f), np.int64)
    at, gridded = exact_mod._gridded_extra(context, pairs, screened)
    extra[at] = gridded
    return extra


def _bank(bank_map: BankMap, k_local: int, entry: int, per_channel: int) -> int:
    """The bank of entry ``entry`` of local output channel ``k_local``, from the hash definitions."""
    if bank_map.hash == "sliced":
        per_slice = bank_map.banks // bank_map.slices
        return (k_local % bank_map.slices) * per_slice + entry % per_slice
    region = k_local * per_channel + entry
    if bank_map.hash == "mod" or bank_map.banks == 1:
        return region % bank_map.banks
    bits, bank = bank_map.banks.bit_length() - 1, 0
    while region:
        bank ^= region & (bank_map.banks - 1)
        region >>= bits
    return bank


def _output(dim, y: int, u: int) -> int | None:
    numerator = dim.alpha * y + dim.beta * u + dim.gamma
    if numerator % dim.delta:
        return None
    o = numerator // dim.delta
    return o if 0 <= o < dim.extent else None


def _reference_loads(context: MappingContext, pairs: PairBatch) -> list[Counter]:
    """Per pair, its valid products per bank, enumerated one product at a time."""
    problem, tiling, st, sv = context.problem, context.tiling, context.stationary, context.streamed_vectors
    out_rows, out_cols = problem.output_shape[2:]
    if problem.output_is_plane:
        origin_y, origin_x, win_h, win_w = output_window(problem, tiling)
        per_channel = win_h * win_w
    else:
        per_channel = problem.output_shape[1] * out_rows * out_cols
    loads = []
    for cell, f, i in zip(pairs.cell.tolist(), pairs.f.tolist(), pairs.i.tolist(), strict=True):
        pe = int(context.cells.slot[cell]) % tiling.n_pes
        count: Counter = Counter()
        for t in range(int(sv.vec_start[f]), int(sv.vec_start[f] + sv.vec_size[f])):
            for s in range(int(st.vec_start[i]), int(st.vec_start[i] + st.vec_size[i])):
                row = _output(problem.dims[0], int(st.sp1[s]), int(sv.sp1[t]))
                col = _output(problem.dims[1], int(st.sp2[s]), int(sv.sp2[t]))
                if row is None or col is None:
                    continue
                if problem.output_is_plane:
                    entry = (row - int(origin_y[pe])) * win_w + col - int(origin_x[pe])
                else:
                    entry = (int(st.chan[s]) * out_rows + row) * out_cols + col
                count[_bank(context.banks, int(sv.chan[t]) % tiling.kc, entry, per_channel)] += 1
        loads.append(count)
    return loads


def _context(layer: Layer, phase: str, density: float, seed: int, grid: tuple[int, int, int], F: int, I: int,
             bank_map: BankMap, stride_phases: bool = False) -> MappingContext:
    rows, cols, kc = grid
    problem = phase_problem(layer, phase)  # type: ignore[arg-type]
    tiling = make_tiling(problem, rows, cols, kc)
    classes = stride_classes(problem, stride_phases)
    t = random_tensors(layer, density, seed)
    stationary = stationary_vectors(problem, tiling, classes, problem.stationary(t), False, I)
    streamed = streamed_vectors(problem, tiling, classes, StreamedInput(problem.streamed(t), F), MappingOptions())
    cells = make_cells(problem, tiling, classes, stationary, streamed)
    return MappingContext(problem, tiling, classes, stationary, streamed, cells, bank_map, F, I)


def _every_pair(context: MappingContext) -> PairBatch:
    return exact_mod._pairs_at(context.cells, np.arange(int(context.cells.n_pairs.sum()), dtype=np.int64))


def _check(context: MappingContext) -> int:
    """Every candidate pair's extra cycles and loads equal the reference's; a pair ``_may_conflict``
    clears has at most one product per bank. Returns how many pairs it cleared."""
    pairs = _every_pair(context)
    want = _reference_loads(context, pairs)
    want_extra = np.array([max(1, max(c.values(), default=0)) - 1 for c in want], np.int64)
    want_loads = np.zeros((len(want), context.banks.banks), np.int32)
    for row, count in enumerate(want):
        for bank, n in count.items():
            want_loads[row, bank] = n
    # Grids cut to 37 pairs or whole, each I-vector width in a grid of its own or every width in the widest
    # one (padded I-slots), and the rule's own choice: the same counts.
    for grid_pairs, merge_slots in ((exact_mod._GRID_PAIRS, exact_mod._MERGE_SLOTS), (37, 0), (1 << 20, 1 << 40)):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(exact_mod, "_GRID_PAIRS", grid_pairs)
            patch.setattr(exact_mod, "_MERGE_SLOTS", merge_slots)
            for screened in (False, True):  # the screen drops only pairs with no valid product: same counts
                got = _pair_extra(context, pairs, screened)
                assert got.dtype == np.int64 and np.array_equal(got, want_extra), (screened, grid_pairs, merge_slots)
            assert np.array_equal(exact_mod._pair_loads(context, pairs), want_loads), (grid_pairs, merge_slots)
    cleared = ~exact_mod._may_conflict(context, pairs, exact_mod._pair_tables(context, pairs))
    assert all(max(want[p].values(), default=0) <= 1 for p in np.flatnonzero(cleared))
    return int(cleared.sum())


_LAYERS = [
    Layer("s1", N=2, C=3, K=9, H=9, W=7, R=3, S=3, stride=1, pad=1),
    Layer("s2", N=1, C=4, K=6, H=11, W=9, R=3, S=3, stride=2, pad=1),  # fprop δ = 2: no split entry
    Layer("ns", N=2, C=2, K=5, H=9, W=10, R=5, S=3, stride=(2, 1), pad=(2, 0)),
    Layer("k1", N=1, C=3, K=8, H=7, W=7, R=1, S=1, stride=2, pad=0),
]


@pytest.mark.parametrize("case", range(len(_LAYERS)))
def test_pair_counts_equal_the_brute_force_on_every_phase_and_hash(case: int) -> None:
    """Strides (δ > 1), asymmetric strides and pads, 1×1 kernels; every phase; sliced (power-of-two and
    not), mod and xor hashes; F and I of 4 and of 1, 3 (narrow and padded slots)."""
    layer, cleared = _LAYERS[case], 0
    hashes = [BankMap(32, "sliced", 4), BankMap(24, "sliced", 4), BankMap(12, "sliced", 3), BankMap(30, "mod", 4),
              BankMap(16, "xor", 4)]
    for phase, bank_map in itertools.product(("fprop", "dgrad", "wgrad"), hashes):
        for F, I in ((4, 4), (bank_map.slices, 1), (1, 3)):
            bank_map_f = dataclasses.replace(bank_map, slices=F) if bank_map.hash == "sliced" else bank_map
            if bank_map_f.banks % F:
                continue
            context = _context(layer, phase, 0.45, case, (2, 2, 6), F, I, bank_map_f, case % 2 == 1)
            cleared += _check(context)
    assert cleared > 0  # the shortcut is exercised, not only the grids


@pytest.mark.parametrize("seed", range(4))
def test_pair_counts_equal_the_brute_force_on_random_designs(seed: int) -> None:
    """Random layers, PE grids, vector widths (1–6), channel groups, densities and hashes."""
    rng = np.random.default_rng(700 + seed)
    for _ in range(5):
        R = int(rng.choice([1, 3, 5]))
        layer = Layer("r", N=int(rng.integers(1, 3)), C=int(rng.integers(1, 6)), K=int(rng.integers(1, 10)),
                      H=int(rng.integers(R, 11)), W=int(rng.integers(R, 11)), R=R, S=R,
                      stride=(int(rng.integers(1, 3)), int(rng.integers(1, 3))), pad=int(rng.integers(0, R // 2 + 1)))
        F, I = int(rng.integers(1, 7)), int(rng.integers(1, 7))
        hash_name = str(rng.choice(["sliced", "sliced", "mod", "xor"]))
        banks = int(rng.choice([1, 2, 4, 8])) * F if hash_name == "sliced" else int(rng.choice([1, 8, 16, 30]))
        if hash_name == "xor" and banks & (banks - 1):
            hash_name = "mod"
        context = _context(layer, str(rng.choice(["fprop", "dgrad", "wgrad"])), float(rng.uniform(0.1, 0.9)), seed,
                           (int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 9))), F, I,
                           BankMap(banks, hash_name, F), bool(rng.integers(2)))
        _check(context)


def test_one_bank_and_one_bank_per_slice_pile_every_product_up() -> None:
    """One bank (every valid product of a pair on it: extra = valid − 1), and sliced with one bank per slice
    (every product of one slice on one bank): the shortcut clears only pairs of one product per slice."""
    layer = _LAYERS[0]
    for bank_map in (BankMap(1, "mod", 4), BankMap(4, "sliced", 4), BankMap(1, "sliced", 1)):
        F = bank_map.slices
        context = _context(layer, "fprop", 0.6, 3, (2, 2, 3), F, 4, bank_map)
        _check(context)
        if bank_map.banks == 1:
            pairs = _every_pair(context)
            valid = np.array([sum(c.values()) for c in _reference_loads(context, pairs)])
            assert np.array_equal(_pair_extra(context, pairs, False), np.maximum(valid, 1) - 1)


def test_empty_operands_give_no_pairs_and_no_conflicts() -> None:
    """All-zero operands: no vectors, no candidate pairs, zero conflict cycles on every slot."""
    layer = _LAYERS[0]
    for phase in ("fprop", "dgrad", "wgrad"):
        context = _context(layer, phase, 0.0, 0, (2, 2, 3), 4, 4, BankMap(32, "sliced", 4))
        pairs = _every_pair(context)
        assert len(pairs.f) == 0
        assert _pair_extra(context, pairs, True).shape == (0,)
        assert exact_mod._pair_loads(context, pairs).shape == (0, 32)
        estimate = exact_mod.sampled_conflicts(context, "none")
        assert estimate.cycles.tolist() == [0] * context.n_slots
