"""The three training convolutions as Cartesian-product problems, plus dense references.

Reference results (``conv_fprop``, ``conv_dgrad``, ``conv_wgrad``, ``reference``) are plain numpy
loops over the kernel offsets with strided slicing, PyTorch ``conv2d`` semantics
(cross-correlation), non-square stride and padding. They are the functional reference the
dataflow is tested against.

The Cartesian view (``phase_problem``): one operand is *stationary* — a plane ``(N, Cs, Ys, Xs)``
tiled over the PE grid — the other is *streamed*, held canonically as ``(Nt, Ct, Ko, U, V)``
(``Nt``/``Ct`` are 1 when it does not depend on the image / on the stationary channel). A product
of stationary ``(n, ch, y, x)`` and streamed ``(·, ·, ko, u, v)`` lands, per spatial dimension, on
``o = (α·y + β·u + γ) / δ``; it is valid when that is an integer in ``[0, extent)`` in both
dimensions (``DimMap``). Products pair stationary channel ``ch`` with streamed channel ``ch``
(``Ct == Cs``) or with every streamed value (``Ct == 1``, wgrad).

| phase | stationary | streamed (Nt, Ct, Ko, U, V) | output index | o per dim |
|---|---|---|---|---|
| fprop | A (N,C,H,W) | W as (1, C, K, R, S) | Y[n, ko, o1, o2] | (h + pad − r) / st |
| dgrad | dY (N,K,P,Q) | W as (1, K, C, R, S) | dA[n, ko, o1, o2] | p·st + r − pad |
| wgrad | saved A (N,C,H,W) | dY as (N, 1, K, P, Q) | dW[ko, ch, o1, o2] | h − p·st + pad |
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from antsim.errors import WorkloadError
from antsim.sparsity.tensors import Tensors
from antsim.vocabulary import PHASES, Phase
from antsim.workloads.layers import Layer


def _output_size(size: int, kernel: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - kernel) // stride + 1


def conv_fprop(A: np.ndarray, W: np.ndarray, stride: tuple[int, int], pad: tuple[int, int]) -> np.ndarray:
    """Y = conv2d(A, W): A (N,C,H,W), W (K,C,R,S) → Y (N,K,P,Q), float64."""
    (sh, sw), (ph, pw) = stride, pad
    R, S = W.shape[2:]
    P, Q = _output_size(A.shape[2], R, sh, ph), _output_size(A.shape[3], S, sw, pw)
    padded = np.pad(np.asarray(A, dtype=np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    Y = np.zeros((A.shape[0], W.shape[0], P, Q))
    for r in range(R):
        for s in range(S):
            patch = padded[:, :, r:r + sh * (P - 1) + 1:sh, s:s + sw * (Q - 1) + 1:sw]
            Y += np.einsum("nchw,kc->nkhw", patch, W[:, :, r, s].astype(np.float64))
    return Y


def conv_dgrad(dY: np.ndarray, W: np.ndarray, input_hw: tuple[int, int], stride: tuple[int, int],
               pad: tuple[int, int]) -> np.ndarray:
    """dA = ∂⟨Y, dY⟩/∂A: dY (N,K,P,Q), W (K,C,R,S) → dA (N,C,H,W), float64."""
    (sh, sw), (ph, pw) = stride, pad
    H, Wd = input_hw
    R, S = W.shape[2:]
    P, Q = dY.shape[2:]
    padded = np.zeros((dY.shape[0], W.shape[1], H + 2 * ph, Wd + 2 * pw))
    for r in range(R):
        for s in range(S):
            contrib = np.einsum("nkpq,kc->ncpq", dY.astype(np.float64), W[:, :, r, s].astype(np.float64))
            padded[:, :, r:r + sh * (P - 1) + 1:sh, s:s + sw * (Q - 1) + 1:sw] += contrib
    return padded[:, :, ph:ph + H, pw:pw + Wd]


def conv_wgrad(A: np.ndarray, dY: np.ndarray, kernel_rs: tuple[int, int], stride: tuple[int, int],
               pad: tuple[int, int]) -> np.ndarray:
    """dW = ∂⟨Y, dY⟩/∂W: A (N,C,H,W), dY (N,K,P,Q) → dW (K,C,R,S), float64."""
    (sh, sw), (ph, pw) = stride, pad
    R, S = kernel_rs
    P, Q = dY.shape[2:]
    padded = np.pad(np.asarray(A, dtype=np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    dW = np.zeros((dY.shape[1], A.shape[1], R, S))
    for r in range(R):
        for s in range(S):
            patch = padded[:, :, r:r + sh * (P - 1) + 1:sh, s:s + sw * (Q - 1) + 1:sw]
            dW[:, :, r, s] = np.einsum("nkpq,ncpq->kc", dY.astype(np.float64), patch)
    return dW


def conv_sum(x: np.ndarray, y: np.ndarray, stride: tuple[int, int], pad: tuple[int, int], phase: Phase,
             input_hw: tuple[int, int] = (0, 0), kernel: tuple[int, int] = (0, 0)) -> int:
    """``Σ conv(x, y)`` of ``conv_<phase>`` (fprop: x = A, y = W; dgrad: x = dY, y = W;
    wgrad: x = A, y = dY) for 0/1 operands (bool masks or integers), in integers: per tap, fprop is
    ``Σ_c (Σ_{n,p,q} patch) · (Σ_k W)``, dgrad ``Σ_k (Σ dY over the outputs landing inside the input) · (Σ_c W)``,
    wgrad ``Σ_{n,p,q} (Σ_c patch) · (Σ_k dY)`` — the same integer the convolution sums (tested against it).
    Every sum runs on the operands as given with an int64 accumulator: no int64 copy of an operand (a
    512 × 512 × 3 × 3 weight mask is 19 MiB as int64)."""
    (sh, sw), (ph, pw) = stride, pad
    if phase == "dgrad":
        return _conv_sum_dgrad(x, y, stride, pad, input_hw)
    n_r, n_s = (y.shape[2], y.shape[3]) if phase == "fprop" else kernel
    n_p = (x.shape[2] + 2 * ph - n_r) // sh + 1 if phase == "fprop" else y.shape[2]
    n_q = (x.shape[3] + 2 * pw - n_s) // sw + 1 if phase == "fprop" else y.shape[3]
    padded = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    # fprop: Σ_k W per (c, r, s); wgrad: Σ_k dY per (n, p, q)
    other = y.sum(axis=0 if phase == "fprop" else 1, dtype=np.int64)
    total = 0
    for r in range(n_r):
        for s in range(n_s):
            patch = padded[:, :, r:r + sh * (n_p - 1) + 1:sh, s:s + sw * (n_q - 1) + 1:sw]
            if phase == "fprop":
                total += int(patch.sum(axis=(0, 2, 3), dtype=np.int64) @ other[:, r, s])
            else:
                total += int((patch.sum(axis=1, dtype=np.int64) * other).sum())
    return total


def _conv_sum_dgrad(dy: np.ndarray, w: np.ndarray, stride: tuple[int, int], pad: tuple[int, int],
               input_hw: tuple[int, int]) -> int:
    """``conv_sum``'s dgrad: per tap ``(r, s)``, ``Σ_k (Σ dY over the outputs (p, q) whose input row
    ``r + sh·p − ph`` and column ``s + sw·q − pw`` lie inside the input) · (Σ_c W[k, c, r, s])``."""
    (sh, sw), (ph, pw), (height, width) = stride, pad, input_hw
    n_p, n_q = dy.shape[2:]
    per_output = dy.sum(axis=0, dtype=np.int64)  # (K, P, Q): Σ_n dY
    per_tap = w.sum(axis=1, dtype=np.int64)  # (K, R, S): Σ_c W
    total = 0
    for r in range(w.shape[2]):
        rows = (r + sh * np.arange(n_p) - ph >= 0) & (r + sh * np.arange(n_p) - ph < height)
        per_column = per_output[:, rows].sum(axis=1)  # (K, Q)
        for s in range(w.shape[3]):
            cols = (s + sw * np.arange(n_q) - pw >= 0) & (s + sw * np.arange(n_q) - pw < width)
            total += int(per_column[:, cols].sum(axis=1) @ per_tap[:, r, s])
    return total


def reference(layer: Layer, phase: Phase, tensors: Tensors) -> np.ndarray:
    """The dense result of ``phase``: Y (N,K,P,Q) | dA (N,C,H,W) | dW (K,C,R,S), float64."""
    _check_phase(phase)
    if phase == "fprop":
        return conv_fprop(tensors.activations, tensors.weights, layer.stride, layer.pad)
    if phase == "dgrad":
        return conv_dgrad(tensors.grad_output, tensors.weights, (layer.H, layer.W), layer.stride, layer.pad)
    return conv_wgrad(tensors.wgrad_activations, tensors.grad_output, (layer.R, layer.S), layer.stride,
                      layer.pad)


def _check_phase(phase: object) -> None:
    if phase not in PHASES:
        raise WorkloadError(f"phase must be one of {', '.join(PHASES)}; got {phase!r}")


@dataclass(frozen=True)
class DimMap:
    """One spatial dimension of the output-coordinate map: ``o·δ = α·y + β·u + γ``, valid iff
    ``δ`` divides the right side and ``0 ≤ o < extent``. ``α > 0``, ``δ ≥ 1``."""

    alpha: int
    beta: int
    gamma: int
    delta: int
    extent: int

    def output(self, y: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Output coordinate and validity of products at stationary ``y``, streamed ``u`` (arrays)."""
        # In place on one int64 temporary, and 0 ≤ o < extent as one unsigned compare (a negative o reads as
        # ≥ 2^63): the fast path's bank-conflict sample calls this on ~10^6 products per phase.
        num = self.numerator_into(np.array(y, dtype=np.int64), u)
        if self.delta == 1:
            return num, num.view(np.uint64) < self.extent
        o, rest = np.divmod(num, self.delta)
        return o, (rest == 0) & (o.view(np.uint64) < self.extent)

    def numerator_into(self, y: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``α·y + β·u + γ`` computed in place on ``y`` (an int64 array the caller owns), returned."""
        if self.alpha != 1:
            y *= self.alpha
        if self.beta == 1:
            y += u
        elif self.beta == -1:
            y -= u
        else:
            y += self.beta * np.asarray(u, dtype=np.int64)
        if self.gamma:
            y += self.gamma
        return y

    def reach(self, y_lo: np.ndarray, y_hi: np.ndarray, u_lo: np.ndarray, u_hi: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
        """Integer outputs reachable from ``y ∈ [y_lo, y_hi]``, ``u ∈ [u_lo, u_hi]`` (inclusive boxes),
        clipped to the valid window: ``(o_lo, o_hi)``; empty where ``o_lo > o_hi``. A superset of the
        valid outputs of any product in the box (conservative), which is what makes skipping safe."""
        y_lo, y_hi = np.asarray(y_lo, dtype=np.int64), np.asarray(y_hi, dtype=np.int64)
        u_lo, u_hi = np.asarray(u_lo, dtype=np.int64), np.asarray(u_hi, dtype=np.int64)
        u_min, u_max = (u_lo, u_hi) if self.beta >= 0 else (u_hi, u_lo)
        num_lo = self.alpha * y_lo + self.beta * u_min + self.gamma
        num_hi = self.alpha * y_hi + self.beta * u_max + self.gamma
        o_lo = np.maximum(-((-num_lo) // self.delta), 0)
        o_hi = np.minimum(num_hi // self.delta, self.extent - 1)
        return o_lo, o_hi

    def stride_classes(self) -> tuple[int, int, np.ndarray]:
        """Stride-phase split of this dimension: ``(ms, mt, compatible)`` — stationary coordinates
        fall in classes ``y mod ms``, streamed in ``u mod mt``; ``compatible[a, b]`` is False only
        when no product of class pair (a, b) can land on a valid integer output."""
        if self.delta > 1:  # fprop: divisibility pairs each stationary class with one streamed class
            m = self.delta
            a, b = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
            return m, m, (self.alpha * a + self.beta * b + self.gamma) % m == 0
        outs = np.arange(self.extent)
        if abs(self.beta) > 1:  # wgrad: o ≡ α·y + γ (mod |β|) whatever u is
            m = abs(self.beta)
            ok = np.array([np.any(outs % m == (self.alpha * a + self.gamma) % m) for a in range(m)])
            return (m, 1, ok[:, None]) if not ok.all() else (1, 1, np.ones((1, 1), bool))
        if self.alpha > 1:  # dgrad: o ≡ β·u + γ (mod α) whatever y is
            m = self.alpha
            ok = np.array([np.any(outs % m == (self.beta * b + self.gamma) % m) for b in range(m)])
            return (1, m, ok[None, :]) if not ok.all() else (1, 1, np.ones((1, 1), bool))
        return 1, 1, np.ones((1, 1), bool)


@dataclass(frozen=True)
class PhaseProblem:
    """One (layer, phase) as a Cartesian-product problem (see the module docstring).

    Attributes:
        phase: ``fprop`` | ``dgrad`` | ``wgrad``.
        stationary_operand / streamed_operand: Tensors field names (``weights``, ``activations``,
            ``grad_output``); wgrad's stationary operand is ``Tensors.wgrad_activations``.
        stationary_shape: (N, Cs, Ys, Xs). streamed_shape: (Nt, Ct, Ko, U, V).
        output_shape: shape of the phase result.
        dims: (DimMap along height, DimMap along width).
        output_is_plane: True for fprop/dgrad (output index ``[n, ko, o1, o2]``), False for wgrad
            (``[ko, ch, o1, o2]``: every PE accumulates partial sums of the same entries).
    """

    phase: Phase
    stationary_operand: str
    streamed_operand: str
    stationary_shape: tuple[int, int, int, int]
    streamed_shape: tuple[int, int, int, int, int]
    output_shape: tuple[int, int, int, int]
    dims: tuple[DimMap, DimMap]
    output_is_plane: bool

    @property
    def needs_reduction(self) -> bool:
        return not self.output_is_plane

    @property
    def channel_matched(self) -> bool:
        """True when stationary channel ``ch`` pairs only with streamed channel ``ch`` (fprop: input
        channel, dgrad: output channel); False for wgrad, where every stationary value pairs with every
        streamed value of the chunk."""
        return self.output_is_plane

    def stationary(self, tensors: Tensors) -> np.ndarray:
        """The stationary plane, shape ``stationary_shape``."""
        if self.phase == "wgrad":
            return np.asarray(tensors.wgrad_activations)
        return np.asarray(getattr(tensors, self.stationary_operand))

    def streamed(self, tensors: Tensors) -> np.ndarray:
        """The streamed operand in canonical layout ``(Nt, Ct, Ko, U, V)``."""
        if self.phase == "fprop":
            return np.asarray(tensors.weights).transpose(1, 0, 2, 3)[None]
        if self.phase == "dgrad":
            return np.asarray(tensors.weights)[None]
        return np.asarray(tensors.grad_output)[:, None]


def phase_problem(layer: Layer, phase: Phase) -> PhaseProblem:
    """The Cartesian-product description of ``phase`` of ``layer``.

    Raises:
        WorkloadError: unknown phase.
    """
    _check_phase(phase)
    (sh, sw), (ph, pw) = layer.stride, layer.pad
    N, C, K, H, W, R, S, P, Q = layer.N, layer.C, layer.K, layer.H, layer.W, layer.R, layer.S, layer.P, layer.Q
    if phase == "fprop":
        dims = (DimMap(1, -1, ph, sh, P), DimMap(1, -1, pw, sw, Q))
        return PhaseProblem(phase, "activations", "weights", (N, C, H, W), (1, C, K, R, S), (N, K, P, Q),
                            dims, True)
    if phase == "dgrad":
        dims = (DimMap(sh, 1, -ph, 1, H), DimMap(sw, 1, -pw, 1, W))
        return PhaseProblem(phase, "grad_output", "weights", (N, K, P, Q), (1, K, C, R, S), (N, C, H, W),
                            dims, True)
    dims = (DimMap(1, -sh, ph, 1, R), DimMap(1, -sw, pw, 1, S))
    return PhaseProblem(phase, "activations", "grad_output", (N, C, H, W), (N, 1, K, P, Q), (K, C, R, S),
                        dims, False)


__all__ = ["DimMap", "PhaseProblem", "conv_dgrad", "conv_fprop", "conv_wgrad", "phase_problem", "reference"]
