"""SWAT convolutions (``antsim.capture.models``): exact top-k, exact SWAT operands per phase, zoo shapes."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch
F = torch.nn.functional

from capture_helpers import conv_ref as _conv_ref  # noqa: E402
from capture_helpers import topk_ref as _topk_ref  # noqa: E402

from antsim.capture.models import SwatConv2d, SwatState, build_model, swat_convs, topk  # noqa: E402
from antsim.workloads.zoo import network  # noqa: E402


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
