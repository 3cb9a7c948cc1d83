"""Winograd and FFT formulations: work, traffic and workspace against closed forms; eligibility."""

from __future__ import annotations

import pytest

from antsim.gpu import load_gpu, winograd
from antsim.gpu.model import best_plan, side_kernel_s
from antsim.workloads.layers import Layer

L = Layer("c", N=8, C=64, K=128, H=56, W=56, R=3, S=3, stride=1, pad=1)  # P = Q = 56


def test_fused_winograd_f2x2_3x3_runs_16_products_per_2x2_tile() -> None:
    g = winograd.winograd_gemm(L, "fprop", fused=True)
    tiles = L.N * 28 * 28  # 8 images × 28 × 28 tiles: a whole number of every CTA block (1×4×8, 2×4×4, …)
    # all 16 points of a tile in one CTA, over C channels plus the prologue's first 8-channel slab
    prologue = winograd.FUSED_PROLOGUE_CHANNELS
    assert (g.batch, g.M, g.N, g.K) == (1, tiles, L.K, 16 * (L.C + prologue))
    assert g.macs == 16 * tiles * (L.C + prologue) * L.K
    assert L.macs / g.macs == pytest.approx(9 * 4 / 16 * L.C / (L.C + prologue))  # 2.25x fewer multiplies
    # a 5×5 plane (3×3 tiles) of 3 images pads to whole blocks: the least-padding shape 4 images × 2×4
    # tiles... 1×4×8 → 3·4·8 = 96, 2×4×4 → 4·4·4 = 64, 4×2×4 → 4·4·4 = 64, 4×1×8 → 4·3·8 = 96 slots
    small = Layer("s", N=3, C=16, K=16, H=5, W=5, R=3, S=3, stride=1, pad=1)
    assert winograd.fused_tile_slots(small, "fprop") == 64 and winograd.winograd_gemm(small, "fprop", True).M == 64
    # fused: only the layer's own tensors move, no workspace, SIMT only, transforms in the main loop
    assert (g.a_unique, g.b_unique, g.c_unique) == (L.N * L.C * 56 * 56, L.K * L.C * 9, L.N * L.K * 56 * 56)
    assert g.workspace == 0 and g.side == () and g.simt_only and g.transform_ops == (2.0, 2.6)


def test_fused_blocks_of_cudnn_5_to_7_are_8_tiles_wide() -> None:
    """cuDNN 5–7's fused kernels (``tile148``, ``tile418``, ``tile228``) run blocks 8 tile columns wide, cuDNN 8's
    also 4 wide (``tile244``, ``tile424``): a 7×7 plane's 4 × 4 tiles pad to 4 × 8 (2×) before cuDNN 8, not after."""
    from antsim.gpu.menus import formulations

    seven = Layer("r7", N=8, C=512, K=512, H=7, W=7, R=3, S=3, stride=1, pad=1)
    assert winograd.fused_tile_slots(seven, "fprop") == 8 * 4 * 4
    assert winograd.fused_tile_slots(seven, "fprop", winograd.LEGACY_FUSED_BLOCKS) == 8 * 4 * 8
    assert all(c == 8 for _, _, c in winograd.LEGACY_FUSED_BLOCKS)
    gpu = load_gpu("p100")
    for library, slots in (("cudnn5", 256), ("cudnn7", 256), ("cudnn8", 128)):
        fused = [g for g in formulations(gpu, seven, "fprop", "fp32", library) if g.algorithm == "winograd_fused"]
        assert [g.M for g in fused] == [slots], library
    # a 14×14 plane (7 × 7 tiles) pads to 7 × 8 in 4-image 1×8 blocks (tile418) in either generation
    fourteen = Layer("r14", N=8, C=512, K=512, H=14, W=14, R=3, S=3, stride=1, pad=1)
    assert winograd.fused_tile_slots(fourteen, "fprop", winograd.LEGACY_FUSED_BLOCKS) == \
        winograd.fused_tile_slots(fourteen, "fprop") == 8 * 7 * 8


def test_fused_and_nonfused_winograd_have_their_own_efficiency() -> None:
    import dataclasses

    from antsim.gpu.model import CALIBRATION

    gpu = load_gpu("p100")
    big = Layer("b", N=32, C=256, K=256, H=28, W=28, R=3, S=3, stride=1, pad=1)
    fused, nonfused = (winograd.winograd_gemm(big, "fprop", fused=f) for f in (True, False))
    slow_fused = dataclasses.replace(CALIBRATION, winograd_fused_efficiency=CALIBRATION.winograd_fused_efficiency / 2)
    assert best_plan(gpu, nonfused, "fp32", slow_fused).time_s == best_plan(gpu, nonfused, "fp32").time_s
    assert best_plan(gpu, fused, "fp32", slow_fused).compute_s == pytest.approx(
        2 * best_plan(gpu, fused, "fp32").compute_s, rel=0.01)
    slow = dataclasses.replace(CALIBRATION, winograd_efficiency=CALIBRATION.winograd_efficiency / 2)
    assert best_plan(gpu, fused, "fp32", slow).time_s == best_plan(gpu, fused, "fp32").time_s


