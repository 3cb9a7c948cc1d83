"""Kernel menus per library generation, tensor-core eligibility, selection modes and monotonicity."""

from __future__ import annotations

import dataclasses
import math

import pytest

from antsim.errors import AntsimError
from antsim.gpu import estimate_layer, load_gpu
from antsim.gpu.estimate import layer_plans
from antsim.gpu.menus import formulations, heuristic_family, tensor_core_eligible
from antsim.gpu.model import candidate_plans
from antsim.gpu.tiles import CUDNN7_TENSOR_SHAPES, tensor_tiles
from antsim.measure.deepbench import read_deepbench_csv
from antsim.workloads.layers import PHASES, Layer

C3 = Layer("rgb", N=16, C=3, K=64, H=56, W=56, R=3, S=3, stride=1, pad=1)
C64 = Layer("c64", N=16, C=64, K=64, H=56, W=56, R=3, S=3, stride=1, pad=1)
S2 = Layer("s2", N=16, C=64, K=128, H=56, W=56, R=3, S=3, stride=2, pad=1)
BIG5 = Layer("k5", N=8, C=64, K=64, H=28, W=28, R=5, S=5, stride=1, pad=2)
LAYERS = (C3, C64, S2, BIG5, Layer("p1", N=32, C=256, K=512, H=14, W=14, R=1, S=1, stride=1, pad=0))


def test_a_c3_fp16_conv_does_not_run_on_tensor_cores() -> None:
    gpu = load_gpu("v100")
    assert not tensor_core_eligible(gpu, C3, "fp16", "cudnn8")
    assert tensor_core_eligible(gpu, C64, "fp16", "cudnn8")
    for phase in PHASES:
        rgb = estimate_layer(gpu, C3, phase, "fp16")
        assert not rgb.details["tensor_cores"] and rgb.details["run_precision"] == "fp16_pseudo", phase
        assert all(not plan.tensor_cores for plan, _ in layer_plans(gpu, C3, phase, "fp16"))
        assert estimate_layer(gpu, C64, phase, "fp16", selection="heuristic").details["tensor_cores"], phase


def test_tf32_needs_channel_multiples_of_four_and_no_tensor_cores_before_cudnn7() -> None:
    a100, v100 = load_gpu("a100"), load_gpu("v100")
    assert tensor_core_eligible(a100, dataclasses.replace(C64, C=12), "tf32", "cudnn8")
    assert not tensor_core_eligible(a100, dataclasses.replace(C64, C=6), "tf32", "cudnn8")
    assert not tensor_core_eligible(v100, C64, "fp16", "cudnn6")  # cuDNN 6 has no tensor-core kernels
    assert not tensor_core_eligible(a100, C64, "fp32", "cudnn8")  # fp32 (allow_tf32 = False) is SIMT
    with pytest.raises(AntsimError, match="library cudnn7: precision 'tf32' needs cudnn8"):
        estimate_layer(a100, C64, "fprop", "tf32", library="cudnn7")


def test_winograd_never_for_stride_two_and_only_3x3_fused() -> None:
    gpu = load_gpu("p100")
    for phase in PHASES:
        algos = {g.algorithm for g in formulations(gpu, S2, phase, "fp32")}
        assert not algos & {"winograd_fused", "winograd_nonfused", "fft", "fft_tiling"}, phase
        fused_phases = {"winograd_nonfused", "winograd_fused"} if phase != "wgrad" else {"winograd_nonfused"}
        algos = {g.algorithm for g in formulations(gpu, C64, phase, "fp32")}
        assert fused_phases <= algos and (phase != "wgrad" or "winograd_fused" not in algos), phase
        five = {g.algorithm for g in formulations(gpu, BIG5, phase, "fp32", "cudnn7")}
        assert "winograd_nonfused" in five and "winograd_fused" not in five
        assert "winograd_nonfused" not in {g.algorithm for g in formulations(gpu, BIG5, phase, "fp32", "cudnn6")}


WINOGRADS = ("winograd_fused", "winograd_nonfused")


