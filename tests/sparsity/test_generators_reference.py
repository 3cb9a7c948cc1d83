"""The operand generators against their 2bd0d76 originals (tests/sparsity/operand_reference_helpers.py, whose
top-k is the argpartition selection): identical bytes for the swat and topk_field models, every shape, density,
seed and tie pattern; for uniform and channel (one normal per non-zero since session 9) identical masks and the
values of the whole-array statement of the new contract (``reference.nonzero_draws``); the chunked draws consume
the same stream; the candidate top-k path really taken, and its fallbacks exact."""

from __future__ import annotations

import numpy as np
import pytest

from antsim import Layer
from antsim.sparsity import generators
from antsim.sparsity.generators import bernoulli_normals, make_tensors, top_k, top_k_mask, top_k_mask_of_gain
from tests.sparsity import operand_reference_helpers as reference


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Both None, or equal dtype, shape and bytes (-0.0 and +0.0 differ)."""
    if a is None or b is None:
        return a is None and b is None
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


BERNOULLI_CASES = ((0, (3, 5, 7, 2), 0.1), (1, (1000,), 0.5), (2, (2, 3), 1.0), (3, (4, 9, 9), 0.02),
                   (4, (0, 3), 0.1))


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000, 1 << 18])
def test_chunked_draws_equal_the_whole_array_contract_and_leave_the_same_stream(monkeypatch: pytest.MonkeyPatch,
                                                                                chunk: int) -> None:
    monkeypatch.setattr(generators, "_CHUNK", chunk)
    for seed, shape, density in BERNOULLI_CASES:
        new_rng, drawn_rng, old_rng = (np.random.default_rng(seed) for _ in range(3))
        new = bernoulli_normals(shape, density, new_rng)
        drawn = reference.uniform_drawn(shape, density, drawn_rng, generators.FieldParams()).astype(np.float32)
        assert _same(new, drawn), (chunk, seed)
        assert new_rng.bit_generator.state == drawn_rng.bit_generator.state  # size uniforms + one normal per 1
        old = reference.uniform(shape, density, old_rng, generators.FieldParams())
        assert _same(new != 0, old != 0), (chunk, seed)  # the 2bd0d76 mask, bit for bit


@pytest.mark.parametrize("chunk", [1, 13, 1 << 18])
def test_channel_masks_equal_the_original_and_values_the_contract(monkeypatch: pytest.MonkeyPatch,
                                                                  chunk: int) -> None:
    monkeypatch.setattr(generators, "_CHUNK", chunk)
    for seed, shape, density in ((0, (2, 20, 8, 8), 0.25), (1, (3, 7, 5, 5), 0.01), (2, (1, 4, 3, 3), 1.0)):
        new = generators.make_operand(shape, density, "channel", np.random.default_rng(seed))
        drawn = reference.make_operand(shape, density, "channel", np.random.default_rng(seed),
                                       models=reference.DRAWN_MODELS)
        old = reference.make_operand(shape, density, "channel", np.random.default_rng(seed))
        assert _same(new, drawn) and _same(new != 0, old != 0), (chunk, seed)


def _f62f66e_bernoulli_normals(shape: tuple[int, ...], density: float, rng: np.random.Generator,
                               chunk: int) -> np.ndarray:
    """f62f66e's ``_bernoulli_mask`` + ``_masked_normals``, verbatim but for ``chunk``: a whole bool mask, then a
    boolean assignment of each chunk's normals."""
    mask = np.empty(shape, bool)
    flat_mask = mask.reshape(-1)
    buffer = np.empty(min(flat_mask.size, chunk))
    for start in range(0, flat_mask.size, chunk):
        uniforms = buffer[:min(chunk, flat_mask.size - start)]
        rng.random(out=uniforms)
        np.less(uniforms, density, out=flat_mask[start:start + uniforms.size])
    out = np.zeros(mask.shape, np.float32)
    flat_out = out.reshape(-1)
    for start in range(0, flat_mask.size, chunk):
        part = flat_mask[start:start + chunk]
        normals = buffer[:int(np.count_nonzero(part))]
        rng.standard_normal(out=normals)
        normals[normals == 0] = 1.0
        flat_out[start:start + chunk][part] = normals
    return out


