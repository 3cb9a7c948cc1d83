"""Sanity of the GPU time/energy model: scaling, dominance between GPUs, roofline bounds, quantization."""

from __future__ import annotations

import dataclasses

import pytest

from antsim.errors import AntsimError
from antsim.gpu import Gemm, best_plan, estimate_gpu, estimate_layer, load_gpu
from antsim.gpu.menus import heuristic_tile
from antsim.gpu.model import CALIBRATION, plan_gemm
from antsim.gpu.tiles import SIMT_TILES
from antsim.workloads.layers import PHASES, Layer
from antsim.workloads.zoo import network, networks


def _zoo_shapes() -> list[Layer]:
    shapes: dict[tuple, Layer] = {}
    for name in networks():
        for layer in (item for item in network(name) if isinstance(item, Layer)):  # convolutions only
            shapes.setdefault((layer.C, layer.K, layer.H, layer.W, layer.R, layer.S, layer.stride, layer.pad), layer)
    return list(shapes.values())


ZOO = _zoo_shapes()
SMALL = [
    Layer("c3_32", N=1, C=3, K=64, H=32, W=32, R=3, S=3, stride=1, pad=1),
    Layer("c512_4", N=1, C=512, K=512, H=4, W=4, R=3, S=3, stride=1, pad=1),
    Layer("c256_8_s2", N=1, C=256, K=512, H=8, W=8, R=1, S=1, stride=2, pad=0),
    Layer("c64_56", N=1, C=64, K=64, H=56, W=56, R=3, S=3, stride=1, pad=1),
]


@pytest.mark.parametrize("gpu", ["p100", "titanxp", "a100", "h100"])
def test_time_grows_with_batch(gpu: str) -> None:
    spec = load_gpu(gpu)
    for layer in SMALL:
        for phase in PHASES:
            times = [estimate_layer(spec, layer.with_batch(b), phase).time_s for b in (1, 2, 4, 8, 16, 32, 64, 128)]
            assert all(b >= a for a, b in zip(times, times[1:], strict=False)), (layer.name, phase, times)
            assert times[-1] > times[0], (layer.name, phase, times)


def test_time_scales_linearly_once_the_gpu_is_full() -> None:
    gpu = load_gpu("p100")
    layer = SMALL[3]  # 64→64 channels at 56×56: thousands of CTAs at batch 32
    for phase in PHASES:
        # heuristic: the GEMM / fused-Winograd kernels; a non-fused Winograd or FFT plan's filter transform
        # does not grow with the batch, so timed selection may scale sublinearly
        t32, t128 = (estimate_layer(gpu, layer.with_batch(b), phase, selection="heuristic").time_s
                     for b in (32, 128))
        assert t128 / t32 == pytest.approx(4.0, rel=0.1), phase


@pytest.mark.slow  # ~20 s each: every zoo layer at batch 1 and 32, every phase and precision, on two GPUs
@pytest.mark.parametrize(("slow", "fast", "precisions"), [
    ("p100", "v100", ("fp32", "fp16")),
    ("a100", "h100", ("fp32", "tf32", "bf16")),
    ("h100", "h200", ("fp32", "bf16")),
])
def test_a_gpu_with_more_of_every_resource_is_never_slower(slow: str, fast: str, precisions: tuple) -> None:
    gs, gf = load_gpu(slow), load_gpu(fast)
    # The faster GPU has at least as many SMs, lanes/SM, clock, L2, DRAM and shared memory ...
    assert gf.sms >= gs.sms and gf.fp32_lanes_per_sm >= gs.fp32_lanes_per_sm * 0.99
    assert gf.dram_bytes_per_s >= gs.dram_bytes_per_s and gf.l2.bandwidth_gbs >= gs.l2.bandwidth_gbs
    for layer in ZOO:
        for batch in (1, 32):
            for phase in PHASES:
                for precision in precisions:
                    if precision == "fp16" and not gf.tensor_cores >= gs.tensor_cores:  # pragma: no cover
                        continue
                    if precision == "fp16" and gf.tensor_cores and not gs.tensor_cores and (
                            layer.C % 8 or layer.K % 8):
                        # a tensor-core GPU's fp16 is FP32-accumulate: off tensor cores (C, K not multiples of
                        # 8) it runs FP32 math, while a GPU without tensor cores runs fp16 as half2 arithmetic
                        continue
                    slow_run = estimate_layer(gs, layer.with_batch(batch), phase, precision)
                    if precision == "fp16" and gf.tensor_cores and not gs.tensor_cores and \
                            slow_run.details["family"] != "gemm":
                        continue  # likewise a half2 Winograd/FFT kernel: on the tensor-core GPU it runs FP32 math
                    t_slow = slow_run.time_s
                    t_fast = estimate_layer(gf, layer.with_batch(batch), phase, precision).time_s
                    assert t_fast <= t_slow * (1 + 1e-12), (layer.name, batch, phase, precision)


