"""An optional learned correction of the GPU model's kernel times (``--gpu-correction learned``).

The physical model (``antsim.gpu.estimate``) predicts each (layer, phase) kernel time ``t``; the
correction multiplies the chosen plan's time by ``exp(b + w · φ)``, where ``φ`` are a few *physical*
features of that plan and of the GPU's spec sheet (``FEATURES``: the phase, the algorithm family,
tensor cores, the arithmetic intensity against the GPU's ridge point, padded and idle work, the
filter class, stride, small channel counts, the SM width, the kernel's time against its launch
cost). There are no per-row or per-GPU terms, so a GPU described by its spec sheet alone gets a
correction too. In the style of the ML kernel models of Lin et al., *Building a Performance Model for
Deep Learning Recommendation Model Training on GPUs* (arXiv:2201.07821, ISPASS 2022), but linear
in log time and small enough to read (docs/gpu_learned.md).

The coefficients ship in ``antsim.gpu.learned_table`` with their provenance (the measured files,
the physical model's fingerprint, the fit command). ``scripts/fit_gpu_correction.py`` refits them by
ridge regression on ``ln(measured / predicted)`` with the regularisation chosen by
leave-one-GPU-out. The fingerprint (``model_fingerprint``) is a hash of the physical model's
predictions on a fixed set of probe layers: a physics change that moves any of them makes the table
stale, and a stale table is refused (``resolve_correction``) instead of silently applied.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal, get_args

import numpy as np

from antsim.errors import AntsimError
from antsim.gpu import learned_table
from antsim.gpu.estimate import estimate_layer
from antsim.gpu.model import CALIBRATION
from antsim.gpu.spec import GpuSpec, load_gpu
from antsim.results import GpuLayerDetails
from antsim.vocabulary import Phase
from antsim.workloads.gemm import Gemm as GemmLayer
from antsim.workloads.layers import PHASES, Layer

Correction = Literal["none", "learned"]
CORRECTIONS: tuple[Correction, ...] = get_args(Correction)
DEFAULT_CORRECTION: Correction = "none"
FIT_COMMAND = ".venv/bin/python scripts/fit_gpu_correction.py"
TABLE_MODULE = "antsim/gpu/learned_table.py"

# Lin et al.'s launch + idle time per kernel (owensgroup/ml_perf_model, analysis/utils.py): the scale
# a kernel's time is measured against in ``log_time_vs_launch``.
LAUNCH_S = CALIBRATION.launch_overhead_s
# A GPU whose SMs hold 128 FP32 lanes (Maxwell, GP102/GP104) rather than 64 (GP100, Volta, Turing,
# GA100): NVIDIA's architecture whitepapers (docs/gpu_specs.md §4.1) split the SM this way.
WIDE_SM_LANES = 96
# Channel counts below one 32-wide warp of a SIMT tile (or four 8-channel MMA rows) leave lanes idle.
SMALL_CHANNELS = 32
# Clips keep a feature of an extreme plan inside the range the calibration rows span (ln units).
_CLIP = {"log_intensity_vs_ridge": (-4.0, 4.0), "work_ratio": (-2.0, 3.0), "wave_tail": (0.0, 4.0),
         "log_time_vs_launch": (0.0, 10.0)}

# The features, in table order, each with why it is physical (docs/gpu_learned.md §1).
FEATURES: tuple[tuple[str, str], ...] = (
    ("dgrad", "phase is dgrad (its kernels gather dY through the flipped filter)"),
    ("wgrad", "phase is wgrad (reduction over N·P·Q, split-K partials)"),
    ("winograd", "the chosen plan is a Winograd kernel"),
    ("fft", "the chosen plan is an FFT kernel"),
    ("tensor_cores", "the chosen plan runs on tensor cores"),
    ("log_intensity_vs_ridge", "ln(executed FLOP / DRAM byte ÷ the GPU's peak FLOP/s per B/s)"),
    ("work_ratio", "ln(executed / useful MACs): tile padding, zero insertion, Winograd/FFT savings"),
    ("wave_tail", "ln(ceil(waves) / waves): the idle SMs of the last (or only) wave"),
    ("filter_1x1", "R = S = 1"),
    ("filter_large", "max(R, S) >= 5"),
    ("strided", "stride > 1"),
    ("small_c", f"C < {SMALL_CHANNELS}"),
    ("small_k", f"K < {SMALL_CHANNELS}"),
    ("wide_sm", f"the GPU's SM holds more than {WIDE_SM_LANES} FP32 lanes (128-lane SMs)"),
    ("wgrad_1x1", "wgrad of a 1×1 filter (no tap reuse of the gathered input)"),
    ("dgrad_strided", "dgrad of a strided layer (zero insertion or stride phases)"),
    ("log_time_vs_launch", "ln(kernel time / (kernels × 5 µs launch)): latency- vs throughput-bound"),
    ("cudnn5", "library generation cuDNN 5 (its kernels; cuDNN 7 is the reference)"),
    ("cudnn6", "library generation cuDNN 6"),
    ("cudnn8", "library generation cuDNN 8"),
)
FEATURE_NAMES: tuple[str, ...] = tuple(name for name, _why in FEATURES)


def features(gpu: GpuSpec, layer: Layer, phase: Phase, details: GpuLayerDetails, time_s: float) -> np.ndarray:
    """The feature vector ``φ`` (``FEATURE_NAMES`` order) of one convolution's chosen plan."""
    ridge = gpu.peak(details.run_precision) / gpu.dram_bytes_per_s
    intensity = details.executed_flops / max(details.dram_bytes, 1.0)
    waves = max(details.waves, 1e-9)
    raw = {
        "dgrad": phase == "dgrad", "wgrad": phase == "wgrad",
        "winograd": details.family == "winograd", "fft": details.family == "fft",
        "tensor_cores": details.tensor_cores,
        "log_intensity_vs_ridge": math.log(max(intensity, 1e-9) / ridge),
        "work_ratio": math.log(max(details.executed_flops, 1.0) / max(details.useful_flops, 1.0)),
        "wave_tail": math.log(math.ceil(waves) / waves),
        "filter_1x1": layer.R == layer.S == 1, "filter_large": max(layer.R, layer.S) >= 5,
        "strided": max(layer.stride) > 1,
        "small_c": layer.C < SMALL_CHANNELS, "small_k": layer.K < SMALL_CHANNELS,
        "wide_sm": gpu.fp32_lanes_per_sm > WIDE_SM_LANES,
        "wgrad_1x1": phase == "wgrad" and layer.R == layer.S == 1,
        "dgrad_strided": phase == "dgrad" and max(layer.stride) > 1,
        "log_time_vs_launch": math.log(max(time_s, 1e-12) / (max(details.kernels, 1) * LAUNCH_S)),
        "cudnn5": details.library == "cudnn5", "cudnn6": details.library == "cudnn6",
        "cudnn8": details.library == "cudnn8",
    }
    values = [float(raw[name]) for name in FEATURE_NAMES]
    for i, name in enumerate(FEATURE_NAMES):
        if name in _CLIP:
            low, high = _CLIP[name]
            values[i] = min(max(values[i], low), high)
    return np.array(values)