@pytest.mark.parametrize("chunk", [1, 3, 64, 1000, 1 << 18])
def test_offsets_and_assignment_give_the_f62f66e_bytes_and_stream(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """The offsets read from each chunk's compare and assigned at: the bytes of f62f66e's whole mask and
    boolean assignment, and the generator left where it left it, across chunk sizes, partial last chunks,
    densities from almost nothing to everything, and a drawn zero."""
    monkeypatch.setattr(generators, "_CHUNK", chunk)
    shapes = ((3, 5, 7, 2), (1000,), (2, 3), (4, 9, 9), (0, 3), (2, 3, 333), (1, 2049))
    for seed, shape in enumerate(shapes):
        for density in (1e-3, 0.1, 0.37, 0.5, 0.999, 1.0):
            new_rng, old_rng = np.random.default_rng(seed), np.random.default_rng(seed)
            new = bernoulli_normals(shape, density, new_rng)
            assert _same(new, _f62f66e_bernoulli_normals(shape, density, old_rng, chunk)), (shape, density)
            assert new_rng.bit_generator.state == old_rng.bit_generator.state
    zeros_new = bernoulli_normals((5, 40), 0.6, _ZeroingRng(4))  # type: ignore[arg-type]
    zeros_old = _f62f66e_bernoulli_normals((5, 40), 0.6, _ZeroingRng(4), chunk)  # type: ignore[arg-type]
    assert _same(zeros_new, zeros_old) and np.count_nonzero(zeros_new == 1.0) > 20


class _ZeroingRng:
    """A Generator whose standard normals hold exact zeros (a real one almost never draws 0)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def random(self, size: object = None, out: np.ndarray | None = None) -> np.ndarray:
        return self.rng.random(size, out=out)  # type: ignore[arg-type]

    def standard_normal(self, size: object = None, out: np.ndarray | None = None) -> np.ndarray:
        values = np.round(self.rng.standard_normal(size, out=out))  # type: ignore[arg-type]
        if out is not None:
            out[...] = values
            return out
        return values


def test_a_drawn_zero_becomes_one_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generators, "_CHUNK", 13)
    new = bernoulli_normals((5, 40), 0.6, _ZeroingRng(4))  # type: ignore[arg-type]
    drawn = reference.uniform_drawn((5, 40), 0.6, _ZeroingRng(4), generators.FieldParams())  # type: ignore[arg-type]
    mask = np.random.default_rng(4).random((5, 40)) < 0.6  # the uniforms _ZeroingRng passes through
    assert _same(new, drawn.astype(np.float32)) and np.count_nonzero(new == 1.0) > 20
    assert _same(new != 0, mask)  # every drawn 0 became 1.0: the values keep the mask's every non-zero


def _sorted_blocks(shape: tuple[int, ...], dtype: type, rng: np.random.Generator) -> np.ndarray:
    """Large magnitudes crowded where the strided sample does not look (the candidate bound then misses)."""
    values = rng.standard_normal(shape).astype(dtype) * 1e-3
    flat = values.reshape(-1)
    step = max(1, flat.size // 64)
    unsampled = np.setdiff1d(np.arange(flat.size), np.arange(0, flat.size, step))
    flat[unsampled[: flat.size // 3]] = rng.standard_normal(min(unsampled.size, flat.size // 3)) + 10
    return values


MAKERS = [reference.continuous, reference.tied, reference.signed_zeros, _sorted_blocks]


@pytest.fixture
def small_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    """The candidate path on small arrays: a 64-element sample, blocks of 50, from 32 elements on."""
    monkeypatch.setattr(generators, "_SAMPLE", 64)
    monkeypatch.setattr(generators, "_CHUNK", 50)
    monkeypatch.setattr(generators, "_CANDIDATE_MIN_SIZE", 32)


@pytest.mark.usefixtures("small_candidates")
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("maker", MAKERS)
def test_candidate_top_k_equals_the_argpartition_original(dtype: type, maker) -> None:  # type: ignore[no-untyped-def]
    for seed in range(3):
        rng = np.random.default_rng(seed)
        for shape in ((40,), (7, 9), (2, 3, 11, 5), (3, 16, 9, 9), (1, 2, 300)):
            values = maker(shape, dtype, rng)
            for density in (0.01, 0.1, 0.25, 0.5, 0.51, 0.9):
                expected = reference.top_k(values, density)
                assert _same(top_k(values, density), expected), (maker.__name__, shape, density, seed)
                assert _same(top_k(values, density, np.float32), expected.astype(np.float32))
                assert _same(top_k_mask(values, density), expected != 0), (maker.__name__, shape, density, seed)


@pytest.mark.usefixtures("small_candidates")
def test_nan_and_inf_inputs_equal_the_original() -> None:
    values = np.random.default_rng(5).standard_normal((6, 50))
    values[0, :4] = np.nan
    values[1, :3] = np.inf
    values[2, :2] = -np.inf
    for density in (0.01, 0.05, 0.2, 0.5, 0.99):
        expected = reference.top_k(values, density)
        assert _same(top_k(values, density), expected) and _same(top_k_mask(values, density), expected != 0)


def test_continuous_operands_take_the_candidate_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(values: np.ndarray, keep: int) -> None:
        raise AssertionError("partition path taken on untied values")

    monkeypatch.setattr(generators, "_threshold", refuse)
    values = np.random.default_rng(6).standard_normal((128, 64, 3, 3))  # above _CANDIDATE_MIN_SIZE
    for density in (0.05, 0.1, 0.5):
        expected = reference.top_k(values, density)
        assert _same(top_k(values, density), expected) and _same(top_k_mask(values, density), expected != 0)
    field = np.random.default_rng(7).standard_normal((2, 32, 32, 32)).astype(np.float32)
    gain = generators.envelope((2, 32, 32, 32), np.random.default_rng(8), generators.SwatParams())
    monkeypatch.setattr(generators, "_negated_kth", refuse)
    assert _same(top_k_mask_of_gain(field, gain, 0.1), reference.top_k(np.abs(field) * gain, 0.1) != 0)


@pytest.mark.usefixtures("small_candidates")
def test_mask_of_gain_equals_the_product_selection() -> None:
    for seed in range(8):
        rng = np.random.default_rng(seed)
        n, c, h, w = (int(rng.integers(low, high)) for low, high in ((1, 4), (1, 9), (1, 12), (1, 12)))
        field = rng.standard_normal((n, c, h, w)).astype(np.float32)
        if seed % 2:
            field = np.round(field * 2).astype(np.float32)  # ties and zeros
        gains = [generators.envelope((n, c, h, w), rng, generators.SwatParams()),
                 -generators.envelope((n, c, h, w), rng, generators.SwatParams())]  # a negative gain: the old path
        rows = rng.standard_normal((n, c, h * w))
        row_gain = np.exp(0.5 * rng.standard_normal((1, c, 1)))
        for density in (0.0, 0.02, 0.1, 0.5, 0.7, 1.0):
            for gain in gains:
                expected = reference.top_k(np.abs(field) * gain, density) != 0
                assert _same(top_k_mask_of_gain(field, gain, density), expected), (seed, density)
            expected = reference.top_k(np.abs(rows) * row_gain, density) != 0
            assert _same(top_k_mask_of_gain(rows, row_gain, density), expected), (seed, density)


LAYERS = [Layer(name="small", N=2, C=8, K=16, H=12, W=12, R=3, S=3, stride=1, pad=1),
          Layer(name="wide", N=1, C=64, K=128, H=16, W=16, R=3, S=3, stride=1, pad=1),  # 73,728 weights
          Layer(name="batch", N=4, C=32, K=32, H=32, W=32, R=1, S=1, stride=2, pad=0)]
CASES = [dict(model="swat"), dict(model="swat", density_a=0.5, density_a_saved=0.1),
         dict(model="swat", density_w=0.3, density_g=1.0), dict(model="swat", density_a=1.0, density_a_saved=0.2),
         dict(model="topk_field", density_a=0.5, density_a_saved=0.1), dict(model="uniform"),
         dict(model="uniform", density_w=1.0, density_a=0.5, density_a_saved=0.05),
         dict(model="channel", density_a=0.5, density_a_saved=0.2)]


@pytest.mark.parametrize("case", CASES, ids=lambda case: "-".join(f"{k}={v}" for k, v in case.items()))
def test_make_tensors_equal_the_original_generators(case: dict) -> None:  # type: ignore[type-arg]
    """swat and topk_field: the 2bd0d76 bytes. uniform and channel: the contract's bytes (the saved A the
    argpartition top-k of the new A) and the 2bd0d76 masks of W, A and dY; the saved A's mask, a top-k by the
    magnitudes that changed, is the one that differs."""
    drawn_values = case["model"] in ("uniform", "channel")
    for layer in LAYERS:
        for seed in (0, 11):
            new, old = make_tensors(layer, seed=seed, **case), reference.make_tensors(layer, seed=seed, **case)
            drawn = reference.make_tensors(layer, seed=seed, models=reference.DRAWN_MODELS, **case)
            for name in ("weights", "activations", "grad_output", "saved_activations"):
                assert _same(getattr(new, name), getattr(drawn, name)), (layer.name, seed, name)
                if not drawn_values:
                    assert _same(getattr(new, name), getattr(old, name)), (layer.name, seed, name)
                elif name != "saved_activations":
                    assert _same(getattr(new, name) != 0, getattr(old, name) != 0), (layer.name, seed, name)


def test_generation_holds_its_float32_output_and_offsets_not_three_float64_arrays() -> None:
    shape = (256, 256, 8, 8)  # 4 M elements: the float32 output is 16 MiB
    elements = int(np.prod(shape))
    for density in (0.1, 1.0):  # float32 out + the non-zeros' int64 offsets + four chunk buffers of <= 2 MiB
        uniform = reference.peak_bytes(
            lambda density=density: generators.make_operand(shape, density, "uniform", np.random.default_rng(0)))
        assert uniform <= (4 + 8 * density) * elements + 4 * (1 << 21), density
    old = reference.peak_bytes(lambda: reference.make_operand(shape, 0.1, "uniform", np.random.default_rng(0)))
    assert old >= 17 * elements  # bool mask, float64 normals and their np.where copy
    params = generators.FieldParams(0.0, 0.0)  # swat's W
    weights = reference.peak_bytes(
        lambda: generators.make_operand(shape, 0.1, "topk_field", np.random.default_rng(0), params))
    assert weights <= 14 * elements  # the float64 field, the float32 output, ~1.1 k candidates' positions
    old = reference.peak_bytes(
        lambda: reference.make_operand(shape, 0.1, "topk_field", np.random.default_rng(0), params))
    assert old >= 24 * elements  # the field, its top_k's float64 output and argpartition indices, the cast
