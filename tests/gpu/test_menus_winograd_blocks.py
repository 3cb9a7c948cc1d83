"""cuDNN's non-fused Winograd fprop and dgrad cover the batch in blocks of ``menus.WINOGRAD_BLOCK_IMAGES`` images at
every precision and library generation (``menus.nonfused_winograd_blocks``); wgrad runs the real images."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from antsim.gpu import estimate_layer, load_gpu
from antsim.gpu.menus import WINOGRAD_BLOCK_IMAGES, formulations
from antsim.measure.deepbench import read_deepbench_csv
from antsim.workloads.layers import Layer

SHEET = Path(__file__).resolve().parents[1] / "data" / "deepbench" / "deepbench_conv_T4.csv"


def _layer(n: int) -> Layer:
    return Layer("v", N=n, C=256, K=512, H=28, W=28, R=3, S=3, stride=1, pad=1)


def _nonfused(n: int, phase: str, library: str, layer: Layer | None = None):
    return next(g for g in formulations(load_gpu("t4"), layer or _layer(n), phase, "fp32", library)
                if g.algorithm == "winograd_nonfused")


@pytest.mark.parametrize("library", ["cudnn5", "cudnn6", "cudnn7", "cudnn7.6", "cudnn8"])
@pytest.mark.parametrize("phase", ["fprop", "dgrad"])
def test_an_fp32_batch_below_the_block_runs_the_products_of_a_whole_block(phase: str, library: str) -> None:
    # closed form: M = (4×4 output tiles per image) × images, padded to whole blocks; 1 and 8 images pad to 16,
    # 24 to 32 (28×28 plane: 7 × 7 = 49 tiles per image)
    per_image = 7 * 7
    assert _nonfused(1, phase, library).M == per_image * WINOGRAD_BLOCK_IMAGES
    assert _nonfused(8, phase, library).M == per_image * WINOGRAD_BLOCK_IMAGES
    assert _nonfused(16, phase, library).M == per_image * WINOGRAD_BLOCK_IMAGES
    assert _nonfused(24, phase, library).M == per_image * 2 * WINOGRAD_BLOCK_IMAGES


def test_the_products_grid_of_a_profiled_ten_image_call() -> None:
    # kernyan.com (2025, RTX 2070 Super, NCHW fp32, N = 10, 224×224, C = K = 128): volta_sgemm_128x64_nn on a
    # (392, 2, 36) grid: 36 = α² of F(4×4, 3×3), 392 row tiles of 128 = 16 images × 56 × 56 output tiles
    layer = Layer("profiled", N=10, C=128, K=128, H=224, W=224, R=3, S=3, stride=1, pad=1)
    g = _nonfused(10, "fprop", "cudnn8", layer)
    assert g.batch == 36
    assert math.ceil(g.M / 128) == 392 and g.N == 128


def test_wgrad_runs_the_real_images() -> None:
    per_image = _nonfused(1, "wgrad", "cudnn8").K
    assert _nonfused(8, "wgrad", "cudnn7.6").K == 8 * per_image  # wgrad reduces over the real images' tiles


def _pairs() -> list[tuple[str, float, float]]:
    """The T4 fp32 sheet's 3×3 layers recorded WINOGRAD_NONFUSED at N = 8 and at N = 16: (phase, t8, t16) per layer
    and phase, measured and predicted."""
    rows = [m for m in read_deepbench_csv(SHEET, "fp32") if m.algo == "WINOGRAD_NONFUSED" and m.layer.R == 3]
    by_shape = {}
    for m in rows:
        L = m.layer
        by_shape.setdefault((L.C, L.K, L.H, L.W), {})[L.N] = m
    out = []
    for d in by_shape.values():
        if 8 in d and 16 in d:
            for phase in ("fprop", "dgrad"):
                t = [estimate_layer("t4", d[n].layer, phase, "fp32", selection="heuristic", library="cudnn7.6",
                                    forward_algo=d[n].algo).time_s for n in (8, 16)]
                out.append((phase, d[16].times_s[phase] / d[8].times_s[phase], t[1] / t[0]))
    return out


def test_the_t4_nonfused_layers_grow_from_n8_to_n16_as_measured() -> None:
    # measured t16 / t8 = 1.11–1.32 (fprop), 0.96–1.27 (dgrad) on six layers (C ≥ 128, 7×7–56×56 planes), far
    # below the 2× of the real images' products (the unpadded plan predicted 1.50–1.96)
    pairs = _pairs()
    assert len(pairs) == 12
    for phase, measured, predicted in pairs:
        assert measured < 1.35, (phase, measured)
        assert abs(math.log(predicted / measured)) < math.log(1.3), (phase, measured, predicted)