def test_library_menus_grow_with_the_generation() -> None:
    gpu = load_gpu("p100")
    strided = Layer("sd", N=8, C=128, K=128, H=28, W=28, R=3, S=3, stride=2, pad=1)
    # The stride-phase dgrad is on every generation's menu (DeepBench's cuDNN 5 and 6 sheets run the
    # Speaker-ID 5×5 stride-2 dgrads 1.7–3.4× faster than the zero-inserted GEMM allows).
    for library in ("cudnn5", "cudnn6", "cudnn7"):
        assert "phased" in {g.algorithm for g in formulations(gpu, strided, "dgrad", "fp32", library)}, library
    for older, newer in (("cudnn5", "cudnn6"), ("cudnn6", "cudnn7"), ("cudnn7", "cudnn7.6"), ("cudnn7.6", "cudnn8")):
        for layer in LAYERS:
            for phase in PHASES:
                # cuDNN 8 adds the 4-tile-wide fused Winograd blocks and drops the non-fused 16-image blocks: its
                # Winograd GEMMs pad no more rows (M)
                old_gemms = formulations(gpu, layer, phase, "fp32", older)
                new_gemms = formulations(gpu, layer, phase, "fp32", newer)
                old = {(g.algorithm, 0 if g.algorithm in WINOGRADS else g.M, g.N, g.K) for g in old_gemms}
                new = {(g.algorithm, 0 if g.algorithm in WINOGRADS else g.M, g.N, g.K) for g in new_gemms}
                assert old <= new, (older, newer, layer.name, phase)
                for algorithm in WINOGRADS:
                    m = [{g.M for g in gs if g.algorithm == algorithm} for gs in (old_gemms, new_gemms)]
                    assert all(o >= n for o in m[0] for n in m[1])
                # a larger menu is never slower under timed selection
                assert estimate_layer(gpu, layer, phase, library=newer).time_s <= \
                    estimate_layer(gpu, layer, phase, library=older).time_s * (1 + 1e-12)
    with pytest.raises(AntsimError, match="library: unknown 'cudnn9'; known: cudnn5, cudnn6, cudnn7, cudnn7.6, cudnn8"):
        estimate_layer(gpu, C64, "fprop", library="cudnn9")
    with pytest.raises(AntsimError, match="selection: unknown 'fastest'; known: timed, heuristic"):
        estimate_layer(gpu, C64, "fprop", selection="fastest")


@pytest.mark.parametrize(("gpu", "precision"), [("p100", "fp32"), ("v100", "fp16"), ("a100", "tf32"), ("t4", "fp16")])
def test_timed_is_never_slower_than_heuristic_and_is_the_fastest_plan(gpu: str, precision: str) -> None:
    spec = load_gpu(gpu)
    for layer in LAYERS:
        for phase in PHASES:
            timed = estimate_layer(spec, layer, phase, precision)
            for algo in ("", "IMPLICIT_PRECOMP_GEMM", "WINOGRAD", "FFT"):
                heuristic = estimate_layer(spec, layer, phase, precision, selection="heuristic", forward_algo=algo)
                assert timed.time_s <= heuristic.time_s * (1 + 1e-12), (layer.name, phase, algo)
            assert timed.time_s == min(p.time_s for p, _ in layer_plans(spec, layer, phase, precision))
            assert timed.details["selection"] == "timed" and timed.details["library"] == "cudnn8"


def test_heuristic_follows_the_recorded_forward_algorithm() -> None:
    assert heuristic_family(C64, "fprop", "WINOGRAD_NONFUSED") == "winograd"
    assert heuristic_family(C64, "dgrad", "WINOGRAD") == "winograd"  # the flipped stride-1 conv
    c128 = dataclasses.replace(C64, C=128, K=128)
    assert heuristic_family(c128, "wgrad", "WINOGRAD") == "winograd"  # cuDNN >= 6: non-fused backward filter
    assert heuristic_family(c128, "wgrad") == "winograd"
    # menus.WINOGRAD_WGRAD_MIN_CHANNELS: below 128 channels the heuristics keep the GEMM wgrad
    assert heuristic_family(C64, "wgrad", "WINOGRAD") == "gemm" and heuristic_family(C64, "wgrad") == "gemm"
    assert heuristic_family(dataclasses.replace(C64, K=128), "wgrad", "WINOGRAD_NONFUSED") == "gemm"
    assert heuristic_family(C64, "wgrad", "WINOGRAD", "cudnn5") == "gemm"
    assert heuristic_family(C64, "wgrad", library="cudnn5") == "gemm"
    assert heuristic_family(C64, "fprop", "FFT_TILING") == "fft"
    assert heuristic_family(C64, "fprop", "IMPLICIT_PRECOMP_GEMM") == "gemm"
    assert heuristic_family(C64, "fprop") == "winograd" and heuristic_family(C3, "fprop") == "gemm"
    assert heuristic_family(S2, "fprop") == "gemm"
    r = estimate_layer("p100", C64, "fprop", selection="heuristic", forward_algo="FFT")
    assert r.details["family"] == "fft" and r.details["algo"] in ("FFT", "FFT_TILING")


