"""ANT pair counts against a brute force written from the RCP definition, pair by pair in Python.

The reference knows nothing of ``DimMap.reach``'s closed form, the screen tables, whole cells or column passes: for
every candidate (I-vector, F-vector) pair of every cell it takes the smallest and largest numerator ``α·y + β·u + γ``
over every coordinate of the two bounding boxes, and issues the pair when, in every spatial dimension, some integer
output ``0 ≤ o < extent`` has ``o·δ`` between them (the interval of outputs the boxes can reach meets the valid
window). Issued pairs, products (``|I-vector| · |F-vector|``) and stationary reads (``|I-vector|``) are summed per
slot and per cell.
"""

from __future__ import annotations

import numpy as np
import pytest
from dataflow_helpers import MAPPING_CASES, small_arch

from antsim.dataflow import anticipation, map_phase
from antsim.dataflow.context import MappingContext
from antsim.phases import DimMap
from antsim.workloads.layers import Layer
from tests.dataflow.dataflow_helpers import random_tensors


def _reaches(dim: DimMap, y_lo: int, y_hi: int, u_lo: int, u_hi: int) -> bool:
    numerators = [dim.alpha * y + dim.beta * u + dim.gamma
                  for y in range(y_lo, y_hi + 1) for u in range(u_lo, u_hi + 1)]
    low, high = min(numerators), max(numerators)
    return any(low <= o * dim.delta <= high for o in range(dim.extent))


def _brute_force_counts(context: MappingContext) -> tuple[np.ndarray, ...]:
    """(issued pairs, issued products, stationary reads) per slot and issued pairs per cell, by Python loops."""
    cells, stationary, streamed = context.cells, context.stationary, context.streamed_vectors
    dims = context.problem.dims
    verdicts: dict[tuple, bool] = {}  # memo on the two boxes (the verdict depends on nothing else)
    per_slot = np.zeros((3, context.n_slots), np.int64)
    per_cell = np.zeros(len(cells.slot), np.int64)
    for c in range(len(cells.slot)):
        for i in range(int(cells.i0[c]), int(cells.i0[c] + cells.n_i[c])):
            for f in range(int(cells.f0[c]), int(cells.f0[c] + cells.n_f[c])):
                boxes = tuple(int(stationary.box[k, i]) for k in range(4)) + tuple(int(streamed.box[k, f])
                                                                                   for k in range(4))
                if boxes not in verdicts:
                    verdicts[boxes] = all(_reaches(dim, boxes[2 * d], boxes[2 * d + 1], boxes[4 + 2 * d],
                                                   boxes[5 + 2 * d]) for d, dim in enumerate(dims))
                if verdicts[boxes]:
                    size_i = int(stationary.vec_size[i])
                    per_slot[:, cells.slot[c]] += (1, size_i * int(streamed.vec_size[f]), size_i)
                    per_cell[c] += 1
    return per_slot[0], per_slot[1], per_slot[2], per_cell


def _ant_contexts(layer: Layer, density: float, rows: int, cols: int, kc: int, phase: str, monkeypatch,
                  seed: int = 7, **sections) -> list[MappingContext]:
    from antsim.dataflow import mapper

    seen: list[MappingContext] = []
    real = mapper.count_pairs
    monkeypatch.setattr(mapper, "count_pairs", lambda context, policy: seen.append(context) or real(context, policy))
    arch = small_arch("ant", rows=rows, cols=cols, kc=kc, stride_phases=True, **sections)
    map_phase(arch, layer, phase, random_tensors(layer, density, seed=seed))
    return seen


def _assert_equal_to_brute_force(context: MappingContext) -> np.ndarray:
    got = anticipation.count_pairs(context, "ant")
    pairs, products, reads, per_cell = _brute_force_counts(context)
    for name, want in (("issued_pairs", pairs), ("issued_products", products), ("stationary_reads", reads),
                       ("cell_issued_pairs", per_cell)):
        value = getattr(got, name)
        assert value.dtype == np.int64, name
        np.testing.assert_array_equal(value, want, err_msg=name)
    np.testing.assert_array_equal(got.candidate_pairs,
                                  np.bincount(context.cells.slot, context.cells.n_pairs, context.n_slots))
    return pairs


