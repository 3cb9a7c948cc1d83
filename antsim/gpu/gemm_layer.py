"""GEMM layers (``antsim.workloads.gemm.Gemm``: fully-connected, attention, recurrent gates) on a GPU.

A GEMM layer's phase is already a matrix product (``antsim.workloads.gemm.gemm_phase``), so the GPU runs
it as one cuBLAS GEMM — no im2col gather, no Winograd or FFT — and the model prices it with the same
tile/wave/traffic plans as a convolution's GEMM (``antsim.gpu.model``):

* **weights on the left** (a linear layer, ``Gemm.a == "weights"``): the ``count`` products share the
  weight, so fprop and dgrad are one GEMM over ``count·N`` columns (cuBLAS folds the leading dimensions
  of ``x @ W.T`` into its rows), and wgrad is one GEMM whose reduction runs over all ``count·N`` columns
  (``dW = Σ dY·Xᵀ``: autograd accumulates a shared weight's gradient over its uses). The weight is the
  model's B operand (the product is taken transposed, ``Yᵀ = Xᵀ·Wᵀ``), so 2:4 structured weights compress
  B along the reduction exactly as in a convolution's fprop/dgrad;
* **activations on the left** (attention ``Q·Kᵀ`` and ``P·V``): ``count`` independent products of
  their own operands, a strided batched GEMM (``cublasGemmStridedBatched``: ``Gemm.batch = count``).

Tensor cores: the cuBLAS of the cuDNN 7 era (CUDA 10) runs tensor-core GEMMs only when M, N and K are
multiples of 8 (fp16) — otherwise the SIMT kernel; from CUDA 11 (the cuDNN 8 generation) tensor cores
run any shape (NVIDIA, "Matrix Multiplication Background User's Guide", section "Tensor Core
Requirements"). 2:4 structured sparsity (weights only, fprop and dgrad with transposable masks, as for
convolutions): NVIDIA, "NVIDIA A100 Tensor Core GPU Architecture" whitepaper (2020), section
"Fine-Grained Structured Sparsity": the sparse MMA skips the zero half of the weights at twice the dense
math rate, reading the compressed values plus 2-bit position metadata per kept value
(``antsim.gpu.model.structured_b_bytes``).
"""

from __future__ import annotations

from dataclasses import replace

from antsim.gpu.gemm import Gemm as GpuGemm
from antsim.gpu.menus import TENSOR_CHANNEL_MULTIPLE, _generation
from antsim.gpu.spec import GpuSpec
from antsim.vocabulary import Library, Phase, Precision
from antsim.workloads.gemm import Gemm, gemm_phase

# First library generation whose GEMMs run on tensor cores at any shape (CUDA 11's cuBLAS, shipped with
# cuDNN 8); before it M, N and K must be multiples of ``TENSOR_CHANNEL_MULTIPLE``.
ANY_SHAPE_TENSOR_GENERATION = 8
# Phases whose B operand is the layer's weight (fprop: Wᵀ along K; dgrad: W along M).
WEIGHT_B_PHASES = ("fprop", "dgrad")


def gemm_formulation(gpu: GpuSpec, layer: Gemm, phase: Phase, precision: Precision, library: Library) -> GpuGemm:
    """The one cuBLAS GEMM of ``phase`` of a GEMM layer (see the module docstring).

    Raises:
        WorkloadError: unknown phase.
        AntsimError: unknown library.
    """
    p = gemm_phase(layer, phase)
    if layer.weight_shared and phase in WEIGHT_B_PHASES:
        # (count·N', M', K'): rows = every column of every product, B = the shared weight.
        rows = p.count * p.N
        g = GpuGemm(rows, p.M, p.K, rows * p.K, p.M * p.K, rows * p.M, p.macs, "gemm", phase, algo="GEMM")
    elif layer.weight_shared:  # wgrad: dW (M × K) reduced over every product's columns
        reduction = p.count * p.K
        g = GpuGemm(p.M, p.N, reduction, p.M * reduction, reduction * p.N, p.M * p.N, p.macs, "gemm", phase,
                    algo="GEMM")
    else:  # activation × activation: count independent products
        g = GpuGemm(p.M, p.N, p.K, p.count * p.M * p.K, p.count * p.K * p.N, p.count * p.M * p.N, p.macs,
                    "gemm", phase, batch=p.count, algo="GEMM_STRIDED_BATCHED")
    return g if tensor_core_eligible(gpu, g, precision, library) else _simt(g)


def _simt(g: GpuGemm) -> GpuGemm:
    return replace(g, simt_only=True)


def tensor_core_eligible(gpu: GpuSpec, g: GpuGemm, precision: Precision, library: Library) -> bool:
    """True when the library runs this GEMM on tensor cores (see the module docstring)."""
    generation = _generation(library)
    if not gpu.uses_tensor_cores(precision) or generation < 7:
        return False
    if generation >= ANY_SHAPE_TENSOR_GENERATION:
        return True
    multiple = TENSOR_CHANNEL_MULTIPLE.get(precision, 8)
    return g.M % multiple == 0 and g.N % multiple == 0 and g.K % multiple == 0


def structured_phase(layer: Gemm, phase: Phase) -> bool:
    """True when 2:4 structured weights can run sparse in this phase (the weight is B: fprop, dgrad)."""
    return layer.weight_shared and phase in WEIGHT_B_PHASES


__all__ = ["gemm_formulation", "structured_phase", "tensor_core_eligible"]
