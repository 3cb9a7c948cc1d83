"""Implicit-GEMM shapes of the three training convolutions, against brute-force references."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from antsim.gpu import estimate_layer, implicit_gemm, load_gpu, phase_gemms
from antsim.workloads.layers import Layer


def _valid_products(layer: Layer) -> int:
    """Brute force: (output pixel, tap) pairs that read an in-bounds input pixel, times N·K·C."""
    count = 0
    for p, q, r, s in itertools.product(range(layer.P), range(layer.Q), range(layer.R), range(layer.S)):
        h, w = p * layer.stride_h - layer.pad_h + r, q * layer.stride_w - layer.pad_w + s
        count += 0 <= h < layer.H and 0 <= w < layer.W
    return count * layer.N * layer.K * layer.C


LAYERS = [
    Layer("a", N=2, C=3, K=5, H=9, W=7, R=3, S=3, stride=1, pad=1),
    Layer("b", N=3, C=4, K=6, H=10, W=11, R=3, S=5, stride=(2, 1), pad=(1, 2)),
    Layer("c", N=1, C=8, K=2, H=8, W=8, R=1, S=1, stride=2, pad=0),
]


@pytest.mark.parametrize("layer", LAYERS, ids=lambda l: l.name)
def test_cutlass_problem_sizes(layer: Layer) -> None:
    npq, crs = layer.N * layer.P * layer.Q, layer.C * layer.R * layer.S
    assert (lambda g: (g.M, g.N, g.K))(implicit_gemm(layer, "fprop")) == (npq, layer.K, crs)
    assert (lambda g: (g.M, g.N, g.K))(implicit_gemm(layer, "dgrad")) == (
        layer.N * layer.H * layer.W, layer.C, layer.K * layer.R * layer.S)
    assert (lambda g: (g.M, g.N, g.K))(implicit_gemm(layer, "wgrad")) == (layer.K, crs, npq)


@pytest.mark.parametrize("layer", LAYERS, ids=lambda l: l.name)
def test_fprop_and_wgrad_gemms_execute_every_product_of_the_convolution(layer: Layer) -> None:
    # The dense GEMM runs all N·K·P·Q·C·R·S MACs: the in-bounds products plus the padding zeros.
    for phase in ("fprop", "wgrad"):
        g = implicit_gemm(layer, phase)
        assert g.macs == layer.macs >= _valid_products(layer)


def test_strided_dgrad_gemm_includes_the_structural_zeros() -> None:
    layer = LAYERS[2]  # 1×1 stride 2: only 1 in 4 dX pixels receives a product
    g = implicit_gemm(layer, "dgrad")
    assert g.macs == 4 * layer.macs == 4 * _valid_products(layer)


def test_col2im_dgrad_is_offered_only_for_narrow_c_and_runs_no_zeros() -> None:
    narrow = Layer("in", N=2, C=3, K=64, H=32, W=32, R=3, S=3, stride=1, pad=1)
    gemms = phase_gemms(narrow, "dgrad")
    assert [g.algorithm for g in gemms] == ["implicit", "col2im"]
    col2im = gemms[1]
    assert (col2im.M, col2im.N, col2im.K) == (2 * narrow.P * narrow.Q, 3 * 9, 64)
    assert col2im.macs == narrow.macs
    wide = Layer("wide", N=2, C=64, K=64, H=16, W=16, R=3, S=3, stride=1, pad=1)
    assert [g.algorithm for g in phase_gemms(wide, "dgrad")] == ["implicit"]
    assert [g.algorithm for g in phase_gemms(narrow, "fprop")] == ["implicit"]


def _dgrad_taps_per_pixel(layer: Layer) -> dict[tuple[int, int], int]:
    """Brute force: for every dX pixel, the filter taps that land on an integer dY position."""
    taps = {}
    for h, w in itertools.product(range(layer.H), range(layer.W)):
        taps[h, w] = sum((h + layer.pad_h - r) % layer.stride_h == 0 and (w + layer.pad_w - s) % layer.stride_w == 0
                         for r, s in itertools.product(range(layer.R), range(layer.S)))
    return taps


@pytest.mark.parametrize("layer", [
    Layer("s2", N=2, C=64, K=32, H=11, W=10, R=3, S=3, stride=2, pad=1),
    Layer("s2x5", N=1, C=64, K=16, H=20, W=17, R=5, S=5, stride=2, pad=1),
    Layer("s3", N=1, C=64, K=8, H=13, W=9, R=4, S=3, stride=(3, 2), pad=(0, 1)),
], ids=lambda l: l.name)
def test_phased_dgrad_reduces_over_the_most_taps_any_stride_phase_has(layer: Layer) -> None:
    taps = _dgrad_taps_per_pixel(layer)
    g = [g for g in phase_gemms(layer, "dgrad") if g.algorithm == "phased"][0]
    assert (g.M, g.N, g.K) == (layer.N * layer.H * layer.W, layer.C, layer.K * max(taps.values()))
    assert min(taps.values()) > 0  # every phase reached
    # No more than the zero-inserted GEMM, no less than the taps that land on dY (padding included).
    assert implicit_gemm(layer, "dgrad").macs > g.macs >= layer.N * layer.C * layer.K * sum(taps.values())
    assert g.macs >= _valid_products(layer)


def test_phased_dgrad_only_when_every_stride_phase_is_reached() -> None:
    one_by_one = Layer("1x1s2", N=1, C=64, K=64, H=8, W=8, R=1, S=1, stride=2, pad=0)
    assert min(_dgrad_taps_per_pixel(one_by_one).values()) == 0
    # A filter that misses phases gets the row-phased GEMM instead of the every-phase one.
    assert [g.algorithm for g in phase_gemms(one_by_one, "dgrad")] == ["implicit", "row_phased"]
    unit = Layer("s1", N=1, C=64, K=64, H=8, W=8, R=3, S=3, stride=1, pad=1)
    assert [g.algorithm for g in phase_gemms(unit, "dgrad")] == ["implicit"]


def _reached_rows(layer: Layer) -> int:
    """Brute force: dX rows h that some tap r maps onto an in-bounds dY row (h + pad − r = stride·p)."""
    return sum(any((h + layer.pad_h - r) % layer.stride_h == 0 and 0 <= (h + layer.pad_h - r) // layer.stride_h
                   < layer.P for r in range(layer.R)) for h in range(layer.H))


@pytest.mark.parametrize("layer", [
    Layer("1x1s2", N=2, C=64, K=128, H=14, W=14, R=1, S=1, stride=2, pad=0),
    Layer("1x1s2odd", N=1, C=128, K=64, H=7, W=9, R=1, S=1, stride=2, pad=0),
    Layer("2x1s3", N=1, C=64, K=32, H=12, W=10, R=2, S=1, stride=(3, 2), pad=0),
], ids=lambda l: l.name)
def test_row_phased_dgrad_runs_the_reached_rows_over_every_column(layer: Layer) -> None:
    [g] = [g for g in phase_gemms(layer, "dgrad") if g.algorithm == "row_phased"]
    taps = max(sum((h + layer.pad_h - r) % layer.stride_h == 0 for r in range(layer.R)) for h in range(layer.H))
    assert (g.M, g.N, g.K) == (layer.N * _reached_rows(layer) * layer.W, layer.C, layer.K * taps * layer.S)
    assert g.c_unique == layer.N * layer.C * layer.H * layer.W  # the zero rows are still written
    assert g.simt_only  # an NCHW SIMT kernel
    # Fewer MACs than the zero-inserted GEMM, never fewer than the products that land on dY.
    assert implicit_gemm(layer, "dgrad").macs > g.macs >= _valid_products(layer)


def test_row_phased_dgrad_at_1x1_stride_2_executes_twice_the_useful_work() -> None:
    # Closed form: even H, W — half the rows, every column: M·N·K = 2·N·P·Q·C·K (the zero-inserted GEMM: 4×).
    layer = Layer("ds", N=8, C=256, K=512, H=28, W=28, R=1, S=1, stride=2, pad=0)
    [g] = [g for g in phase_gemms(layer, "dgrad") if g.algorithm == "row_phased"]
    assert g.macs == 2 * layer.macs and implicit_gemm(layer, "dgrad").macs == 4 * layer.macs


def test_row_phased_dgrad_needs_the_padding_inside_the_filter_and_a_wide_c() -> None:
    padded = Layer("p3", N=8, C=2048, K=512, H=7, W=7, R=1, S=1, stride=2, pad=3)  # pad >= R: no window
    narrow = Layer("c32", N=8, C=32, K=512, H=14, W=14, R=1, S=1, stride=2, pad=0)  # C < PHASED_MIN_C
    assert "row_phased" not in [g.algorithm for g in phase_gemms(padded, "dgrad")]
    assert [g.algorithm for g in phase_gemms(narrow, "dgrad")] == ["implicit"]


@pytest.mark.parametrize("pad", [(3, 0), (0, 1), (1, 1)])
def test_dgrad_whose_padding_reaches_the_filter_runs_col2im_alone(pad: tuple[int, int]) -> None:
    # As a forward convolution dgrad pads dY by R − 1 − pad, negative here: ALGO_1's implicit GEMM has no such
    # window, so only BWD_DATA_ALGO_0 (col2im) is on the menu, at the convolution's MACs and no structural zeros.
    layer = Layer("p", N=8, C=2048, K=512, H=7, W=7, R=1, S=1, stride=2, pad=pad)
    assert min(layer.R - 1 - layer.pad_h, layer.S - 1 - layer.pad_w) < 0
    gemms = phase_gemms(layer, "dgrad")
    assert [g.algorithm for g in gemms] == ["col2im"]
    assert (gemms[0].M, gemms[0].N, gemms[0].K) == (8 * layer.P * layer.Q, 2048, 512)
    assert gemms[0].macs == layer.macs
    assert [g.algorithm for g in phase_gemms(layer, "fprop")] == ["implicit"]  # fprop pads X: no such limit
    inside = dataclasses.replace(layer, pad=(0, 0))
    assert "implicit" in [g.algorithm for g in phase_gemms(inside, "dgrad")]
    for gpu, precision in (("p100", "fp32"), ("t4", "fp16")):
        r = estimate_layer(load_gpu(gpu), layer, "dgrad", precision, library="cudnn7", selection="heuristic")
        assert r.details["algo"] == "BWD_DATA_ALGO_0" and not r.details["tensor_cores"], gpu


def test_phased_dgrad_needs_c_to_fill_the_phased_tile() -> None:
    # DeepSpeech-like 5×10 stride 2: every phase is reached, but C = 32 is narrower than the 64-wide
    # zero-skipping kernels, so only the zero-inserted GEMM is offered; C = 64 gets the phased GEMM too.
    narrow = Layer("c32", N=1, C=32, K=32, H=20, W=30, R=5, S=10, stride=2, pad=0)
    assert min(_dgrad_taps_per_pixel(narrow).values()) > 0
    assert [g.algorithm for g in phase_gemms(narrow, "dgrad")] == ["implicit"]
    wide = Layer("c64", N=1, C=64, K=32, H=20, W=30, R=5, S=10, stride=2, pad=0)
    assert [g.algorithm for g in phase_gemms(wide, "dgrad")] == ["implicit", "phased"]


def test_unique_operand_sizes_are_the_tensors() -> None:
    layer = LAYERS[0]
    x, w = layer.N * layer.C * layer.H * layer.W, layer.K * layer.C * layer.R * layer.S
    y = layer.N * layer.K * layer.P * layer.Q
    f, d, wg = (implicit_gemm(layer, p) for p in ("fprop", "dgrad", "wgrad"))
    assert (f.a_unique, f.b_unique, f.c_unique) == (x, w, y)
    assert (d.a_unique, d.b_unique, d.c_unique) == (y, w, x)
    assert (wg.a_unique, wg.b_unique, wg.c_unique) == (y, x, w)


def test_wgrad_gathered_columns_share_one_address_per_input_pixel() -> None:
    layer = LAYERS[1]  # 3×5 filter: each input pixel feeds R·S = 15 columns of im2col(X)
    assert implicit_gemm(layer, "wgrad").gather_reuse == 15
    assert implicit_gemm(LAYERS[2], "wgrad").gather_reuse == 1  # 1×1: nothing shared
    assert implicit_gemm(layer, "fprop").gather_reuse == 1


def test_wgrad_walks_its_reduction_image_by_image() -> None:
    # N·P·Q is reduced in N slabs of P·Q pixels, each padded to the k step on its own
    layer = Layer("w", N=8, C=512, K=2048, H=7, W=7, R=1, S=1)
    g = implicit_gemm(layer, "wgrad")
    assert g.K == 8 * 49 and g.k_slabs == 8
    assert g.k_padded(8) == 8 * 56 and g.k_padded(32) == 8 * 64  # 49 pixels -> 56 / 64
    assert implicit_gemm(dataclasses.replace(layer, H=8, W=8), "wgrad").k_padded(32) == 8 * 64  # no padding
    assert implicit_gemm(layer, "fprop").k_slabs == implicit_gemm(layer, "dgrad").k_slabs == 1
    # the same N·P·Q cut into more, smaller images is never faster (more padding), never cheaper in MACs
    gpu = load_gpu("p100")
    few = Layer("few", N=2, C=256, K=256, H=14, W=14, R=1, S=1)
    many = Layer("many", N=8, C=256, K=256, H=7, W=7, R=1, S=1)
    assert few.N * few.P * few.Q == many.N * many.P * many.Q
    t_few = estimate_layer(gpu, few, "wgrad", library="cudnn7", selection="heuristic")
    t_many = estimate_layer(gpu, many, "wgrad", library="cudnn7", selection="heuristic")
    assert t_many.time_s > t_few.time_s and t_many.details.executed_flops > t_few.details.executed_flops
