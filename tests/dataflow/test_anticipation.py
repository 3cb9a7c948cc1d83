"""RCP fractions and anticipation on 32×32 planes, and exact bank-conflict counting."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from dataflow_helpers import config_with, random_tensors, small_arch

from antsim.dataflow import map_phase
from antsim.sparsity.generators import make_tensors
from antsim.workloads.layers import Layer

PLANE32 = Layer("plane32", N=1, C=4, K=4, H=32, W=32, R=3, S=3, stride=1, pad=1)


@pytest.mark.parametrize("density", [0.05, 0.2, 0.6])
def test_wgrad_rcp_fraction_on_one_tile_is_density_independent(density: float) -> None:
    """One PE tile holding the whole plane: RCP fraction ≈ 1 − R·S/(H·W), whatever the density."""
    arch = small_arch("none", rows=1, cols=1, kc=4)
    t = random_tensors(PLANE32, density, seed=int(density * 100))
    p = map_phase(arch, PLANE32, "wgrad", t).products
    expected = 1 - PLANE32.R * PLANE32.S / (PLANE32.H * PLANE32.W)
    assert p.rcp / p.total == pytest.approx(expected, abs=0.03 * (1 - expected) + 1e-3)
    # total is every non-zero pair of the same image
    assert p.total == np.count_nonzero(t.activations) * np.count_nonzero(t.grad_output)


@pytest.mark.parametrize("model", ["uniform", "topk_field"])
def test_ant_anticipates_most_wgrad_rcps_and_oracle_all(model: str) -> None:
    """resnet18-cifar-like 3×3 layer at 32×32 (channels reduced), density 0.1, default SCNN tiling."""
    layer = Layer("res", N=1, C=16, K=16, H=32, W=32, R=3, S=3, stride=1, pad=1)
    t = make_tensors(layer, density_w=0.1, density_a=0.1, density_g=0.1, model=model, seed=0)
    base = map_phase(config_with("arch_configs/scnn.yaml"), layer, "wgrad", t).products
    ant = map_phase(config_with("arch_configs/ant.yaml"), layer, "wgrad", t).products
    oracle = map_phase(config_with("arch_configs/ant.yaml", anticipation={"policy": "oracle"}), layer, "wgrad",
                       t).products
    assert base.skipped == 0 and base.rcp > 0.95 * base.total
    assert ant.total == base.total and ant.valid == base.valid == oracle.valid
    assert ant.skipped >= 0.90 * ant.rcp
    assert oracle.skipped == oracle.rcp


def test_one_bank_serialises_every_valid_product() -> None:
    """1×1 stride-1 fprop: every product is valid, so with one bank a pair costs one cycle per product."""
    layer = Layer("pw", N=1, C=3, K=6, H=8, W=8, R=1, S=1)
    t = random_tensors(layer, 0.5, seed=11)
    arch = small_arch("none", 2, 2, 3, accumulators={"banks": 1, "bank_hash": "mod"})
    work = map_phase(arch, layer, "fprop", t, fidelity="exact")
    assert work.products.rcp == 0
    assert np.array_equal(work.conflict_cycles, work.issued_products - work.issued_pairs)
    assert work.conflict_cycles.sum() > 0


def test_enough_banks_with_distinct_outputs_never_conflict() -> None:
    """1×1 fprop: a pair's products hit distinct (k, p, q); banks ≥ the accumulator region → no conflict."""
    layer = Layer("pw", N=1, C=3, K=6, H=8, W=8, R=1, S=1)
    t = random_tensors(layer, 0.5, seed=12)
    region = 3 * 4 * 4  # Kc × tile (a 1×1 kernel reaches only the PE's own 4×4 tile)
    for banks, bank_hash in ((region, "mod"), (64, "xor")):  # each a bijection on indices < banks
        work = map_phase(small_arch("none", 2, 2, 3, accumulators={"banks": banks, "bank_hash": bank_hash}),
                         layer, "fprop", t, fidelity="exact")
        assert work.conflict_cycles.sum() == 0, bank_hash
    one_pe_lane = map_phase(small_arch("none", 2, 2, 3, pe_array={"F": 1, "I": 1},
                                       accumulators={"banks": 1, "bank_hash": "mod"}),
                            layer, "fprop", t, fidelity="exact")
    assert one_pe_lane.conflict_cycles.sum() == 0


