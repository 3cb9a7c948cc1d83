"""Operand-structure statistics against brute-force references and known constructions (no torch)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from antsim.capture.stats import channel_cv, clustering, colocation, summarize, synthetic_like, tensors_stats
from antsim.sparsity.tensors import Tensors, save_tensors


def _clustering_brute(array: np.ndarray) -> float:
    mask = array != 0
    hits = trials = 0
    *lead, h, w = mask.shape
    for idx in np.ndindex(*lead):
        plane = mask[idx]
        for i in range(h):
            for j in range(w):
                if not plane[i, j]:
                    continue
                for di, dj in ((0, 1), (0, -1), (1, 0), (-1, 0)):
                    if 0 <= i + di < h and 0 <= j + dj < w:
                        trials += 1
                        hits += plane[i + di, j + dj]
    return hits / trials / mask.mean()


def test_clustering_matches_brute_force_and_known_cases() -> None:
    rng = np.random.default_rng(0)
    small = np.where(rng.random((2, 3, 5, 4)) < 0.3, 1.0, 0.0)
    assert clustering(small) == pytest.approx(_clustering_brute(small), rel=1e-12)
    iid = np.where(rng.random((4, 16, 32, 32)) < 0.1, 1.0, 0.0)
    assert clustering(iid) == pytest.approx(1.0, abs=0.05)
    checker = np.indices((1, 1, 8, 8)).sum(axis=0) % 2 == 0
    assert clustering(checker.astype(float)) == 0.0
    blocks = np.zeros((1, 1, 12, 12))
    blocks[0, 0, 1:3, 1:3] = blocks[0, 0, 6:8, 7:9] = 1.0  # isolated 2x2 blocks: 2 of 4 neighbours non-zero
    assert clustering(blocks) == pytest.approx(0.5 / blocks.mean())
    assert math.isnan(clustering(np.ones((2, 2, 1, 1))))


def test_channel_cv() -> None:
    a = np.zeros((1, 2, 10, 10))
    a[0, 0].ravel()[:20] = 1.0   # density 0.2
    a[0, 1].ravel()[:60] = 1.0   # density 0.6 → mean 0.4, std 0.2
    assert channel_cv(a) == pytest.approx(0.5)
    assert channel_cv(np.ones((3, 4, 2, 2))) == 0.0
    assert math.isnan(channel_cv(np.zeros((3, 4, 2, 2))))


def test_colocation_signs_and_stride_sampling() -> None:
    rng = np.random.default_rng(1)
    occupancy = rng.random((2, 8, 8))
    a = (rng.random((2, 6, 8, 8)) < occupancy[:, None]).astype(float)
    same = (rng.random((2, 5, 8, 8)) < occupancy[:, None]).astype(float)
    other = (rng.random((2, 5, 8, 8)) < rng.random((2, 8, 8))[:, None]).astype(float)
    assert colocation(a, same) > 0.6
    assert abs(colocation(a, other)) < 0.2
    assert colocation(a, 1.0 - same) < -0.6
    # Stride 2: dY position (p, q) pairs with A at (2p, 2q).
    strided = (rng.random((2, 5, 4, 4)) < occupancy[:, None, ::2, ::2]).astype(float)
    assert colocation(a, strided) > 0.6
    assert math.isnan(colocation(a, np.ones((2, 5, 8, 8))))


def _fake_capture() -> dict[str, Tensors]:
    rng = np.random.default_rng(2)

    def sparse(shape: tuple[int, ...], density: float) -> np.ndarray:
        return np.where(rng.random(shape) < density, rng.standard_normal(shape), 0.0).astype(np.float32)

    return {
        "c1": Tensors(sparse((8, 4, 3, 3), 0.1), sparse((2, 4, 16, 16), 0.5), sparse((2, 8, 16, 16), 1.0),
                      sparse((2, 4, 16, 16), 0.1)),
        "c2": Tensors(sparse((16, 8, 1, 1), 0.1), sparse((2, 8, 16, 16), 0.5), sparse((2, 16, 8, 8), 0.3),
                      sparse((2, 8, 16, 16), 0.1)),
    }


def test_stats_of_file_and_summary(tmp_path) -> None:
    captured = _fake_capture()
    save_tensors(tmp_path / "t.npz", captured)
    rows = tensors_stats(tmp_path / "t.npz")
    assert [r["layer"] for r in rows] == ["c1", "c2"]
    for row, t in zip(rows, captured.values(), strict=True):
        for operand, density in t.densities().items():
            assert row[f"{operand}.density"] == pytest.approx(density)
    assert math.isnan(rows[0]["colocation"])          # dense dY: occupancy constant
    summary = summarize(rows)
    assert summary["colocation"][3] == 1             # NaN skipped
    assert summary["weights.clustering"][3] == 1     # 1x1 kernel has no neighbours
    assert summary["activations.density"][1] <= summary["activations.density"][0] <= summary["activations.density"][2]


@pytest.mark.parametrize("model", ["uniform", "topk_field", "channel", "swat"])
def test_synthetic_like_copies_shapes_and_densities(model: str) -> None:
    captured = _fake_capture()
    synthetic = synthetic_like(captured, model, seed=3)
    assert list(synthetic) == list(captured)
    for name, t in captured.items():
        s = synthetic[name]
        for operand in ("weights", "activations", "grad_output", "saved_activations"):
            assert getattr(s, operand).shape == getattr(t, operand).shape
        if model != "channel":  # channel density is met to the nearest whole channel
            assert s.densities()["activations"] == pytest.approx(t.densities()["activations"], abs=0.03)
    if model == "uniform":
        assert summarize(tensors_stats(synthetic))["activations.clustering"][0] == pytest.approx(1.0, abs=0.1)


def test_packed_file_keeps_the_pattern_of_a_wide_range_gradient(tmp_path) -> None:
    """Captured dY spans > 2^24 in magnitude (dead-channel tails); the file must keep every non-zero."""
    rng = np.random.default_rng(4)
    grad = (rng.standard_normal((2, 4, 6, 6)) * 10.0 ** rng.uniform(-14, 2, (2, 4, 6, 6))).astype(np.float32)
    t = Tensors(np.ones((4, 3, 3, 3), np.float32), np.ones((2, 3, 6, 6), np.float32), grad)
    save_tensors(tmp_path / "g.npz", {"l": t})
    from antsim.sparsity.tensors import load_tensors

    loaded = load_tensors(tmp_path / "g.npz")["l"].grad_output
    assert np.array_equal(loaded != 0, grad != 0)
    assert np.array_equal(np.sign(loaded), np.sign(grad))
    big = np.abs(grad) > 1e-3 * np.abs(grad).max()
    np.testing.assert_allclose(loaded[big], grad[big], rtol=1e-3)


def test_per_operand_params_equal_make_tensors_when_all_equal() -> None:
    from antsim.sparsity.generators import FieldParams

    captured = _fake_capture()
    same = FieldParams(0.7, 0.2)
    shared = synthetic_like(captured, "topk_field", seed=5, params=same)
    per_operand = synthetic_like(captured, "topk_field", seed=5,
                                 params={"weights": same, "activations": same, "grad_output": same})
    for name in captured:
        for operand in ("weights", "activations", "grad_output", "saved_activations"):
            np.testing.assert_array_equal(getattr(per_operand[name], operand), getattr(shared[name], operand))
    smooth_a = synthetic_like(captured, "topk_field", seed=5,
                              params={"weights": FieldParams(0, 0), "activations": FieldParams(2.0, 0),
                                      "grad_output": FieldParams(0, 0)})
    rows = summarize(tensors_stats(smooth_a))
    assert rows["saved_activations.clustering"][0] > 2 and rows["weights.clustering"][0] < 1.3


def test_spatial_and_batch_cv() -> None:
    from antsim.capture.stats import batch_cv, spatial_cv

    a = np.zeros((2, 3, 4, 4))
    a[:, :, :2, :] = 1.0                    # top half full, bottom half empty: per-position density 1 or 0
    assert spatial_cv(a) == pytest.approx(1.0)
    assert batch_cv(a) == 0.0
    b = np.zeros((2, 3, 4, 4))
    b[0] = 1.0
    b[1, 0] = 1.0                          # image densities 1 and 1/3 → mean 2/3, std 1/3
    assert batch_cv(b) == pytest.approx(0.5)
    assert math.isnan(spatial_cv(np.ones((2, 3, 1, 1))))
    rng = np.random.default_rng(0)
    # iid Bernoulli(0.1) over 8·64 samples per position: binomial CV sqrt(0.9 / (0.1·512)) ≈ 0.133
    assert spatial_cv(np.where(rng.random((8, 64, 16, 16)) < 0.1, 1.0, 0.0)) == pytest.approx(0.1326, rel=0.15)
