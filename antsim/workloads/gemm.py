"""GEMM layers (fully-connected, attention, recurrent gates): the ``gemm`` layer kind and its training phases.

A ``Gemm`` is ``count`` independent products ``Y = A·B`` with ``A`` of shape ``(M, K)`` and ``B`` of shape
``(K, N)`` (``K`` is the reduction dimension). ``A`` is either a weight matrix shared by the ``count``
products (a linear layer: ``Y = W·X``, tokens/batch along ``N``) or an activation (attention: ``Q·Kᵀ``
and ``P·V`` per head and sequence, both operands dynamic; ``a="attention"`` marks an A that is a softmax
attention-probability matrix, for the sparsity regimes). ``B`` is always an activation; a layer written
``Y = X·W`` is stored transposed (``Yᵀ = Wᵀ·Xᵀ``) so the weight is on the left.

Training phases, each again a GEMM ``C = L·R`` (``L``: left, ``(M', K')``; ``R``: right, ``(K', N')``):

| phase | computes | left L | right R | (M', N', K') |
|---|---|---|---|---|
| fprop | Y = A·B | A | B | (M, N, K) |
| dgrad | dB = Aᵀ·dY (gradient of the right operand: dX of a linear layer) | Aᵀ | dY | (K, N, M) |
| wgrad | dA = dY·Bᵀ (gradient of the left operand: dW, or dQ/dP in attention) | dY | Bᵀ (saved B) | (M, K, N) |

For an activation × activation product both operand gradients are therefore phases ``dgrad`` and
``wgrad`` (the names keep the three-phase training step of a conv layer). ``wgrad`` reads the copy of
``B`` saved for the backward pass (SWAT keeps a top-k copy) when there is one.

Layers CSV (``antsim.workloads.layers.read_layers_csv``): a ``kind`` column (``conv`` when absent or
empty, so conv CSVs keep working) selects the row's columns. ``gemm`` rows fill
``name,kind,M,N,K,count`` and optionally ``a`` (``weights`` default | ``activations`` | ``attention``), ``batch``
(default 1: the training batch the shape holds) and ``batch_dim`` (``N`` default | ``count``: which
dimension scales with the batch); their conv cells stay empty, and conv rows leave the gemm cells empty.
Example (what ``write_layers_csv`` writes for one conv and one gemm row)::

    name,kind,N,C,K,H,W,R,S,stride,pad,stride_h,stride_w,pad_h,pad_w,M,count,a,batch,batch_dim
    conv1,conv,1,3,64,32,32,3,3,1,1,1,1,1,1,,,,,
    fc,gemm,128,,512,,,,,,,,,,,10,1,weights,1,N

(``N`` and ``K`` are shared by both kinds: batch / output channels for a conv row, columns / reduction
for a gemm row.)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from antsim.errors import WorkloadError
from antsim.vocabulary import PHASES, Phase

KINDS = ("conv", "gemm")
OPERAND_KINDS = ("weights", "activations", "attention")
BATCH_DIMS = ("N", "count")


@dataclass(frozen=True)
class Gemm:
    """``count`` products ``Y (M×N) = A (M×K) · B (K×N)`` (see the module docstring).

    Attributes:
        name: layer name. M, N, K: rows of Y, columns of Y, reduction length. count: independent
            products (e.g. heads × batch in attention, time steps of a recurrent layer).
        a: ``weights`` (A is a parameter shared by the ``count`` products), ``activations`` or ``attention``
            (an activation that is a softmax attention-probability matrix: only its sparsity regime differs).
        batch: the training batch the shape holds. batch_dim: ``N`` or ``count`` — the dimension that
            is ``batch`` times the per-sample one (``with_batch`` rescales it).
    """

    name: str
    M: int
    N: int
    K: int
    count: int = 1
    a: str = "weights"
    batch: int = 1
    batch_dim: str = "N"

    kind = "gemm"

    def __post_init__(self) -> None:
        for key in ("M", "N", "K", "count", "batch"):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise WorkloadError(f"gemm {self.name!r}: {key} must be a positive int; got {value!r}")
        if self.a not in OPERAND_KINDS:
            raise WorkloadError(f"gemm {self.name!r}: a must be one of {', '.join(OPERAND_KINDS)}; got {self.a!r}")
        if self.batch_dim not in BATCH_DIMS:
            raise WorkloadError(f"gemm {self.name!r}: batch_dim must be one of {', '.join(BATCH_DIMS)};"
                                f" got {self.batch_dim!r}")
        if getattr(self, self.batch_dim) % self.batch:
            raise WorkloadError(f"gemm {self.name!r}: {self.batch_dim}={getattr(self, self.batch_dim)} is not a"
                                f" multiple of batch={self.batch}")

    @property
    def b(self) -> str:
        """The right operand's kind (always an activation)."""
        return "activations"

    @property
    def weight_shared(self) -> bool:
        """True when A is a weight matrix shared by the ``count`` products."""
        return self.a == "weights"

    @property
    def macs(self) -> int:
        """Dense multiply-accumulates of one phase (the same for fprop, dgrad and wgrad)."""
        return self.count * self.M * self.N * self.K

    @property
    def parameters(self) -> int:
        """Weights held by the layer (``M·K`` when A is a weight, else 0; biases not counted)."""
        return self.M * self.K if self.weight_shared else 0

    def with_batch(self, batch: int) -> Gemm:
        """The same layer at another training batch (``batch_dim`` rescaled)."""
        per_sample = getattr(self, self.batch_dim) // self.batch
        return replace(self, batch=batch, **{self.batch_dim: per_sample * batch})

    def to_dict(self) -> dict:
        """Plain dict with ``kind: gemm`` (round-trips through ``Gemm.from_dict``)."""
        return {"kind": "gemm", **asdict(self)}

    @classmethod
    def from_dict(cls, d: dict) -> Gemm:
        kwargs: dict[str, Any] = {k: v for k, v in d.items() if k != "kind"}
        if d.get("kind", "gemm") != "gemm":
            raise WorkloadError(f"gemm {d.get('name')!r}: kind must be 'gemm'; got {d.get('kind')!r}")
        try:
            return cls(**kwargs)
        except TypeError as exc:
            raise WorkloadError(f"gemm {d.get('name')!r}: {exc}") from None


