"""Half2 arithmetic on a GPU without tensor cores (cuDNN's TRUE_HALF_CONFIG; docs/gpu_precision.md): which GPUs
and precisions it applies to, its packed tiles, its menu, its wgrad's kernel per output row, and the heuristic's
tile rule."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import pytest

from antsim.gpu import estimate_layer, implicit_gemm, load_gpu
from antsim.gpu.menus import NOT_TRUE_HALF, formulations, heuristic_tile
from antsim.gpu.model import CALIBRATION, candidate_plans, plan_gemm, run_precision, split_candidates
from antsim.gpu.tiles import (
    HALF2_TILES,
    HALF2_WGRAD_TILES,
    SIMT_PHASED_TILES,
    SIMT_TILES,
    SIMT_WGRAD_TILES,
    ctas_per_sm,
    half2,
    hgemm_tiles,
    sgemm_tiles,
)
from antsim.workloads.layers import Layer

WINO = Layer("w3", N=16, C=128, K=128, H=28, W=28, R=3, S=3, stride=1, pad=1)
FAT = Layer("fat", N=16, C=2048, K=512, H=7, W=7, R=1, S=1, stride=1, pad=0)  # 784 pixels: under one wave
BIG = Layer("big", N=64, C=512, K=512, H=56, W=56, R=3, S=3, stride=1, pad=1)


def test_true_half_is_fp16_on_a_gpu_without_tensor_cores() -> None:
    p100, v100, t4 = load_gpu("p100"), load_gpu("v100"), load_gpu("t4")
    assert p100.true_half("fp16")
    assert not p100.true_half("fp32") and not p100.true_half("fp16_pseudo")  # fp32 arithmetic
    assert not v100.true_half("fp16") and not t4.true_half("fp16")  # tensor cores take fp16


def test_a_half2_tile_holds_twice_the_pixels_in_the_same_registers() -> None:
    gpu = load_gpu("p100")
    for fp32 in SIMT_PHASED_TILES:
        h = half2(fp32)
        assert (h.m, h.n, h.k, h.threads, h.packed) == (2 * fp32.m, fp32.n, fp32.k, fp32.threads, 2)
        assert h.registers() == fp32.registers()  # two fp16 accumulators per 32-bit register
        assert ctas_per_sm(gpu, h, 2) == ctas_per_sm(gpu, fp32, 2)
    # per k step a thread reads 16 A and 8 B halves (2 B each) for 16 × 8 MACs
    assert half2(SIMT_TILES[0]).smem_bytes_per_mac(2) == pytest.approx(2 * (16 + 8) / (16 * 8))
    assert SIMT_TILES[0].smem_bytes_per_mac(4) == pytest.approx(4 * (8 + 8) / (8 * 8))  # unpacked: unchanged
    assert {(t.m, t.n) for t in HALF2_TILES} == {(256, 128), (256, 64)}


def test_the_true_half_menu_lacks_fused_winograd_fft_col2im_and_zero_skipping_strided_dgrad() -> None:
    p100 = load_gpu("p100")
    for strided in (Layer("s5", N=16, C=64, K=128, H=80, W=350, R=5, S=5, stride=2, pad=1),  # every phase reached
                    Layer("s1", N=8, C=128, K=512, H=28, W=28, R=1, S=1, stride=2, pad=0)):  # rows skipped
        half = {g.algorithm for g in formulations(p100, strided, "dgrad", "fp16", "cudnn7")}
        pseudo = {g.algorithm for g in formulations(p100, strided, "dgrad", "fp16_pseudo", "cudnn7")}
        assert half == {"implicit"} and pseudo & {"phased", "row_phased"}, strided.name
    for phase in ("fprop", "dgrad"):
        half = {g.algorithm for g in formulations(p100, WINO, phase, "fp16", "cudnn7")}
        pseudo = {g.algorithm for g in formulations(p100, WINO, phase, "fp16_pseudo", "cudnn7")}
        assert not half & set(NOT_TRUE_HALF), phase
        assert {"implicit", "winograd_nonfused"} <= half, phase
        assert {"winograd_fused", "fft_tiling"} <= pseudo, phase  # PSEUDO_HALF keeps them
        assert half == pseudo - set(NOT_TRUE_HALF), phase


def test_true_half_runs_half2_and_packed_tiles_in_every_phase() -> None:
    p100 = load_gpu("p100")
    for phase in ("fprop", "dgrad"):
        g = implicit_gemm(BIG, phase)
        assert run_precision(p100, g, "fp16") == "fp16"
        assert {p.tile for p in candidate_plans(p100, g, "fp16")} <= set(HALF2_TILES), phase
    wgrad = implicit_gemm(BIG, "wgrad")
    assert run_precision(p100, wgrad, "fp16") == "fp16"
    assert estimate_layer(p100, BIG, "wgrad", "fp16").details["run_precision"] == "fp16"
    # session 12: wgrad's half2 kernels pack along M (dW's output channels) like fprop's and dgrad's
    assert {p.tile for p in candidate_plans(p100, wgrad, "fp16")} <= set(HALF2_WGRAD_TILES)
    assert {(t.m // 2, t.n, t.fragment) for t in HALF2_WGRAD_TILES} == \
        {(t.m, t.n, t.fragment) for t in SIMT_WGRAD_TILES}
    assert all(t.packed == 2 for t in HALF2_WGRAD_TILES)
    assert {p.tile for p in candidate_plans(p100, wgrad, "fp16_pseudo")} <= set(SIMT_WGRAD_TILES)  # fp32 math: unpacked


def test_a_narrow_true_half_wgrad_pays_its_packed_tile_and_a_wide_one_does_not() -> None:
    # DeepBench's P100 half sheet: the K = 32 DeepSpeech 5×10 stride-2 wgrad (C = 32, N = 16) takes 2.87 ms, 1.6× its
    # fp32 row; packed tiles waste half2 lanes below their height, a wide K fills them
    p100 = load_gpu("p100")
    narrow = Layer("ds", N=16, C=32, K=32, H=79, W=341, R=5, S=10, stride=2, pad=0)
    wide = Layer("w", N=16, C=512, K=512, H=28, W=28, R=1, S=1, stride=1, pad=0)

    def unpacked_s(layer: Layer) -> float:
        g = next(g for g in formulations(p100, layer, "wgrad", "fp16", "cudnn7") if g.algorithm == "implicit")
        plans = (plan_gemm(p100, g, "fp16", t, split, CALIBRATION) for t in SIMT_WGRAD_TILES
                 for split in split_candidates(g, t, p100.sms, CALIBRATION, 2))
        return min(p.time_s for p in plans if p is not None)

    def packed_s(layer: Layer) -> float:
        return estimate_layer(p100, layer, "wgrad", "fp16", library="cudnn7", selection="heuristic").time_s

    assert packed_s(narrow) > 1.3 * unpacked_s(narrow)
    assert 0.6 < packed_s(narrow) / 2.868e-3 < 1.0
    assert packed_s(wide) < 1.05 * unpacked_s(wide)


def test_a_true_half_implicit_wgrad_launches_one_kernel_per_output_row() -> None:
    p100, t4 = load_gpu("p100"), load_gpu("t4")
    half = {g.algorithm: g for g in formulations(p100, BIG, "wgrad", "fp16", "cudnn7")}
    assert half["implicit"].passes == BIG.P and half["winograd_nonfused"].passes == 1
    for gpu, precision in ((p100, "fp32"), (p100, "fp16_pseudo"), (t4, "fp16")):  # one kernel elsewhere
        assert {g.passes for g in formulations(gpu, BIG, "wgrad", precision, "cudnn7")} == {1}, precision
    for phase in ("fprop", "dgrad"):
        assert {g.passes for g in formulations(p100, BIG, phase, "fp16", "cudnn7")} == {1}, phase
    assert {g.passes for g in formulations(p100, BIG, "wgrad", "fp16", "cudnn8")} == {1}  # measured on cuDNN 7 only
    # closed form: the P kernels cost P − 1 launches more than one kernel of the same GEMM; work and bytes are equal
    g = half["implicit"]
    rows, one = plan_gemm(p100, g, "fp16", SIMT_TILES[0], 1), plan_gemm(p100, replace(g, passes=1), "fp16",
                                                                        SIMT_TILES[0], 1)
    assert rows is not None and one is not None
    assert rows.time_s - one.time_s == pytest.approx((BIG.P - 1) * CALIBRATION.launch_overhead_s)
    assert (rows.launches - one.launches, rows.dram_bytes, rows.executed_macs) == (BIG.P - 1, one.dram_bytes,
                                                                                  one.executed_macs)


def test_a_true_half_dgrad_of_a_filter_smaller_than_its_stride_launches_one_kernel_per_dx_pixel() -> None:
    p100 = load_gpu("p100")
    down = Layer("down", N=8, C=128, K=512, H=28, W=28, R=1, S=1, stride=2, pad=0)
    half = formulations(p100, down, "dgrad", "fp16", "cudnn7")
    assert [(g.algorithm, g.passes) for g in half] == [("implicit", 28 * 28)]
    assert {g.passes for g in formulations(p100, down, "dgrad", "fp16_pseudo", "cudnn7")} == {1}
    assert {g.passes for g in formulations(p100, down, "dgrad", "fp16", "cudnn8")} == {1}  # measured on cuDNN 7 only
    five = Layer("s5", N=16, C=64, K=128, H=80, W=350, R=5, S=5, stride=2, pad=1)  # reaches every phase
    assert {g.passes for g in formulations(p100, five, "dgrad", "fp16", "cudnn7")} == {1}
    # session 12: the pad-3 1×1 stride-2 layer, whose only GEMM is col2im (negative window), does the same
    pad3 = Layer("pad3", N=8, C=2048, K=512, H=7, W=7, R=1, S=1, stride=2, pad=3)
    assert [(g.algorithm, g.passes) for g in formulations(p100, pad3, "dgrad", "fp16", "cudnn7")] == [("col2im", 49)]
    assert [g.passes for g in formulations(p100, pad3, "dgrad", "fp16_pseudo", "cudnn7")] == [1]
    g = half[0]
    pixels, one = plan_gemm(p100, g, "fp16", HALF2_TILES[0], 1), plan_gemm(p100, replace(g, passes=1), "fp16",
                                                                          HALF2_TILES[0], 1)
    assert pixels is not None and one is not None
    assert pixels.time_s - one.time_s == pytest.approx((28 * 28 - 1) * CALIBRATION.launch_overhead_s)


def test_the_half_1x1_stride_2_dgrad_cost_per_dx_pixel_matches_deepbench() -> None:
    # DeepBench's P100 half sheet: every 1×1 stride-2 pad-0 dgrad takes 2.7–13.6 µs per dX pixel whatever C, K and
    # N (3.6–79× the fp32 rows); the model's kernel per pixel plus the half2 work lands within 0.7–1.9× of each
    p100 = load_gpu("p100")
    data = Path(__file__).resolve().parents[1] / "data" / "deepbench" / "deepbench_conv_P100.csv"
    rows = [r for r in csv.DictReader(data.open()) if r["precision"] == "fp16_pseudo"
            and (r["R"], r["stride_h"], r["pad_h"]) == ("1", "2", "0")]
    assert len(rows) == 16
    for r in rows:
        n, c, k, h = (int(r[x]) for x in ("N", "C", "K", "H"))
        measured = float(r["dgrad_ms"]) * 1e-3
        assert 2.6e-6 <= measured / (h * h) <= 13.7e-6, (c, k, h, n)
        model = estimate_layer(p100, Layer("x", N=n, C=c, K=k, H=h, W=h, R=1, S=1, stride=2), "dgrad", "fp16",
                               selection="heuristic", library="cudnn7").time_s
        assert 0.7 <= model / measured <= 1.9, (c, k, h, n)


def test_the_half_1x1_wgrad_cost_per_output_row_matches_deepbench() -> None:
    # DeepBench's P100 half sheet (cuDNN 7) times each 1×1 stride-1 layer at N = 8 and 16: t = a + b·N, and the
    # intercept a = 2·t(8) − t(16) is 5.4–9.4 µs per output row whatever C and K (64–2048); the model's is the
    # row launches plus its own N-independent terms
    p100 = load_gpu("p100")
    data = Path(__file__).resolve().parents[1] / "data" / "deepbench" / "deepbench_conv_P100.csv"
    times: dict[tuple[int, int, int], dict[int, float]] = {}
    for r in csv.DictReader(data.open()):
        if r["precision"] == "fp16_pseudo" and (r["R"], r["stride_h"]) == ("1", "1"):
            times.setdefault((int(r["C"]), int(r["K"]), int(r["H"])), {})[int(r["N"])] = float(r["wgrad_ms"]) * 1e-3
    pairs = {key: t for key, t in times.items() if {8, 16} <= set(t)}
    assert len(pairs) == 11
    for (c, k, h), t in pairs.items():
        measured = (2 * t[8] - t[16]) / h
        assert 5.4e-6 <= measured <= 9.5e-6, (c, k, h)
        model = [estimate_layer(p100, Layer("x", N=n, C=c, K=k, H=h, W=h, R=1, S=1), "wgrad", "fp16",
                                selection="heuristic", library="cudnn7").time_s for n in (8, 16)]
        assert 0.6 <= (2 * model[0] - model[1]) / h / measured <= 1.5, (c, k, h)


def test_a_compute_bound_true_half_gemm_takes_half_the_fp32_time() -> None:
    # HFMA2: two MACs per lane per clock (the spec's fp16 peak is twice its fp32 peak); the 256×128 half2 tile
    # does the 128×128 fp32 tile's work twice over with the same threads, so per CTA the time is the same and
    # there are half as many CTAs. Many waves: the quantisation of the last one is negligible.
    p100 = load_gpu("p100")
    assert p100.peak("fp16") == pytest.approx(2 * p100.peak("fp32"))
    g = implicit_gemm(BIG, "fprop")
    half = plan_gemm(p100, g, "fp16", HALF2_TILES[0], 1)
    single = plan_gemm(p100, g, "fp32", SIMT_TILES[0], 1)
    assert half is not None and single is not None and half.bound == single.bound == "compute"
    assert half.compute_s / single.compute_s == pytest.approx(0.5, rel=0.02)


def test_the_heuristic_tile_is_the_narrowest_covering_the_output_channels() -> None:
    g = implicit_gemm(FAT, "fprop")  # N = K = 512: wider than every tile
    assert [t.n for t in SIMT_TILES if heuristic_tile(g, t)] == [128]
    assert [t.n for t in HALF2_TILES if heuristic_tile(g, t)] == [128]
    for k, fp32_width, half_width in ((48, 64, 64), (32, 32, 64), (16, 32, 64), (100, 128, 128)):
        narrow = implicit_gemm(Layer("n", N=16, C=64, K=k, H=14, W=14, R=1, S=1, stride=1, pad=0), "fprop")
        assert [t.n for t in SIMT_TILES if heuristic_tile(narrow, t)] == [fp32_width], k
        assert [t.n for t in HALF2_TILES if heuristic_tile(narrow, t)] == [half_width], k
        narrow_dgrad = implicit_gemm(Layer("n", N=16, C=k, K=64, H=14, W=14, R=1, S=1, stride=1, pad=0), "dgrad")
        assert [t.n for t in SIMT_TILES if heuristic_tile(narrow_dgrad, t)] == [fp32_width], k  # dgrad's N is C
    assert [t.n for t in SIMT_TILES if heuristic_tile(implicit_gemm(FAT, "dgrad"), t)] == [128]  # C = 2048
    assert all(heuristic_tile(implicit_gemm(FAT, "wgrad"), t) for t in SIMT_TILES)  # wgrad keeps the fastest tile


def test_timed_is_never_slower_than_the_heuristic_tile() -> None:
    p100 = load_gpu("p100")
    for precision in ("fp32", "fp16"):
        for phase in ("fprop", "dgrad"):
            heuristic = estimate_layer(p100, FAT, phase, precision, library="cudnn7", selection="heuristic")
            timed = estimate_layer(p100, FAT, phase, precision, library="cudnn7", selection="timed")
            assert timed.time_s <= heuristic.time_s, (precision, phase)
    # under one wave of 128-wide tiles the heuristic keeps them (half the SMs idle) where timed fills the SMs
    heuristic = estimate_layer(p100, FAT, "fprop", "fp32", library="cudnn7", selection="heuristic")
    assert heuristic.details["tile"].startswith("128x128")
    timed = estimate_layer(p100, FAT, "fprop", "fp32", library="cudnn7", selection="timed")
    assert timed.time_s < 0.75 * heuristic.time_s


def test_a_narrow_strided_true_half_dgrad_sweeps_one_plane_per_cta() -> None:
    # session 12 (docs/gpu_precision.md §7): cuDNN 7's true-half strided dgrads of C < 64 that reach every stride
    # phase run one CTA per (image, channel) plane; DeepBench's P100 half DeepSpeech 5×20 stride-2 C = 1 dgrad takes
    # 16.73–16.90 ms at N = 4–32
    p100 = load_gpu("p100")
    ds = {n: Layer("ds", N=n, C=1, K=32, H=161, W=700, R=5, S=20, stride=2, pad=0) for n in (4, 8, 16, 32)}
    plans = {n: formulations(p100, layer, "dgrad", "fp16", "cudnn7") for n, layer in ds.items()}
    assert all([(g.algorithm, g.M, g.N) for g in gs] == [("plane", n, 161 * 700)] for n, gs in plans.items())
    assert plans[4][0].M * plans[4][0].N * plans[4][0].K == pytest.approx(ds[4].macs, rel=0.1)  # no inserted zero
    times = {n: estimate_layer(p100, layer, "dgrad", "fp16", library="cudnn7", selection="heuristic").time_s
             for n, layer in ds.items()}
    assert times[32] == pytest.approx(times[4])  # 32 planes fit on the 56 SMs: the batch is free
    assert 0.8 < times[16] / 16.87e-3 < 1.25
    assert estimate_layer(p100, ds[16], "dgrad", "fp16", library="cudnn7").details["algorithm"] == "plane"
    # an sm_61 GPU's fp16 FMAs run at 1/64 of its fp32 rate: a CTA's share of them bounds the chain rate
    slow = estimate_layer(load_gpu("gtx1080ti"), ds[16], "dgrad", "fp16", library="cudnn7").time_s
    assert slow > 2 * times[16]
    # the C = 32 layer's 1024 planes at N = 32 run in waves of two CTAs per SM (112 planes per wave on 56 SMs)
    wide = Layer("ds2", N=32, C=32, K=32, H=79, W=341, R=5, S=10, stride=2, pad=0)
    g = formulations(p100, wide, "dgrad", "fp16", "cudnn7")[0]
    assert g.algorithm == "plane" and candidate_plans(p100, g, "fp16")[0].waves == pytest.approx(1024 / 112)
    # not on: C ≥ 64 (the stride-phase regime), a filter missing phases (1×1 stride 2), stride 1, pseudo half, cuDNN 8
    for layer in (Layer("s5", N=16, C=64, K=128, H=80, W=350, R=5, S=5, stride=2, pad=1),
                  Layer("d1", N=8, C=16, K=64, H=56, W=56, R=1, S=1, stride=2, pad=0),
                  Layer("s1", N=8, C=3, K=64, H=56, W=56, R=3, S=3, stride=1, pad=1)):
        assert "plane" not in {g.algorithm for g in formulations(p100, layer, "dgrad", "fp16", "cudnn7")}, layer.name
    assert "plane" not in {g.algorithm for g in formulations(p100, ds[8], "dgrad", "fp16_pseudo", "cudnn7")}
    assert "plane" not in {g.algorithm for g in formulations(p100, ds[8], "dgrad", "fp16", "cudnn8")}
    assert "plane" not in {g.algorithm for g in formulations(p100, ds[8], "fprop", "fp16", "cudnn7")}


def test_true_half_nonfused_winograd_products_run_the_batch_in_blocks_of_16_images() -> None:
    # session 12 (docs/gpu_precision.md §7): DeepBench's P100 half 3×3 Winograd fprops and dgrads of C ≥ 128 take the
    # same time at N = 8 and 16 (C = K = 128, 28×28: 0.202 / 0.209 ms fprop)
    p100 = load_gpu("p100")
    eight, sixteen = (Layer("w", N=n, C=128, K=128, H=28, W=28, R=3, S=3, stride=1, pad=1) for n in (8, 16))
    for phase in ("fprop", "dgrad"):
        half = {g.algorithm: g for g in formulations(p100, eight, phase, "fp16", "cudnn7")}
        pseudo = {g.algorithm: g for g in formulations(p100, eight, phase, "fp16_pseudo", "cudnn7")}
        assert half["winograd_nonfused"].M == 2 * half["implicit"].M // (28 * 28) * 7 * 7, phase  # 8 images pad to 16
        # session 13: the blocks hold at every precision and generation (menus.nonfused_winograd_blocks)
        assert half["winograd_nonfused"].M == pseudo["winograd_nonfused"].M, phase
        assert half["implicit"].M == pseudo["implicit"].M, phase  # the other GEMMs keep their batch
        same = {g.algorithm: g for g in formulations(p100, sixteen, phase, "fp16", "cudnn7")}
        assert same["winograd_nonfused"].M == half["winograd_nonfused"].M, phase
        # the data and output transforms run the real images: twice the elements at 16 images (the filter's: once)
        for eight_k, sixteen_k in zip(half["winograd_nonfused"].side, same["winograd_nonfused"].side, strict=True):
            assert sixteen_k.elements == (eight_k.elements if "filter" in eight_k.name else 2 * eight_k.elements)
    wgrad = {g.algorithm: g for g in formulations(p100, eight, "wgrad", "fp16", "cudnn7")}
    assert wgrad["winograd_nonfused"] == {g.algorithm: g for g in formulations(
        p100, eight, "wgrad", "fp16_pseudo", "cudnn7")}["winograd_nonfused"]  # wgrad's reduction: unchanged
    t8, t16 = (estimate_layer(p100, layer, "fprop", "fp16", library="cudnn7", selection="heuristic",
                              forward_algo="WINOGRAD").time_s for layer in (eight, sixteen))
    assert t16 / t8 < 1.35


def test_true_half_batched_products_run_cublas_hgemm_tiles() -> None:
    # session 12: Pascal's HGEMM kernels are maxwell_hgemm_256x128 / 128x64 / 128x32 (public P100 nvprof profiles),
    # the half2 forms of the 128×128, 64×64 and 64×32 SGEMMs; the fp32 products keep Pascal's 64×64 and 32×128
    p100 = load_gpu("p100")
    assert {(t.m, t.n, t.packed) for t in hgemm_tiles(p100)} == {(256, 128, 2), (128, 64, 2), (128, 32, 2)}
    g = {g.algorithm: g for g in formulations(p100, WINO, "fprop", "fp16", "cudnn7")}["winograd_nonfused"]
    assert {p.tile for p in candidate_plans(p100, g, "fp16")} <= set(hgemm_tiles(p100))
    assert {p.tile for p in candidate_plans(p100, g, "fp16_pseudo")} <= set(sgemm_tiles(p100))
    assert {(t.m, t.n) for t in sgemm_tiles(p100)} == {(64, 64), (32, 128)}
    t4 = load_gpu("t4")  # no HGEMM record for other generations: their SGEMM tiles packed
    assert hgemm_tiles(t4) == tuple(half2(t) for t in sgemm_tiles(t4))