@pytest.mark.parametrize("gpu", ["p100", "titanxp", "v100", "h100"])
def test_no_phase_beats_the_roofline(gpu: str) -> None:
    """time ≥ max(executed FLOPs / peak, compulsory bytes / DRAM bandwidth) — wgrad of small outputs included.

    The FLOPs are those of the algorithm that ran: Winograd and FFT execute fewer multiplies than the
    direct convolution (that is their point), so they are bounded by their own arithmetic; the GEMM
    algorithms execute at least the useful MACs.
    """
    spec = load_gpu(gpu)
    layers = [l.with_batch(b) for l in ZOO[::3] for b in (1, 64)] + [
        Layer("tiny_out", N=64, C=3, K=16, H=224, W=224, R=3, S=3, stride=1, pad=1)]
    for layer in layers:
        x = layer.N * layer.C * layer.H * layer.W
        w = layer.K * layer.C * layer.R * layer.S
        y = layer.N * layer.K * layer.P * layer.Q
        compulsory = {"fprop": x + w + y, "dgrad": y + w + x, "wgrad": y + x + w}
        for phase in PHASES:
            r = estimate_layer(spec, layer, phase)
            flops = r.details["executed_flops"]
            if r.details["family"] == "gemm":
                assert flops >= 2 * layer.macs, (layer.name, phase)
            bound = max(flops / spec.peak("fp32"), 4 * compulsory[phase] / (spec.dram.bandwidth_gbs * 1e9))
            assert r.time_s >= bound, (layer.name, phase)


def test_wave_quantization_one_more_cta_costs_a_whole_tile() -> None:
    gpu = load_gpu("p100")
    tile = SIMT_TILES[0]  # 128×128
    full = Gemm(M=128 * gpu.sms, N=128, K=4096, a_unique=1, b_unique=1, c_unique=1, useful_macs=0)
    more = Gemm(M=128 * gpu.sms + 1, N=128, K=4096, a_unique=1, b_unique=1, c_unique=1, useful_macs=0)
    p_full, p_more = plan_gemm(gpu, full, "fp32", tile, 1), plan_gemm(gpu, more, "fp32", tile, 1)
    assert p_full.ctas == gpu.sms and p_more.ctas == gpu.sms + 1
    assert p_more.compute_s == pytest.approx(2 * p_full.compute_s)  # the extra CTA runs alone: a second tile time


def test_tile_quantization_pads_m_to_the_tile() -> None:
    gpu = load_gpu("p100")
    tile = SIMT_TILES[0]
    a = plan_gemm(gpu, Gemm(M=100, N=128, K=1024, a_unique=1, b_unique=1, c_unique=1, useful_macs=0), "fp32", tile, 1)
    b = plan_gemm(gpu, Gemm(M=128, N=128, K=1024, a_unique=1, b_unique=1, c_unique=1, useful_macs=0), "fp32", tile, 1)
    assert a.compute_s == b.compute_s and a.executed_macs == 128 * 128 * 1024


