"""GPU energy (``antsim.gpu.energy``): parts sum to the total, static power x time, never above the TDP."""

from __future__ import annotations

import math

import pytest

from antsim.gpu import estimate_layer, load_gpu
from antsim.workloads.layers import Layer

SMALL = [
    Layer("c3_32", N=1, C=3, K=64, H=32, W=32, R=3, S=3, stride=1, pad=1),
    Layer("c512_4", N=1, C=512, K=512, H=4, W=4, R=3, S=3, stride=1, pad=1),
    Layer("c256_8_s2", N=1, C=256, K=512, H=8, W=8, R=1, S=1, stride=2, pad=0),
    Layer("c64_56", N=1, C=64, K=64, H=56, W=56, R=3, S=3, stride=1, pad=1),
]


def test_energy_is_sum_of_parts_and_power_never_exceeds_tdp() -> None:
    for name in ("p100", "v100", "a100", "h100"):
        gpu = load_gpu(name)
        for layer in SMALL:
            for precision in ("fp32",) + (("bf16",) if gpu.peak_tflops.bf16 else ()):
                r = estimate_layer(gpu, layer.with_batch(64), "fprop", precision)
                assert r.energy_j == pytest.approx(math.fsum(r.energy_breakdown_j.values()))
                assert r.energy_breakdown_j["static"] == pytest.approx(gpu.power.static_w * r.time_s)
                assert gpu.power.static_w * 0.999 < r.energy_j / r.time_s <= gpu.power.tdp_w
