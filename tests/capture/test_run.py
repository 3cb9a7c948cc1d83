"""SWAT capture runs (``antsim.capture.run``): exact top-k densities, the real dY, determinism, the data sources."""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch
F = torch.nn.functional

from capture_helpers import topk_ref as _topk_ref  # noqa: E402

from antsim.capture.data import batch_indices, load_images  # noqa: E402
from antsim.capture.models import SwatConv2d, SwatState, build_model, swat_convs  # noqa: E402
from antsim.capture.run import capture  # noqa: E402
from antsim.cli import main  # noqa: E402
from antsim.sparsity.tensors import load_tensors, save_tensors  # noqa: E402

TINY = dict(network="resnet18-cifar", steps=1, batch=2, width_mult=0.125, data="synthetic", seed=3)


def test_tiny_capture_saves_requested_densities(tmp_path: Path) -> None:
    result = capture(**TINY, density=0.2, grad_density=0.3)
    save_tensors(tmp_path / "c.npz", result.tensors, packed=True)
    loaded = load_tensors(tmp_path / "c.npz")
    assert list(loaded) == [layer.name for layer in result.layers]
    for layer in result.layers:
        t, mem = loaded[layer.name], result.tensors[layer.name]
        t.check_shapes(layer)
        assert np.count_nonzero(t.weights) == round(0.2 * t.weights.size)
        assert np.count_nonzero(t.saved_activations) == round(0.2 * t.saved_activations.size)
        assert np.count_nonzero(t.grad_output) == round(0.3 * t.grad_output.size)
        # The saved copy is the top-k of the forward input, itself ReLU-sparse after the stem.
        np.testing.assert_array_equal(mem.saved_activations, _topk_ref(mem.activations, 0.2).astype(np.float32))
        for operand in ("weights", "activations", "grad_output"):
            ref = getattr(mem, operand)
            np.testing.assert_allclose(getattr(t, operand), ref, rtol=2e-3, atol=1e-3 * np.abs(ref).max())
    relu_input = loaded["layer1.0.conv1"].activations
    assert 0.3 < np.count_nonzero(relu_input) / relu_input.size < 0.8


def _plain_forward(density: float, density_g: float, grads: dict[str, np.ndarray]) -> types.FunctionType:
    """A conv forward built from plain autograd: top-k W (by a sort), tensor hooks capture (and top-k) dY."""

    def forward(self: SwatConv2d, x: torch.Tensor) -> torch.Tensor:
        w_s = torch.from_numpy(_topk_ref(self.weight.detach().numpy(), density).astype(np.float32))
        a_s = torch.from_numpy(_topk_ref(x.detach().numpy(), density).astype(np.float32))
        # Value conv(x, W_s); dW flows straight through to the dense W from the top-k A (SWAT's wgrad).
        wgrad_path = F.conv2d(a_s, self.weight, None, self.stride, self.padding)
        y = F.conv2d(x, w_s, None, self.stride, self.padding) + wgrad_path - wgrad_path.detach()

        def hook(g: torch.Tensor) -> torch.Tensor:
            g = torch.from_numpy(_topk_ref(g.numpy(), density_g).astype(np.float32))
            grads[self.layer_name] = g.numpy()
            return g

        y.register_hook(hook)
        return y

    return forward


@pytest.mark.parametrize("density_g", [1.0, 0.5])
def test_captured_dy_is_the_real_gradient(density_g: float) -> None:
    result = capture(**TINY, density=0.1, grad_density=density_g)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(TINY["seed"])
        model = build_model(TINY["network"], SwatState(), TINY["width_mult"])
    grads: dict[str, np.ndarray] = {}
    for conv in swat_convs(model):
        conv.forward = types.MethodType(_plain_forward(0.1, density_g, grads), conv)
    images, labels = load_images("synthetic", TINY["seed"])
    index = batch_indices(len(labels), TINY["batch"], 1, TINY["seed"])[0]
    model.train()
    F.cross_entropy(model(torch.from_numpy(images[index])), torch.from_numpy(labels[index])).backward()
    assert list(grads) and set(grads) == set(result.tensors)
    for name, t in result.tensors.items():
        scale = np.abs(grads[name]).max()
        np.testing.assert_allclose(t.grad_output, grads[name], rtol=1e-4, atol=1e-5 * scale, err_msg=name)
        if density_g < 1.0:
            assert np.count_nonzero(t.grad_output) == round(density_g * t.grad_output.size)


