"""Fast footprints: the sparse per-tap path in output-channel batches equals the exact enumeration."""

from __future__ import annotations

import numpy as np
import pytest
from dataflow_helpers import random_tensors, small_arch

from antsim.dataflow import footprint, map_phase
from antsim.dataflow.tiling import make_tiling
from antsim.phases import phase_problem
from antsim.workloads.layers import Layer


@pytest.mark.parametrize("phase", ["fprop", "dgrad"])
@pytest.mark.parametrize("bitmap_keys", [1 << 26, 300, 1])
def test_sparse_footprint_in_channel_batches_equals_exact(phase: str, bitmap_keys: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A small bitmap budget splits the output channels into batches (down to one channel a batch): partial
    and halo outputs, outputs per chunk and valid products stay the integers the exact path enumerates."""
    layer = Layer("f", N=2, C=6, K=10, H=9, W=7, R=3, S=3, stride=2, pad=1)
    t = random_tensors(layer, 0.3, seed=8)
    rows, cols, kc = 2, 3, 3
    exact = map_phase(small_arch("ant", rows, cols, kc), layer, phase, t, fidelity="exact")
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, rows, cols, kc)
    monkeypatch.setattr(footprint, "_BITMAP_KEYS", bitmap_keys)
    found = footprint.plane_footprint_sparse(problem, tiling, problem.stationary(t) != 0, problem.streamed(t) != 0)
    order = exact.chunk_image * tiling.n_groups + exact.chunk_group  # footprints are image-major, work executed
    for field in ("valid_products", "partial_outputs", "halo_outputs"):
        assert np.array_equal(getattr(found, field).reshape(tiling.n_chunks, -1)[order], getattr(exact, field)), field
    assert np.array_equal(found.output_values[order], exact.output_values)


@pytest.mark.parametrize("space_per_key", [1, 16, 17, 1000])
def test_rank_keys_is_unique_with_inverse(space_per_key: int) -> None:
    """The table (≤ 16 entries per key) and the stable sort both give ``np.unique``'s keys and inverse."""
    rng = np.random.default_rng(space_per_key)
    for n in (0, 1, 2, 50, 3000):
        space = max(1, n * space_per_key)
        runs = np.sort(rng.integers(0, space, n))  # ascending runs, then shuffled blocks, as cells arrive
        keys = np.concatenate([runs[i::3] for i in range(3)])
        distinct, index = footprint.rank_keys(keys, space)
        expected, inverse = np.unique(keys, return_inverse=True)
        assert np.array_equal(distinct, expected) and np.array_equal(index, inverse.ravel())
        assert index.dtype == np.int64


def _reference_plane_footprint(problem, tiling, stationary: np.ndarray, streamed: np.ndarray) -> tuple:
    """fprop/dgrad footprint in plain loops over the definition: every stationary non-zero (c, y, x) on the PE
    holding (y, x) meets every streamed non-zero (c, ko, u, v) of its channel; the pair is valid when both
    dimensions map it to an output (o1, o2); a PE holds the distinct (ko, o) it forms (partial), the halo those
    whose output another PE owns, and a chunk writes the distinct (ko, o) over PEs."""
    N, G, n_pes = stationary.shape[0], tiling.n_groups, tiling.n_pes
    pe_of, owner = tiling.pe_of_stationary(), tiling.pe_of_output()
    valid = np.zeros((N, G, n_pes), np.int64)
    held: set[tuple[int, ...]] = set()
    for n, c, y, x in zip(*np.nonzero(stationary), strict=True):
        for ko, u, v in zip(*np.nonzero(streamed[0, c]), strict=True):
            o1, ok1 = problem.dims[0].output(np.array([y]), np.array([u]))
            o2, ok2 = problem.dims[1].output(np.array([x]), np.array([v]))
            if ok1[0] and ok2[0]:
                g, pe = ko // tiling.kc, int(pe_of[y, x])
                valid[n, g, pe] += 1
                held.add((int(n), g, pe, int(ko), int(o1[0]), int(o2[0])))
    partial, halo = np.zeros_like(valid), np.zeros_like(valid)
    for n, g, pe, _, o1, o2 in held:
        partial[n, g, pe] += 1
        halo[n, g, pe] += owner[o1, o2] != pe
    written = np.zeros((N, G), np.int64)
    for n, g, *_ in {(n, g, ko, o1, o2) for n, g, _, ko, o1, o2 in held}:
        written[n, g] += 1
    return valid.ravel(), partial.ravel(), halo.ravel(), written.ravel()


PLANE_LAYERS = [
    Layer("s1", N=2, C=3, K=5, H=6, W=5, R=3, S=3, stride=1, pad=1),
    Layer("s2", N=1, C=4, K=6, H=7, W=7, R=3, S=3, stride=2, pad=1),
    Layer("k53", N=2, C=2, K=4, H=7, W=6, R=5, S=3, stride=(2, 1), pad=(2, 0)),
    Layer("pw", N=1, C=5, K=3, H=4, W=4, R=1, S=1, stride=1, pad=0),
]


@pytest.mark.parametrize("layer", PLANE_LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", ["fprop", "dgrad"])
@pytest.mark.parametrize("density", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("path", ["stacked", "dense", "sparse"])
def test_plane_footprint_equals_plain_loops(layer: Layer, phase: str, density: float, path: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fprop/dgrad path of ``fast_footprint`` (forced) equals the loops above, on empty, random and dense
    masks, strides 1, 2 and (2, 1), padding, a 5×3 and a 1×1 kernel, on a 2×2 grid with groups of 2."""
    t = random_tensors(layer, density, seed=11)
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, 2, 2, 2)
    stationary, streamed = problem.stationary(t) != 0, problem.streamed(t) != 0
    assert stationary.any() == (density > 0) and streamed.all() == (density == 1)
    if path != "stacked":
        monkeypatch.setattr(footprint, "_STACKED_ENTRIES", 0)
        monkeypatch.setattr(footprint, "_DENSE_SWITCH", -1.0 if path == "dense" else 2.0)
    found = footprint.fast_footprint(problem, tiling, stationary, streamed)
    fields = (found.valid_products, found.partial_outputs, found.halo_outputs, found.output_values)
    for name, got, want in zip(("valid", "partial", "halo", "written"), fields,
                               _reference_plane_footprint(problem, tiling, stationary, streamed), strict=True):
        assert got.dtype == np.int64 and np.array_equal(got, want), name


@pytest.mark.parametrize("layer", PLANE_LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", ["fprop", "dgrad", "wgrad"])
def test_forward_table_is_the_per_tap_links(layer: Layer, phase: str) -> None:
    problem = phase_problem(layer, phase)
    Ys, Xs = problem.stationary_shape[2:]
    U, V = problem.streamed_shape[3:]
    for dim, n_y, n_u in ((problem.dims[0], Ys, U), (problem.dims[1], Xs, V)):
        per_tap = np.stack([footprint._forward(pair, n_y) for pair in footprint.links(dim, n_y, n_u, False)])
        assert np.array_equal(footprint._forward_table(dim, n_y, n_u), per_tap)