def _random_case(seed: int) -> tuple[Layer, float, int, int, int, dict]:
    """A random small layer (kernel 1/2/3/5, stride 1–3, pad, batch), density, grid, Kc and F × I."""
    rng = np.random.default_rng(500 + seed)
    R, S = (int(k) for k in rng.choice([1, 2, 3, 5], 2))
    H, W = int(rng.integers(R, R + 10)), int(rng.integers(S, S + 10))
    layer = Layer(f"brute{seed}", N=int(rng.integers(1, 3)), C=int(rng.integers(1, 4)), K=int(rng.integers(1, 7)),
                  H=H, W=W, R=R, S=S, stride=(int(rng.integers(1, 4)), int(rng.integers(1, 4))),
                  pad=(int(rng.integers(0, R)), int(rng.integers(0, S))))
    rows, cols = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    pe_array = {"rows": rows, "cols": cols, "F": int(rng.choice([1, 2, 4])), "I": int(rng.integers(1, 5))}
    return layer, float(rng.choice([0.1, 0.3, 0.8])), rows, cols, int(rng.integers(1, 5)), pe_array


@pytest.mark.parametrize("seed", range(12))
def test_counts_on_random_layers_equal_the_brute_force(seed, monkeypatch):
    """Random kernels, strides, pads, grids, Kc and widths, all three phases; the column passes cut to 1 and 2 on
    odd seeds (every run longer than that goes through the pair-by-pair tail, in batches of a few pairs)."""
    layer, density, rows, cols, kc, pe_array = _random_case(seed)
    if seed % 2:
        monkeypatch.setattr(anticipation, "_COLUMN_PASSES", 1 + seed % 4 // 2)
        monkeypatch.setattr(anticipation, "PAIR_BATCH", 5)
    for phase in ("fprop", "dgrad", "wgrad"):
        for context in _ant_contexts(layer, density, rows, cols, kc, phase, monkeypatch, seed=seed,
                                     pe_array=pe_array):
            _assert_equal_to_brute_force(context)


PER_DIM_SCREENS = ("per_dim", "per_dim_sorted", "per_dim_numbered", "masks_by_columns", "masks_one_bit")


@pytest.mark.parametrize("screen", ["joint", *PER_DIM_SCREENS, "in_place"])
@pytest.mark.parametrize("case", range(len(MAPPING_CASES)))
def test_counts_on_the_mapping_cases_equal_the_brute_force(case, screen, monkeypatch):
    """Strided, asymmetric, 1×1 and 5×5 layers, with the verdicts looked up in the joint table (phases of single-I
    cells; the others per dimension), in the per-dimension tables only — their streamed intervals numbered by a sort
    or by counting rather than coded directly, the cells' streamed masks OR-ed run by run rather than per fiber, or
    masks of one bit (every cell whose stationary fiber fails something screened) —, or computed in place (both
    tables refused); I = 2 so that fprop and dgrad hold multi-I cells beside single-I ones."""
    if screen in PER_DIM_SCREENS:
        monkeypatch.setattr(anticipation._ScreenTable, "of", classmethod(lambda cls, *operands: None))
    if screen == "per_dim_sorted":  # the intervals numbered by a sort, as on a long GEMM plane
        monkeypatch.setattr(anticipation, "_COUNTED_CODES", 0)
        monkeypatch.setattr(anticipation, "_DIRECT_CODES", 0)
    if screen == "per_dim_numbered":
        monkeypatch.setattr(anticipation, "_DIRECT_CODES", 0)
    if screen == "masks_by_columns":
        monkeypatch.setattr(anticipation, "_held_at_starts", lambda held, streamed: None)
    if screen == "masks_one_bit":
        monkeypatch.setattr(anticipation, "_MASK_BITS", 1)
    if screen == "in_place":
        monkeypatch.setattr(anticipation, "_SCREEN_TABLE_ENTRIES", 0)
    layer, density, rows, cols, kc = MAPPING_CASES[case]
    skipped = 0
    for phase in ("fprop", "dgrad", "wgrad"):
        for context in _ant_contexts(layer, density, rows, cols, kc, phase, monkeypatch,
                                     pe_array={"rows": rows, "cols": cols, "F": 2, "I": 2}):
            per_dim = anticipation._DimTables.of(context.problem, context.stationary, context.streamed_vectors)
            assert (per_dim is None) == (screen == "in_place")
            issued = int(_assert_equal_to_brute_force(context).sum())
            candidates = int(context.cells.n_pairs.sum())
            assert 0 <= issued <= candidates
            skipped += candidates - issued if phase == "wgrad" else 0
            if phase == "fprop":
                assert (context.cells.n_i > 1).any() and (context.cells.n_i == 1).any()
    assert skipped > 0  # the screen skips some wgrad pairs on every case


def test_edge_cases_equal_the_brute_force(monkeypatch):
    """Operands so sparse that cells are few and fetch-filtered fibers empty (n_f = 0), and dense ones whose runs are
    long (n_f up to tens on a single-PE grid)."""
    layer = Layer("edge", N=1, C=2, K=3, H=6, W=5, R=3, S=3, stride=1, pad=1)
    long_runs = 0
    for density in (0.02, 1.0):
        for phase in ("fprop", "dgrad", "wgrad"):
            for context in _ant_contexts(layer, density, 1, 1, 3, phase, monkeypatch, seed=3,
                                         pe_array={"rows": 1, "cols": 1, "F": 1, "I": 1}):
                _assert_equal_to_brute_force(context)
                long_runs += int((context.cells.n_f > anticipation._COLUMN_PASSES).sum())
    assert long_runs > 0  # the dense wgrad's dY fibers exceed the column passes: the tail was taken


def test_a_long_gemm_plane_screens_without_counting_over_its_interval_codes():
    """A GEMM laid out as a 1×K plane has K² interval codes per dimension: vgg16's classifier.0 (K = 25088) once
    counted over all of them (10 GB, 42 s). Its wgrad screen must stay small; the sorted numbering equals np.unique
    (the mapping cases above check the counts it gives against the brute force, ``per_dim_sorted``)."""
    import tracemalloc

    from antsim.dataflow.gemm import map_gemm_phase
    from antsim.dataflow.reuse import disabled
    from antsim.sparsity.gemm import make_gemm_tensors
    from antsim.spec.arch import load_arch
    from antsim.workloads.gemm import Gemm

    arch = load_arch("arch_configs/ant.yaml")
    gemm = Gemm("fc", M=256, N=1, K=25088, a="weights")
    tensors = make_gemm_tensors(gemm, {"w": 0.1, "a": 0.1, "g": 0.1}, "uniform", 0)
    with disabled():
        tracemalloc.start()
        try:
            work = map_gemm_phase(arch, gemm, "wgrad", tensors, "fast")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert work.products.total > 0
    assert peak < 256 << 20, peak  # a count over 25088² codes alone is 5 GB
    codes = np.random.default_rng(0).integers(0, 10**9, 1000)
    values, inverse = anticipation._unique_codes(codes, 10**9)
    expected, expected_inverse = np.unique(codes, return_inverse=True)
    np.testing.assert_array_equal(values, expected)
    np.testing.assert_array_equal(inverse, expected_inverse)
    small_values, small_inverse = anticipation._unique_codes(codes % 1000, 1000)
    np.testing.assert_array_equal(small_values, np.unique(codes % 1000))
    np.testing.assert_array_equal(small_values[small_inverse], codes % 1000)


def _failing_pairs_per_cell(context: MappingContext) -> np.ndarray:
    """Per cell, whether some pair of it fails the screen (``DimMap.reach``-free: the brute-force verdict)."""
    cells, stationary, streamed = context.cells, context.stationary, context.streamed_vectors
    fails = np.zeros(len(cells.slot), bool)
    for c in range(len(cells.slot)):
        for i in range(int(cells.i0[c]), int(cells.i0[c] + cells.n_i[c])):
            for f in range(int(cells.f0[c]), int(cells.f0[c] + cells.n_f[c])):
                fails[c] |= not all(_reaches(dim, int(stationary.box[2 * d, i]), int(stationary.box[2 * d + 1, i]),
                                             int(streamed.box[2 * d, f]), int(streamed.box[2 * d + 1, f]))
                                    for d, dim in enumerate(context.problem.dims))
    return fails


@pytest.mark.parametrize("held", ["per_fiber", "by_columns"])
@pytest.mark.parametrize("case", range(len(MAPPING_CASES)))
def test_the_cells_screened_are_exactly_those_holding_a_failing_pair(case, held, monkeypatch):
    """``_failing_cells``: exactly the cells some pair of which the screen skips when the failed intervals fit the
    masks (none with a failing pair missed, none without one screened); a superset of them with masks of one bit."""
    if held == "by_columns":
        monkeypatch.setattr(anticipation, "_held_at_starts", lambda held, streamed: None)
    layer, density, rows, cols, kc = MAPPING_CASES[case]
    exact = 0
    for phase in ("fprop", "dgrad", "wgrad"):
        for context in _ant_contexts(layer, density, rows, cols, kc, phase, monkeypatch,
                                     pe_array={"rows": rows, "cols": cols, "F": 2, "I": 2}):
            tables = anticipation._DimTables.of(context.problem, context.stationary, context.streamed_vectors)
            want = np.flatnonzero(_failing_pairs_per_cell(context))
            masks = anticipation._FailMasks.of(tables, context.stationary, context.streamed_vectors)
            with_f = np.flatnonzero(context.cells.n_f > 0)
            got = anticipation._failing_cells(context, tables, with_f)
            if masks.held is not None:
                np.testing.assert_array_equal(got, want)
                exact += 1
            with monkeypatch.context() as narrow:
                narrow.setattr(anticipation, "_MASK_BITS", 1)
                coarse = anticipation._failing_cells(context, tables, with_f)
            assert set(want) <= set(coarse.tolist()) and set(got.tolist()) <= set(coarse.tolist())
            assert (context.cells.n_f[coarse] > 0).all()
    assert exact > 0


@pytest.mark.parametrize("case", range(len(MAPPING_CASES)))
def test_the_joint_table_narrows_single_i_cells_down_to_those_holding_a_failing_pair(case, monkeypatch):
    """``_ScreenTable.holding_failed`` on every single-I cell with F-vectors whose I-vector fails some box present:
    exactly the cells with a pair the screen skips (with masks of no bit: all of them, unnarrowed); I = 64, so that
    most phases' cells are single-I (the others take the per-dimension tables)."""
    layer, density, rows, cols, kc = MAPPING_CASES[case]
    narrowed = 0
    for phase in ("fprop", "dgrad", "wgrad"):
        for context in _ant_contexts(layer, density, rows, cols, kc, phase, monkeypatch,
                                     pe_array={"rows": rows, "cols": cols, "F": 2, "I": 64}):
            cells = context.cells
            table = anticipation._ScreenTable.of(context.problem, context.stationary, context.streamed_vectors)
            if table is None or int(cells.n_i.max(initial=0)) > 1:  # no joint table (the 13×11 wgrad), or multi-I
                continue
            runs = np.flatnonzero((cells.n_f > 0) & table.screened(cells.i0))
            want = np.flatnonzero(_failing_pairs_per_cell(context))
            assert set(want) <= set(runs.tolist())
            got = table.holding_failed(cells, runs, context.streamed_vectors)
            if not np.array_equal(got, runs):  # narrowed: then to exactly the cells with a failing pair
                np.testing.assert_array_equal(got, want)
                narrowed += len(runs) - len(got)
            else:  # not narrowed: too many failed boxes for the bits (wgrad's planes), or fibers sharing a start
                n_failing = int((~table.issued_table[:, table.present()]).any(axis=0).sum())
                streamed = context.streamed_vectors
                ranges = {(int(a), int(n)) for a, n in zip(streamed.fiber_vec0, streamed.fiber_nvec, strict=True) if n}
                shared = len(ranges) > len({a for a, _ in ranges})
                too_long = int(streamed.fiber_nvec.max()) > anticipation._COLUMN_PASSES
                assert n_failing > anticipation._MASK_BITS or shared or too_long or np.array_equal(want, runs)
            with monkeypatch.context() as narrow:
                narrow.setattr(anticipation, "_MASK_BITS", 0)
                np.testing.assert_array_equal(table.holding_failed(cells, runs, context.streamed_vectors), runs)
            monkeypatch.setattr(anticipation, "_VECTORS_PER_RUN", 10**9)  # the counts with every run narrowed first
            _assert_equal_to_brute_force(context)
            monkeypatch.undo()
    assert narrowed > 0


def test_fiber_masks_are_the_or_over_each_fiber():
    """``_fiber_or`` (consecutive runs, runs with gaps, runs out of order, empty fibers) and ``_held_at_starts``
    (fibers sharing vectors: one range per start, or two ranges from one start) against a loop over the fibers."""
    from types import SimpleNamespace

    rng = np.random.default_rng(3)
    masks = rng.integers(0, 1 << 20, 12).astype(np.uint64)
    layouts = {"consecutive": ([0, 2, 3, 7], [2, 1, 4, 5]), "gaps": ([0, 3, 9], [2, 4, 3]),
               "out_of_order": ([9, 0, 4, 6], [3, 4, 1, 2]), "with_empty": ([0, 5, 5, 11], [5, 0, 6, 1]),
               "single": ([1, 4, 7], [1, 1, 1])}
    for name, (starts, counts) in layouts.items():
        vectors = SimpleNamespace(fiber_vec0=np.array(starts), fiber_nvec=np.array(counts), vec_size=masks)
        want = np.zeros(len(masks), np.uint64)
        for start, count in zip(starts, counts, strict=True):
            if count:
                want[start] = np.bitwise_or.reduce(masks[start:start + count])
        np.testing.assert_array_equal(anticipation._fiber_or(masks, vectors), want, err_msg=name)
        np.testing.assert_array_equal(anticipation._held_at_starts(masks, vectors), want, err_msg=name)
    shared = SimpleNamespace(fiber_vec0=np.array([0, 0, 4]), fiber_nvec=np.array([3, 3, 2]), vec_size=masks)
    np.testing.assert_array_equal(anticipation._held_at_starts(masks, shared)[[0, 4]],
                                  [np.bitwise_or.reduce(masks[0:3]), masks[4] | masks[5]])
    ones = np.ones(12, np.uint64) << np.arange(12, dtype=np.uint64)  # distinct bits: every range its own OR
    two_ranges = SimpleNamespace(fiber_vec0=np.array([0, 0]), fiber_nvec=np.array([3, 5]), vec_size=ones)
    assert anticipation._held_at_starts(ones, two_ranges) is None


@pytest.mark.parametrize("n_runs", [3, 40])
def test_runs_holding_a_failed_interval_equal_a_loop(n_runs):
    """``_runs_holding``: per run of a streamed fiber (fewer runs than fibers: OR-ed run by run; more: looked up per
    fiber), whether one of its F-vectors holds an interval of the run's ``fails``; runs past ``_COLUMN_PASSES``
    F-vectors count as holding one."""
    from types import SimpleNamespace

    rng = np.random.default_rng(n_runs)
    counts = rng.integers(1, 4, 10)  # short fibers; with few runs two long ones
    if n_runs <= 10:
        counts[8:] = anticipation._COLUMN_PASSES + rng.integers(1, 4, 2)
    starts = np.cumsum(counts) - counts
    held = np.left_shift(np.uint64(1), rng.integers(0, 64, int(counts.sum())).astype(np.uint64))
    streamed = SimpleNamespace(fiber_vec0=starts, fiber_nvec=counts, vec_size=held)
    fiber = rng.integers(0, 10, n_runs)
    assert (anticipation._held_at_starts(held, streamed) is not None) == (n_runs > 10)  # the lookup per fiber taken
    fails = rng.integers(0, 1 << 63, n_runs, dtype=np.int64).astype(np.uint64) & rng.integers(0, 2, n_runs).astype(
        np.uint64) * np.uint64(0xFFFF)
    got = anticipation._runs_holding(held, streamed, starts[fiber], counts[fiber], fails)
    for k, fib in enumerate(fiber):
        run_held = np.bitwise_or.reduce(held[starts[fib]:starts[fib] + counts[fib]])
        want = bool(run_held & fails[k]) or counts[fib] > anticipation._COLUMN_PASSES
        assert got[k] == want, k


@pytest.mark.parametrize("seed", range(12))
def test_the_i_vectors_proved_to_pass_are_those_the_definition_gives_and_issue_every_pair(seed, monkeypatch):
    """``_passing_vectors`` on random layers, all three phases, by Python loops: every element of a fetch set's fibers
    lies in a row and a column the set receives; an I-vector is proved to pass exactly when its box reaches, in each
    dimension, every single row (column) its PE's set receives in a stride phase of a streamed class its own class
    pairs with (``_reaches``); and every pair of such an I-vector issues (the brute-force verdict)."""
    layer, density, rows, cols, kc, pe_array = _random_case(seed)
    proved = 0
    for phase in ("fprop", "dgrad", "wgrad"):
        for context in _ant_contexts(layer, density, rows, cols, kc, phase, monkeypatch, seed=seed,
                                     pe_array=pe_array):
            layout, classes, dims = context.streamed.layout, context.classes, context.problem.dims
            stationary, streamed, cells = context.stationary, context.streamed_vectors, context.cells
            n_cols = len(layout.col_pat)
            for key, vec0, nvec in zip(streamed.fiber_keys, streamed.fiber_vec0, streamed.fiber_nvec, strict=True):
                fetch_set = int(key) % layout.n_sets
                for f in range(int(vec0), int(vec0 + nvec)):
                    for e in range(int(streamed.vec_start[f]), int(streamed.vec_start[f] + streamed.vec_size[f])):
                        assert layout.row_pat[fetch_set // n_cols, streamed.sp1[e]]
                        assert layout.col_pat[fetch_set % n_cols, streamed.sp2[e]]
            passing = anticipation._passing_vectors(context)
            for key, vec0, nvec in zip(stationary.fiber_keys, stationary.fiber_vec0, stationary.fiber_nvec,
                                       strict=True):
                cls, pe = int(key) % classes.n_stationary, int(key) // classes.n_stationary % context.tiling.n_pes
                fetch_set = int(layout.set_of_pe[pe])
                phases = [[b // classes.mt[1] for a, b in classes.groups if a == cls],
                          [b % classes.mt[1] for a, b in classes.groups if a == cls]]
                kept = [[u for u in range(len(pattern)) if pattern[u] and u % classes.mt[d] in phases[d]]
                        for d, pattern in enumerate((layout.row_pat[fetch_set // n_cols],
                                                     layout.col_pat[fetch_set % n_cols]))]
                for i in range(int(vec0), int(vec0 + nvec)):
                    want = all(_reaches(dim, int(stationary.box[2 * d, i]), int(stationary.box[2 * d + 1, i]), u, u)
                               for d, dim in enumerate(dims) for u in kept[d])
                    assert bool(passing[i]) == want, (phase, i)
            for c in range(len(cells.slot)):
                for i in range(int(cells.i0[c]), int(cells.i0[c] + cells.n_i[c])):
                    if not passing[i]:
                        continue
                    for f in range(int(cells.f0[c]), int(cells.f0[c] + cells.n_f[c])):
                        proved += 1
                        assert all(_reaches(dim, int(stationary.box[2 * d, i]), int(stationary.box[2 * d + 1, i]),
                                            int(streamed.box[2 * d, f]), int(streamed.box[2 * d + 1, f]))
                                   for d, dim in enumerate(dims))
    assert proved > 0
