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


def test_tdp_derived_energy_makes_the_power_floor_a_tautology() -> None:
    # docs/gpu_scale.md §6: joules_per_flop is (TDP - static - DRAM at datasheet bandwidth) / peak, so a kernel at
    # the full FLOP rate and full bandwidth meets the floor exactly, and the floor is linear in both loads.
    from antsim.gpu.energy import dram_peak_power_w, power_floor_s

    for name in ("t4", "p4", "p100", "v100"):
        gpu = load_gpu(name)
        peak, bandwidth = gpu.peak("fp32"), gpu.dram.bandwidth_gbs * 1e9
        assert power_floor_s(gpu, "fp32", peak * 1e-3, bandwidth * 1e-3) == pytest.approx(1e-3)
        budget = gpu.power.tdp_w - gpu.power.static_w
        core_only = (budget - dram_peak_power_w(gpu)) / budget
        assert power_floor_s(gpu, "fp32", peak * 1e-3, 0.0) == pytest.approx(1e-3 * core_only)
        assert power_floor_s(gpu, "fp32", 0.0, 0.0) == 0.0


def test_no_builtin_kernel_estimate_is_below_its_power_floor() -> None:
    # The model's kernels run at or below their peaks (clock ≤ boost on these cards), so the floor never binds:
    # 0 of the calibration rows move under it (docs/gpu_scale.md §6, also on the 70 W T4 and 75 W P4).
    from antsim.gpu.energy import power_floor_s

    for name in ("t4", "p4", "p100"):
        gpu = load_gpu(name)
        for layer in SMALL:
            for phase in ("fprop", "dgrad", "wgrad"):
                r = estimate_layer(gpu, layer.with_batch(32), phase, "fp32")
                floor = power_floor_s(gpu, "fp32", r.details["executed_flops"], r.details["dram_bytes"])
                assert floor < r.time_s, (name, layer.name, phase)