def _contexts(layer, density, rows, cols, kc, phase, monkeypatch, **sections):
    """The MappingContexts ``map_phase`` hands ``count_pairs`` for one ANT mapping."""
    from antsim.dataflow import mapper

    seen = []
    real = mapper.count_pairs
    monkeypatch.setattr(mapper, "count_pairs", lambda context, policy: seen.append(context) or real(context, policy))
    arch = small_arch("ant", rows=rows, cols=cols, kc=kc, stride_phases=True, **sections)
    map_phase(arch, layer, phase, random_tensors(layer, density, seed=7))
    return seen


def _reach_screen(problem, stationary, streamed, pairs) -> np.ndarray:
    """The screen as commit 13c1e81 computed it, pair by pair with ``DimMap.reach`` (the reference for ``screen``,
    which now computes the same bounds in place)."""
    ok = np.ones(len(pairs.f), bool)
    for d, dim in enumerate(problem.dims):
        out_lo, out_hi = dim.reach(stationary.box[2 * d, pairs.i], stationary.box[2 * d + 1, pairs.i],
                                   streamed.box[2 * d, pairs.f], streamed.box[2 * d + 1, pairs.f])
        ok &= out_lo <= out_hi
    return ok


def _reference_ant_counts(context):
    """ANT pair counts of commit e01018b: every candidate pair in cell order (``iter_pairs``), screened with
    ``DimMap.reach`` (``_reach_screen``)."""
    from antsim.dataflow.pairing import iter_pairs

    cells, n_slots = context.cells, context.n_slots
    per_cell = np.zeros(len(cells.slot), np.int64)
    pairs, products, reads = (np.zeros(n_slots, np.int64) for _ in range(3))
    for batch in iter_pairs(cells):
        issued = _reach_screen(context.problem, context.stationary, context.streamed_vectors, batch)
        slot = cells.slot[batch.cell[issued]]
        size_i = context.stationary.vec_size[batch.i[issued]]
        np.add.at(pairs, slot, 1)
        np.add.at(per_cell, batch.cell[issued], 1)
        np.add.at(products, slot, size_i * context.streamed_vectors.vec_size[batch.f[issued]])
        np.add.at(reads, slot, size_i)
    return pairs, products, reads, per_cell


@pytest.mark.parametrize("tabulated", [True, False])
@pytest.mark.parametrize("case", range(5))
@pytest.mark.parametrize("phase", ["fprop", "dgrad", "wgrad"])
def test_ant_counts_equal_the_per_pair_reach_screen(case, phase, tabulated, monkeypatch):
    """The screen looked up in ``_ScreenTable`` (whole cells counted per cell) — or, with the table refused, the
    in-place screen over single-I cells first — equals ``screen`` over every pair in cell order, on strided,
    asymmetric, 1x1 and 5x5 layers (stride phases on: fprop's δ > 1 divisions)."""
    from dataflow_helpers import MAPPING_CASES

    from antsim.dataflow import anticipation

    if not tabulated:
        monkeypatch.setattr(anticipation, "_SCREEN_TABLE_ENTRIES", 0)
    layer, density, rows, cols, kc = MAPPING_CASES[case]
    for context in _contexts(layer, density, rows, cols, kc, phase, monkeypatch):
        table = anticipation._ScreenTable.of(context.problem, context.stationary, context.streamed_vectors)
        assert table is None or tabulated  # tabulated: wgrad on the 13×11 plane is too large a table even so
        got = anticipation.count_pairs(context, "ant")
        pairs = _assert_counts_equal_reference(got, context)
        assert 0 < pairs.sum() <= got.candidate_pairs.sum()
        if phase == "wgrad" and layer.R > 1:  # most wgrad pairs are RCPs: the screen skips some
            assert pairs.sum() < got.candidate_pairs.sum()


