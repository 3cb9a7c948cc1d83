"""Tensor-core wgrads read NHWC: one flat N·P·Q reduction, no per-image slabs (``menus.nhwc_wgrad_reduction``)."""

from __future__ import annotations

import math

from antsim.gpu import estimate_layer, load_gpu
from antsim.gpu.gemm import Gemm
from antsim.gpu.menus import formulations
from antsim.vocabulary import Library, Precision
from antsim.workloads.layers import Layer

# 49 output pixels per image: per-image slabs pad them to 64 on the 32-deep tensor-core k step, 56 on the SIMT 8-deep.
C512 = Layer("c512", N=8, C=512, K=2048, H=7, W=7, R=1, S=1, stride=1, pad=0)


def _implicit(gpu: str, layer: Layer, precision: Precision, library: Library) -> Gemm:
    (g,) = [g for g in formulations(load_gpu(gpu), layer, "wgrad", precision, library) if g.algorithm == "implicit"]
    return g


def test_tensor_core_wgrads_reduce_over_the_flat_pixel_axis_the_simt_ones_image_by_image() -> None:
    libraries: tuple[Library, ...] = ("cudnn7", "cudnn7.6", "cudnn8")
    for library in libraries:
        g = _implicit("t4", C512, "fp16", library)
        assert not g.simt_only and g.k_slabs == 1, library
        assert g.k_padded(32) == math.ceil(8 * 49 / 32) * 32 == 416  # not 8 x 64 = 512
    # NCHW SIMT kernels keep one slab per image: fp32 on the same GPU, and fp16 storage on a GPU without tensor cores
    assert _implicit("t4", C512, "fp32", "cudnn7.6").k_slabs == 8
    assert _implicit("p100", C512, "fp16_pseudo", "cudnn7").k_slabs == 8
    assert _implicit("t4", C512, "fp32", "cudnn7.6").k_padded(8) == 8 * 56
    # fprop and dgrad keep their own (per-tap) tiling
    (f,) = [g for g in formulations(load_gpu("t4"), C512, "fprop", "fp16", "cudnn7.6") if g.algorithm == "implicit"]
    assert f.k_slabs == 1 and f.K == 512


def test_deepbench_t4_fp16_unsplit_1x1_wgrads_of_7x7_outputs_within_their_measurements() -> None:
    # DeepBench T4 fp16 (cuDNN 7.6, NHWC): ResNet-50's 1x1 wgrads onto 7x7 outputs, measured (us); with per-image
    # slabs the model predicted 1.09-1.34x of them, flat 1.00-1.16x.
    t4 = load_gpu("t4")
    rows = ((512, 2048, 7, 1, 8, 76.0), (2048, 512, 7, 1, 8, 76.0), (1024, 2048, 14, 2, 8, 151.0),
            (512, 2048, 7, 1, 16, 96.0), (2048, 512, 7, 1, 16, 96.0), (1024, 2048, 14, 2, 16, 187.0))
    for c, k, h, stride, n, measured_us in rows:
        layer = Layer("rn", N=n, C=c, K=k, H=h, W=h, R=1, S=1, stride=stride, pad=0)
        r = estimate_layer(t4, layer, "wgrad", "fp16", selection="heuristic", library="cudnn7.6",
                           forward_algo="IMPLICIT_PRECOMP_GEMM")
        ratio = r.time_s / (measured_us * 1e-6)
        assert r.details.tensor_cores and 0.95 < ratio < 1.2, (c, k, h, n, ratio)