def test_heuristic_runs_the_winograd_variant_the_record_names() -> None:
    from antsim.gpu.menus import heuristic_formulations, winograd_variant

    assert winograd_variant("WINOGRAD") == "winograd_fused" and winograd_variant("winograd_nonfused") == \
        "winograd_nonfused" and winograd_variant("FFT") is None and winograd_variant("") is None
    gpu = load_gpu("p100")
    for phase in ("fprop", "dgrad"):  # dgrad follows the forward record, as it follows its family
        menu = formulations(gpu, C64, phase, "fp32", "cudnn7")
        for algo, kept in (("WINOGRAD", "winograd_fused"), ("WINOGRAD_NONFUSED", "winograd_nonfused")):
            assert [g.algorithm for g in heuristic_formulations(menu, C64, phase, algo, "cudnn7")] == [kept]
            r = estimate_layer(gpu, C64, phase, selection="heuristic", library="cudnn7", forward_algo=algo)
            assert r.details["algo"] == algo, (phase, algo)
        # no record: the faster of both variants
        unrecorded = {g.algorithm for g in heuristic_formulations(menu, C64, phase, "", "cudnn7")}
        assert unrecorded == {"winograd_fused", "winograd_nonfused"}
    # wgrad has no fused kernel: a WINOGRAD record leaves it the non-fused one (C, K >= 128)
    c128 = dataclasses.replace(C64, C=128, K=128)
    wgrad = heuristic_formulations(formulations(gpu, c128, "wgrad", "fp32", "cudnn7"), c128, "wgrad", "WINOGRAD",
                                   "cudnn7")
    assert [g.algorithm for g in wgrad] == ["winograd_nonfused"]


def test_cudnn7_tensor_core_convolutions_run_only_the_two_big_tiles() -> None:
    # cuDNN 7's s884cudnn / s1688cudnn kernel names carry 256x128 or 128x128 only; cuDNN 8 and cuBLAS have more.
    t4 = load_gpu("t4")
    assert {(t.m, t.n) for t in tensor_tiles(t4, CUDNN7_TENSOR_SHAPES)} == {(256, 128), (128, 128)}
    assert len(tensor_tiles(t4)) > len(tensor_tiles(t4, CUDNN7_TENSOR_SHAPES))
    narrow = Layer("k32", N=16, C=64, K=32, H=28, W=28, R=3, S=3, stride=1, pad=1)  # fprop GEMM N = K = 32
    for phase in PHASES:
        old = next(g for g in formulations(t4, narrow, phase, "fp16", "cudnn7") if g.algorithm == "implicit")
        new = next(g for g in formulations(t4, narrow, phase, "fp16", "cudnn8") if g.algorithm == "implicit")
        assert old.tensor_shapes == CUDNN7_TENSOR_SHAPES and new.tensor_shapes == (), phase
        plans = candidate_plans(t4, old, "fp16")
        assert plans and all((p.tile.m, p.tile.n) in CUDNN7_TENSOR_SHAPES for p in plans), phase
        # the subset menu is never faster than the whole menu for the same GEMM
        whole = candidate_plans(t4, dataclasses.replace(old, tensor_shapes=()), "fp16")
        assert min(p.time_s for p in plans) >= min(p.time_s for p in whole), phase
    # fprop of the K = 32 layer pays a 128-wide tile: at least 4x the useful MACs are executed
    fprop = next(g for g in formulations(t4, narrow, "fprop", "fp16", "cudnn7") if g.algorithm == "implicit")
    plan = min(candidate_plans(t4, fprop, "fp16"), key=lambda p: p.time_s)
    assert plan.tensor_cores and plan.executed_macs >= 4 * fprop.useful_macs
    # a SIMT fallback (C = 3) and a Winograd GEMM keep their own menus
    assert all(g.tensor_shapes == () for g in formulations(t4, C3, "fprop", "fp16", "cudnn7"))