def _assert_counts_equal_reference(got, context) -> np.ndarray:
    """``count_pairs``' counts equal the per-pair ``screen`` over every pair; returns the issued pairs."""
    pairs, products, reads, per_cell = _reference_ant_counts(context)
    np.testing.assert_array_equal(got.issued_pairs, pairs)
    np.testing.assert_array_equal(got.issued_products, products)
    np.testing.assert_array_equal(got.stationary_reads, reads)
    np.testing.assert_array_equal(got.cell_issued_pairs, per_cell)
    return pairs


def _random_layer(seed: int) -> tuple[Layer, float, int, int, int]:
    """A random small layer (kernel 1/3/5, stride 1–3, pad, batch), density and PE grid / Kc."""
    rng = np.random.default_rng(seed)
    R, S = (int(k) for k in rng.choice([1, 3, 5], 2))
    H, W = int(rng.integers(R, R + 12)), int(rng.integers(S, S + 12))
    layer = Layer(f"rand{seed}", N=int(rng.integers(1, 3)), C=int(rng.integers(1, 5)), K=int(rng.integers(1, 9)),
                  H=H, W=W, R=R, S=S, stride=(int(rng.integers(1, 4)), int(rng.integers(1, 4))),
                  pad=(int(rng.integers(0, R)), int(rng.integers(0, S))))
    return layer, float(rng.choice([0.1, 0.3, 0.7])), int(rng.integers(1, 5)), int(rng.integers(1, 5)), \
        int(rng.integers(1, 6))


@pytest.mark.parametrize("seed", range(16))
def test_ant_counts_on_random_layers_equal_the_per_pair_reach_screen(seed, monkeypatch):
    """Random kernels, strides, pads, grids and widths (F of 1, 2, 4 — a divisor of the 32 banks —, I of 1–4),
    all three phases: the tabulated screen with whole cells counted per cell gives the counts of ``screen`` over
    every pair."""
    from antsim.dataflow import anticipation

    layer, density, rows, cols, kc = _random_layer(seed)
    rng = np.random.default_rng(1000 + seed)
    pe_array = {"rows": rows, "cols": cols, "F": int(rng.choice([1, 2, 4])), "I": int(rng.integers(1, 5))}
    for phase in ("fprop", "dgrad", "wgrad"):
        for context in _contexts(layer, density, rows, cols, kc, phase, monkeypatch, pe_array=pe_array):
            got = anticipation.count_pairs(context, "ant")
            _assert_counts_equal_reference(got, context)
            for name in ("issued_pairs", "issued_products", "stationary_reads", "cell_issued_pairs"):
                assert getattr(got, name).dtype == np.int64, name


@pytest.mark.parametrize("case", range(5))
def test_the_screen_table_gives_screen_on_every_pair_and_whole_cells_issue_every_pair(case, monkeypatch):
    """Brute force: the table's verdict and ``screen``'s on every candidate pair are ``DimMap.reach``'s, and every pair
    of a single-I cell ``screened`` clears passes it."""
    from dataflow_helpers import MAPPING_CASES

    from antsim.dataflow.anticipation import _ScreenTable, screen
    from antsim.dataflow.pairing import iter_pairs

    layer, density, rows, cols, kc = MAPPING_CASES[case]
    for phase in ("fprop", "dgrad", "wgrad"):
        for context in _contexts(layer, density, rows, cols, kc, phase, monkeypatch):
            table = _ScreenTable.of(context.problem, context.stationary, context.streamed_vectors)
            if table is None:  # wgrad on the 13×11 plane: 11^4 · 13^2 streamed boxes per stationary box pair
                assert phase == "wgrad"
                continue
            whole = ~table.screened(context.cells.i0) & (context.cells.n_i == 1)
            for batch in iter_pairs(context.cells):
                want = _reach_screen(context.problem, context.stationary, context.streamed_vectors, batch)
                np.testing.assert_array_equal(table.issued(batch), want)
                np.testing.assert_array_equal(screen(context.problem, context.stationary, context.streamed_vectors,
                                                     batch), want)
                narrow = [replace(v, box=v.box.astype(np.int32)) for v in (context.stationary, context.streamed_vectors)
                          ]
                np.testing.assert_array_equal(screen(context.problem, *narrow, batch), want)  # int32 boxes: the same
                assert want[whole[batch.cell]].all()
            if phase == "fprop":  # most fprop cells lie inside the plane: every pair issues
                assert whole.any()