def test_wgrad_with_a_tiny_output_uses_split_k_and_it_pays() -> None:
    gpu = load_gpu("p100")
    layer = Layer("w", N=32, C=16, K=16, H=112, W=112, R=3, S=3, stride=1, pad=1)
    r = estimate_layer(gpu, layer, "wgrad", selection="heuristic")  # the GEMM algorithm (timed may run FFT)
    assert r.details["split_k"] > 1
    from antsim.gpu import implicit_gemm

    no_split = min(plan_gemm(gpu, implicit_gemm(layer, "wgrad"), "fp32", t, 1).time_s
                   for t in SIMT_TILES)
    assert r.time_s < no_split / 4


def test_convolution_dgrad_never_splits_k_where_wgrad_and_a_gemm_layer_would() -> None:
    # antsim.gpu.model.split_candidates: cuDNN's backward-data kernels run one CTA per output tile.
    from antsim.gpu import implicit_gemm
    from antsim.gpu.gemm import dgrad_col2im
    from antsim.gpu.model import split_candidates

    gpu = load_gpu("p100")
    layer = Layer("tiny", N=1, C=512, K=2048, H=7, W=7, R=1, S=1, stride=1, pad=0)  # 1 × 4 tiles of 128 on 56 SMs
    tile = SIMT_TILES[0]
    dgrad = implicit_gemm(layer, "dgrad")
    assert split_candidates(dgrad, tile, gpu.sms) == [1]
    assert len(split_candidates(dataclasses.replace(dgrad, algorithm="gemm"), tile, gpu.sms)) > 1  # cuBLAS may
    assert len(split_candidates(dataclasses.replace(dgrad, phase="wgrad"), tile, gpu.sms)) > 1
    assert len(split_candidates(dgrad_col2im(layer), tile, gpu.sms)) > 1  # ALGO_0 adds its partial sums by atomics
    r = estimate_layer(gpu, layer, "dgrad", selection="heuristic")
    assert r.details["split_k"] == 1
    unsplit = min(plan_gemm(gpu, dgrad, "fp32", t, 1).time_s for t in SIMT_TILES if heuristic_tile(dgrad, t))
    assert r.time_s == pytest.approx(unsplit)


def test_tensor_cores_are_faster_than_fp32_on_a_large_gemm() -> None:
    gpu = load_gpu("a100")
    layer = Layer("big", N=64, C=256, K=256, H=28, W=28, R=3, S=3, stride=1, pad=1)
    fp32, bf16 = (estimate_layer(gpu, layer, "fprop", p).time_s for p in ("fp32", "bf16"))
    assert fp32 / bf16 > 4  # 312 vs 19.5 TFLOP/s, memory-limited well below 16×


def test_wgrad_gather_cost_per_mac_falls_with_the_taps_sharing_an_input_pixel() -> None:
    gpu = load_gpu("p100")
    tile = SIMT_TILES[0]
    plain = Gemm(M=512, N=4608, K=784, a_unique=1, b_unique=1, c_unique=1, useful_macs=0, phase="wgrad")
    shared = Gemm(M=512, N=4608, K=784, a_unique=1, b_unique=1, c_unique=1, useful_macs=0, phase="wgrad",
                  gather_reuse=9)
    t_plain, t_shared = (plan_gemm(gpu, g, "fp32", tile, 1).compute_s for g in (plain, shared))
    # Same MACs; the 1/n (A = dY) decode term drops 9× (model._gather_ops_per_mac's fitted placement):
    # rate ∝ 1 / (1 + ops·(1/m + 1/(n·reuse))).
    ops = CALIBRATION.wgrad_index_ops
    assert t_plain / t_shared == pytest.approx((1 + ops * (2 / 128)) / (1 + ops * (1 / 128 + 1 / (128 * 9))))


STRUCTURED_GPUS = ("a100", "h100", "h200")


