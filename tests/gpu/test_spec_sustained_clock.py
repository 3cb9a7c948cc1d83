"""The SM clock a GPU runs kernels at (``GpuSpec.sustained_clock_mhz``): default, closed forms, monotonicity."""

from __future__ import annotations

import dataclasses
import math

import pytest

from antsim.errors import SpecError
from antsim.gpu import best_plan, gpu_from_dict, implicit_gemm, load_gpu
from antsim.gpu.gemm import Gemm
from antsim.gpu.model import CALIBRATION, SMEM_BYTES_PER_CLOCK, plan_gemm
from antsim.gpu.tiles import SIMT_TILES
from antsim.workloads.layers import PHASES, Layer


def _with_clock(name: str, mhz: float | None) -> object:
    data = load_gpu(name).to_dict()
    data["sustained_clock_mhz"] = mhz
    return gpu_from_dict(data, source=f"{name}+clock")


def _spec_sheet_gpu(**extra: float) -> dict:
    """A GPU typed in from spec-sheet fields only (GTX 1080 Ti numbers: 28 SMs, 1582 MHz boost, 11.34 TFLOP/s,
    484 GB/s GDDR5X, 2.75 MB L2, 250 W) with no measured bandwidth and no optional key."""
    return {"kind": "gpu", "version": 1, "name": "sheet", "sms": 28, "clock_mhz": 1582, "tensor_cores": False,
            "smem_per_sm_kb": 96, "peak_tflops": {"fp32": 11.34},
            "dram": {"type": "gddr5x", "bandwidth_gbs": 484, "pj_per_bit": 14.0},
            "l2": {"size_mb": 2.75, "bandwidth_gbs": 1311}, "power": {"tdp_w": 250, "static_w": 62.5}, **extra}


def test_a_gpu_from_its_spec_sheet_runs_at_its_boost_clock() -> None:
    gpu = gpu_from_dict(_spec_sheet_gpu())
    assert gpu.sustained_clock_mhz is None
    assert gpu.sm_clock_hz == 1582e6
    assert gpu.clock_scale == 1.0
    # the whole pipeline runs on it
    layer = Layer("conv", N=8, C=64, K=64, H=28, W=28, R=3, S=3, stride=1, pad=1)
    g = implicit_gemm(layer, "fprop")
    assert best_plan(gpu, g, "fp32").time_s > 0


def test_a_sustained_clock_equal_to_the_boost_clock_changes_nothing() -> None:
    gemm = implicit_gemm(Layer("c", N=16, C=256, K=256, H=14, W=14, R=3, S=3, stride=1, pad=1), "fprop")
    base, same = load_gpu("p100"), _with_clock("p100", load_gpu("p100").clock_mhz)
    assert best_plan(base, gemm, "fp32") == best_plan(same, gemm, "fp32")


@pytest.mark.parametrize("bad", [0, -5, 6000])
def test_a_bad_sustained_clock_is_refused_naming_the_key(bad: float) -> None:
    with pytest.raises(SpecError, match="sustained_clock_mhz"):
        gpu_from_dict(_spec_sheet_gpu(sustained_clock_mhz=bad), source="sheet.yaml")


def test_a_compute_bound_main_loop_scales_exactly_with_the_clock() -> None:
    # A large square GEMM on one SIMT tile: compute-bound, so main loop ∝ 1 / clock (closed form: the SM rate is
    # efficiency × peak × clock_scale / SMs, and the shared-memory feed 128 B × clock).
    gemm = Gemm(M=8192, N=8192, K=8192, a_unique=8192**2, b_unique=8192**2, c_unique=8192**2,
                useful_macs=8192**3)
    tile = SIMT_TILES[0]
    slow = plan_gemm(_with_clock("gtx1080ti", 1582), gemm, "fp32", tile, 1)
    fast = plan_gemm(_with_clock("gtx1080ti", 1582 * 1.25), gemm, "fp32", tile, 1)
    assert slow is not None and fast is not None and slow.bound == "compute"
    assert fast.compute_s == pytest.approx(slow.compute_s / 1.25, rel=1e-12)
    assert fast.dram_s == slow.dram_s and fast.l2_s == slow.l2_s  # DRAM and L2 keep their own clocks


def test_the_shared_memory_feed_uses_the_sm_clock() -> None:
    gpu = _with_clock("titanxp", 1000)
    assert gpu.sm_clock_hz * 1.0 == 1000e6
    assert SMEM_BYTES_PER_CLOCK * gpu.sm_clock_hz == pytest.approx(128e9)
    assert gpu.clock_scale == pytest.approx(1000 / 1582)


def test_the_gtx1080ti_builtin_runs_at_its_measured_top_boost_bin() -> None:
    gpu = load_gpu("gtx1080ti")
    assert gpu.sustained_clock_mhz == 1911  # nvidia-smi "Max Clocks" (docs/gpu_specs.md §4.5, source [G])
    assert gpu.peak("fp32") == pytest.approx(11.34e12)  # the datasheet peak stays the boost clock's


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("layer", [
    Layer("c3", N=32, C=128, K=128, H=28, W=28, R=3, S=3, stride=1, pad=1),
    Layer("c1", N=8, C=512, K=2048, H=7, W=7, R=1, S=1, stride=1, pad=0),
    Layer("s2", N=4, C=64, K=256, H=56, W=56, R=1, S=1, stride=2, pad=0),
])
@pytest.mark.parametrize("name, precision", [("t4", "fp16"), ("t4", "fp32"), ("m40", "fp32")])
def test_a_higher_sm_clock_is_never_slower(phase: str, layer: Layer, name: str, precision: str) -> None:
    gemm = implicit_gemm(layer, phase)
    times = [best_plan(_with_clock(name, mhz), gemm, precision).time_s for mhz in (600, 900, 1100, 1400, 2000)]
    assert all(b <= a for a, b in zip(times, times[1:], strict=False)), times
    # and it never beats the clock ratio: memory and launches do not speed up with the SM clock
    assert times[0] / times[-1] <= 2000 / 600 + 1e-9


def test_calibration_is_untouched_by_the_clock() -> None:
    # the clock is a property of the GPU, not a calibration constant
    assert "sustained_clock_mhz" not in dataclasses.asdict(CALIBRATION)
    assert math.isfinite(CALIBRATION.simt_efficiency)