def layer_kind(layer: object) -> str:
    """``gemm`` for a ``Gemm``, ``conv`` for anything else (a conv ``Layer``)."""
    return "gemm" if isinstance(layer, Gemm) else "conv"


@dataclass(frozen=True)
class GemmPhase:
    """One training phase of a ``Gemm`` as the product ``C (count, M, N) = L (·, M, K) · R (count, K, N)``.

    Attributes:
        phase: ``fprop`` | ``dgrad`` | ``wgrad``. M, N, K, count: the phase's GEMM shape.
        left_operand / right_operand: the ``antsim.sparsity.gemm.GemmTensors`` field each side reads
            (``a``, ``b``, ``saved_b``, ``grad_output``). left_transposed / right_transposed: whether that
            field is read transposed.
        left_shared: True when one left matrix serves all ``count`` products (a weight).
        left_kind / right_kind: ``weights`` | ``activations`` | ``grad_output`` (for densities/energy).
    """

    phase: Phase
    M: int
    N: int
    K: int
    count: int
    left_operand: str
    left_transposed: bool
    right_operand: str
    right_transposed: bool
    left_shared: bool
    left_kind: str
    right_kind: str

    @property
    def macs(self) -> int:
        return self.count * self.M * self.N * self.K

    def left(self, tensors: Any) -> np.ndarray:
        """The left operand, shape ``(1 or count, M, K)``."""
        array = np.asarray(getattr(tensors, self.left_operand))
        return array.transpose(0, 2, 1) if self.left_transposed else array

    def right(self, tensors: Any) -> np.ndarray:
        """The right operand, shape ``(count, K, N)``."""
        array = np.asarray(tensors.wgrad_b if self.right_operand == "saved_b" else
                           getattr(tensors, self.right_operand))
        return array.transpose(0, 2, 1) if self.right_transposed else array


def gemm_phase(gemm: Gemm, phase: Phase) -> GemmPhase:
    """The GEMM that ``phase`` of ``gemm`` computes (table in the module docstring).

    Raises:
        WorkloadError: unknown phase.
    """
    if phase not in PHASES:
        raise WorkloadError(f"phase must be one of {', '.join(PHASES)}; got {phase!r}")
    M, N, K, count, shared = gemm.M, gemm.N, gemm.K, gemm.count, gemm.weight_shared
    if phase == "fprop":
        return GemmPhase(phase, M, N, K, count, "a", False, "b", False, shared, gemm.a, "activations")
    if phase == "dgrad":
        return GemmPhase(phase, K, N, M, count, "a", True, "grad_output", False, shared, gemm.a, "grad_output")
    return GemmPhase(phase, M, K, N, count, "grad_output", False, "saved_b", True, False, "grad_output",
                     "activations")


def reference(gemm: Gemm, phase: Phase, tensors: Any) -> np.ndarray:
    """The dense result of ``phase`` (numpy matmul) of ``tensors`` (``antsim.sparsity.gemm.GemmTensors``),
    shape ``(count, M', N')``, float64."""
    p = gemm_phase(gemm, phase)
    return np.matmul(p.left(tensors).astype(np.float64), p.right(tensors).astype(np.float64))


GEMM_CSV_COLUMNS = ("M", "N", "K", "count")
GEMM_CSV_OPTIONAL = ("a", "batch", "batch_dim")


def gemm_from_row(where: str, row: dict[str, str]) -> Gemm:
    """The ``Gemm`` of one layers-CSV row (stripped cells; ``where`` = ``"file: line n"`` for messages).

    Raises:
        WorkloadError: an empty or non-integer shape cell, or an invalid GEMM, naming ``where`` and the column.
    """
    values: dict[str, Any] = {}
    for key in GEMM_CSV_COLUMNS + ("batch",):
        text = row.get(key, "")
        if key == "batch" and text == "":
            continue
        try:
            values[key] = int(text)
        except ValueError:
            raise WorkloadError(f"{where}: column {key} must be an integer for a gemm row; got {text!r}") from None
    for key in ("a", "batch_dim"):
        if row.get(key, ""):
            values[key] = row[key]
    try:
        return Gemm(name=row["name"], **values)
    except WorkloadError as exc:
        raise WorkloadError(f"{where}: {exc}") from None


def gemm_csv_cells(gemm: Gemm) -> dict[str, str]:
    """The cells ``gemm`` fills in a layers CSV (the inverse of ``gemm_from_row``)."""
    return {"M": str(gemm.M), "N": str(gemm.N), "K": str(gemm.K), "count": str(gemm.count), "a": gemm.a,
            "batch": str(gemm.batch), "batch_dim": gemm.batch_dim}


__all__ = ["BATCH_DIMS", "KINDS", "OPERAND_KINDS", "PHASES", "Gemm", "GemmPhase", "gemm_csv_cells", "gemm_from_row",
           "gemm_phase", "layer_kind", "reference"]