@pytest.mark.parametrize("gpu", STRUCTURED_GPUS)
def test_two_four_sparsity_speeds_fprop_and_dgrad_at_most_twofold_and_leaves_wgrad(gpu: str) -> None:
    spec = load_gpu(gpu)
    faster = 0
    for layer in ZOO:
        layer = layer.with_batch(32)
        for phase in PHASES:
            dense = estimate_layer(spec, layer, phase, "fp16")
            sparse = estimate_layer(spec, layer, phase, "fp16", structured="2:4")
            speedup = dense.time_s / sparse.time_s
            if phase == "wgrad":  # neither dY nor X is structured: the same dense kernel
                assert sparse.time_s == dense.time_s and sparse.details["structured"] is None
                continue
            # Twice the math on half the weight bytes (plus indices): never slower, never more than 2x.
            assert 1 - 1e-12 <= speedup <= 2 + 1e-12, (layer.name, phase, speedup)
            # a GEMM on tensor cores runs 2:4; a dense Winograd/FFT kernel may still win (never slower)
            assert (sparse.details["structured"] == "2:4") == (sparse.details["family"] == "gemm" and
                                                               sparse.details["tensor_cores"]), (layer.name, phase)
            faster += speedup > 1.3
    assert faster >= 10  # compute-bound layers gain most of the 2x


def test_two_four_plan_halves_compute_and_compresses_the_weights() -> None:
    spec = load_gpu("a100")
    big = Gemm(M=32768, N=2048, K=2048, a_unique=32768 * 2048, b_unique=2048 * 2048, c_unique=32768 * 2048,
               useful_macs=32768 * 2048 * 2048, gather_width=8)  # NHWC: 8 fp16 channels per address
    tile = best_plan(spec, big, "fp16").tile
    dense = plan_gemm(spec, big, "fp16", tile, 1)
    sparse = plan_gemm(spec, dataclasses.replace(big, structured=True), "fp16", tile, 1)
    assert sparse.compute_s == pytest.approx(dense.compute_s / 2)
    assert sparse.executed_macs * 2 == dense.executed_macs
    # B (2048 x 2048 fp16 weights, L2-resident) read once from DRAM: 2 bytes each dense, 0.5 x (2 B + a 2-bit
    # index) sparse.
    assert dense.dram_bytes - sparse.dram_bytes == pytest.approx(2048 * 2048 * (2 - 0.5 * (2 + 0.25)))
    # On a GPU without sparse tensor cores the flag changes nothing (its zeros are multiplied).
    v100 = load_gpu("v100")
    assert plan_gemm(v100, dataclasses.replace(big, structured=True), "fp16", tile, 1) == plan_gemm(
        v100, big, "fp16", tile, 1)


@pytest.mark.parametrize(("gpu", "precision", "pattern", "message"), [
    ("v100", "fp16", "2:4", "gpu v100: 2:4 structured sparsity needs sparse tensor cores"),
    ("a100", "fp32", "2:4", "precision 'fp32' runs on the SIMT lanes"),
    ("a100", "bf16", "1:4", "structured sparsity: unknown '1:4'; known: 2:4"),
])
def test_two_four_needs_sparse_tensor_cores_and_a_tensor_precision(gpu: str, precision: str, pattern: str,
                                                                   message: str) -> None:
    with pytest.raises(AntsimError, match=message):
        estimate_gpu(gpu, SMALL, precision=precision, structured=pattern)


def test_wgrad_nchw_reads_pay_the_run_overhead_and_nothing_else_does() -> None:
    # Calibration.wgrad_run_overhead_bytes: an NCHW implicit-GEMM wgrad reads tile.k elements per row and step,
    # served at run / (run + overhead) of DRAM bandwidth; fprop, dgrad, explicit GEMMs and NHWC kernels keep it all.
    from antsim.gpu.model import wgrad_stream_efficiency
    from antsim.gpu.tiles import SIMT_WGRAD_TILES, TENSOR_TILES

    simt, mma = SIMT_WGRAD_TILES[0], TENSOR_TILES[0]
    wgrad = Gemm(M=64, N=256, K=25088, a_unique=1, b_unique=1, c_unique=1, useful_macs=0, phase="wgrad", k_slabs=8)
    cal = dataclasses.replace(CALIBRATION, wgrad_run_overhead_bytes=96.0)
    assert wgrad_stream_efficiency(wgrad, simt, 4, cal) == pytest.approx(32 / (32 + 96))  # 8 fp32 = 32 B runs
    assert wgrad_stream_efficiency(wgrad, mma, 2, cal) == pytest.approx(64 / (64 + 96))  # 32 fp16 = 64 B runs
    assert wgrad_stream_efficiency(wgrad, simt, 4, dataclasses.replace(cal, wgrad_run_overhead_bytes=0.0)) == 1.0
    others = ({"phase": "fprop"}, {"phase": "dgrad"}, {"algorithm": "winograd_nonfused"}, {"gather_width": 8})
    for other in (dataclasses.replace(wgrad, **change) for change in others):
        assert wgrad_stream_efficiency(other, simt, 4, cal) == 1.0