@dataclass(frozen=True)
class CorrectionTable:
    """Fitted coefficients: ``factor = exp(intercept + Σ weights[name] · φ[name])``, and where they came from."""

    features: tuple[str, ...]
    intercept: float
    weights: tuple[float, ...]
    fingerprint: str
    ridge_lambda: float
    provenance: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CorrectionTable:
        weights = data["weights"]
        return cls(tuple(weights), float(data["intercept"]), tuple(float(w) for w in weights.values()),
                   str(data["fingerprint"]), float(data["ridge_lambda"]), dict(data.get("provenance", {})))

    def to_dict(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "ridge_lambda": self.ridge_lambda, "intercept": self.intercept,
                "weights": dict(zip(self.features, self.weights, strict=True)), "provenance": dict(self.provenance)}

    def log_factor(self, phi: np.ndarray) -> float:
        return self.intercept + float(np.dot(self.weights, phi))


@dataclass(frozen=True)
class LearnedCorrection:
    """The ``learned`` correction, checked against the physical model (``resolve_correction``)."""

    table: CorrectionTable
    name: str = "learned"

    def factor(self, gpu: GpuSpec, layer: Layer | GemmLayer, phase: Phase, details: GpuLayerDetails,
               time_s: float) -> float:
        """The multiplier of one kernel time; 1 for a GEMM layer (no cuBLAS GEMM rows were fitted)."""
        if isinstance(layer, GemmLayer):
            return 1.0
        return math.exp(self.table.log_factor(features(gpu, layer, phase, details, time_s)))

    def echo(self) -> dict[str, Any]:
        """What a result records about the correction that made it."""
        return {"name": self.name, "table": TABLE_MODULE, "fingerprint": self.table.fingerprint,
                "ridge_lambda": self.table.ridge_lambda, "applies_to": "convolution kernels"}


