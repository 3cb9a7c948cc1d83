"""``make_cells`` builds its walking order by counting; the cells equal those of the sort it replaced.

The reference is ``make_cells`` of commit 0ab16c6: every (stride pair, group) appends the fibers of the
pair's stationary class, then one stable ``lexsort`` by (fiber, group) puts them in walking order.
"""

from __future__ import annotations

import numpy as np
import pytest

from antsim.dataflow import pairing
from antsim.dataflow.fibers import StreamedInput, stationary_vectors, streamed_vectors
from antsim.dataflow.options import MappingOptions
from antsim.dataflow.pairing import Cells, _walk_order, cell_dtypes, make_cells
from antsim.dataflow.tiling import StrideClasses, make_tiling, stride_classes
from antsim.phases import phase_problem
from antsim.workloads.layers import PHASES, Layer
from tests.dataflow.dataflow_helpers import random_tensors


def _reference_walk_order(stationary_class: np.ndarray, classes: StrideClasses, n_groups: int
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    fibers, groups, streamed_classes = [], [], []
    for a_class, b_class in classes.groups:
        in_class = np.nonzero(stationary_class == a_class)[0]
        for g in range(n_groups):
            fibers.append(in_class)
            groups.append(np.full(len(in_class), g))
            streamed_classes.append(np.full(len(in_class), b_class))
    fiber, group, b_class_of = (np.concatenate(x) if x else np.zeros(0, np.int64)
                                for x in (fibers, groups, streamed_classes))
    order = np.lexsort((group, fiber))
    return fiber[order], group[order], b_class_of[order]


def _reference_walk_counts(stationary_class: np.ndarray, classes: StrideClasses, n_groups: int
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_reference_walk_order`` in ``_walk_order``'s form: cells per fiber (its cells come fiber-major)."""
    fiber, group, b_class_of = _reference_walk_order(stationary_class, classes, n_groups)
    return np.bincount(fiber, minlength=len(stationary_class)).astype(np.int64), group, b_class_of


LAYERS = [
    Layer("s2", N=2, C=3, K=9, H=11, W=10, R=3, S=3, stride=2, pad=1),
    Layer("s3x1", N=1, C=4, K=5, H=9, W=12, R=5, S=2, stride=(3, 1), pad=(2, 0)),
    Layer("1x1s2", N=1, C=6, K=4, H=8, W=8, R=1, S=1, stride=2, pad=0),
]


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("stride_phases", [True, False])
def test_cells_equal_the_sorted_construction(layer, phase, stride_phases, monkeypatch):
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, 3, 2, 2)
    classes = stride_classes(problem, stride_phases)
    tensors = random_tensors(layer, 0.4, 7)
    stationary = stationary_vectors(problem, tiling, classes, problem.stationary(tensors), False, 4)
    streamed = streamed_vectors(problem, tiling, classes, StreamedInput(problem.streamed(tensors), 4),
                                MappingOptions(fetch_filter=True))
    cells = make_cells(problem, tiling, classes, stationary, streamed)
    monkeypatch.setattr("antsim.dataflow.pairing._walk_order", _reference_walk_counts)
    monkeypatch.setattr("antsim.dataflow.pairing._KEY_TABLE_PER_FIBER", -(1 << 20))  # binary search of keys
    reference = make_cells(problem, tiling, classes, stationary, streamed)
    assert len(reference.slot) > 0
    for name in Cells.__dataclass_fields__:
        got, want = getattr(cells, name), getattr(reference, name)
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_walk_order_by_hand():
    """A class with two streamed partners (no stride geometry above has one) and a class with none."""
    # stationary classes 0 and 1; class 0 pairs with streamed 2 then 0, class 1 with 1; class 2 with none
    classes = StrideClasses((1, 3), (1, 3), ((0, 2), (1, 1), (0, 0)))
    cells, group, b_class = _walk_order(np.array([1, 0, 2, 0]), classes, 2)
    assert cells.tolist() == [2, 4, 0, 4]  # fibers 0, 0, 1, 1, 1, 1, 3, 3, 3, 3
    assert group.tolist() == [0, 1, 0, 0, 1, 1, 0, 0, 1, 1]
    assert b_class.tolist() == [1, 1, 2, 0, 2, 0, 2, 0, 2, 0]
    for got, want in zip((cells, group, b_class), _reference_walk_counts(np.array([1, 0, 2, 0]), classes, 2),
                         strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n_groups", [1, 3])
@pytest.mark.parametrize("partners", [1, 2])
def test_walk_order_of_classes_with_as_many_partners(partners, n_groups):
    """Every class with the same number of partners (the walk without a division) equals the reference; the groups
    come back writable (``_fill_cells`` scales them in place), also from a broadcast of one group."""
    groups = tuple((a, (a + k) % 3) for a in range(3) for k in range(partners))
    classes = StrideClasses((1, 3), (1, 3), groups)
    stationary_class = np.array([2, 0, 1, 1, 0, 2, 2])
    got = _walk_order(stationary_class, classes, n_groups)
    for value, want in zip(got, _reference_walk_counts(stationary_class, classes, n_groups), strict=True):
        np.testing.assert_array_equal(value, want)
    assert got[1].flags.writeable


def _one_batch_cells(problem, tiling, classes, stationary, streamed) -> Cells:
    """The cells by the loops over the definition (``_brute_force_cells``), int64 (the width ``make_cells`` used
    before it narrowed its columns)."""
    want = _brute_force_cells(problem, tiling, classes, stationary, streamed)
    return Cells(**{name: np.array(values, np.int64).reshape(-1) for name, values in want.items()})


def _phase_operands(layer, phase, density, seed, rows=3, cols=2, kc=2):
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, rows, cols, kc)
    classes = stride_classes(problem, True)
    tensors = random_tensors(layer, density, seed)
    stationary = stationary_vectors(problem, tiling, classes, problem.stationary(tensors), False, 4)
    streamed = streamed_vectors(problem, tiling, classes, StreamedInput(problem.streamed(tensors), 4),
                                MappingOptions(fetch_filter=True))
    return problem, tiling, classes, stationary, streamed


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("density", [0.05, 0.4, 1.0])
def test_preallocated_batches_equal_one_batch(layer, phase, density, monkeypatch):
    """Batches of 1-7 cells filled into preallocated (narrowed) columns: the same values as one int64 batch, the
    dtype ``cell_dtypes`` chose, also where inert cells were dropped (the columns shrunk)."""
    operands = _phase_operands(layer, phase, density, 3)
    reference = _one_batch_cells(*operands)
    dtypes = cell_dtypes(operands[3], operands[4])
    for batch in (1, 7, 1 << 20):
        monkeypatch.setattr(pairing, "_CELL_BATCH", batch)
        cells = make_cells(*operands)
        for name in Cells.__dataclass_fields__:
            got, want = getattr(cells, name), getattr(reference, name)
            assert want.dtype == np.int64 and got.dtype == dtypes[name], name
            np.testing.assert_array_equal(got, want, err_msg=name)
        np.testing.assert_array_equal(cells.n_pairs, reference.n_pairs)


def test_sparse_cells_drop_inert_ones_and_shrink():
    operands = _phase_operands(LAYERS[0], "fprop", 0.05, 1)
    per_fiber_total = len(_one_batch_cells(*operands).slot)
    problem, tiling, classes, stationary, streamed = operands
    _, _, _, cls = pairing._decode_stationary(problem, tiling, classes, stationary.fiber_keys)
    capacity = int(_walk_order(cls, classes, tiling.n_groups)[0].sum())
    assert per_fiber_total < capacity  # some cells were inert: the preallocated columns were shrunk
    assert len(make_cells(*operands).slot) == per_fiber_total


def test_cell_dtypes_narrow_only_within_the_bounds(monkeypatch):
    operands = _phase_operands(LAYERS[0], "dgrad", 0.4, 2)
    narrow = cell_dtypes(operands[3], operands[4])
    assert {name for name, dtype in narrow.items() if dtype == np.int32} == {
        "i0", "f0", "n_i", "n_f", "nnz_s", "nnz_t", "nnz_t_all"}
    largest_count = int(max(operands[3].fiber_nnz.max(), operands[4].unfiltered_nnz.max()))
    monkeypatch.setattr(pairing, "_INT32_COUNT_MAX", largest_count - 1)
    counts_wide = cell_dtypes(operands[3], operands[4])
    assert {name for name, dtype in counts_wide.items() if dtype == np.int32} == {"i0", "f0"}
    monkeypatch.setattr(pairing, "_INT32_MAX", len(operands[3].vec_size) - 1)
    assert all(dtype == np.int64 for dtype in cell_dtypes(operands[3], operands[4]).values())
    cells = make_cells(*operands)
    assert all(getattr(cells, name).dtype == np.int64 for name in Cells.__dataclass_fields__)
    np.testing.assert_array_equal(cells.i0, _one_batch_cells(*operands).i0)


def test_count_bound_keeps_pairwise_products_in_int32():
    """46,340 is the largest count whose square fits int32; n_pairs is formed in int64 regardless."""
    assert pairing._INT32_COUNT_MAX ** 2 <= np.iinfo(np.int32).max < (pairing._INT32_COUNT_MAX + 1) ** 2
    big = np.array([50_000, 46_340], np.int32)
    cells = Cells(*(big.copy() for _ in Cells.__dataclass_fields__))
    assert cells.n_pairs.dtype == np.int64 and cells.n_pairs.tolist() == [2_500_000_000, 46_340 ** 2]


def _brute_force_cells(problem, tiling, classes, stationary, streamed) -> dict[str, list[int]]:
    """The cells by Python loops over the definition: for each stationary fiber (key ``((n·Cs + c)·n_pes + pe)·
    n_classes + class``), each group g, each streamed class its class pairs with, the cell of the streamed block
    ``(n·Ct + c)·G + g`` (n and c only where the streamed operand has them) unless that block's class holds no
    non-zero before the fetch filter; its streamed fiber is the one keyed ``(block·n_classes + class)·n_sets + set``."""
    Nt, Ct = problem.streamed_shape[:2]
    Cs = problem.stationary_shape[1] if problem.channel_matched else 1
    G, n_pes, layout = tiling.n_groups, tiling.n_pes, streamed.layout
    vectors = streamed.vectors
    fiber_of_key = {int(key): j for j, key in enumerate(vectors.fiber_keys)}
    unfiltered = streamed.unfiltered_nnz.ravel()
    out: dict[str, list[int]] = {name: [] for name in Cells.__dataclass_fields__}
    for s, key in enumerate(stationary.fiber_keys.tolist()):
        rest, a_class = divmod(key, classes.n_stationary)
        rest, pe = divmod(rest, n_pes)
        n, c = divmod(rest, Cs)
        for g in range(G):
            for a, b in classes.groups:
                block = ((n if Nt > 1 else 0) * Ct + (c if Ct > 1 else 0)) * G + g
                stream_key = block * classes.n_streamed + b
                if a != a_class or unfiltered[stream_key] == 0:
                    continue
                j = fiber_of_key.get(stream_key * layout.n_sets + int(layout.set_of_pe[pe]))
                row = {"slot": (n * G + g) * n_pes + pe, "stream_key": stream_key,
                       "nnz_t_all": int(unfiltered[stream_key]), "i0": int(stationary.fiber_vec0[s]),
                       "n_i": int(stationary.fiber_nvec[s]), "nnz_s": int(stationary.fiber_nnz[s]),
                       "f0": 0 if j is None else int(vectors.fiber_vec0[j]),
                       "n_f": 0 if j is None else int(vectors.fiber_nvec[j]),
                       "nnz_t": 0 if j is None else int(vectors.fiber_nnz[j])}
                for name, value in row.items():
                    out[name].append(value)
    return out


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("density", [0.05, 0.4, 1.0])
@pytest.mark.parametrize("searched", [False, True])
@pytest.mark.parametrize("rows", [0, 1 << 20])
def test_cells_equal_the_brute_force(layer, phase, density, searched, rows, monkeypatch):
    """Every field of every cell equals the loops over the definition: sparse operands (many inert cells dropped,
    the live ones gathered), dense ones (every cell live, repeated per fiber), in batches of 1-5 fibers' cells;
    streamed fibers found through the key table (missing keys sent to the appended zero fiber), through rows of the
    groups copied per fiber (``rows``: forced where each fiber pairs with one streamed class) or, ``searched``, by
    binary search."""
    monkeypatch.setattr(pairing, "_ROW_KEYS_PER_CELL", rows)
    if searched:
        monkeypatch.setattr(pairing, "_KEY_TABLE_PER_FIBER", -(1 << 20))
    by_rows = []
    fill_by_rows = pairing._fill_by_rows
    monkeypatch.setattr(pairing, "_fill_by_rows", lambda *args: (by_rows.append(1), fill_by_rows(*args)))
    operands = _phase_operands(layer, phase, density, 5)
    want = _brute_force_cells(*operands)
    assert searched == (pairing._StreamedIndex.of(operands[4], cell_dtypes(*operands[3:])).position is None)
    for batch in (1, 5, 1 << 20):
        monkeypatch.setattr(pairing, "_CELL_BATCH", batch)
        cells = make_cells(*operands)
        for name, values in want.items():
            np.testing.assert_array_equal(getattr(cells, name), np.array(values, np.int64).reshape(-1), err_msg=name)
    one_partner = pairing._one_partner(operands[2], pairing._decode_stationary(*operands[:3],
                                                                                operands[3].fiber_keys)[3])
    assert bool(by_rows) == (rows > 0 and not searched and one_partner)
    if density == 0.05 and phase == "fprop":
        problem, tiling, classes, stationary, _ = operands
        _, _, _, cls = pairing._decode_stationary(problem, tiling, classes, stationary.fiber_keys)
        assert len(want["slot"]) < int(_walk_order(cls, classes, tiling.n_groups)[0].sum())  # inert cells dropped


@pytest.mark.parametrize("pairing_groups", [
    ((0, 0), (0, 1), (1, 1), (2, 2), (2, 3), (3, 3)),  # two partners for classes 0 and 2, one for 1 and 3: walked
    tuple((a, b) for a in range(4) for b in (a, (a + 1) % 4)),  # two partners each, varying by class: a box
    ((0, 3), (2, 1), (3, 0)),  # class 1 pairs with nothing: walked, fibers without cells
])
@pytest.mark.parametrize("density", [0.05, 1.0])
def test_cells_of_other_stride_pairings_equal_the_brute_force(pairing_groups, density, monkeypatch):
    """The stride-2 layer's four stationary and four streamed classes paired otherwise than by stride geometry, so
    the cells are built both ways ``_stream_keys`` has — the (fiber, g, partner) box with more than one partner,
    and the walk order for classes with different partner counts —, with inert cells dropped (sparse) or none
    (dense), in batches of 1-7 fibers' cells: every field equals the loops over the definition."""
    from dataclasses import replace

    problem, tiling, classes, stationary, streamed = _phase_operands(LAYERS[0], "fprop", density, 9)
    assert (classes.n_stationary, classes.n_streamed) == (4, 4)
    operands = (problem, tiling, replace(classes, groups=pairing_groups), stationary, streamed)
    want = _brute_force_cells(*operands)
    assert len(want["slot"]) > 0
    for batch in (1, 7, 1 << 20):
        monkeypatch.setattr(pairing, "_CELL_BATCH", batch)
        cells = make_cells(*operands)
        for name, values in want.items():
            np.testing.assert_array_equal(getattr(cells, name), np.array(values, np.int64).reshape(-1), err_msg=name)