def test_nonfused_winograd_f4x4_3x3_work_traffic_and_workspace() -> None:
    g = winograd.winograd_gemm(L, "fprop", fused=False)
    tiles = L.N * 14 * 14
    assert (g.batch, g.M, g.N, g.K) == (36, tiles, L.K, L.C)
    assert L.macs / g.macs == pytest.approx(9 * 16 / 36)  # 4x fewer multiplies
    x, w, y = L.N * L.C * 56 * 56, L.K * L.C * 9, L.N * L.K * 56 * 56
    u, v, m = 36 * tiles * L.C, 36 * L.C * L.K, 36 * tiles * L.K
    assert g.workspace == u + v + m
    assert [k.elements for k in g.side] == [x + u, w + v, m + y]
    assert [k.flops for k in g.side] == [4 * u, 4 * v, 4 * m]
    # a transform kernel of n elements costs n·bytes / DRAM bandwidth (+ launch) when memory-bound
    gpu = load_gpu("p100")
    k = g.side[0]
    assert side_kernel_s(gpu, k, 4) == pytest.approx(max(k.elements * 4 / gpu.dram_bytes_per_s,
                                                         k.flops / (gpu.peak("fp32") * 0.8)) + 5e-6)
    plan = best_plan(gpu, g, "fp32")
    assert plan.side_s == pytest.approx(sum(side_kernel_s(gpu, s, 4) for s in g.side))
    assert plan.time_s > plan.side_s


def test_winograd_backward_phases() -> None:
    dgrad = winograd.winograd_gemm(L, "dgrad", fused=False)  # fprop of dY with the flipped filter
    assert (dgrad.M, dgrad.N, dgrad.K) == (L.N * 14 * 14, L.C, L.K)
    wgrad = winograd.winograd_gemm(L, "wgrad", fused=False)  # (K × tiles)·(tiles × C) per point
    assert (wgrad.batch, wgrad.M, wgrad.N, wgrad.K) == (36, L.K, L.C, L.N * 14 * 14)
    assert wgrad.c_unique == 36 * L.K * L.C
    five = Layer("k5", N=4, C=32, K=32, H=28, W=28, R=5, S=5, stride=1, pad=2)
    g5 = winograd.winograd_gemm(five, "fprop", fused=False)  # F(2×2, 5×5): α = 6
    assert g5.batch == 36 and g5.M == 4 * 14 * 14


@pytest.mark.parametrize(("layer", "fused", "ok"), [
    (L, True, True), (L, False, True),
    (Layer("s2", N=8, C=64, K=64, H=56, W=56, R=3, S=3, stride=2, pad=1), True, False),
    (Layer("s2", N=8, C=64, K=64, H=56, W=56, R=3, S=3, stride=2, pad=1), False, False),
    (Layer("k5", N=8, C=64, K=64, H=28, W=28, R=5, S=5, stride=1, pad=2), True, False),
    (Layer("k5", N=8, C=64, K=64, H=28, W=28, R=5, S=5, stride=1, pad=2), False, True),
    (Layer("k1", N=8, C=64, K=64, H=28, W=28, R=1, S=1, stride=1, pad=0), False, False),
    (Layer("k7", N=8, C=64, K=64, H=28, W=28, R=7, S=7, stride=1, pad=3), False, False),
])
def test_winograd_eligibility(layer: Layer, fused: bool, ok: bool) -> None:
    assert winograd.eligible(layer, fused) is ok


def test_winograd_beats_direct_gemm_only_by_its_multiply_saving() -> None:
    """A compute-bound 3×3 layer: fused Winograd's main loop is at most 2.25× faster than the implicit GEMM."""
    from antsim.gpu.gemm import implicit_gemm

    gpu = load_gpu("p100")
    big = Layer("b", N=32, C=256, K=256, H=28, W=28, R=3, S=3, stride=1, pad=1)
    direct = best_plan(gpu, implicit_gemm(big, "fprop"), "fp32")
    fused = best_plan(gpu, winograd.winograd_gemm(big, "fprop", fused=True), "fp32")
    assert direct.time_s / 2.25 <= fused.time_s < direct.time_s
