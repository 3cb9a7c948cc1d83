"""A recorded (DeepBench) run's dgrad algorithm is its own search's (``menus.dgrad_found``): ``conv_bench.cu`` picks
every phase's algorithm with ``cudnnFind*Algorithm``, so heuristic selection runs the fastest family of dgrad's menu,
each algorithm at its own heuristic tile, whatever the recorded forward and at every precision; under tensor-op math
(BWD_DATA_ALGO_1 forced) and without a record dgrad keeps ``heuristic_family``. TRUE_HALF has no non-fused 5×5
Winograd (cuDNN's data-type support tables, as Theano's ``cudnn_defs.py`` records them) and no non-fused Winograd
below ``TRUE_HALF_WINOGRAD_MIN_CHANNELS`` (read off DeepBench's P100 half sheet)."""

from __future__ import annotations

from dataclasses import replace

from antsim.gpu import estimate_layer, load_gpu
from antsim.gpu.menus import FAMILY, dgrad_found, formulations, heuristic_formulations
from antsim.workloads.layers import Layer

# GoogLeNet's 5×5 C = 192 → 32 28² layer (DeepBench records IMPLICIT_PRECOMP_GEMM for its forward).
G5 = Layer("g5", N=16, C=192, K=32, H=28, W=28, R=5, S=5, stride=1, pad=2)
RECORD = "IMPLICIT_PRECOMP_GEMM"
# VGG's first layer, 3×3 C = 3 → 64 224², N = 8 (DeepBench records IMPLICIT_PRECOMP_GEMM).
VGG1 = Layer("vgg1", N=8, C=3, K=64, H=224, W=224, R=3, S=3, stride=1, pad=1)


def test_a_recorded_simt_dgrad_searches_every_family() -> None:
    p100 = load_gpu("p100")
    gemms = formulations(p100, G5, "dgrad", "fp32", "cudnn7")
    for record in (RECORD, "FFT", "FFT_TILING"):  # conv_bench.cu searches dgrad whatever the forward found
        assert dgrad_found(gemms, "dgrad", record)
        assert heuristic_formulations(gemms, G5, "dgrad", record, "cudnn7") == gemms
    assert {FAMILY[g.algorithm] for g in gemms} >= {"gemm", "winograd", "fft"}


def test_no_record_fprop_wgrad_and_tensor_cores_keep_the_heuristic_family() -> None:
    p100, t4 = load_gpu("p100"), load_gpu("t4")
    gemms = formulations(p100, G5, "dgrad", "fp32", "cudnn7")
    assert not dgrad_found(gemms, "dgrad", "")
    for phase in ("fprop", "wgrad"):
        assert not dgrad_found(formulations(p100, G5, phase, "fp32", "cudnn7"), phase, RECORD)
    half = formulations(p100, VGG1, "dgrad", "fp16", "cudnn7")  # TRUE_HALF searches too; C = 3: no transform
    assert p100.true_half("fp16") and dgrad_found(half, "dgrad", RECORD)
    assert {FAMILY[g.algorithm] for g in heuristic_formulations(half, VGG1, "dgrad", RECORD, "cudnn7")} == {"gemm"}
    tensor = formulations(t4, G5, "dgrad", "fp16", "cudnn7.6")  # conv_bench.cu sets BWD_DATA_ALGO_1 there
    assert not dgrad_found(tensor, "dgrad", RECORD)
    kept = heuristic_formulations(tensor, G5, "dgrad", RECORD, "cudnn7.6")
    assert {FAMILY[g.algorithm] for g in kept} == {"gemm"}


def test_true_half_has_no_nonfused_5x5_winograd() -> None:
    p100 = load_gpu("p100")
    for phase in ("fprop", "dgrad", "wgrad"):
        assert "winograd_nonfused" in {g.algorithm for g in formulations(p100, G5, phase, "fp32", "cudnn7")}
        assert "winograd_nonfused" not in {g.algorithm for g in formulations(p100, G5, phase, "fp16", "cudnn7")}
        three = replace(G5, R=3, S=3, pad=1, K=192)  # (min(C, K) ≥ TRUE_HALF_WINOGRAD_MIN_CHANNELS)
        assert "winograd_nonfused" in {g.algorithm for g in formulations(p100, three, phase, "fp16", "cudnn7")}