def test_same_seed_same_file_other_seed_differs(tmp_path: Path) -> None:
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        args = ["capture", "--network", "resnet18-cifar", "--steps", "2", "--batch", "2", "--width-mult", "0.125",
                "--data", "synthetic", "--seed", str(seed), "--out", str(tmp_path / f"{name}.npz")]
        assert main(args) == 0
    stores = {}
    for name in "abc":
        with np.load(tmp_path / f"{name}.npz") as npz:
            stores[name] = {key: npz[key] for key in npz.files}
    assert stores["a"].keys() == stores["b"].keys() == stores["c"].keys()
    assert all(np.array_equal(stores["a"][k], stores["b"][k]) for k in stores["a"])
    assert not all(np.array_equal(stores["a"][k], stores["c"][k]) for k in stores["a"]
                   if stores["a"][k].shape == stores["c"][k].shape)


def test_digits_are_normalised_32x32_images() -> None:
    pytest.importorskip("sklearn")
    images, labels = load_images("digits")
    assert images.shape == (1797, 3, 32, 32) and images.dtype == np.float32
    assert abs(images.mean()) < 1e-4 and abs(images.std() - 1) < 1e-3
    assert sorted(set(labels.tolist())) == list(range(10))
    from sklearn.datasets import load_digits

    raw = torch.from_numpy(load_digits().images[:5, None].astype(np.float32))
    ref = F.interpolate(raw, size=32, mode="bilinear", align_corners=False).numpy()[:, 0]
    ratio = images[:5, 0] - images[:5, 0].min(axis=(1, 2), keepdims=True)
    ref = ref - ref.min(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(ratio / ratio.max(), ref / ref.max(), atol=1e-5)


def test_digits_without_scikit_learn_is_one_line_exit_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    assert main(["capture", "--network", "resnet18-cifar", "--data", "digits", "--out", str(tmp_path / "x.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "scikit-learn" in err and "antsim[capture]" in err
    assert not (tmp_path / "x.npz").exists()


def test_loss_falls_on_natural_images() -> None:
    """A x0.125 ResNet-18 learns the (photo, strip) target: the last steps' loss is well below the first.

    80 steps, not 40: at 40 the drop (0.19-0.26 over seeds 0-2 on an AMD EPYC host, > 0.3 on the earlier hosts)
    sits at the bound, so the CPU's float rounding decided the outcome; at 80 it is 0.36-0.59 on seeds 0-2."""
    pytest.importorskip("sklearn")
    result = capture("resnet18-cifar", steps=80, batch=16, width_mult=0.125, data="natural", lr=0.02, seed=0)
    assert result.classes == 10 and "china.jpg" in result.data
    first, last = np.mean(result.losses[:10]), np.mean(result.losses[-10:])
    assert first > 2.0 and last < first - 0.3, (first, last)
    assert np.mean(result.accuracies[-10:]) > np.mean(result.accuracies[:10]) + 0.1
    from antsim.capture.schedule import make_schedule

    schedule = make_schedule("cosine", 0.02, 80)
    assert result.lrs == [schedule.at(i) for i in range(80)] and result.schedule == schedule


def test_array_sources_keep_the_old_batches() -> None:
    """digits / synthetic batches are exactly load_images()[batch_indices(...)], as before --data natural."""
    from antsim.capture.data import training_data

    images, labels = load_images("synthetic", 2)
    got = list(training_data("synthetic", 2).batches(8, 300, seed=2))
    for (x, y), index in zip(got, batch_indices(len(labels), 8, 300, 2), strict=True):
        np.testing.assert_array_equal(x, images[index])
        np.testing.assert_array_equal(y, labels[index])


def test_cli_trains_on_a_cifar10_folder(cifar_folder, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, _, _ = cifar_folder
    base = ["capture", "--network", "resnet18-cifar", "--steps", "2", "--batch", "3", "--width-mult", "0.125",
            "--data", "cifar10"]
    assert main([*base, "--data-dir", str(folder), "--out", str(tmp_path / "c.npz")]) == 0
    assert "data: cifar10: 30 training images" in capsys.readouterr().out
    assert load_tensors(tmp_path / "c.npz")["conv1"].activations.shape == (3, 3, 32, 32)
    assert main([*base, "--out", str(tmp_path / "d.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--data-dir" in err and not (tmp_path / "d.npz").exists()
