from __future__ import annotations

import numpy as np
import pytest

from antsim import Layer, Tensors, load_tensors, save_tensors
from antsim.errors import WorkloadError
from antsim.sparsity.generators import make_tensors

LAYER = Layer(name="conv1", N=2, C=3, K=4, H=7, W=7, R=3, S=3, stride=2, pad=1)


def test_packed_round_trip_keeps_masks_exactly_and_values_to_fp16(tmp_path) -> None:
    t = make_tensors(LAYER, 0.3, 0.5, 0.2, density_a_saved=0.1, seed=0)
    # a tiny gradient that float16 would flush to zero without scaling
    grad = t.grad_output * 1e-9
    t = Tensors(t.weights, t.activations, grad, t.saved_activations)
    save_tensors(tmp_path / "t.npz", {"conv1": t, "conv2": t})
    loaded = load_tensors(tmp_path / "t.npz")
    assert list(loaded) == ["conv1", "conv2"]
    for name in ("weights", "activations", "grad_output", "saved_activations"):
        a, b = getattr(t, name), getattr(loaded["conv1"], name)
        assert np.array_equal(a != 0, b != 0), name
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=0)
    loaded["conv1"].check_shapes(LAYER)


def test_dense_storage_and_mixed_files(tmp_path) -> None:
    t = make_tensors(LAYER, seed=1)
    save_tensors(tmp_path / "d.npz", {"conv1": t}, packed=False)
    loaded = load_tensors(tmp_path / "d.npz")["conv1"]
    assert np.array_equal(loaded.weights, t.weights) and loaded.saved_activations is None


def test_shape_mismatch_and_bad_files(tmp_path) -> None:
    t = make_tensors(LAYER, seed=1)
    with pytest.raises(WorkloadError, match="grad_output has shape"):
        t.check_shapes(Layer(name="conv1", N=2, C=3, K=4, H=7, W=7, R=3, S=3, stride=1, pad=1))
    with pytest.raises(WorkloadError, match="not found"):
        load_tensors(tmp_path / "none.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(WorkloadError, match="not a readable"):
        load_tensors(tmp_path / "junk.npz")
    np.savez(tmp_path / "partial.npz", **{"conv1/weights": t.weights})
    with pytest.raises(WorkloadError, match="lacks activations, grad_output"):
        load_tensors(tmp_path / "partial.npz")


def test_same_tensors_give_the_same_bytes_at_any_time(tmp_path, monkeypatch) -> None:
    import time

    t = make_tensors(LAYER, 0.3, 0.5, 0.2, seed=3)
    save_tensors(tmp_path / "a.npz", {"conv1": t})
    later = time.localtime(time.time() + 3 * 86400)  # the zip timestamp np.savez would record
    monkeypatch.setattr(time, "localtime", lambda *_: later)
    save_tensors(tmp_path / "b.npz", {"conv1": t})
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    save_tensors(tmp_path / "c.npz", {"conv1": make_tensors(LAYER, 0.3, 0.5, 0.2, seed=4)})
    assert (tmp_path / "c.npz").read_bytes() != (tmp_path / "a.npz").read_bytes()
    with np.load(tmp_path / "b.npz") as npz:  # still a plain .npz
        assert "conv1/weights/bitmap" in npz.files


def test_of_normals_holds_the_same_arrays_as_the_checked_constructor() -> None:
    t = make_tensors(LAYER, 0.3, 0.5, 0.2, model="uniform", density_a_saved=0.1, seed=2)
    arrays = (t.weights, t.activations, t.grad_output, t.saved_activations)
    fast, checked = Tensors.of_normals(*arrays), Tensors(*arrays)
    for name in ("weights", "activations", "grad_output", "saved_activations"):
        assert getattr(fast, name) is getattr(checked, name), name
    assert fast.wgrad_activations is t.saved_activations and Tensors.of_normals(*arrays[:3]).saved_activations is None
    with pytest.raises(WorkloadError, match="activations: Tensors.of_normals takes float32 arrays; got ndarray of"):
        Tensors.of_normals(t.weights, t.activations.astype(np.float64), t.grad_output)
    with pytest.raises(WorkloadError, match="weights: .* got list"):
        Tensors.of_normals([0.0], t.activations, t.grad_output)  # type: ignore[arg-type]


def test_only_the_normal_models_skip_the_finite_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """uniform and channel hold zeros and standard normals; topk_field's channel scale can overflow, and the
    check still refuses that."""
    from antsim.sparsity import tensors as tensors_module
    from antsim.sparsity.generators import FieldParams

    with np.errstate(over="ignore"), pytest.raises(WorkloadError, match="non-finite"):  # exp(1000·z) overflows
        make_tensors(LAYER, model="topk_field", params=FieldParams(0.0, 1000.0), seed=0)

    def refuse(array: object, name: str) -> None:
        raise AssertionError(f"{name} checked element by element")

    monkeypatch.setattr(tensors_module, "check_operand", refuse)
    for model in ("uniform", "channel"):
        t = make_tensors(LAYER, 0.3, 0.5, 0.2, model=model, density_a_saved=0.1, seed=3)
        assert all(np.isfinite(a).all() for a in (t.weights, t.activations, t.grad_output, t.saved_activations))
    with pytest.raises(AssertionError, match="checked element by element"):
        make_tensors(LAYER, model="topk_field", seed=0)


@pytest.mark.parametrize("model", ["uniform", "channel"])
def test_generated_masks_are_the_non_zeros_and_freeze_their_operands(model: str) -> None:
    """uniform and channel hand over the non-zero masks they draw (the saved copy's too): each equals ``!= 0`` of its
    operand, and every array is read-only, so an operand changed in place cannot leave its mask stale."""
    for saved_density in (None, 0.1):
        t = make_tensors(LAYER, 0.3, 0.5, 0.2, model=model, density_a_saved=saved_density, seed=3)
        masks = t.nonzero_masks()
        assert masks is not None
        for name in ("weights", "activations", "grad_output", "saved_activations"):
            array, mask = getattr(t, name), getattr(masks, name)
            if array is None:
                assert mask is None and saved_density is None
                continue
            assert mask.dtype == bool and np.array_equal(mask, array != 0), (model, name)
            assert not array.flags.writeable and not mask.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            t.weights[0, 0, 0, 0] = 1.0
    assert make_tensors(LAYER, model="swat", seed=0).nonzero_masks() is None  # its masks are not made for free
    assert Tensors(t.weights, t.activations, t.grad_output).nonzero_masks() is None


def test_masks_of_another_shape_or_kind_are_refused() -> None:
    t = make_tensors(LAYER, 0.3, 0.5, 0.2, model="swat", seed=3)
    fresh = Tensors(t.weights.copy(), t.activations.copy(), t.grad_output.copy())
    good = [a != 0 for a in (fresh.weights, fresh.activations, fresh.grad_output)]
    with pytest.raises(WorkloadError, match="activations: the non-zero mask must be bool of the operand's shape"):
        fresh.with_masks(Tensors.of_masks(good[0], good[1][:1], good[2]))
    with pytest.raises(WorkloadError, match="saved_activations: a non-zero mask needs its operand"):
        fresh.with_masks(Tensors.of_masks(*good, good[1]))
    with pytest.raises(WorkloadError, match="weights: Tensors.of_masks takes bool arrays; got ndarray of float32"):
        Tensors.of_masks(fresh.weights, *good[1:])
    assert fresh.with_masks(Tensors.of_masks(*good)).nonzero_masks() is not None
