"""Step kernels (``antsim.gpu.elementwise``): bytes over bandwidth or FLOPs over peak, plus launch overhead."""

from __future__ import annotations

import pytest

from antsim.gpu import load_gpu
from antsim.gpu.elementwise import Kernel, kernel_time


def test_kernel_time_is_bytes_over_achievable_bandwidth_plus_overhead() -> None:
    v100 = load_gpu("v100")  # achievable 817.0 GB/s (Lin et al.), FP32 peak 15.7 TFLOP/s
    memory = kernel_time(v100, Kernel("relu_forward", "fprop", bytes=8.17e8, flops=1e6, launches=2))
    assert memory.active_s == pytest.approx(8.17e8 / 817.0e9)
    assert memory.time_s == pytest.approx(1e-3 + 2 * 5e-6)
    compute = kernel_time(v100, Kernel("bn_forward", "fprop", bytes=1.0, flops=1.57e10))
    assert compute.time_s == pytest.approx(1.57e10 / 15.7e12 + 5e-6)  # FLOP-bound when arithmetic dominates
    assert kernel_time(v100, Kernel("x", "fprop", 0.0, 0.0), overhead_s=0.0).time_s == 0.0