def shipped_table() -> CorrectionTable:
    """The table in ``antsim.gpu.learned_table``.

    Raises:
        AntsimError: the table's features are not this module's ``FEATURE_NAMES`` (refit).
    """
    table = CorrectionTable.from_dict(learned_table.TABLE)
    if table.features != FEATURE_NAMES:
        raise AntsimError(f"gpu correction 'learned': {TABLE_MODULE} holds features {list(table.features)}, the "
                          f"code computes {list(FEATURE_NAMES)}; refit with: {FIT_COMMAND}", subject="gpu_correction")
    return table


def resolve_correction(name: str, table: CorrectionTable | None = None) -> LearnedCorrection | None:
    """The correction ``name`` stands for: None for ``none``; ``learned`` checked against the model.

    Raises:
        AntsimError: an unknown name, or a table fitted on another physical model (stale: refit).
    """
    if name not in CORRECTIONS:
        raise AntsimError(f"gpu correction: unknown {name!r}; known: {', '.join(CORRECTIONS)}",
                          subject="gpu_correction")
    if name == "none":
        return None
    table = table if table is not None else shipped_table()
    now = model_fingerprint()
    if table.fingerprint != now:
        raise AntsimError(f"gpu correction 'learned': the table was fitted on physical model {table.fingerprint}, "
                          f"the model is now {now} (stale); refit with: {FIT_COMMAND}", subject="gpu_correction")
    return LearnedCorrection(table)


# --- the physical model's fingerprint ------------------------------------------------------------------------

# Probe layers (name, N, C, K, H, W, R, S, stride, pad): a ResNet 3×3, 1×1 and 1×1 stride-2 layer, an
# input layer, a 5×5 and a DeepSpeech 5×20 stride-2 layer, a small-channel 3×3 and a wide 7×7 plane.
_PROBE_LAYERS = (
    ("r3x3", 16, 128, 128, 28, 28, 3, 3, 1, 1), ("r1x1", 16, 256, 64, 56, 56, 1, 1, 1, 0),
    ("r1x1s2", 16, 512, 1024, 28, 28, 1, 1, 2, 0), ("input", 16, 3, 64, 224, 224, 7, 7, 2, 3),
    ("c5x5", 8, 64, 128, 32, 32, 5, 5, 1, 2), ("ds", 4, 32, 32, 80, 341, 5, 20, 2, 0),
    ("small", 32, 16, 16, 64, 64, 3, 3, 1, 1), ("wide7", 8, 512, 512, 7, 7, 3, 3, 1, 1),
)
# (GPU, precision, library, selection): every calibration GPU's generation, tensor cores included.
_PROBE_RUNS = (("p100", "fp32", "cudnn7", "heuristic"), ("titanxp", "fp32", "cudnn7", "heuristic"),
               ("gtx1080ti", "fp32", "cudnn6", "heuristic"), ("m40", "fp32", "cudnn5", "heuristic"),
               ("t4", "fp32", "cudnn7.6", "heuristic"), ("t4", "fp16", "cudnn7.6", "heuristic"),
               ("a100-80gb-pcie", "fp32", "cudnn8", "timed"), ("p4", "fp32", "cudnn8", "timed"),
               ("a100", "tf32", "cudnn8", "timed"), ("h100", "fp16", "cudnn8", "timed"))


@cache
def model_fingerprint() -> str:
    """A 16-hex-digit hash of the physical model: its predicted time (6 significant digits), kernel
    family and tensor-core use on every probe (layer, phase, GPU, precision, library, selection), and the
    calibration constants. Any physics change that moves a probe changes it."""
    lines = [json.dumps(CALIBRATION.to_dict(), sort_keys=True)]
    layers = [Layer(name, N=n, C=c, K=k, H=h, W=w, R=r, S=s, stride=(st, st), pad=(p, p))
              for name, n, c, k, h, w, r, s, st, p in _PROBE_LAYERS]
    for gpu_name, precision, library, selection in _PROBE_RUNS:
        gpu = load_gpu(gpu_name)
        for layer in layers:
            for phase in PHASES:
                r = estimate_layer(gpu, layer, phase, precision, selection=selection, library=library)  # type: ignore[arg-type]
                d = GpuLayerDetails.of(r)
                lines.append(f"{gpu_name} {precision} {library} {selection} {layer.name} {phase} "
                             f"{r.time_s:.6g} {d.algo} {int(d.tensor_cores)}")
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


# --- the fit -------------------------------------------------------------------------------------------------

# The loss turns from squared to absolute beyond this |ln(pred/meas)| (≈ 10 %): the scores count
# |ln(pred/meas)|, and a few rows the physical model misses by 2–4× would otherwise steer the fit.
HUBER_DELTA = 0.1


