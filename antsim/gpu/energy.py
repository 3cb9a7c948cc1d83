"""GPU energy: a TDP-bounded power model (documented choice, not an action-count table).

``energy = static + core + dram`` (joules), with

* ``static = power.static_w × time`` — leakage, clocks, fans and idle board power while a kernel runs;
* ``dram = DRAM bytes × 8 × dram.pj_per_bit`` — the sourced per-bit access energy (HBM2 3.9 pJ/bit,
  GDDR5 14 pJ/bit, … docs/energy_area_reference.md §1e);
* ``core = executed FLOPs × e_flop`` where ``e_flop = (TDP − static_w − P_dram,peak) / peak FLOP/s``
  of the precision's pipe: the SMs, register files, shared memory and L2 together draw what TDP leaves
  once static power and DRAM at full datasheet bandwidth are paid. A kernel running every pipe at peak
  and DRAM at full bandwidth therefore draws exactly TDP, and nothing draws more.

Per-FLOP core energies that this yields (e.g. V100 FP32 ≈ 12.5 pJ/FLOP, tensor FP16 ≈ 1.6 pJ/FLOP)
include the on-chip data movement of a GEMM; L2 traffic is not priced separately.
"""

from __future__ import annotations

from antsim.gpu.spec import GpuSpec
from antsim.vocabulary import Precision


def dram_peak_power_w(gpu: GpuSpec) -> float:
    """DRAM power at datasheet bandwidth (W)."""
    return gpu.dram.bandwidth_gbs * 1e9 * 8 * gpu.dram.pj_per_bit * 1e-12


def joules_per_flop(gpu: GpuSpec, precision: Precision) -> float:
    """Core energy per executed FLOP of ``precision`` (J)."""
    core_w = max(0.0, gpu.power.tdp_w - gpu.power.static_w - dram_peak_power_w(gpu))
    return core_w / gpu.peak(precision)


def energy_breakdown(gpu: GpuSpec, precision: Precision, time_s: float, executed_flops: float,
                     dram_bytes: float) -> dict[str, float]:
    """Joules per component (``core``, ``dram``, ``static``) of one kernel sequence."""
    return {
        "core": executed_flops * joules_per_flop(gpu, precision),
        "dram": dram_bytes * 8 * gpu.dram.pj_per_bit * 1e-12,
        "static": gpu.power.static_w * time_s,
    }


def power_floor_s(gpu: GpuSpec, precision: Precision, executed_flops: float, dram_bytes: float) -> float:
    """Shortest time in which a kernel's core and DRAM energy fit the board power (s).

    A card cannot draw more than ``tdp_w`` for long, and static power is paid per second, so
    ``time ≥ (core + dram energy) / (tdp_w − static_w)``. With the TDP-derived ``joules_per_flop`` this
    never binds on a card at or below its boost clock: a kernel at the full FLOP rate and datasheet DRAM
    bandwidth meets it with equality, any slower one clears it (docs/gpu_scale.md §6). The estimate does not
    apply it; it bounds nothing until the per-FLOP energy is measured independently of TDP.
    """
    energy = energy_breakdown(gpu, precision, 0.0, executed_flops, dram_bytes)
    return (energy["core"] + energy["dram"]) / (gpu.power.tdp_w - gpu.power.static_w)
