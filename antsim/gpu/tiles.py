"""CTA tiles the model chooses among, and how many of them an SM holds.

SIMT (FP32 / half2) tiles are those of cuDNN 7 / CUTLASS SGEMM-like kernels (128×128×8 down to
32×32×8, 8×8 or 4×8 accumulators per thread); tensor-core tiles are the typical cuBLAS/CUTLASS
set (gpu_specs.md §4.3: 256×128 … 64×64 [U]), with a 32-deep K step.
"""

from __future__ import annotations

from dataclasses import dataclass

from antsim.gpu.spec import GpuSpec


@dataclass(frozen=True)
class Tile:
    """One CTA tile.

    Attributes:
        m, n, k: Tile extents (GEMM elements); ``k`` is the main-loop step.
        threads: Threads per CTA.
        stages: Shared-memory pipeline stages (2 = double buffering).
    """

    m: int
    n: int
    k: int
    threads: int
    stages: int

    @property
    def name(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    def smem_bytes(self, operand_bytes: int) -> int:
        """Shared memory of the A and B staging buffers (bytes)."""
        return self.stages * (self.m + self.n) * self.k * operand_bytes

    def registers(self) -> int:
        """32-bit registers of the CTA: fp32 accumulators + operand fragments + ~40 for addressing.

        [assumption] 40 registers per thread of indices/pointers, typical of CUTLASS kernels.
        """
        accumulators = self.m * self.n // self.threads
        fragments = 2 * int(accumulators**0.5)
        return self.threads * (accumulators + fragments + 40)


def _simt(m: int, n: int) -> Tile:
    return Tile(m, n, 8, m * n // 64, 2)  # 8×8 accumulators per thread, as in CUTLASS/cuDNN SGEMM kernels


def _mma(m: int, n: int) -> Tile:
    return Tile(m, n, 32, 256 if m * n >= 128 * 128 else 128, 3)


SIMT_TILES: tuple[Tile, ...] = tuple(_simt(m, n) for m, n in (
    (128, 128), (128, 64), (64, 128), (128, 32), (32, 128)))
TENSOR_TILES: tuple[Tile, ...] = tuple(_mma(m, n) for m, n in (
    (256, 128), (128, 256), (128, 128), (256, 64), (64, 256), (128, 64), (64, 128), (64, 64)))


def ctas_per_sm(gpu: GpuSpec, tile: Tile, operand_bytes: int) -> int:
    """Resident CTAs per SM, limited by shared memory, registers, threads (2048/SM) and the CTA cap.

    Returns 0 when one CTA does not fit.
    """
    by_smem = int(gpu.smem_per_sm_kb * 1024 // tile.smem_bytes(operand_bytes))
    by_regs = gpu.regs_per_sm // tile.registers()
    by_threads = 2048 // tile.threads  # 2048 threads/SM on every builtin GPU [U: CUDA guide, cc 6.0-9.0]
    return max(0, min(by_smem, by_regs, by_threads, gpu.max_ctas_per_sm))
