"""Footprint taps. fprop/dgrad: the dense BLAS product and the scipy sparse one of a tap give the
same footprint, and both equal the dense per-tap path (an independent algorithm: touched-output arrays);
so does the stacked path (every tap at once, bit-packed).
wgrad: the bit-packed held entries per batch tile equal the per-image products of commit 0ab16c6 (kept below)."""

from __future__ import annotations

import numpy as np
import pytest

from antsim.dataflow import footprint
from antsim.dataflow.tiling import make_tiling
from antsim.phases import phase_problem
from antsim.workloads.layers import Layer
from tests.dataflow.dataflow_helpers import random_tensors

LAYERS = [
    Layer("3x3", N=2, C=5, K=11, H=9, W=7, R=3, S=3, stride=1, pad=1),
    Layer("s2", N=1, C=3, K=8, H=12, W=12, R=3, S=3, stride=2, pad=1),
    Layer("5x3", N=1, C=7, K=6, H=6, W=11, R=5, S=3, stride=(2, 1), pad=(2, 0)),
]
FIELDS = ("valid_products", "partial_outputs", "halo_outputs", "output_values")


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", ["fprop", "dgrad"])
@pytest.mark.parametrize("density", [0.05, 0.4])
def test_blas_and_sparse_tap_products_give_the_same_footprint(layer, phase, density, monkeypatch):
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, 3, 2, 4)
    t = random_tensors(layer, density, seed=3)
    S, T = problem.stationary(t) != 0, problem.streamed(t) != 0
    blas = footprint.plane_footprint_sparse(problem, tiling, S, T)
    monkeypatch.setattr(footprint, "_BLAS_TAP_ENTRIES", 0)  # every tap through scipy
    sparse = footprint.plane_footprint_sparse(problem, tiling, S, T)
    dense = footprint.plane_footprint_dense(problem, tiling, S, T)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(blas, name), getattr(sparse, name), err_msg=name)
        np.testing.assert_array_equal(getattr(blas, name), getattr(dense, name), err_msg=name)
    assert blas.valid_products.sum() > 0


@pytest.mark.parametrize("layer", [*LAYERS, Layer("1x1s2", N=3, C=6, K=9, H=8, W=8, R=1, S=1, stride=2, pad=0),
                                   Layer("deep", N=2, C=40, K=23, H=4, W=5, R=3, S=3, stride=1, pad=1)],
                         ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", ["fprop", "dgrad"])
@pytest.mark.parametrize("density", [0.05, 0.4, 1.0])
@pytest.mark.parametrize("grid", [(3, 2, 4), (4, 4, 3), (1, 1, 16)])
def test_stacked_taps_equal_the_per_tap_paths(layer, phase, density, grid, monkeypatch):
    """Every tap at once (bit-packed weight rows OR-ed per (PE, output) group of links, valid pairs from one
    narrow product per image) gives the footprint of the per-tap sparse products and of the dense touched-output
    arrays (independent algorithms), also when the pairs are OR-ed one group a block, on grids with more PEs
    than rows or columns, with more channels than positions ("deep"), with fprop's output-channels-first
    weights (a transposed view) and dgrad's channels-first ones."""
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, *grid)
    t = random_tensors(layer, density, seed=5)
    S, T = problem.stationary(t) != 0, problem.streamed(t) != 0
    stacked = footprint.plane_footprint_stacked(problem, tiling, S, T)
    monkeypatch.setattr(footprint, "_PAIR_BLOCK", 1)  # one (PE, output) group per block of pairs
    one_by_one = footprint.plane_footprint_stacked(problem, tiling, S, T)
    sparse = footprint.plane_footprint_sparse(problem, tiling, S, T)
    dense = footprint.plane_footprint_dense(problem, tiling, S, T)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(stacked, name), getattr(sparse, name), err_msg=name)
        np.testing.assert_array_equal(getattr(stacked, name), getattr(dense, name), err_msg=name)
        np.testing.assert_array_equal(getattr(one_by_one, name), getattr(sparse, name), err_msg=name)
    assert stacked.valid_products.sum() > 0


