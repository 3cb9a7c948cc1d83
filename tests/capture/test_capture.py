"""SWAT capture: exact top-k densities, the real dY, exact SWAT operands per phase, zoo shapes, determinism."""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch
F = torch.nn.functional

from antsim.capture.data import batch_indices, load_images  # noqa: E402
from antsim.capture.models import SwatConv2d, SwatState, build_model, swat_convs, topk  # noqa: E402
from antsim.capture.run import capture  # noqa: E402
from antsim.cli import main  # noqa: E402
from antsim.sparsity.tensors import load_tensors, save_tensors  # noqa: E402
from antsim.workloads.zoo import network  # noqa: E402

TINY = dict(network="resnet18-cifar", steps=1, batch=2, width_mult=0.125, data="synthetic", seed=3)


def _topk_ref(x: np.ndarray, density: float) -> np.ndarray:
    """Reference top-k by a full sort (float64)."""
    keep = int(round(density * x.size))
    order = np.argsort(-np.abs(x).ravel(), kind="stable")[:keep]
    out = np.zeros(x.size)
    out[order] = x.ravel()[order]
    return out.reshape(x.shape)


def _conv_ref(a: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """Direct cross-correlation, float64: Y[n,k,p,q] = Σ W[k,c,r,s]·A[n,c,p·st+r−pad, q·st+s−pad]."""
    n, c, h, wd = a.shape
    k, _, r, s = w.shape
    padded = np.zeros((n, c, h + 2 * pad, wd + 2 * pad))
    padded[:, :, pad:pad + h, pad:pad + wd] = a
    p, q = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    y = np.zeros((n, k, p, q))
    for i in range(r):
        for j in range(s):
            window = padded[:, :, i:i + stride * p:stride, j:j + stride * q:stride]
            y += np.einsum("kc,ncpq->nkpq", w[:, :, i, j], window)
    return y


def test_topk_keeps_exactly_the_largest_magnitudes() -> None:
    x = torch.randn(3, 5, 7, 7, generator=torch.Generator().manual_seed(0))
    for density in (0.0, 0.1, 0.37, 1.0):
        kept = topk(x, density).numpy()
        assert np.count_nonzero(kept) == round(density * x.numel())
        np.testing.assert_array_equal(kept, _topk_ref(x.numpy().astype(np.float64), density))


@pytest.mark.parametrize("density_g", [1.0, 0.4])
def test_swat_conv_uses_the_exact_swat_operands_in_each_phase(density_g: float) -> None:
    """fprop with top-k W, dgrad with top-k W and dY, wgrad with top-k saved A — vs a float64 direct conv."""
    gen = torch.Generator().manual_seed(1)
    x = F.relu(torch.randn(2, 3, 7, 6, generator=gen, dtype=torch.float64)).requires_grad_(True)
    grad_y = torch.randn(2, 4, 4, 3, generator=gen, dtype=torch.float64)
    state = SwatState(density_w=0.3, density_a=0.2, density_g=density_g, recording=True)
    conv = SwatConv2d("l", 3, 4, 3, state, stride=2, padding=1).double()
    y = conv(x)
    y.backward(grad_y)

    w_s = _topk_ref(conv.weight.detach().numpy(), 0.3)
    a = x.detach().numpy()
    a_s = _topk_ref(a, 0.2)
    dy = _topk_ref(grad_y.numpy(), density_g)
    np.testing.assert_allclose(y.detach().numpy(), _conv_ref(a, w_s, 2, 1), rtol=1e-10, atol=1e-12)
    # dgrad / wgrad by linearity: <conv(A, W), dY> differentiated numerically is exact for a bilinear form.
    d_a = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[idx] = 1.0
        d_a[idx] = np.sum(_conv_ref(e, w_s, 2, 1) * dy)
    d_w = np.zeros_like(w_s)
    for idx in np.ndindex(w_s.shape):
        e = np.zeros_like(w_s)
        e[idx] = 1.0
        d_w[idx] = np.sum(_conv_ref(a_s, e, 2, 1) * dy)
    np.testing.assert_allclose(x.grad.numpy(), d_a, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(conv.weight.grad.numpy(), d_w, rtol=1e-10, atol=1e-12)
    rec = state.records["l"]
    np.testing.assert_array_equal(rec["weights"].numpy(), w_s)
    np.testing.assert_array_equal(rec["saved_activations"].numpy(), a_s)
    np.testing.assert_array_equal(rec["activations"].numpy(), a)
    np.testing.assert_array_equal(rec["grad_output"].numpy(), dy)


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


def test_cli_network_choices_are_the_buildable_ones() -> None:
    from antsim.capture.models import CAPTURE_NETWORKS
    from antsim.cli.capture import _NETWORKS

    assert _NETWORKS == CAPTURE_NETWORKS


@pytest.mark.parametrize("name", ["resnet18-cifar", "vgg16-cifar", "wrn-16-8-cifar"])
def test_full_width_layers_match_the_zoo(name: str) -> None:
    state = SwatState(recording=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = build_model(name, state)
    model.train()
    with torch.no_grad():
        model(torch.randn(1, 3, 32, 32))
    zoo = network(name)
    assert [conv.layer_name for conv in swat_convs(model)] == [layer.name for layer in zoo]
    for conv, layer in zip(swat_convs(model), zoo, strict=True):
        rec = state.records[conv.layer_name]
        assert tuple(rec["weights"].shape) == (layer.K, layer.C, layer.R, layer.S), layer.name
        assert tuple(rec["activations"].shape) == (1, layer.C, layer.H, layer.W), layer.name
        assert (conv.stride, conv.padding) == (layer.stride, layer.pad), layer.name


def test_bad_arguments_are_user_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base = ["capture", "--network", "resnet18-cifar", "--data", "synthetic", "--out", str(tmp_path / "x.npz")]
    for extra, text in ((["--density", "0"], "--density"), (["--steps", "0"], "--steps"),
                        (["--width-mult", "-1"], "--width-mult")):
        assert main([*base, *extra]) == 2
        assert text in capsys.readouterr().err
    assert not (tmp_path / "x.npz").exists()


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
    """A x0.125 ResNet-18 learns the (photo, strip) target: the last steps' loss is well below the first."""
    pytest.importorskip("sklearn")
    result = capture("resnet18-cifar", steps=40, batch=16, width_mult=0.125, data="natural", lr=0.02, seed=0)
    assert result.classes == 10 and "china.jpg" in result.data
    first, last = np.mean(result.losses[:10]), np.mean(result.losses[-10:])
    assert first > 2.0 and last < first - 0.3, (first, last)
    assert np.mean(result.accuracies[-10:]) > np.mean(result.accuracies[:10]) + 0.1
    from antsim.capture.schedule import make_schedule

    schedule = make_schedule("cosine", 0.02, 40)
    assert result.lrs == [schedule.at(i) for i in range(40)] and result.schedule == schedule


def test_array_sources_keep_the_old_batches() -> None:
    """digits / synthetic batches are exactly load_images()[batch_indices(...)], as before --data natural."""
    from antsim.capture.data import training_data

    images, labels = load_images("synthetic", 2)
    got = list(training_data("synthetic", 2).batches(8, 300, seed=2))
    for (x, y), index in zip(got, batch_indices(len(labels), 8, 300, 2), strict=True):
        np.testing.assert_array_equal(x, images[index])
        np.testing.assert_array_equal(y, labels[index])


def test_cli_report_markdown_csv_and_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import csv

    from antsim.capture.report import windows

    base = ["capture", "--network", "resnet18-cifar", "--steps", "4", "--batch", "2", "--width-mult", "0.125",
            "--data", "synthetic", "--lr", "0.05", "--schedule", "step", "--warmup", "1"]
    assert main([*base, "--out", str(tmp_path / "a.npz"), "--report", str(tmp_path / "sub" / "a.md")]) == 0
    out = capsys.readouterr().out
    assert "loss curve" in out and "chance: loss ln(10)" in out and "data: synthetic" in out
    assert main([*base, "--out", str(tmp_path / "b.npz"), "--report", str(tmp_path / "b.csv")]) == 0
    rows = list(csv.DictReader((tmp_path / "b.csv").open()))
    assert [float(r["lr"]) for r in rows] == pytest.approx([0.05, 0.05, 0.005, 0.0005])  # /10 at 50 % and 75 %
    losses = [float(r["loss"]) for r in rows]
    text = (tmp_path / "sub" / "a.md").read_text()
    for w in windows(losses, [float(r["accuracy"]) for r in rows], [float(r["lr"]) for r in rows]):
        assert f"| {w.first}–{w.last} | {w.lr:.5g} | {w.loss:.4f} |" in text  # same seed, same curve
    assert "step, peak lr 0.05, warm-up 1 steps" in text
    for png in (tmp_path / "sub" / "a.png", tmp_path / "b.png"):
        assert png.read_bytes()[:4] == b"\x89PNG"


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


def test_cli_refuses_bad_report_and_optimizer_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["capture", "--network", "resnet18-cifar", "--data", "synthetic", "--out", str(tmp_path / "x.npz")]
    for extra, text in ((["--report", str(tmp_path / "r.txt")], "--report"), (["--lr", "-1"], "--lr"),
                        (["--momentum", "1.5"], "--momentum"), (["--weight-decay", "-0.1"], "--weight-decay"),
                        (["--warmup", "20"], "--warmup")):
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and text in err, err
    assert not any(tmp_path.iterdir())


def test_cli_defaults_are_the_library_ones() -> None:
    from antsim.capture import run as run_module
    from antsim.capture.data import DATA_SOURCES
    from antsim.capture.schedule import SCHEDULES
    from antsim.cli import capture as cli

    assert cli._DATA == DATA_SOURCES and cli._SCHEDULES == SCHEDULES
    assert (cli._LR, cli._MOMENTUM, cli._WEIGHT_DECAY) == (run_module.DEFAULT_LR, run_module.MOMENTUM,
                                                           run_module.WEIGHT_DECAY)
