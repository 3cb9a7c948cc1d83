"""Memory-bound kernels of a training step (BatchNorm, ReLU, residual add, pooling, optimizer update).

Each kernel streams its operands through DRAM once, so its device active time is the larger of its
bytes over the achievable DRAM bandwidth and its FLOPs over the SIMT FP32 peak (these kernels run on
the FP32 lanes whatever the storage precision). On top of that every launch pays a fixed overhead,
split as in Lin et al. (arXiv 2201.07821, seed 003) into the time a device spends *active* (the kernel
runtime) and *idle* (launch and dependency gaps between kernels):

    time = max(bytes / dram_bytes_per_s, flops / fp32_peak) + launches × kernel_overhead_s

This is the saturated branch of Lin et al.'s data-movement model (owensgroup/ml_perf_model,
``analysis/memory_bw_utils.py``: ``size / max_bw + overhead`` above the saturation size). Below it
their fitted curve is slower (V100: ~285 GB/s effective at 4 MB, against 817 GB/s saturated); that
sigmoid is a per-GPU fit we cannot make for GPUs never measured, so this model takes the closed form
at every size and is optimistic for small activations (small batches, late layers).
"""

from __future__ import annotations

from dataclasses import dataclass

from antsim.errors import AntsimError
from antsim.gpu.spec import GpuSpec
from antsim.vocabulary import Phase

# Fixed time per memory-bound kernel launch (s): Lin et al.'s fitted data-movement overhead is
# 4.83 µs on V100 and 6.45 µs on A100 (ml_perf_model analysis/utils.py HW_PARAMS "mem_ch" "overhead"),
# and their per-kernel fixed overhead GPU_KERNEL_OVERHEAD is 5 µs (same file) — the value the conv
# model uses too (antsim.gpu.model.Calibration.launch_overhead_s).
KERNEL_OVERHEAD_S = 5e-6


@dataclass(frozen=True)
class Kernel:
    """One memory-bound kernel (or a few identical launches) of a training step.

    Attributes:
        name: What it does (``bn_forward``, ``relu_backward``, ``residual_add``, ``maxpool_forward``,
            ``sgd_momentum``, …).
        phase: The conv phase record it is charged to: ``fprop`` (forward-pass kernels), ``dgrad``
            (activation-gradient kernels) or ``wgrad`` (the weight update).
        bytes: DRAM bytes read plus written.
        flops: Arithmetic (FP32 lanes).
        launches: Kernel launches (each pays the fixed overhead).
    """

    name: str
    phase: Phase
    bytes: float
    flops: float
    launches: int = 1

    def __post_init__(self) -> None:
        if self.bytes < 0 or self.flops < 0 or self.launches < 1:
            raise AntsimError(f"kernel {self.name}: bytes, flops must be >= 0 and launches >= 1; got "
                              f"{self.bytes}, {self.flops}, {self.launches}")


@dataclass(frozen=True)
class KernelTime:
    """A kernel's predicted time (s): ``active_s`` (runtime) + ``overhead_s`` (launch/idle)."""

    kernel: Kernel
    memory_s: float
    compute_s: float
    overhead_s: float

    @property
    def active_s(self) -> float:
        return max(self.memory_s, self.compute_s)

    @property
    def time_s(self) -> float:
        return self.active_s + self.overhead_s

    def to_dict(self) -> dict[str, float | str | int]:
        k = self.kernel
        return {"name": k.name, "bytes": k.bytes, "flops": k.flops, "launches": k.launches,
                "active_s": self.active_s, "overhead_s": self.overhead_s, "time_s": self.time_s}


def kernel_time(gpu: GpuSpec, kernel: Kernel, overhead_s: float = KERNEL_OVERHEAD_S) -> KernelTime:
    """Time of one memory-bound kernel on ``gpu`` (see the module docstring for the formula)."""
    return KernelTime(kernel=kernel, memory_s=kernel.bytes / gpu.dram_bytes_per_s,
                      compute_s=kernel.flops / gpu.sustained_peak("fp32"),
                      overhead_s=kernel.launches * overhead_s)


__all__ = ["KERNEL_OVERHEAD_S", "Kernel", "KernelTime", "kernel_time"]