def test_fast_footprint_takes_the_stacked_path_only_when_it_fits(monkeypatch):
    layer = LAYERS[0]
    problem = phase_problem(layer, "fprop")
    tiling = make_tiling(problem, 3, 2, 4)
    t = random_tensors(layer, 0.3, seed=2)
    S, T = problem.stationary(t) != 0, problem.streamed(t) != 0
    taken = []
    monkeypatch.setattr(footprint, "plane_footprint_stacked", lambda *a: taken.append("stacked"))
    monkeypatch.setattr(footprint, "plane_footprint_dense", lambda *a: taken.append("dense"))
    footprint.fast_footprint(problem, tiling, S, T)
    entries = layer.H * layer.W * layer.R * layer.S * layer.K  # one image's stacked pair counts
    monkeypatch.setattr(footprint, "_STACKED_ENTRIES", entries - 1)
    footprint.fast_footprint(problem, tiling, S, T)
    monkeypatch.setattr(footprint, "_STACKED_ENTRIES", entries)
    monkeypatch.setattr(footprint, "_STACKED_MACS", entries * layer.C - 1)
    footprint.fast_footprint(problem, tiling, S, T)
    assert taken == ["stacked", "dense", "dense"]


@pytest.mark.parametrize("blas", [True, False])
def test_tap_pair_counts_by_hand(blas, monkeypatch):
    if not blas:
        monkeypatch.setattr(footprint, "_BLAS_TAP_ENTRIES", 0)
    w_tap = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 1]], bool)  # (Ko=3, Cs=3)
    channel, out = np.array([0, 2, 1, 2]), np.array([0, 0, 1, 3])  # S_tap (Cs × O=4)
    row, col, count = footprint._tap_pair_counts(w_tap, channel, out, 4)
    got = {(int(r), int(c)): float(n) for r, c, n in zip(row, col, count, strict=True)}
    assert got == {(0, 0): 2, (0, 3): 1, (2, 0): 2, (2, 1): 1, (2, 3): 1}


