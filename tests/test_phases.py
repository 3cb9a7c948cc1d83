"""The dense references against scipy, and the Cartesian problem description."""

from __future__ import annotations

import numpy as np
import pytest
from dataflow_helpers import random_tensors
from scipy.signal import convolve2d, correlate2d

from antsim.errors import WorkloadError
from antsim.phases import DimMap, conv_dgrad, conv_fprop, conv_sum, conv_wgrad, phase_problem, reference
from antsim.sparsity.generators import make_tensors
from antsim.workloads.layers import Layer

LAYERS = [
    Layer("a", N=2, C=3, K=4, H=7, W=9, R=3, S=3, stride=1, pad=1),
    Layer("b", N=1, C=2, K=3, H=9, W=8, R=3, S=3, stride=2, pad=1),
    Layer("c", N=3, C=2, K=2, H=11, W=7, R=5, S=3, stride=(2, 1), pad=(2, 0)),
    Layer("d", N=1, C=3, K=2, H=6, W=7, R=1, S=1, stride=2, pad=0),
]


def _upsample(x: np.ndarray, stride: tuple[int, int]) -> np.ndarray:
    sh, sw = stride
    out = np.zeros((x.shape[0], (x.shape[1] - 1) * sh + 1, (x.shape[2] - 1) * sw + 1))
    out[:, ::sh, ::sw] = x
    return out