@dataclass(frozen=True)
class FitRow:
    """One measured (layer, phase): its features, the physical model's kernel time and harness host time
    (the prediction is ``kernel_s · factor + host_s``), the measured time, its GPU (the LOO fold) and its
    group (file, precision and phase: each group weighs the same in the fit and the scores)."""

    phi: tuple[float, ...]
    kernel_s: float
    host_s: float
    measured_s: float
    gpu: str
    group: str


@dataclass(frozen=True)
class _Rows:
    """Fit rows as arrays (``group_weight``: 1 / the rows of the row's group, so each group sums to 1)."""

    phi: np.ndarray
    log_kernel: np.ndarray
    host: np.ndarray
    log_measured: np.ndarray
    group_weight: np.ndarray
    gpu: np.ndarray
    group: np.ndarray

    @classmethod
    def of(cls, rows: Sequence[FitRow]) -> _Rows:
        groups = np.array([r.group for r in rows])
        _names, index, counts = np.unique(groups, return_inverse=True, return_counts=True)
        return cls(np.array([r.phi for r in rows], dtype=float), np.log([r.kernel_s for r in rows]),
                   np.array([r.host_s for r in rows]), np.log([r.measured_s for r in rows]),
                   1.0 / counts[index], np.array([r.gpu for r in rows]), groups)

    def where(self, mask: np.ndarray) -> _Rows:
        return _Rows(self.phi[mask], self.log_kernel[mask], self.host[mask], self.log_measured[mask],
                     self.group_weight[mask], self.gpu[mask], self.group[mask])


@dataclass(frozen=True)
class _Design:
    """Fit rows with standardised features (unit weighted variance; constant ones dropped)."""

    rows: _Rows
    z: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    used: np.ndarray


def _design(rows: _Rows) -> _Design:
    weight = rows.group_weight
    mean = weight @ rows.phi / weight.sum()
    std = np.sqrt(weight @ (rows.phi - mean) ** 2 / weight.sum())
    used = std > 1e-9
    scale = np.where(used, std, 1.0)
    return _Design(rows, ((rows.phi - mean) / scale)[:, used], mean, scale, used)