def test_screen_pairs_reuses_only_the_table_count_pairs_left_on_its_own_context(monkeypatch):
    """``count_pairs`` leaves on the context it counted (``MappingContext.derived``), for ``screen_pairs``, the
    I-vectors it proved to pass and, where some cell may still skip a pair, its table (the joint one for a phase of
    single-I cells, else the per-dimension ones) — none where every I-vector passes (the 1×1 kernel): the same
    verdicts as ``DimMap.reach`` each way; another context — another phase's, or a ``replace`` of its own with other
    fields — starts without them."""
    from dataflow_helpers import MAPPING_CASES

    from antsim.dataflow import anticipation
    from antsim.dataflow.pairing import iter_pairs

    keys = {anticipation._JOINT_TABLE, anticipation._DIM_TABLES, anticipation._PASSING}
    for case, counted, want in ((0, "fprop", {anticipation._DIM_TABLES}), (1, "dgrad", {anticipation._JOINT_TABLE}),
                                (3, "fprop", set())):
        layer, density, rows, cols, kc = MAPPING_CASES[case]
        other = "fprop" if counted == "dgrad" else "dgrad"
        # replace(): fresh contexts with nothing derived (the captured ones were counted by map_phase already)
        mine = replace(_contexts(layer, density, rows, cols, kc, counted, monkeypatch)[0])
        theirs = replace(_contexts(layer, density, rows, cols, kc, other, monkeypatch)[0])
        assert (int(mine.cells.n_i.max()) == 1) == (want != {anticipation._DIM_TABLES})
        assert not keys & set(mine.derived)
        anticipation.count_pairs(mine, "ant")
        assert keys & set(mine.derived) == want | {anticipation._PASSING} and not keys & set(theirs.derived)
        assert mine.derived[anticipation._PASSING].all() == (not want)
        assert not keys & set(replace(mine, streamed=theirs.streamed).derived)  # a new context: nothing derived yet
        for context in (mine, theirs):
            for batch in iter_pairs(context.cells):
                reference = _reach_screen(context.problem, context.stationary, context.streamed_vectors, batch)
                np.testing.assert_array_equal(anticipation.screen_pairs(context, batch), reference)
                np.testing.assert_array_equal(anticipation.screen(context.problem, context.stationary,
                                                                  context.streamed_vectors, batch), reference)


def test_a_context_without_cells_counts_nothing(monkeypatch):
    """No cells (every stationary fiber empty): every count is 0, per slot, for both policies."""
    import dataclasses

    from dataflow_helpers import MAPPING_CASES

    from antsim.dataflow import anticipation

    layer, density, rows, cols, kc = MAPPING_CASES[0]
    for phase in ("fprop", "wgrad"):
        context = _contexts(layer, density, rows, cols, kc, phase, monkeypatch)[0]
        cells = context.cells
        empty = type(cells)(**{f.name: getattr(cells, f.name)[:0] for f in dataclasses.fields(cells)})
        for policy in ("none", "ant"):
            got = anticipation.count_pairs(dataclasses.replace(context, cells=empty), policy)
            for name in ("candidate_pairs", "issued_pairs", "issued_products", "stationary_reads"):
                np.testing.assert_array_equal(getattr(got, name), np.zeros(context.n_slots, np.int64), err_msg=name)
            assert got.cell_issued_pairs is not None and len(got.cell_issued_pairs) == 0