def scipy_phase(layer: Layer, phase: str, t) -> np.ndarray:
    """Each phase with scipy.signal 2-D correlation/convolution per channel pair."""
    (sh, sw), (ph, pw) = layer.stride, layer.pad
    A = t.activations if phase == "fprop" else t.wgrad_activations
    Ap = np.pad(A, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    if phase == "fprop":
        out = np.zeros((layer.N, layer.K, layer.P, layer.Q))
        for n, k, c in np.ndindex(layer.N, layer.K, layer.C):
            out[n, k] += correlate2d(Ap[n, c], t.weights[k, c], mode="valid")[::sh, ::sw][:layer.P, :layer.Q]
        return out
    if phase == "dgrad":
        full = np.zeros((layer.N, layer.C, layer.H + 2 * ph + layer.R, layer.W + 2 * pw + layer.S))
        for n, k, c in np.ndindex(layer.N, layer.K, layer.C):
            conv = convolve2d(_upsample(t.grad_output[n, k][None], layer.stride)[0], t.weights[k, c], mode="full")
            full[n, c, :conv.shape[0], :conv.shape[1]] += conv
        return full[:, :, ph:ph + layer.H, pw:pw + layer.W]
    out = np.zeros((layer.K, layer.C, layer.R, layer.S))
    for n, k, c in np.ndindex(layer.N, layer.K, layer.C):
        kernel = _upsample(t.grad_output[n, k][None], layer.stride)[0]
        out[k, c] += correlate2d(Ap[n, c], kernel, mode="valid")[:layer.R, :layer.S]
    return out


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", ["fprop", "dgrad", "wgrad"])
def test_reference_matches_scipy(layer: Layer, phase: str) -> None:
    t = random_tensors(layer, 0.6, seed=1)
    ref = reference(layer, phase, t)
    assert ref.shape == phase_problem(layer, phase).output_shape
    np.testing.assert_allclose(ref, scipy_phase(layer, phase, t), atol=1e-10)


def test_dgrad_and_wgrad_are_gradients_of_fprop() -> None:
    """<conv(A, W), dY> is bilinear: its derivative in A is dgrad, in W is wgrad."""
    layer = LAYERS[2]
    t = random_tensors(layer, 1.0, seed=2)
    inner = np.sum(reference(layer, "fprop", t) * t.grad_output)
    assert np.sum(reference(layer, "dgrad", t) * t.activations) == pytest.approx(inner)
    assert np.sum(reference(layer, "wgrad", t) * t.weights) == pytest.approx(inner)


def test_output_map_matches_definition() -> None:
    layer = LAYERS[2]
    (sh, _), (ph, _) = layer.stride, layer.pad
    y, u = np.meshgrid(np.arange(layer.H), np.arange(layer.R), indexing="ij")
    o, ok = phase_problem(layer, "fprop").dims[0].output(y, u)
    num = y + ph - u
    assert np.array_equal(ok, (num % sh == 0) & (num // sh >= 0) & (num // sh < layer.P))
    assert np.array_equal(o[ok], num[ok] // sh)
    p, r = np.meshgrid(np.arange(layer.P), np.arange(layer.R), indexing="ij")
    o, ok = phase_problem(layer, "dgrad").dims[0].output(p, r)
    assert np.array_equal(ok, (p * sh + r - ph >= 0) & (p * sh + r - ph < layer.H))
    h, p = np.meshgrid(np.arange(layer.H), np.arange(layer.P), indexing="ij")
    o, ok = phase_problem(layer, "wgrad").dims[0].output(h, p)
    assert np.array_equal(ok, (h - p * sh + ph >= 0) & (h - p * sh + ph < layer.R))


def test_unknown_phase_is_a_user_error() -> None:
    with pytest.raises(WorkloadError, match="phase"):
        phase_problem(LAYERS[0], "backward")


@pytest.mark.parametrize("alpha,beta,gamma,delta,extent", [(1, -1, 1, 1, 7), (1, 1, -2, 1, 5), (2, -1, 3, 1, 9),
                                                          (1, -1, 2, 2, 4), (3, 2, -4, 3, 6), (1, 1, 0, 1, 1)])
def test_dim_map_output_follows_its_definition(alpha: int, beta: int, gamma: int, delta: int, extent: int) -> None:
    """o·δ = α·y + β·u + γ, valid iff δ divides it and 0 ≤ o < extent — checked element by element."""
    dim = DimMap(alpha, beta, gamma, delta, extent)
    y, u = np.meshgrid(np.arange(-3, 12), np.arange(-3, 12), indexing="ij")
    o, ok = dim.output(y.ravel(), u.ravel())
    for yy, uu, got_o, got_ok in zip(y.ravel(), u.ravel(), o, ok, strict=True):
        num = alpha * int(yy) + beta * int(uu) + gamma
        valid = num % delta == 0 and 0 <= num // delta < extent
        assert bool(got_ok) == valid
        if valid:
            assert int(got_o) == num // delta


CONV_LAYERS = [  # strides, paddings, 1 × 1, rectangular planes and kernels, a batch
    Layer(name="a", N=2, C=3, K=4, H=7, W=6, R=3, S=3, stride=1, pad=1),
    Layer(name="b", N=1, C=4, K=5, H=9, W=8, R=3, S=3, stride=2, pad=1),
    Layer(name="c", N=2, C=5, K=3, H=5, W=5, R=1, S=1, stride=2, pad=0),
    Layer(name="d", N=1, C=2, K=3, H=8, W=6, R=3, S=2, stride=(2, 1), pad=(0, 1)),
]


@pytest.mark.parametrize("layer", CONV_LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", ["fprop", "dgrad", "wgrad"])
def test_conv_sum_is_the_mask_convolutions_sum(layer: Layer, phase: str) -> None:
    """The closed-form count equals the convolution of the 0/1 operands, summed (float64, exact: every partial
    sum is a small integer), on bool masks and on integer 0/1 arrays."""
    t = make_tensors(layer, 0.4, 0.35, 0.3, model="uniform", seed=3)
    w = (t.weights != 0).astype(float)
    if phase == "fprop":
        out = conv_fprop((t.activations != 0).astype(float), w, layer.stride, layer.pad)
    elif phase == "dgrad":
        out = conv_dgrad((t.grad_output != 0).astype(float), w, (layer.H, layer.W), layer.stride, layer.pad)
    else:
        out = conv_wgrad((t.wgrad_activations != 0).astype(float), (t.grad_output != 0).astype(float),
                         (layer.R, layer.S), layer.stride, layer.pad)
    expected = int(round(float(out.sum())))
    assert expected > 0
    w_mask = t.weights != 0
    x, y = {"fprop": (t.activations != 0, w_mask), "dgrad": (t.grad_output != 0, w_mask),
            "wgrad": (t.wgrad_activations != 0, t.grad_output != 0)}[phase]
    for as_given in (lambda m: m, lambda m: m.astype(np.uint8)):
        assert conv_sum(as_given(x), as_given(y), layer.stride, layer.pad, phase, (layer.H, layer.W),  # type: ignore[arg-type]
                        (layer.R, layer.S)) == expected
