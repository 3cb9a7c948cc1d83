"""Sparse operands of GEMM layers (``GemmTensors``) and their seeded generators and regimes.

(Generators and regimes follow below the tensors.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from antsim.errors import WorkloadError
from antsim.sparsity.tensors import check_operand
from antsim.workloads.gemm import Gemm


@dataclass(frozen=True)
class GemmTensors:
    """The operands of one GEMM layer's training step. Zeros are sparsity.

    Attributes:
        a: A, shape ``(1, M, K)`` when it is a shared weight, else ``(count, M, K)``.
        b: B, shape ``(count, K, N)`` (fprop's right operand).
        grad_output: dY, shape ``(count, M, N)``.
        saved_b: the copy of B kept for wgrad (SWAT top-k); ``None`` means wgrad uses ``b``.
    """

    a: np.ndarray
    b: np.ndarray
    grad_output: np.ndarray
    saved_b: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("a", "b", "grad_output", "saved_b"):
            array = getattr(self, name)
            if array is not None:
                check_operand(array, name)

    @property
    def wgrad_b(self) -> np.ndarray:
        return self.b if self.saved_b is None else self.saved_b

    def check_shapes(self, gemm: Gemm) -> None:
        """Raise ``WorkloadError`` if an operand's shape does not match ``gemm``."""
        expected = {
            "a": (1 if gemm.weight_shared else gemm.count, gemm.M, gemm.K),
            "b": (gemm.count, gemm.K, gemm.N),
            "grad_output": (gemm.count, gemm.M, gemm.N),
            "saved_b": (gemm.count, gemm.K, gemm.N),
        }
        for name, shape in expected.items():
            array = getattr(self, name)
            if array is not None and tuple(array.shape) != shape:
                raise WorkloadError(f"gemm {gemm.name!r}: {name} has shape {tuple(array.shape)}, expected {shape}")

    # Names the conv ``Tensors`` uses, so density reporting reads either kind.
    @property
    def weights(self) -> np.ndarray:
        return self.a

    @property
    def activations(self) -> np.ndarray:
        return self.b

    @property
    def saved_activations(self) -> np.ndarray | None:
        return self.saved_b


__all__ = ["GemmTensors"]