def test_dram_bound_1x1_wgrad_time_follows_the_run_rule_and_fprop_does_not_move() -> None:
    # A 1x1 wgrad on a 112x112 plane with a 64x64 output (DeepBench's N8 C64 K64 layer) is DRAM-bound once its
    # reads run at a quarter of the bandwidth; on a card with 2x the bandwidth it takes about half the time
    # (its compute is unchanged); fprop of the same layer is the same with or without the rule.
    layer = Layer("c64_112", N=8, C=64, K=64, H=112, W=112, R=1, S=1, stride=1, pad=0)
    off = dataclasses.replace(CALIBRATION, wgrad_run_overhead_bytes=0.0)
    on = dataclasses.replace(CALIBRATION, wgrad_run_overhead_bytes=96.0)
    t4 = load_gpu("t4")
    wide = t4.model_copy(update={"dram": t4.dram.model_copy(update={"bandwidth_gbs": 640.0})})
    slow, fast = (estimate_layer(g, layer, "wgrad", "fp32", on, selection="heuristic", library="cudnn7")
                  for g in (t4, wide))
    assert slow.details["bound"] == "dram"
    unit = slow.details["dram_s"] / fast.details["dram_s"]
    assert unit == pytest.approx(2.0, rel=0.01)
    assert slow.time_s > estimate_layer(t4, layer, "wgrad", "fp32", off, selection="heuristic",
                                        library="cudnn7").time_s
    for phase in ("fprop", "dgrad"):
        assert (estimate_layer(t4, layer, phase, "fp32", on).time_s
                == estimate_layer(t4, layer, phase, "fp32", off).time_s)


@pytest.mark.parametrize("gpu", ["t4", "m40", "p100"])
def test_a_larger_wgrad_run_overhead_is_never_faster_and_moves_only_wgrad(gpu: str) -> None:
    spec = load_gpu(gpu)
    layers = [Layer("c64_56", N=8, C=64, K=64, H=56, W=56, R=3, S=3, stride=1, pad=1),
              Layer("c256_14_s2", N=8, C=256, K=512, H=14, W=14, R=1, S=1, stride=2, pad=0),
              Layer("c128_28", N=16, C=128, K=512, H=28, W=28, R=1, S=1, stride=1, pad=0)]
    moved = 0
    for layer in layers:
        for phase in PHASES:
            times = [estimate_layer(spec, layer, phase, "fp32",
                                    dataclasses.replace(CALIBRATION, wgrad_run_overhead_bytes=b),
                                    selection="heuristic", library="cudnn7").time_s for b in (0.0, 64.0, 112.0, 256.0)]
            assert times == sorted(times), (layer.name, phase)
            if phase != "wgrad":
                assert len(set(times)) == 1, (layer.name, phase)
            moved += times[-1] > times[0]
    assert moved >= 1  # the 1x1 wgrads on 14² and 28² planes become DRAM-bound at some overhead


