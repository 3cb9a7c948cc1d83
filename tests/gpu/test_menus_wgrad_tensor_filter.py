"""cuDNN 7's tensor-core kernels and large filters (``menus.CUDNN7_TENSOR_MAX_TAPS``, docs/gpu_model.md §5)."""

from __future__ import annotations

import dataclasses
import math

from antsim.gpu import estimate_layer, load_gpu
from antsim.gpu.menus import CUDNN7_TENSOR_MAX_TAPS, formulations, tensor_core_eligible
from antsim.workloads.layers import PHASES, Layer

# DeepBench's DeepSpeech input layer as conv_bench times it on tensor cores (C = 1 padded to 8): 5 × 20 = 100 taps.
DS_INPUT = Layer("ds1", N=16, C=8, K=32, H=161, W=700, R=5, S=20, stride=2, pad=0)
# The 49-tap and 50-tap layers of the same sheet, which cuDNN 7.6 runs on tensor cores.
RESNET_INPUT = Layer("rn1", N=16, C=8, K=64, H=224, W=224, R=7, S=7, stride=2, pad=3)
DS_SECOND = Layer("ds2", N=16, C=32, K=32, H=79, W=341, R=5, S=10, stride=2, pad=0)


def test_cudnn7_runs_filters_of_more_than_the_tap_bound_on_the_simt_lanes_in_every_phase() -> None:
    t4 = load_gpu("t4")
    assert DS_INPUT.R * DS_INPUT.S > CUDNN7_TENSOR_MAX_TAPS >= DS_SECOND.R * DS_SECOND.S
    for phase in PHASES:
        assert not tensor_core_eligible(t4, DS_INPUT, "fp16", "cudnn7", phase), phase
        assert all(g.simt_only for g in formulations(t4, DS_INPUT, phase, "fp16", "cudnn7")), phase
        assert not estimate_layer(t4, DS_INPUT, phase, "fp16", library="cudnn7").details.tensor_cores, phase
        for small in (RESNET_INPUT, DS_SECOND):
            assert tensor_core_eligible(t4, small, "fp16", "cudnn7", phase), (small.name, phase)
        # cuDNN 8's NHWC kernels are not bound by it (no measurement says they are)
        assert tensor_core_eligible(t4, DS_INPUT, "fp16", "cudnn8", phase), phase


def test_the_bound_is_what_brings_deepbench_t4_fp16_deepspeech_input_layer_within_its_measurements() -> None:
    # The 5x20 layer's wgrad: 1.938 / 4.040 / 7.622 / 14.727 ms at N = 4 / 8 / 16 / 32 on the T4 fp16 sheet; the
    # one-tap-slab tensor-core plan predicted 3.6-3.9x, the SIMT plan (half storage, fp32 math) 0.82-0.90x.
    t4 = load_gpu("t4")
    measured = {4: 1.938e-3, 8: 4.040e-3, 16: 7.622e-3, 32: 14.727e-3}
    for n, seconds in measured.items():
        layer = dataclasses.replace(DS_INPUT, N=n)
        ratio = estimate_layer(t4, layer, "wgrad", "fp16", selection="heuristic", library="cudnn7",
                               forward_algo="IMPLICIT_PRECOMP_GEMM").time_s / seconds
        assert 0.75 < ratio < 1.0, (n, ratio)
    # the 7x7 stride-2 C = 8 wgrad (6.555 ms at N = 16) stays on tensor cores, at their speed
    rn = estimate_layer(t4, RESNET_INPUT, "wgrad", "fp16", selection="heuristic", library="cudnn7",
                        forward_algo="IMPLICIT_PRECOMP_GEMM")
    assert rn.details.tensor_cores and abs(math.log(rn.time_s / 6.555e-3)) < 0.1


def test_cudnn7_tensor_core_wgrad_converts_its_fp32_workspace_even_unsplit() -> None:
    # DeepBench T4 fp16: the 3x3 C = K = 512 7x7 wgrad takes 154 / 192 us at N = 8 / 16, so 116 us do not scale with
    # the work; the unsplit plan without the workspace pass predicted 81 / 136 us (0.53 / 0.71x).
    t4 = load_gpu("t4")
    layer = Layer("c512", N=8, C=512, K=512, H=7, W=7, R=3, S=3, stride=1, pad=1)
    (tc,) = [g for g in formulations(t4, layer, "wgrad", "fp16", "cudnn7") if g.algorithm == "implicit"]
    assert tc.fp32_workspace and not tc.simt_only
    assert not any(g.fp32_workspace for g in formulations(t4, layer, "wgrad", "fp16", "cudnn8"))
    assert not any(g.fp32_workspace for phase in ("fprop", "dgrad")
                   for g in formulations(t4, layer, phase, "fp16", "cudnn7"))
    assert not any(g.fp32_workspace for g in formulations(t4, layer, "wgrad", "fp32", "cudnn7"))
    times = {}
    for n, measured in ((8, 154e-6), (16, 192e-6)):
        r = estimate_layer(t4, dataclasses.replace(layer, N=n), "wgrad", "fp16", selection="heuristic",
                           library="cudnn7", forward_algo="IMPLICIT_PRECOMP_GEMM")
        assert r.details.tensor_cores and r.details.split_k == 1 and r.details.reduce_s > 0, n
        assert abs(math.log(r.time_s / measured)) < 0.1, (n, r.time_s / measured)
        times[n] = r.time_s
    assert 2 * times[8] - times[16] > 80e-6  # the part that does not scale with the batch (measured 116 us)