def test_cudnn7_tensor_core_wgrad_pads_the_channels_of_each_filter_tap_to_the_tile() -> None:
    t4 = load_gpu("t4")

    def wgrad(c: int, r: int, library: str = "cudnn7"):
        layer = Layer("w", N=16, C=c, K=128, H=28, W=28, R=r, S=r, stride=1, pad=r // 2)
        g = next(g for g in formulations(t4, layer, "wgrad", "fp16", library) if g.algorithm == "implicit")
        return g, min(candidate_plans(t4, g, "fp16"), key=lambda p: p.time_s)

    g64, p64 = wgrad(64, 3)
    g128, p128 = wgrad(128, 3)
    assert g64.n_slabs == 9 and g64.n_tiles(128) == 9 and math.ceil(g64.N / 128) == 5  # 576 columns, 9 taps
    # below C = 128 a tap's slab is padded to the 128-wide tile: C = 64 executes as many MACs as C = 128
    assert p64.tile.n == p128.tile.n == 128 and p64.split_k == p128.split_k
    # (the NHWC reduction is one flat axis of 16 × 28 × 28 = 12 544 pixels, 392 whole 32-deep k steps:
    # menus.nhwc_wgrad_reduction; per-image slabs would pad each image's 784 to 800)
    assert g64.k_padded(32) == 16 * 784
    assert p64.executed_macs == p128.executed_macs == 2 * g64.useful_macs
    assert wgrad(64, 1)[0].n_slabs == 1  # a 1x1 wgrad is one tap
    assert wgrad(64, 3, "cudnn8")[0].n_slabs == 1  # cuDNN 8 keeps one contiguous N
    assert all(g.n_slabs == 1 for phase in ("fprop", "dgrad") for g in formulations(t4, C64, phase, "fp16", "cudnn7"))


def test_cudnn7_tensor_core_fprop_and_dgrad_pad_each_tap_to_the_k_step() -> None:
    t4 = load_gpu("t4")
    first = Layer("rgb8", N=16, C=8, K=64, H=56, W=56, R=3, S=3, stride=1, pad=1)  # an input layer padded to C = 8

    def implicit(layer: Layer, phase: str, library: str = "cudnn7"):
        return next(g for g in formulations(t4, layer, phase, "fp16", library) if g.algorithm == "implicit")

    fprop = implicit(first, "fprop")
    assert fprop.K == 72 and fprop.k_slabs == 9 and fprop.k_padded(32) == 9 * 32  # 8 channels per tap -> 32
    plan = min(candidate_plans(t4, fprop, "fp16"), key=lambda p: p.time_s)
    assert plan.executed_macs % (9 * 32) == 0 and plan.executed_macs >= 4 * fprop.useful_macs
    assert implicit(C64, "fprop").k_padded(32) == implicit(C64, "fprop").K  # 64 channels fill two k steps
    assert implicit(C64, "dgrad").k_slabs == 9 and implicit(first, "fprop", "cudnn8").k_slabs == 1
    speech = Layer("ds2", N=4, C=32, K=48, H=79, W=341, R=5, S=10, stride=2, pad=0)
    phased = next(g for g in formulations(t4, speech, "dgrad", "fp16", "cudnn7") if g.algorithm == "phased")
    assert phased.k_slabs == 15 and phased.k_padded(32) == 15 * 64  # K = 48 pads to 64 per tap of a phase


def test_tensor_core_strided_dgrad_skips_the_inserted_zeros_at_any_channel_count() -> None:
    # cuDNN 7.4.1: faster strided dgrad for NHWC filters, the layout of cuDNN's tensor-core kernels.
    t4 = load_gpu("t4")
    speech = Layer("ds2", N=16, C=32, K=32, H=79, W=341, R=5, S=10, stride=2, pad=0)

    def phased(layer: Layer, precision: str, library: str = "cudnn7") -> list:
        return [g for g in formulations(t4, layer, "dgrad", precision, library) if g.algorithm == "phased"]

    [g] = phased(speech, "fp16")
    assert g.K == 32 * 3 * 5 and g.M == 16 * 79 * 341 and g.N == 32  # taps per phase: ceil(5/2) x ceil(10/2)
    assert g.tensor_shapes and g.algo == "BWD_DATA_ALGO_1"
    assert phased(speech, "fp16", "cudnn8") and not phased(speech, "fp32")  # SIMT NCHW kernels: C >= 64 only
    assert not phased(dataclasses.replace(speech, C=3), "fp16")  # C = 3 runs no tensor-core kernel
    assert len(phased(dataclasses.replace(speech, C=64), "fp16")) == 1 == len(phased(dataclasses.replace(speech, C=64),
                                                                                     "fp32"))
    one_by_one = dataclasses.replace(speech, R=1, S=1)
    assert not phased(one_by_one, "fp16")  # a 1x1 filter at stride 2 reaches one phase in four
    fast = estimate_layer(t4, speech, "dgrad", "fp16", library="cudnn7", selection="heuristic")
    assert fast.details["algorithm"] == "phased"


def test_only_the_implicit_gemm_and_nonfused_winograd_algorithms_have_tensor_core_kernels() -> None:
    # cuDNN Developer Guide, "Tensor Core Operations": IMPLICIT_PRECOMP_GEMM, BWD_*_ALGO_1, *_WINOGRAD_NONFUSED
    v100 = load_gpu("v100")
    narrow = Layer("n16", N=8, C=16, K=64, H=28, W=28, R=5, S=5, stride=1, pad=2)  # col2im (C < 32), FFT (5x5)
    seen = set()
    for layer in (C64, BIG5, narrow):
        for phase in PHASES:
            for library in ("cudnn7", "cudnn8"):
                for g in formulations(v100, layer, phase, "fp16", library):
                    seen.add(g.algorithm)
                    assert g.simt_only == (g.algorithm not in ("implicit", "phased", "winograd_nonfused")), g.algo
                for plan, g in layer_plans(v100, layer, phase, "fp16", library=library):
                    assert plan.tensor_cores == (not g.simt_only), g.algo
    assert {"fft", "fft_tiling", "col2im", "winograd_fused", "implicit", "winograd_nonfused"} <= seen


def _scaled(gpu: str, **factors: float):
    """The GPU with some resources multiplied (peaks by ``compute``, DRAM by ``dram``, L2 by ``l2``)."""
    spec = load_gpu(gpu)
    peaks = spec.peak_tflops.model_copy(update={k: v * factors.get("compute", 1.0)
                                                for k, v in spec.peak_tflops.model_dump().items() if v})
    dram = spec.dram.model_copy(update={"bandwidth_gbs": spec.dram.bandwidth_gbs * factors.get("dram", 1.0),
                                        "achievable_gbs": (spec.dram.achievable_gbs or 0.9 * spec.dram.bandwidth_gbs)
                                        * factors.get("dram", 1.0)})
    l2 = spec.l2.model_copy(update={"bandwidth_gbs": spec.l2.bandwidth_gbs * factors.get("l2", 1.0)})
    return spec.model_copy(update={"peak_tflops": peaks, "dram": dram, "l2": l2})


@pytest.mark.parametrize(("gpu", "precision"), [("p100", "fp32"), ("v100", "fp16"), ("a100", "tf32")])
@pytest.mark.parametrize("resource", ["compute", "dram", "l2"])
def test_more_bandwidth_or_compute_is_never_slower(gpu: str, precision: str, resource: str) -> None:
    base, more = load_gpu(gpu), _scaled(gpu, **{resource: 2.0})
    for layer in LAYERS:
        for batch in (1, 32):
            for phase in PHASES:
                for selection in ("timed", "heuristic"):
                    slow = estimate_layer(base, layer.with_batch(batch), phase, precision, selection=selection)
                    fast = estimate_layer(more, layer.with_batch(batch), phase, precision, selection=selection)
                    assert fast.time_s <= slow.time_s * (1 + 1e-12), (layer.name, batch, phase, selection)


@pytest.mark.parametrize("resource", ["compute", "dram", "l2"])
def test_cudnn7_tensor_core_rules_keep_the_model_monotone(resource: str) -> None:
    # the cuDNN 7 tile menu, the wgrad tap slabs and the any-C strided dgrad, with more of one resource
    base, more = load_gpu("t4"), _scaled("t4", **{resource: 2.0})
    speech = Layer("ds2", N=4, C=32, K=32, H=79, W=341, R=5, S=10, stride=2, pad=0)
    for layer in (*LAYERS, speech):
        for phase in PHASES:
            for selection in ("timed", "heuristic"):
                slow = estimate_layer(base, layer, phase, "fp16", selection=selection, library="cudnn7")
                fast = estimate_layer(more, layer, phase, "fp16", selection=selection, library="cudnn7")
                assert fast.time_s <= slow.time_s * (1 + 1e-12), (layer.name, phase, selection)
                timed = estimate_layer(base, layer, phase, "fp16", selection="timed", library="cudnn7")
                assert timed.time_s <= slow.time_s * (1 + 1e-12), (layer.name, phase)


def test_deepbench_fp16_mixed_rows_are_read_as_fp16_and_the_algo_typo_is_fixed(deepbench) -> None:
    rows = read_deepbench_csv(deepbench / "deepbench_conv_T4.csv", "fp16")
    assert len(rows) == 94 and {m.precision for m in rows} == {"fp16_mixed"}
    fp32 = read_deepbench_csv(deepbench / "deepbench_conv_T4.csv", "fp32")
    assert "LICIT_PRECOMP_GEMM" not in {m.algo for m in fp32}
    assert sum(m.algo == "IMPLICIT_PRECOMP_GEMM" for m in fp32) == 26 and all(m.implicit_gemm for m in fp32
                                                                                if "GEMM" in m.algo)


def test_backward_tensor_core_kernels_need_the_padding_inside_the_filter() -> None:
    # As a forward convolution, dgrad pads by R - 1 - pad: negative for DeepBench's 1x1 pad-3 layer, whose
    # fprop runs on T4's tensor cores while its dgrad and wgrad run at the fp32 kernels' speed.
    t4 = load_gpu("t4")
    odd = Layer("pad3", N=8, C=2048, K=512, H=7, W=7, R=1, S=1, stride=2, pad=3)
    assert tensor_core_eligible(t4, odd, "fp16", "cudnn7", "fprop")
    for phase in ("dgrad", "wgrad"):
        assert not tensor_core_eligible(t4, odd, "fp16", "cudnn7", phase), phase
        assert all(g.simt_only for g in formulations(t4, odd, phase, "fp16", "cudnn7")), phase
        assert tensor_core_eligible(t4, dataclasses.replace(odd, pad=(0, 0)), "fp16", "cudnn7", phase), phase
        assert tensor_core_eligible(t4, C64, "fp16", "cudnn7", phase), phase  # 3x3 pad 1: inside the filter
        fast = estimate_layer(t4, dataclasses.replace(odd, pad=(0, 0)), phase, "fp16", library="cudnn7")
        slow = estimate_layer(t4, odd, phase, "fp16", library="cudnn7")
        assert fast.details.tensor_cores and not slow.details.tensor_cores, phase


def test_heuristic_wgrad_follows_an_fft_forward_from_cudnn7_on() -> None:
    layer = Layer("fft", N=8, C=128, K=256, H=56, W=56, R=3, S=3, stride=1, pad=1)
    assert heuristic_family(layer, "wgrad", "FFT", "cudnn7") == "fft"
    assert heuristic_family(layer, "wgrad", "FFT_TILING", "cudnn8") == "fft"
    for library in ("cudnn5", "cudnn6"):
        assert heuristic_family(layer, "wgrad", "FFT", library) == "gemm", library
    assert heuristic_family(layer, "wgrad", "IMPLICIT_PRECOMP_GEMM", "cudnn7") == "gemm"
    p100 = load_gpu("p100")
    fft = estimate_layer(p100, layer, "wgrad", selection="heuristic", library="cudnn7", forward_algo="FFT")
    timed = estimate_layer(p100, layer, "wgrad", selection="timed", library="cudnn7")
    assert fft.details.family == "fft" and timed.time_s <= fft.time_s  # timed is never slower than heuristic


def test_heuristic_runs_the_row_phased_dgrad_only_for_a_long_reduction() -> None:
    # 1×1 stride-2 dgrad: timed keeps the faster row-phased GEMM always; the heuristics only for K ≥ 512, whatever
    # C is (menus.ROW_PHASED_MIN_K): a K = C/2 layer with K = 512 runs row-phased, a K = 4C layer with K = 256 not.
    from antsim.gpu.menus import ROW_PHASED_MIN_K

    p100 = load_gpu("p100")
    halve = Layer("halve", N=16, C=1024, K=512, H=14, W=14, R=1, S=1, stride=2, pad=0)
    widen = Layer("widen", N=16, C=64, K=256, H=56, W=56, R=1, S=1, stride=2, pad=0)
    assert halve.K >= ROW_PHASED_MIN_K > widen.K
    for layer, heuristic_algorithm in ((halve, "row_phased"), (widen, "implicit")):
        timed = estimate_layer(p100, layer, "dgrad", selection="timed", library="cudnn7")
        heuristic = estimate_layer(p100, layer, "dgrad", selection="heuristic", library="cudnn7")
        assert timed.details["algorithm"] == "row_phased", layer.name
        assert heuristic.details["algorithm"] == heuristic_algorithm, layer.name
        assert timed.time_s <= heuristic.time_s
        assert timed.details["algo"] == heuristic.details["algo"] == "BWD_DATA_ALGO_1"


def test_a_forward_recorded_as_implicit_gemm_keeps_any_tile_and_the_t4_sheet_says_why(deepbench) -> None:
    from antsim.gpu import implicit_gemm
    from antsim.gpu.menus import heuristic_tile
    from antsim.gpu.tiles import SIMT_TILES
    from antsim.measure.deepbench import read_deepbench_csv

    fat = Layer("fat", N=8, C=2048, K=512, H=7, W=7, R=1, S=1, stride=1, pad=0)
    fprop, dgrad = implicit_gemm(fat, "fprop"), implicit_gemm(fat, "dgrad")
    assert [t.n for t in SIMT_TILES if heuristic_tile(fprop, t, "IMPLICIT_PRECOMP_GEMM")] == [128]
    assert all(heuristic_tile(fprop, t, "IMPLICIT_GEMM") for t in SIMT_TILES)
    assert [t.n for t in SIMT_TILES if heuristic_tile(dgrad, t, "IMPLICIT_GEMM")] == [128]  # the record is fprop's
    # The measurement behind it (DeepBench T4 fp32, cuDNN 7.6): the 1×1 IMPLICIT_GEMM fprops that DeepBench ran at
    # N = 8 and 16 and whose 128×128 grid leaves SMs idle at both batches (at most 40 CTAs on the T4's 40 SMs, so
    # the rule predicts the same time) take 1.6–1.9× longer at N = 16.
    def ctas(layer: Layer) -> int:
        return math.ceil(layer.N * layer.P * layer.Q / 128) * math.ceil(layer.K / 128)

    rows = {(m.layer.C, m.layer.K, m.layer.H, m.layer.stride, m.layer.pad, m.layer.N): m
            for m in read_deepbench_csv(deepbench / "deepbench_conv_T4.csv", "fp32") if m.layer.R == 1}
    pairs = [(rows[k], rows[k[:-1] + (16,)]) for k in rows if k[-1] == 8 and k[:-1] + (16,) in rows]
    idle = [(a, b) for a, b in pairs if a.algo == b.algo == "IMPLICIT_GEMM" and ctas(b.layer) <= 40]
    assert len(idle) == 4
    for small, large in idle:
        assert 1.55 <= large.times_s["fprop"] / small.times_s["fprop"] <= 1.95, small.layer
