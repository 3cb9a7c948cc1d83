"""The bank-conflict sample of the ``fast`` path (``exact.sampled_conflicts``) on product grids gives what
the per-product enumeration it replaced gave, to the cycle.

``_reference_sampled_conflicts`` below is a private copy of ``sampled_conflicts`` as of commit 11d5bd5 —
every product of every sampled pair expanded into flat arrays (``_reference_products``), hashed, counted
with ``max_load_extra`` / ``bank_loads`` — kept here so the comparison does not lean on the code under test.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from dataflow_helpers import MAPPING_CASES, random_tensors, small_arch

from antsim.dataflow import banks as banks_mod
from antsim.dataflow import exact as exact_mod
from antsim.dataflow.anticipation import screen
from antsim.dataflow.banks import BankMap, BankQueues, bank_loads, column_max_load_extra, max_load_extra
from antsim.dataflow.context import MappingContext
from antsim.dataflow.fibers import StreamedInput, stationary_vectors, streamed_vectors
from antsim.dataflow.options import MappingOptions
from antsim.dataflow.pairing import Cells, PairBatch, make_cells
from antsim.dataflow.tiling import make_tiling, output_window, stride_classes
from antsim.phases import phase_problem
from antsim.workloads.layers import Layer

# --- private copy of the sampler of commit 11d5bd5 ---------------------------------------------------------


def _reference_pairs_at(cells: Cells, picks: np.ndarray) -> PairBatch:
    counts = cells.n_pairs
    ends = np.cumsum(counts)
    cell = np.searchsorted(ends, picks, side="right")
    f_local, i_local = np.divmod(picks - (ends[cell] - counts[cell]), np.maximum(cells.n_i[cell], 1))
    return PairBatch(cell, cells.f0[cell] + f_local, cells.i0[cell] + i_local)


def _reference_products(context: MappingContext, pairs: PairBatch) -> tuple[np.ndarray, np.ndarray]:
    """(pair, bank) of every valid product of ``pairs``, enumerated product by product."""
    problem, stationary, streamed = context.problem, context.stationary, context.streamed_vectors
    size_f, size_i = streamed.vec_size[pairs.f], stationary.vec_size[pairs.i]
    count = size_f * size_i
    total = int(count.sum())
    pair = np.repeat(np.arange(len(pairs.f)), count)
    local = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    along_f, along_i = np.divmod(local, np.repeat(size_i, count))
    s_elem = np.repeat(stationary.vec_start[pairs.i], count) + along_i
    t_elem = np.repeat(streamed.vec_start[pairs.f], count) + along_f
    out_row, row_ok = problem.dims[0].output(stationary.sp1[s_elem], streamed.sp1[t_elem])
    out_col, col_ok = problem.dims[1].output(stationary.sp2[s_elem], streamed.sp2[t_elem])
    keep = row_ok & col_ok
    pair, s_elem, t_elem, out_row, out_col = pair[keep], s_elem[keep], t_elem[keep], out_row[keep], out_col[keep]
    tiling = context.tiling
    k_local = streamed.chan[t_elem] % tiling.kc
    out_rows, out_cols = problem.output_shape[2:]
    if problem.output_is_plane:
        origin_y, origin_x, win_h, win_w = output_window(problem, tiling)
        pe = context.cells.slot[pairs.cell] % tiling.n_pes
        entry = out_row * win_w + out_col - (origin_y[pe] * win_w + origin_x[pe])[pair]
        per_channel = win_h * win_w
    else:
        entry = (stationary.chan[s_elem] * out_rows + out_row) * out_cols + out_col
        per_channel = problem.output_shape[1] * out_rows * out_cols
    return pair, context.banks.bank(k_local, entry, per_channel)


def _reference_shrunk(extra_sum: np.ndarray, sample_slot: np.ndarray, n_slots: int, issued: np.ndarray) -> np.ndarray:
    sampled = np.bincount(sample_slot, minlength=n_slots)
    pooled = extra_sum.sum() / max(1, len(sample_slot))
    rate = (extra_sum + 16.0 * pooled) / (sampled + 16.0)
    return np.rint(rate * issued).astype(np.int64)


def _reference_sampled_conflicts(context: MappingContext, policy: str, budget: int,
                                 issued_pairs: np.ndarray | None) -> tuple[np.ndarray, int]:
    cells, n_slots = context.cells, context.n_slots
    banks, depth = context.banks.banks, context.banks.queue_depth
    # Which pairs are sampled is the sampler's rule, shared; what this reference redoes is the counting.
    picks, run, sample_step = exact_mod._sample_picks(int(cells.n_pairs.sum()), budget, 256 if depth else 1)
    pairs = _reference_pairs_at(cells, picks)
    reachable = screen(context.problem, context.stationary, context.streamed_vectors, pairs)
    if policy == "ant":
        pairs, run = PairBatch(pairs.cell[reachable], pairs.f[reachable], pairs.i[reachable]), run[reachable]
        reachable = np.ones(len(pairs.f), bool)
    enumerated = np.flatnonzero(reachable)
    pair, bank = _reference_products(context, PairBatch(pairs.cell[enumerated], pairs.f[enumerated],
                                                        pairs.i[enumerated]))
    slot = cells.slot[pairs.cell]
    drain = np.zeros(n_slots, np.int64)
    if depth:
        loads = np.zeros((len(pairs.f), banks), np.int32)
        loads[enumerated] = bank_loads(pair, bank, banks, len(enumerated))
        sequence_key, sequence = np.unique(run * n_slots + slot, return_inverse=True)
        queues = BankQueues(len(sequence_key), banks, depth)
        queues.feed(sequence.ravel(), loads)
        extra_sum = np.bincount(sequence_key % n_slots, weights=queues.stalls, minlength=n_slots)
        if sample_step == 1:
            drain[sequence_key] = queues.drain()
    else:
        extra = np.zeros(len(pairs.f), np.int64)
        extra[enumerated] = max_load_extra(pair, bank, banks, len(enumerated))
        extra_sum = np.bincount(slot, weights=extra, minlength=n_slots).astype(np.float64)
    if sample_step == 1 or issued_pairs is None:
        return np.rint(extra_sum * sample_step).astype(np.int64) + drain, sample_step
    return _reference_shrunk(extra_sum, slot, n_slots, issued_pairs) + drain, sample_step


# --- cases -------------------------------------------------------------------------------------------------


def _context(layer: Layer, phase: str, density: float, seed: int, rows: int, cols: int, kc: int, F: int, I: int,
             bank_map: BankMap, fetch_filter: bool, stride_phases: bool) -> MappingContext:
    t = random_tensors(layer, density, seed)
    problem = phase_problem(layer, phase)  # type: ignore[arg-type]
    tiling = make_tiling(problem, rows, cols, kc)
    classes = stride_classes(problem, stride_phases)
    stationary = stationary_vectors(problem, tiling, classes, problem.stationary(t), False, I)
    options = MappingOptions(fetch_filter=fetch_filter)
    streamed = streamed_vectors(problem, tiling, classes, StreamedInput(problem.streamed(t), F), options)
    cells = make_cells(problem, tiling, classes, stationary, streamed)
    return MappingContext(problem, tiling, classes, stationary, streamed, cells, bank_map, F, I)


_BANKS = [BankMap(32, "sliced", 4), BankMap(16, "sliced", 4), BankMap(24, "sliced", 4), BankMap(32, "mod", 4),
          BankMap(30, "mod", 4), BankMap(16, "xor", 4), BankMap(8, "mod", 4)]


def _assert_same(context: MappingContext, policy: str, budget: int, issued: np.ndarray | None) -> None:
    want, want_step = _reference_sampled_conflicts(context, policy, budget, issued)
    got = exact_mod.sampled_conflicts(context, policy, budget=budget, issued_pairs=issued)  # type: ignore[arg-type]
    assert got.sample_step == want_step
    assert got.cycles.dtype == want.dtype and np.array_equal(got.cycles, want)


@pytest.mark.parametrize("case", range(len(MAPPING_CASES)))
def test_sample_equals_the_per_product_enumeration_on_the_mapping_cases(case: int) -> None:
    """Strides (δ > 1 in fprop), asymmetric strides and pads, 1×1 and 5×5 kernels, batches; every phase,
    both policies, every hash; a budget that takes every pair, one that samples, and runs of pairs."""
    layer, density, rows, cols, kc = MAPPING_CASES[case]
    rng = np.random.default_rng(case)
    for phase, policy in itertools.product(("fprop", "dgrad", "wgrad"), ("none", "ant")):
        bank_map = _BANKS[int(rng.integers(len(_BANKS)))]
        for depth, budget in ((0, 1 << 15), (0, 37), (2, 1 << 15), (1, 600)):
            context = _context(layer, phase, density, case, rows, cols, kc, 4, 4,
                               dataclasses.replace(bank_map, queue_depth=depth), policy == "ant", case % 2 == 1)
            issued = rng.integers(0, 50, context.n_slots)
            _assert_same(context, policy, budget, issued)
            _assert_same(context, policy, budget, None)


@pytest.mark.parametrize("seed", range(6))
def test_sample_equals_the_per_product_enumeration_on_random_designs(seed: int) -> None:
    """Random layers, PE grids, vector widths (F, I from 1 to 8: padded F-slots, many I-widths), channel
    groups, densities, hashes and queue depths."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(4):
        R = int(rng.choice([1, 3, 5]))
        stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        layer = Layer("r", N=int(rng.integers(1, 3)), C=int(rng.integers(1, 9)), K=int(rng.integers(1, 13)),
                      H=int(rng.integers(R, 14)), W=int(rng.integers(R, 14)), R=R, S=R, stride=stride,
                      pad=int(rng.integers(0, R // 2 + 1)))
        F, I = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        banks = int(rng.choice([8, 16, 32, 64])) * F
        bank_map = BankMap(banks, str(rng.choice(["sliced", "mod", "xor"])), F, int(rng.choice([0, 0, 1, 3])))
        if bank_map.hash == "xor" and banks & (banks - 1):
            bank_map = dataclasses.replace(bank_map, hash="mod")
        phase = str(rng.choice(["fprop", "dgrad", "wgrad"]))
        policy = str(rng.choice(["none", "ant"]))
        context = _context(layer, phase, float(rng.uniform(0.05, 1.0)), seed, int(rng.integers(1, 4)),
                           int(rng.integers(1, 4)), int(rng.integers(1, 6)), F, I, bank_map, policy == "ant",
                           bool(rng.integers(2)))
        issued = rng.integers(0, 80, context.n_slots)
        for budget in (1 << 15, int(rng.integers(5, 400))):
            _assert_same(context, policy, budget, issued)


def test_the_mapped_phases_keep_every_record_with_the_reference_sampler(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through ``map_phase`` on a layer large enough to be sampled: every field of every phase's
    ``PhaseWork`` equals the one mapped with the reference sampler swapped in."""
    from antsim.dataflow import map_phase, mapper

    layer = Layer("m", N=1, C=32, K=32, H=24, W=24, R=3, S=3, stride=1, pad=1)
    t = random_tensors(layer, 0.5, seed=5)
    for policy, depth in (("none", 0), ("ant", 0), ("none", 2)):
        arch = small_arch(policy, 4, 4, 4, accumulators={"queue_depth": depth})
        for phase in ("fprop", "dgrad", "wgrad"):
            new = map_phase(arch, layer, phase, t)
            with monkeypatch.context() as patch:
                patch.setattr(mapper, "sampled_conflicts", lambda c, p, issued_pairs=None: exact_mod.ConflictEstimate(
                    *_reference_sampled_conflicts(c, p, 1 << 15, issued_pairs)))
                old = map_phase(arch, layer, phase, t)
            assert any(n.startswith("conflict_cycles estimated from a systematic") for n in new.notes)  # sampled
            for field in dataclasses.fields(new):
                a, b = getattr(new, field.name), getattr(old, field.name)
                same = np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
                assert same, (policy, depth, phase, field.name)


@pytest.mark.parametrize("counted_columns", [0, 1 << 11, 1 << 30])
def test_column_max_load_matches_max_load_extra_on_every_small_height(monkeypatch: pytest.MonkeyPatch,
                                                                      counted_columns: int) -> None:
    """The sorting network (no column counted), the rule's own choice and the bincount for every width."""
    monkeypatch.setattr(banks_mod, "_COUNTED_COLUMNS", counted_columns)
    rng = np.random.default_rng(3)
    for rows, banks in itertools.product(range(1, 21), (1, 3, 32, 127, 128, 300, 40_000)):
        bank = rng.integers(0, banks, (rows, 257))
        valid = rng.random((rows, 257)) < rng.uniform(0.2, 1.0)
        column = np.broadcast_to(np.arange(257), (rows, 257))
        want = max_load_extra(column[valid], bank[valid], banks, 257)
        assert np.array_equal(column_max_load_extra(bank, valid, banks), want), (rows, banks)
    pile = np.zeros((16, 4), np.int64)  # every valid product on one bank: load 16, extra 15
    assert column_max_load_extra(pile, np.ones((16, 4), bool), 32).tolist() == [15] * 4
    assert column_max_load_extra(pile, np.zeros((16, 4), bool), 32).tolist() == [0] * 4