def test_the_googlenet_5x5_dgrad_runs_a_transform_faster_than_its_gemm() -> None:
    # DeepBench P100 fp32: dgrad 370 µs, 0.68× its own GEMM fprop (544 µs) of the same MACs.
    found = estimate_layer("p100", G5, "dgrad", "fp32", selection="heuristic", library="cudnn7", forward_algo=RECORD)
    plain = estimate_layer("p100", G5, "dgrad", "fp32", selection="heuristic", library="cudnn7")
    assert found.details.family == "fft" and plain.details.family == "gemm"
    assert found.time_s < 0.5 * plain.time_s
    assert 0.6 < found.time_s / 370e-6 < 1.0


def test_the_true_half_vgg1_dgrad_stays_on_its_gemm() -> None:
    # DeepBench P100 half (TRUE_HALF, cuDNN 7): this dgrad takes 2025 µs, 2.7× its fp32 row (759 µs).
    r = estimate_layer("p100", VGG1, "dgrad", "fp16", selection="heuristic", library="cudnn7", forward_algo=RECORD)
    assert r.details.family == "gemm"
    assert 0.8 < r.time_s / 2025e-6 < 1.25


def test_t4_tensor_core_dgrad_stays_algo_1() -> None:
    r = estimate_layer("t4", G5, "dgrad", "fp16", selection="heuristic", library="cudnn7.6", forward_algo=RECORD)
    assert r.details.algo == "BWD_DATA_ALGO_1" and r.details.tensor_cores


def test_true_half_has_no_nonfused_winograd_below_128_channels() -> None:
    p100 = load_gpu("p100")
    for c, k in ((64, 64), (64, 128), (128, 64), (3, 64), (32, 64)):
        layer = Layer("w", N=16, C=c, K=k, H=56, W=56, R=3, S=3, stride=1, pad=1)
        for phase in ("fprop", "dgrad", "wgrad"):
            assert "winograd_nonfused" in {g.algorithm for g in formulations(p100, layer, phase, "fp32", "cudnn7")}
            assert "winograd_nonfused" not in {g.algorithm for g in formulations(p100, layer, phase, "fp16", "cudnn7")}
    wide = Layer("w", N=16, C=128, K=128, H=28, W=28, R=3, S=3, stride=1, pad=1)
    assert "winograd_nonfused" in {g.algorithm for g in formulations(p100, wide, "dgrad", "fp16", "cudnn7")}


def test_true_half_c64_winograd_recorded_layers_run_at_the_gemm_time() -> None:
    # DeepBench P100 half (TRUE_HALF, cuDNN 7), recorded WINOGRAD: Face 56² C = K = 64 N = 16 fprop / dgrad 289 / 294
    # µs, Vision 112² C = 64 → 128 N = 16 1479 / 1854 µs (the non-fused plan predicted 0.66–0.89× of them)
    for layer, fprop_s, dgrad_s in ((Layer("face", N=16, C=64, K=64, H=56, W=56, R=3, S=3, stride=1, pad=1),
                                     289e-6, 294e-6),
                                    (Layer("vision", N=16, C=64, K=128, H=112, W=112, R=3, S=3, stride=1, pad=1),
                                     1479e-6, 1854e-6)):
        for phase, measured in (("fprop", fprop_s), ("dgrad", dgrad_s)):
            r = estimate_layer("p100", layer, phase, "fp16", selection="heuristic", library="cudnn7",
                               forward_algo="WINOGRAD")
            assert r.details.family == "gemm", (layer.name, phase)
            assert 0.8 < r.time_s / measured < 1.35, (layer.name, phase)


def test_the_true_half_resnet_7x7_c512_dgrad_finds_the_nonfused_winograd() -> None:
    # DeepBench P100 half: ResNet's 7² C = K = 512 N = 16 layer records IMPLICIT_PRECOMP_GEMM for its forward, yet its
    # dgrad takes 329 µs, as the identical Vision row recorded WINOGRAD (329 µs): dgrad's own search found the transform
    layer = Layer("r7", N=16, C=512, K=512, H=7, W=7, R=3, S=3, stride=1, pad=1)
    r = estimate_layer("p100", layer, "dgrad", "fp16", selection="heuristic", library="cudnn7", forward_algo=RECORD)
    assert r.details.algo == "WINOGRAD_NONFUSED"
    assert 0.8 < r.time_s / 329e-6 < 1.25