def _huber(residual: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """2·Huber loss of each residual and its IRLS weight ψ(r)/r (quadratic within ``delta``, linear beyond)."""
    size = np.abs(residual)
    inside = size <= delta
    return (np.where(inside, residual**2, 2 * delta * size - delta**2),
            np.where(inside, 1.0, delta / np.maximum(size, 1e-300)))


def _gauss_newton(d: _Design, ridge_lambda: float, delta: float, iterations: int = 100) -> np.ndarray:
    """θ = (b, w) minimising Σ weight·2·Huber_δ(ln(k·e^(b + w·z) + h) − ln m) + λ·|w|² (b unpenalised).

    Each step linearises ``ln(k·e^η + h)`` around the current η and reweights every row by ψ(r)/r
    (Gauss–Newton with iteratively reweighted least squares, halving a step that does not descend).
    Without host time and with every |r| ≤ δ it is ordinary ridge regression in log space, solved in one
    step; beyond δ a row's pull grows like |ln(pred/meas)|, the error the scores count."""
    x = np.hstack([np.ones((len(d.z), 1)), d.z])
    penalty = np.diag([0.0] + [ridge_lambda] * d.z.shape[1])
    theta = np.zeros(x.shape[1])

    rows = d.rows

    def objective(t: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        kernel = np.exp(rows.log_kernel + x @ t)
        residual = np.log(kernel + rows.host) - rows.log_measured
        value = float(rows.group_weight @ _huber(residual, delta)[0] + t @ penalty @ t)
        return value, residual, kernel / (kernel + rows.host)

    value, residual, share = objective(theta)
    for _ in range(iterations):
        jac = x * share[:, None]
        w = rows.group_weight * _huber(residual, delta)[1]
        step = np.linalg.solve(jac.T @ (jac * w[:, None]) + penalty, -(jac.T @ (w * residual) + penalty @ theta))
        for _halving in range(30):
            new_value, new_residual, new_share = objective(theta + step)
            if new_value <= value + 1e-15:
                break
            step = step / 2
        theta, value, residual, share = theta + step, new_value, new_residual, new_share
        if float(np.abs(step).max()) < 1e-9:
            break
    return theta


def fit_table(rows: Sequence[FitRow], ridge_lambda: float, fingerprint: str = "",
              provenance: Mapping[str, Any] | None = None, names: Sequence[str] = FEATURE_NAMES) -> CorrectionTable:
    """The ridge fit at one λ (per standardised feature; each group's rows sum to weight 1), in raw units
    (``names``: the features of ``FitRow.phi``)."""
    return _fit(_Rows.of(rows), ridge_lambda, names, fingerprint, provenance)


def _fit(rows: _Rows, ridge_lambda: float, names: Sequence[str], fingerprint: str = "",
         provenance: Mapping[str, Any] | None = None) -> CorrectionTable:
    if len(names) != rows.phi.shape[1]:
        raise ValueError(f"{len(names)} feature names for rows of {rows.phi.shape[1]} features")
    d = _design(rows)
    theta = _gauss_newton(d, ridge_lambda, HUBER_DELTA)
    weights = np.zeros(len(d.used))
    weights[d.used] = theta[1:] / d.scale[d.used]
    intercept = float(theta[0] - weights @ d.mean)
    return CorrectionTable(tuple(names), intercept, tuple(float(w) for w in weights), fingerprint, ridge_lambda,
                           dict(provenance or {}))


def predicted_s(table: CorrectionTable | None, row: FitRow) -> float:
    """A row's prediction: the physical kernel time times the factor (1 without a table), plus host time."""
    factor = 1.0 if table is None else math.exp(table.log_factor(np.array(row.phi)))
    return row.kernel_s * factor + row.host_s


def group_errors(table: CorrectionTable | None, rows: Sequence[FitRow]) -> dict[str, float]:
    """Geomean |error| = exp(mean |ln(pred/meas)|) − 1 per group (in the order the groups first appear)."""
    return _group_errors(table, _Rows.of(rows))


def _group_errors(table: CorrectionTable | None, rows: _Rows) -> dict[str, float]:
    log_factor = 0.0 if table is None else table.intercept + rows.phi @ np.array(table.weights)
    size = np.abs(np.log(np.exp(rows.log_kernel + log_factor) + rows.host) - rows.log_measured)
    return {g: math.exp(float(size[rows.group == g].mean())) - 1 for g in dict.fromkeys(rows.group.tolist())}


def _mean(errors: Mapping[str, float]) -> float:
    return sum(errors.values()) / len(errors)


def leave_one_gpu_out(rows: Sequence[FitRow], ridge_lambda: float | Callable[[Sequence[FitRow]], float],
                      names: Sequence[str] = FEATURE_NAMES) -> tuple[dict[str, float], dict[str, float]]:
    """Each GPU's groups scored with a table fitted on the other GPUs' rows: (group → error, GPU → λ).

    ``ridge_lambda`` is a fixed λ or a rule choosing it from the training rows alone (nested LOO);
    ``names``: the features of ``FitRow.phi``."""
    if callable(ridge_lambda):
        lambdas = {gpu: ridge_lambda([r for r in rows if r.gpu != gpu]) for gpu in dict.fromkeys(r.gpu for r in rows)}
    else:
        lambdas = dict.fromkeys(dict.fromkeys(r.gpu for r in rows), ridge_lambda)
    return _leave_one_gpu_out(_Rows.of(rows), lambdas, names), lambdas


def _leave_one_gpu_out(rows: _Rows, lambdas: Mapping[str, float], names: Sequence[str]) -> dict[str, float]:
    errors: dict[str, float] = {}
    for gpu, lam in lambdas.items():
        held_out = rows.gpu == gpu
        errors |= _group_errors(_fit(rows.where(~held_out), lam, names), rows.where(held_out))
    return errors


# λ candidates (per standardised feature, in units of one group's total weight).
LAMBDA_GRID = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)


def choose_lambda(rows: Sequence[FitRow], grid: Sequence[float] = LAMBDA_GRID,
                  names: Sequence[str] = FEATURE_NAMES) -> float:
    """The λ of ``grid`` whose leave-one-GPU-out mean group error over ``rows`` is lowest (ties: the larger λ)."""
    arrays = _Rows.of(rows)
    gpus = dict.fromkeys(arrays.gpu.tolist())
    scores = {lam: _mean(_leave_one_gpu_out(arrays, dict.fromkeys(gpus, lam), names)) for lam in grid}
    return min(scores, key=lambda lam: (round(scores[lam], 9), -lam))


__all__ = ["CORRECTIONS", "DEFAULT_CORRECTION", "FEATURES", "FEATURE_NAMES", "Correction", "CorrectionTable",
           "FitRow", "LearnedCorrection", "choose_lambda", "features", "fit_table", "group_errors",
           "leave_one_gpu_out", "model_fingerprint", "predicted_s", "resolve_correction", "shipped_table"]
