"""``top_k`` / ``top_k_mask`` against the original argpartition selection: identical bytes on many shapes, densities,
dtypes and seeds, ties and zeros included; the threshold path really taken; its memory a fraction of the old."""

from __future__ import annotations

import numpy as np
import pytest

from antsim.sparsity import generators
from antsim.sparsity.generators import envelope, top_k, top_k_mask
from tests.sparsity import operand_reference_helpers as reference


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype, shape and bytes (so -0.0 and +0.0, and NaN payloads, count as different)."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


SHAPES = [(1,), (2,), (7,), (3, 5), (2, 3, 4, 5), (4, 16, 9, 9), (1, 3, 17, 13)]
DENSITIES = [0.0, 0.01, 0.1, 0.25, 0.5, 0.9, 0.999, 1.0]
MAKERS = [reference.continuous, reference.tied, reference.signed_zeros]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("maker", MAKERS)
def test_top_k_and_mask_equal_the_argpartition_original(dtype: type, maker) -> None:  # type: ignore[no-untyped-def]
    for seed in range(4):
        rng = np.random.default_rng(seed)
        for shape in SHAPES:
            values = maker(shape, dtype, rng)
            for density in DENSITIES:
                expected = reference.top_k(values, density)
                assert _same(top_k(values, density), expected), (maker.__name__, shape, density, seed)
                assert _same(top_k_mask(values, density), expected != 0), (maker.__name__, shape, density, seed)


def test_block_boundaries_do_not_matter(monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.random.default_rng(5).standard_normal((3, 7, 11))
    for block in (1, 2, 7, 100, 230, 231, 232):
        monkeypatch.setattr(generators, "_TOP_K_BLOCK", block)
        for density in (0.05, 0.3, 0.8):
            expected = reference.top_k(values, density)
            assert _same(top_k(values, density), expected) and _same(top_k_mask(values, density), expected != 0)


def test_integer_and_nan_inputs_take_the_original_selection() -> None:
    ints = np.random.default_rng(1).integers(-5, 6, (6, 9))
    with_nan = np.random.default_rng(2).standard_normal((5, 8))
    with_nan[0, :3] = np.nan
    for values in (ints, with_nan):
        for density in (0.1, 0.5, 0.95, 1.0):
            assert _same(top_k(values, density), reference.top_k(values, density))


def test_continuous_values_take_the_threshold_not_the_argpartition(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(values: np.ndarray, keep: int) -> np.ndarray:
        raise AssertionError("argpartition fallback taken on untied values")

    monkeypatch.setattr(generators, "_top_k_by_index", refuse)
    values = np.random.default_rng(3).standard_normal((4, 32, 12, 12))
    assert np.count_nonzero(top_k(values, 0.1)) == round(0.1 * values.size)
    assert np.count_nonzero(top_k_mask(values, 0.1)) == round(0.1 * values.size)


def test_ties_at_the_threshold_keep_argpartition_positions() -> None:
    # 40 elements of magnitude 2 for 10 places: which 10 is the argpartition's choice, and it is kept
    values = np.concatenate([np.full(40, 2.0), -np.full(40, 2.0), np.ones(20)])
    np.random.default_rng(4).shuffle(values)
    for density in (0.05, 0.1, 0.33, 0.79, 0.8, 0.81):
        expected = reference.top_k(values, density)
        assert _same(top_k(values, density), expected)


def test_top_k_mask_of_gain_equals_the_product_selection() -> None:
    params = generators.SwatParams()
    for seed in range(6):
        rng = np.random.default_rng(seed)
        shape = (int(rng.integers(1, 4)), int(rng.integers(1, 9)), int(rng.integers(1, 12)), int(rng.integers(1, 12)))
        field = rng.standard_normal(shape).astype(np.float32)
        if seed % 2:
            field = np.round(field * 2).astype(np.float32)  # ties and zeros
        gain = envelope(shape, rng, params)
        for density in (0.0, 0.02, 0.1, 0.5, 1.0):
            expected = reference.top_k(np.abs(field) * gain, density) != 0
            assert _same(generators.top_k_mask_of_gain(field, gain, density), expected), (seed, density)


def test_non_contiguous_input_is_selected_like_its_contiguous_copy() -> None:
    values = np.random.default_rng(6).standard_normal((8, 10))
    for view in (values.T, values[:, ::2]):
        assert _same(top_k(view, 0.2), top_k(np.ascontiguousarray(view), 0.2))


# make_tensors against the whole original generators: tests/sparsity/test_generators_reference.py.


def test_top_k_holds_two_full_size_arrays_not_five() -> None:
    values = np.random.default_rng(8).standard_normal(1 << 22)  # 32 MiB; blocks of 2^20 add ≤ 9 MiB
    new = reference.peak_bytes(lambda: top_k(values, 0.1))
    old = reference.peak_bytes(lambda: reference.top_k(values, 0.1))
    assert new <= 1.3 * values.nbytes < 3.5 * values.nbytes <= old
    mask = reference.peak_bytes(lambda: top_k_mask(values, 0.1))
    assert mask <= 1.3 * values.nbytes