def _reference_tap_footprint(problem, tiling, stationary_mask, streamed_mask, tile_of_image=None):
    """``tap_footprint`` of commit 0ab16c6: one sparse product per (tap, image), valid products counted from
    each product's entries, a tile's held entries the sum of its images' products."""
    from scipy.sparse import csr_matrix

    N, Cs, Ys, Xs = stationary_mask.shape
    Ko, U, V = streamed_mask.shape[2:]
    n_pes, G = tiling.n_pes, tiling.n_groups
    tiles = np.arange(N) if tile_of_image is None else np.asarray(tile_of_image)
    pe_stat = tiling.pe_of_stationary().ravel()
    inv_h = [footprint._inverse(pair, U) for pair in footprint.links(problem.dims[0], Ys, U, True)]
    inv_w = [footprint._inverse(pair, V) for pair in footprint.links(problem.dims[1], Xs, V, True)]
    valid, partial = np.zeros((N, G * n_pes)), np.zeros((N, G * n_pes), np.int64)
    out_values = np.zeros((N, G), np.int64)
    for tile in np.unique(tiles):
        images = np.flatnonzero(tiles == tile)
        s_mats, streamed_nonzeros = [], []
        for n in images:
            c, y, x = np.nonzero(stationary_mask[n])
            pos = y * Xs + x
            s_mats.append(csr_matrix((np.ones(len(c)), (pe_stat[pos] * Cs + c, pos)), shape=(n_pes * Cs, Ys * Xs)))
            streamed_nonzeros.append(np.nonzero(streamed_mask[n, 0]))
        for rows_of in inv_h:
            for cols_of in inv_w:
                union = None
                for n, s_mat, (k, p, q) in zip(images, s_mats, streamed_nonzeros, strict=True):
                    yy, xx = rows_of[p], cols_of[q]
                    ok = (yy >= 0) & (xx >= 0)
                    d_mat = csr_matrix((np.ones(int(ok.sum())), (yy[ok] * Xs + xx[ok], k[ok])), shape=(Ys * Xs, Ko))
                    prod = s_mat @ d_mat
                    coo = prod.tocoo()
                    valid[n] += np.bincount((coo.col // tiling.kc) * n_pes + coo.row // Cs, weights=coo.data,
                                            minlength=G * n_pes)
                    union = prod if union is None else union + prod
                held = union.tocoo()
                partial[images[-1]] += np.bincount((held.col // tiling.kc) * n_pes + held.row // Cs,
                                                   minlength=G * n_pes)
                outs = footprint.distinct((held.row % Cs) * Ko + held.col, Cs * Ko)
                out_values[images[-1]] += np.bincount((outs % Ko) // tiling.kc, minlength=G)
    return footprint.Footprint(np.rint(valid).astype(np.int64).ravel(), partial.ravel(),
                               np.zeros(N * G * n_pes, np.int64), out_values.ravel())


WGRAD_LAYERS = [
    Layer("3x3", N=4, C=5, K=11, H=9, W=7, R=3, S=3, stride=1, pad=1),
    Layer("s2", N=3, C=3, K=8, H=12, W=12, R=3, S=3, stride=2, pad=1),
    Layer("5x3", N=2, C=7, K=6, H=6, W=11, R=5, S=3, stride=(2, 1), pad=(2, 0)),
]


@pytest.mark.parametrize("layer", WGRAD_LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("density", [0.1, 0.5])
@pytest.mark.parametrize(("grid", "pair_block"), [((2, 3, 4), 1 << 18), ((2, 3, 4), 1), ((4, 4, 3), 1 << 18),
                                                  ((3, 5, 8), 1 << 18), ((3, 5, 16), 7), ((1, 1, 2), 1 << 18)])
def test_wgrad_tile_bits_equal_the_per_image_products(layer, density, grid, pair_block, monkeypatch):
    """The held entries of a batch tile from bit-packed dY rows OR-ed per (tap, channel, PE) (in blocks of
    whole cells, down to one cell a block; groups of 2, 3, 4 channels through unpacked bits, 8 and 16 through
    byte counts), and valid pairs counted per position, give the footprint of one sparse product per (tap,
    image), for single-image tiles, one tile and uneven tiles."""
    monkeypatch.setattr(footprint, "_PAIR_BLOCK", pair_block)
    problem = phase_problem(layer, "wgrad")
    tiling = make_tiling(problem, *grid)
    t = random_tensors(layer, density, seed=11)
    S, T = problem.stationary(t) != 0, problem.streamed(t) != 0
    for got in _taps_equal_reference(problem, tiling, S, T, layer.N):
        assert got.valid_products.sum() > 0


@pytest.mark.parametrize("layer", WGRAD_LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("grid", [(2, 3, 4), (3, 5, 8), (12, 12, 16), (12, 12, 3)])
@pytest.mark.parametrize("table_words", [0, 1 << 40])
def test_wgrad_held_table_sorted_cells_and_one_position_pes_equal_the_products(layer, grid, table_words, monkeypatch):
    """The held entries from the dense table of every (tap, channel, PE) cell and from the cells sorted by PE (each
    forced), and on grids with one position per PE (12 × 12 PEs: a one-image tile's held entries are its valid
    products), equal the sparse per-(tap, image) products, for single-image, whole-batch and uneven tiles."""
    monkeypatch.setattr(footprint, "_TABLE_WORDS_PER_PAIR", table_words)
    problem = phase_problem(layer, "wgrad")
    tiling = make_tiling(problem, *grid)
    t = random_tensors(layer, 0.3, seed=5)
    S, T = problem.stationary(t) != 0, problem.streamed(t) != 0
    for got in _taps_equal_reference(problem, tiling, S, T, layer.N):
        assert got.partial_outputs.sum() > 0


@pytest.mark.parametrize("shape", [(3, 1, 2), (5, 64, 1), (4, 7, 3), (2, 16, 8), (1, 5, 1)])
def test_or_over_middle_is_the_bitwise_or_reduce(shape):
    rng = np.random.default_rng(sum(shape))
    rows = rng.integers(0, 1 << 62, shape, dtype=np.uint64) & rng.integers(0, 1 << 62, shape, dtype=np.uint64)
    assert np.array_equal(footprint._or_over_middle(rows), np.bitwise_or.reduce(rows, axis=1))


@pytest.mark.parametrize("n_channels", [1, 7, 8, 13, 64, 65, 130])
@pytest.mark.parametrize("kc", [1, 3, 8, 16, 24, 64, 200])
def test_group_counts_are_the_set_bits_per_group(n_channels, kc):
    """``_group_counts`` of bit-packed rows (whole uint64 words, zero-padded) equals counting the unpacked 0/1
    values of each group ``ko // kc`` one by one, also for a last group shorter than kc or wider than the row."""
    rng = np.random.default_rng(n_channels * 1000 + kc)
    bits = rng.random((5, n_channels)) < 0.4
    padded = np.zeros((5, -(-n_channels // 64) * 64), bool)
    padded[:, :n_channels] = bits
    packed = np.packbits(padded, axis=1, bitorder="little")
    want = np.array([[bits[r, g * kc:(g + 1) * kc].sum() for g in range(-(-n_channels // kc))] for r in range(5)])
    got = footprint._group_counts(packed, n_channels, kc)
    assert got.shape == want.shape and np.array_equal(got, want)


@pytest.mark.parametrize(("channels", "out_channels", "kernel"), [(5, 70, 3), (9, 8, 1), (3, 13, 3), (2, 3, 2)])
def test_packed_weights_are_packbits_of_both_memory_layouts(channels, out_channels, kernel):
    """Row ``tap · Cs + c`` of ``_packed_weights`` is ``np.packbits`` of that weight row over the output channels,
    for weights laid out channels-first (dgrad) and output-channels-first (fprop's transposed view)."""
    rng = np.random.default_rng(channels)
    weights = rng.random((channels, out_channels, kernel, kernel)) < 0.3
    rows = weights.reshape(channels, out_channels, -1).transpose(2, 0, 1).reshape(-1, out_channels)
    padded = np.zeros((len(rows), -(-out_channels // 64) * 64), bool)
    padded[:, :out_channels] = rows
    want = np.packbits(padded, axis=1, bitorder="little")
    fprop_view = np.ascontiguousarray(weights.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3)
    for mask in (weights, fprop_view):
        assert np.array_equal(footprint._packed_weights(mask[None]), want)


def test_kept_geometries_are_the_built_ones():
    """A kept geometry is shared by tilings that differ only in channels per group and images, equals the one
    ``build`` returns, cannot be written, and is not shared by a tiling that moves positions."""
    layer = Layer("s1", N=2, C=9, K=13, H=8, W=8, R=3, S=3, stride=1, pad=1)
    for phase, kept, build in (("fprop", footprint._tap_links, footprint._TapLinks.build),
                               ("wgrad", footprint._wgrad_layout, footprint._WgradLayout.build)):
        problem = phase_problem(layer, phase)
        plane, taps = problem.stationary_shape[2:], problem.streamed_shape[3:]
        first = kept(problem, make_tiling(problem, 4, 4, 5), plane, taps)
        assert kept(problem, make_tiling(problem, 4, 4, 3), plane, taps) is first
        other = kept(problem, make_tiling(problem, 2, 4, 5), plane, taps)
        for got, tiling in ((first, make_tiling(problem, 4, 4, 5)), (other, make_tiling(problem, 2, 4, 5))):
            want = build(problem.dims, tiling, plane, taps)
            for name, array in vars(want).items():
                assert np.array_equal(getattr(got, name), array), (phase, name)
                assert not getattr(got, name).flags.writeable
        moved = first.pe if phase == "fprop" else first.positions  # which PE holds a position
        assert other is not first and not np.array_equal(moved, other.pe if phase == "fprop" else other.positions)


@pytest.mark.parametrize("rows", [1, 3, 8, 13, 70])
@pytest.mark.parametrize("width", [1, 9, 16, 4608])
def test_pack_leading_is_packbits_along_the_first_axis(rows, width):
    """Shifted ORs of whole rows (as uint64 words when a row is a multiple of 8 bytes, else bytes) equal
    ``np.packbits(axis=0, bitorder="little")``, also with a last partial byte."""
    bits = (np.random.default_rng(rows * width).random((rows, width)) < 0.4).view(np.uint8)
    assert np.array_equal(footprint._pack_leading(bits), np.packbits(bits, axis=0, bitorder="little"))


@pytest.mark.parametrize("layer", LAYERS + [Layer("wide", N=1, C=3, K=4, H=5, W=1, R=70, S=1, stride=1, pad=34)],
                         ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", ["fprop", "dgrad"])
def test_link_patterns_are_the_taps_each_position_links(layer, phase):
    """Every position's pattern (through ``by_pattern`` and ``first_pattern``) is exactly the set of taps its links
    reach in ``_TapLinks`` (brute force from the links' (position, tap) pairs), the patterns that reach a tap are
    distinct, and
    ``pe_order`` lists the positions by PE (stable) as indices into the pattern order. One layer has 70 taps in a
    dimension (column codes of more than 8 bytes)."""
    problem = phase_problem(layer, phase)
    plane, taps = problem.stationary_shape[2:], problem.streamed_shape[3:]
    tiling = make_tiling(problem, 2, 3, 2)
    links = footprint._TapLinks.build(problem.dims, tiling, plane, taps)
    n_positions = plane[0] * plane[1]
    linked = np.zeros((n_positions, taps[0] * taps[1]), bool)
    linked[links.position, links.tap] = True
    bounds = np.append(links.first_pattern, n_positions)
    pattern_of = np.repeat(np.arange(len(links.patterns)), np.diff(bounds))
    assert sorted(links.by_pattern.tolist()) == list(range(n_positions))
    assert np.array_equal(links.patterns[pattern_of].astype(bool), linked[links.by_pattern])
    reaching = [row.tobytes() for row in links.patterns if row.any()]  # empty ones: an empty row or column set
    assert len(set(reaching)) == len(reaching)
    pe = tiling.pe_of_stationary().ravel()
    assert np.array_equal(links.by_pattern[links.pe_order], np.argsort(pe, kind="stable"))


@pytest.mark.parametrize("shape", [(1, 1), (3, 32), (9, 5), (70, 12), (64, 40)])
def test_distinct_columns_are_unique_with_inverse(shape):
    """The distinct columns of a bool array and each column's index among them, as ``np.unique(axis=0)`` of the
    transpose (up to the order of the distinct columns): uint64 codes up to 64 rows, byte strings above."""
    rng = np.random.default_rng(shape[0] * shape[1])
    bits = rng.random((shape[0], 3)) < 0.5
    bits = bits[:, rng.integers(0, 3, shape[1])]  # few distinct columns, repeated
    distinct, inverse = footprint._distinct_columns(bits)
    assert np.array_equal(distinct[inverse], bits.T)
    assert len(distinct) == len(np.unique(bits.T, axis=0))


def _taps_equal_reference(problem, tiling, S, T, images: int) -> list:
    """``tap_footprint`` for single-image, whole-batch and uneven tiles, each asserted equal, field for field, to
    the sparse per-(tap, image) reference; the footprints, for the caller's own checks."""
    footprints = []
    for tile_of_image in (None, np.zeros(images, np.int64), np.arange(images) // 2):
        got = footprint.tap_footprint(problem, tiling, S, T, tile_of_image)
        want = _reference_tap_footprint(problem, tiling, S, T, tile_of_image)
        for name in FIELDS:
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
        footprints.append(got)
    return footprints