@pytest.mark.parametrize("n, rereads", [(1, False), (64, True)])
def test_col2im_dgrad_zeroes_dx_first_and_rereads_it_when_it_outgrows_l2(n: int, rereads: bool) -> None:
    # ALGO_0's products are atomic adds into dX, so a kernel of its own zeroes dX first (one write of dX at DRAM
    # bandwidth plus a launch), and when dX is larger than the L2 share each line comes back from DRAM before its
    # first add: the atomics' DRAM traffic is then two passes over dX (read, write back) instead of one.
    from antsim.gpu.gemm import dgrad_col2im
    from antsim.gpu.spec import PRECISIONS

    gpu = load_gpu("p100")
    layer = Layer("x", N=n, C=3, K=64, H=56, W=56, R=3, S=3, stride=1, pad=1)
    g = dgrad_col2im(layer)
    dx_bytes = layer.N * layer.C * layer.H * layer.W * PRECISIONS["fp32"][0]
    assert (dx_bytes > CALIBRATION.l2_residency * gpu.l2.size_mb * 2**20) == rereads
    bare = dataclasses.replace(g, side=())
    stored_once = dataclasses.replace(g, algorithm="implicit", side=())  # same operands, one store of dX
    for tile in SIMT_TILES:
        with_fill, without = plan_gemm(gpu, g, "fp32", tile, 1), plan_gemm(gpu, bare, "fp32", tile, 1)
        assert with_fill.side_s == pytest.approx(dx_bytes / gpu.dram_bytes_per_s + CALIBRATION.launch_overhead_s)
        assert with_fill.time_s == pytest.approx(without.time_s + with_fill.side_s)
        reread = without.dram_bytes - plan_gemm(gpu, stored_once, "fp32", tile, 1).dram_bytes
        assert reread == pytest.approx(dx_bytes if rereads else 0.0)
        assert with_fill.dram_bytes - without.dram_bytes == pytest.approx(dx_bytes)  # the zero fill writes dX once


def test_a_single_precision_simt_wgrad_splits_at_least_the_floor_and_pays_for_its_workspace() -> None:
    # Calibration.wgrad_min_split_k: cuDNN's scudnn backward-filter kernels are split-K kernels (their names carry
    # splitK), so even a wgrad whose output tiles fill the SMs writes fp32 slices and reduces them. Layer: 1×1,
    # C = 512, K = 2048 on 7×7 at N = 8 (DeepBench; 64 tiles of 128×128 on 56 P100 SMs).
    from antsim.gpu.menus import formulations
    from antsim.gpu.model import candidate_plans

    gpu = load_gpu("p100")
    layer = Layer("big", N=8, C=512, K=2048, H=7, W=7, R=1, S=1, stride=1, pad=0)
    (wgrad,) = [g for g in formulations(gpu, layer, "wgrad", "fp32", "cudnn7") if g.algorithm == "implicit"]
    assert wgrad.split_kernel
    plans = candidate_plans(gpu, wgrad, "fp32")
    assert min(p.split_k for p in plans) == CALIBRATION.wgrad_min_split_k
    unsplit = candidate_plans(gpu, wgrad, "fp32", dataclasses.replace(CALIBRATION, wgrad_min_split_k=1))
    assert min(p.time_s for p in plans) >= min(p.time_s for p in unsplit)  # a floor on the split never speeds it up
    # the workspace: split slices of the K·C fp32 output written by the GEMM and read by the reduction kernel
    best = min(plans, key=lambda p: p.time_s)
    assert best.l2_bytes >= 2 * best.split_k * layer.K * layer.C * 4
    # the pad ≥ filter window has no implicit GEMM, so no split-K kernel (menus._split_kernel)
    padded = dataclasses.replace(layer, pad=3, stride=2)
    assert not any(g.split_kernel for g in formulations(gpu, padded, "wgrad", "fp32", "cudnn7"))
    # half storage (no scudnn kernel) and tensor cores keep every split
    t4 = load_gpu("t4")
    (half,) = [g for g in formulations(t4, layer, "wgrad", "fp16", "cudnn7") if g.algorithm == "implicit"]
    assert min(p.split_k for p in candidate_plans(t4, half, "fp16")) == 1
    assert min(p.split_k for p in candidate_plans(gpu, wgrad, "fp16_pseudo")) == 1
