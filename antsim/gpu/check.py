"""The GPU model against measured layer times: per-row comparison, per-phase error summary, worst rows.

The error of a model against measurements is the **geometric-mean absolute error**
``exp(mean |ln(pred / meas)|) − 1``: symmetric in over- and under-prediction (×2 and ×0.5 both
count as 100 %), and robust to the wide range of layer times. ``bias`` is ``exp(mean ln(pred / meas))``
(> 1: the model predicts too slow on average).
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from antsim.errors import AntsimError
from antsim.gpu.estimate import KernelCorrection, estimate_layer, layer_plans
from antsim.gpu.menus import DEFAULT_LIBRARY, DEFAULT_SELECTION, family_of
from antsim.gpu.model import CALIBRATION, Calibration
from antsim.gpu.spec import GpuSpec
from antsim.measure.deepbench import MeasuredLayer
from antsim.results import GpuLayerDetails, MeasuredLayerDetails, NetworkResult, write_text_atomic
from antsim.vocabulary import Library, Phase, Precision, Selection
from antsim.workloads.gemm import Gemm as GemmLayer
from antsim.workloads.layers import PHASES, Layer


@dataclass(frozen=True)
class CheckRow:
    """One (layer, phase): measured and predicted seconds, the recorded algorithm and what the model ran.

    ``predicted_s`` includes the check's per-call host overhead; ``model_algo`` is the cuDNN name of
    the formulation the model kept and ``M``, ``N``, ``K`` its GEMM.
    """

    name: str
    phase: Phase
    measured_s: float
    predicted_s: float
    implicit: bool | None
    algo: str
    M: int
    N: int
    K: int
    model_algo: str = ""
    tensor_cores: bool = False

    @property
    def ratio(self) -> float:
        return self.predicted_s / self.measured_s

    @property
    def abs_log_error(self) -> float:
        return abs(math.log(self.ratio))


@dataclass(frozen=True)
class Observation:
    """One measured (layer, phase): the layer (a conv ``Layer`` or a GEMM layer, at its batch), seconds,
    and what ran if known."""

    layer: Layer | GemmLayer
    phase: Phase
    measured_s: float
    implicit: bool | None = None
    algo: str = ""


def observations(measured: Sequence[MeasuredLayer]) -> list[Observation]:
    """The measured (layer, phase) pairs of DeepBench-style rows (``implicit`` from the forward algorithm)."""
    return [Observation(m.layer, phase, m.times_s[phase], m.implicit_gemm if m.algo else None, m.algo)
            for m in measured for phase in PHASES if phase in m.times_s]


def padded_channels(measured: Sequence[Observation], multiple: int) -> list[Observation]:
    """The observations with each conv's C and K rounded up to ``multiple``: the layer a harness that pads
    channels actually timed (DeepBench's ``conv_bench`` pads fp16 tensor-core runs to a multiple of 8).
    Unchanged for ``multiple`` 0; GEMM layers are never padded."""
    if multiple < 0:
        raise AntsimError(f"channel padding must be a multiple >= 0; got {multiple}", subject="pad_channels")
    if not multiple:
        return list(measured)
    return [replace(o, layer=replace(o.layer, C=-(-o.layer.C // multiple) * multiple,
                                     K=-(-o.layer.K // multiple) * multiple))
            if isinstance(o.layer, Layer) else o for o in measured]


def gemm_observations(measured: Sequence[Observation]) -> list[Observation]:
    """The 1×1, stride-1, unpadded convolutions of ``measured`` restated as GEMM layers.

    Such a convolution is the product ``Y (K × N·H·W) = W (K × C) · X (C × N·H·W)`` — a linear layer
    over the batch's pixels (``Gemm(M=K, N=N·H·W, K=C)``), whose three phases are the conv's three
    phases — so its measured times check the GEMM-layer path (``antsim.gpu.gemm_layer``)."""
    out = []
    for o in measured:
        layer = o.layer
        if isinstance(layer, GemmLayer) or (layer.R, layer.S, layer.stride_h, layer.stride_w, layer.pad_h,
                                            layer.pad_w) != (1, 1, 1, 1, 0, 0):
            continue
        gemm = GemmLayer(layer.name, M=layer.K, N=layer.N * layer.H * layer.W, K=layer.C, batch=layer.N)
        out.append(Observation(gemm, o.phase, o.measured_s, o.implicit, o.algo))
    return out


def result_observations(measured: NetworkResult, layers: Sequence[Layer | GemmLayer]) -> list[Observation]:
    """The timed records of a measured ``NetworkResult``, joined by layer name to ``layers``."""
    by_name = {layer.name: layer for layer in layers}
    return [Observation(by_name[rec.layer], rec.phase, rec.time_s, None, MeasuredLayerDetails.of(rec).algorithm or "")
            for rec in measured.records if rec.time_s > 0]


def check_measured(gpu: GpuSpec, measured: Sequence[Observation], precision: Precision,
                   calibration: Calibration = CALIBRATION, structured: str | None = None,
                   selection: Selection = DEFAULT_SELECTION, library: Library = DEFAULT_LIBRARY,
                   host_overhead_s: float | Sequence[float] = 0.0,
                   correction: KernelCorrection | None = None) -> list[CheckRow]:
    """Predict every measured (layer, phase) (layers carry their own batch; ``structured``,
    ``selection``, ``library``, ``correction``: see ``estimate_layer``; heuristic selection follows each
    row's recorded forward algorithm).

    ``host_overhead_s`` is the measurement harness's per-call host time that lands inside the timed
    interval (a framework call timed with CUDA events around it: the GPU idles while the host
    dispatches), added to every prediction: a property of the harness, not of the GPU. One value for every
    row, or one per row (``harness_host_times_s``: a host time that drifts along the collection sequence).
    """
    hosts = per_row_host_s(host_overhead_s, len(measured))
    rows = []
    for o, host in zip(measured, hosts, strict=True):
        r = estimate_layer(gpu, o.layer, o.phase, precision, calibration, structured, selection, library, o.algo,
                           correction)
        d = GpuLayerDetails.of(r)
        rows.append(CheckRow(o.layer.name, o.phase, o.measured_s, r.time_s + host, o.implicit, o.algo,
                             d.M, d.N, d.K, d.algo, d.tensor_cores))
    return rows


# A harness's per-call host time is read off its own least-work rows, as one would time an empty call on
# the machine: the share of a file's rows with the fewest MACs (at least HOST_PROBE_MIN_ROWS) whose kernels
# are a small part of their measured time (10–50 µs predicted on NeuSight's, against 60–700 µs measured)
# [assumption: 5 %; a file's every-12th-row copy in tests/data gives the full file's value within 21 %,
# 2 % and 10 % move the errors by at most 0.5 point; docs/gpu_scale.md §7].
HOST_PROBE_SHARE = 0.05
HOST_PROBE_MIN_ROWS = 5  # [assumption] a median of fewer rows is one row's jitter (10th–90th percentile 5x apart)


def harness_host_time_s(gpu: GpuSpec, measured: Sequence[Observation], precision: Precision,
                        calibration: Calibration = CALIBRATION, selection: Selection = DEFAULT_SELECTION,
                        library: Library = DEFAULT_LIBRARY) -> float:
    """The per-call host time inside each timed interval of the harness that measured ``measured``: the
    median, over its least-work rows (``HOST_PROBE_SHARE`` of them, fewest MACs first), of measured time
    minus the model's kernel time; never below 0. A property of the harness and its host machine (PyTorch
    dispatch, cuDNN's plan lookup), not of the GPU or of any other file: the check's host overhead."""
    gaps = _probe_gaps(gpu, measured, precision, calibration, selection, library)
    return max(0.0, statistics.median(gap for _, gap in gaps))


def _probe_gaps(gpu: GpuSpec, measured: Sequence[Observation], precision: Precision, calibration: Calibration,
                selection: Selection, library: Library) -> list[tuple[int, float]]:
    """(row's place in ``measured``, measured − model kernel time) of the least-work rows (``HOST_PROBE_SHARE`` of
    them, at least ``HOST_PROBE_MIN_ROWS``, fewest MACs first): what the harness host time is read off.

    Raises:
        AntsimError: no rows.
    """
    if not measured:
        raise AntsimError("harness host time: no measured rows to read it from")
    count = max(HOST_PROBE_MIN_ROWS, round(HOST_PROBE_SHARE * len(measured)))
    probes = sorted(range(len(measured)), key=lambda i: measured[i].layer.macs)[:count]
    rows = check_measured(gpu, [measured[i] for i in probes], precision, calibration, selection=selection,
                          library=library)
    return [(i, r.measured_s - r.predicted_s) for i, r in zip(probes, rows, strict=True)]


def per_row_host_s(host_overhead_s: float | Sequence[float], rows: int) -> list[float]:
    """The host time of each of ``rows`` rows: one value repeated, or a sequence of exactly ``rows`` values.

    Raises:
        AntsimError: a sequence of another length (a host time per row must name every row).
    """
    if isinstance(host_overhead_s, (int, float)):
        return [float(host_overhead_s)] * rows
    hosts = [float(h) for h in host_overhead_s]
    if len(hosts) != rows:
        raise AntsimError(f"host time per row: {len(hosts)} values for {rows} rows", subject="host_overhead_s")
    return hosts


def harness_host_times_s(gpu: GpuSpec, measured: Sequence[Observation], precision: Precision,
                         calibration: Calibration = CALIBRATION, selection: Selection = DEFAULT_SELECTION,
                         library: Library = DEFAULT_LIBRARY) -> list[float]:
    """The per-call host time inside each row's timed interval for a harness whose host time drifts along its
    collection sequence (``measured`` in the order it was collected): the Theil–Sen line (median of the
    pairwise slopes, Sen 1968, JASA 63:1379; robust to the probes' jitter) of measured − model kernel time
    against the row's place in the sequence, over the least-work rows (``HOST_PROBE_SHARE``, as
    ``harness_host_time_s``), evaluated at every row, never below 0.

    NeuSight's ``collect.py`` (GitHub ``trsharm25/NeuSight``, ``neusight/Dataset/collect.py``) times each
    configuration in one long-lived process and then opens a ``torch.profiler.profile()`` session on it, one
    session per configuration; the profiler sessions of one process are known not to leave it as they found it
    (GitHub ``pytorch/pytorch`` issue 175790: each later session's GPU activity is shifted further). On all
    three NeuSight files the gap over the model's kernel on the least-work rows grows linearly with the row's
    place in the file, from ~45 µs on the first rows to 340 µs (A100), 770 µs (P100 PCIe) and 755 µs (P4) on
    the last, with a lag-1 autocorrelation of 0.94–0.98 along the file and none with N, C, K or the plane
    (docs/gpu_scale.md §8) [assumption: linear; the A100's growth is slightly convex].

    Raises:
        AntsimError: no rows.
    """
    points = _probe_gaps(gpu, measured, precision, calibration, selection, library)
    slopes = [(g2 - g1) / (i2 - i1) for k, (i1, g1) in enumerate(points) for i2, g2 in points[k + 1:] if i2 != i1]
    slope = statistics.median(slopes) if slopes else 0.0
    base = statistics.median(g - slope * i for i, g in points)
    return [max(0.0, base + slope * i) for i in range(len(measured))]


def oracle_rows(gpu: GpuSpec, measured: Sequence[Observation], precision: Precision,
                calibration: Calibration = CALIBRATION, structured: str | None = None,
                library: Library = DEFAULT_LIBRARY, host_overhead_s: float | Sequence[float] = 0.0) -> list[CheckRow]:
    """Like ``check_measured``, but each prediction is the candidate plan *closest* to the measurement.

    Of all the plans the model weighs for a (layer, phase) — GEMM formulation × tile × split-K — it
    keeps the fastest; a perfect model of the library's kernel heuristics could keep any of them.
    The error of these rows is therefore the floor for every selection rule over the model's plan
    space: what it leaves is a missing kernel or missing physics, not a wrong choice.
    """
    rows = []
    for o, host in zip(measured, per_row_host_s(host_overhead_s, len(measured)), strict=True):
        plan, g = min(layer_plans(gpu, o.layer, o.phase, precision, calibration, structured, library),
                      key=lambda pg: abs(math.log((pg[0].time_s + host) / o.measured_s)))
        rows.append(CheckRow(o.layer.name, o.phase, o.measured_s, plan.time_s + host, o.implicit, o.algo,
                             g.M, g.N, g.K, g.algo, plan.tensor_cores))
    return rows


def family_rows(rows: Sequence[CheckRow]) -> dict[str, list[CheckRow]]:
    """Rows grouped by the family of the algorithm the measurement recorded (fprop only: backward
    algorithms are not recorded), ``unknown`` when none is."""
    out: dict[str, list[CheckRow]] = {}
    for r in rows:
        family = (family_of(r.algo) if r.phase == "fprop" and r.algo else None) or "unknown"
        out.setdefault(family, []).append(r)
    return out


def batch_inversions(measured: Sequence[MeasuredLayer]) -> list[tuple[str, str, int, int, float, float]]:
    """Same layer, phase, GPU and precision measured at two batch sizes where the *smaller* batch took longer.

    Any kernel runs a batch of N in no more time than a batch of 2N (it can run the larger grid's
    first half), so a library that timed every algorithm and kept the fastest would not show this;
    one that picks a kernel by heuristics may. Returns (layer, phase, small N, large N, small-N
    seconds, large-N seconds) for each inverted pair.
    """
    by_shape: dict[tuple, list[MeasuredLayer]] = {}
    for m in measured:
        layer = m.layer
        shape = (m.gpu, m.precision, layer.C, layer.K, layer.H, layer.W, layer.R, layer.S, layer.stride, layer.pad)
        by_shape.setdefault(shape, []).append(m)
    inverted: dict[tuple, tuple[str, str, int, int, float, float]] = {}
    for group in by_shape.values():
        for small in group:
            for large in group:
                for phase in PHASES:
                    if small.layer.N < large.layer.N and phase in small.times_s and phase in large.times_s \
                            and small.times_s[phase] > large.times_s[phase]:
                        key = (phase, small.layer.N, large.layer.N, small.times_s[phase], large.times_s[phase])
                        inverted.setdefault(key, (small.layer.name, *key))
    return sorted(inverted.values())


@dataclass(frozen=True)
class PhaseError:
    """One phase's rows, geomean |error| and bias over its implicit-GEMM rows and over all its rows (NaN: none)."""

    phase: Phase
    n_implicit: int
    err_implicit: float
    bias_implicit: float
    n_all: int
    err_all: float
    bias_all: float


def summarize(rows: Sequence[CheckRow]) -> list[PhaseError]:
    """Per phase: rows, geomean |error| and bias over the implicit-GEMM rows (when known) and over all rows."""
    out = []
    for phase in PHASES:
        mine = [r for r in rows if r.phase == phase]
        if not mine:
            continue
        implicit = [r.ratio for r in mine if r.implicit]
        every = [r.ratio for r in mine]
        out.append(PhaseError(phase, len(implicit), geomean_abs_error(implicit), bias(implicit), len(every),
                              geomean_abs_error(every), bias(every)))
    return out


def worst(rows: Sequence[CheckRow], count: int = 5) -> list[CheckRow]:
    """The ``count`` rows with the largest |ln(pred/meas)|."""
    return sorted(rows, key=lambda r: (-r.abs_log_error, r.name, r.phase))[:count]


def write_check_csv(rows: Sequence[CheckRow], path: str | Path) -> None:
    """One line per (layer, phase): measured, predicted, ratio and the GEMM shape (written atomically)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["name", "phase", "measured_s", "predicted_s", "ratio", "abs_log_error", "implicit_gemm",
                     "algo", "M", "N", "K", "model_algo", "tensor_cores"])
    for r in rows:
        writer.writerow([r.name, r.phase, f"{r.measured_s:.6g}", f"{r.predicted_s:.6g}", f"{r.ratio:.4f}",
                         f"{r.abs_log_error:.4f}", "" if r.implicit is None else int(r.implicit), r.algo,
                         r.M, r.N, r.K, r.model_algo, int(r.tensor_cores)])
    write_text_atomic(path, buffer.getvalue())


def geomean_abs_error(ratios: Iterable[float]) -> float:
    """``exp(mean |ln r|) − 1`` of predicted/measured ratios (0.2 = 20 %); NaN for no ratios."""
    logs = [abs(math.log(r)) for r in ratios]
    return math.exp(math.fsum(logs) / len(logs)) - 1 if logs else math.nan


def bias(ratios: Iterable[float]) -> float:
    """``exp(mean ln r)`` of predicted/measured ratios; NaN for no ratios."""
    logs = [math.log(r) for r in ratios]
    return math.exp(math.fsum(logs) / len(logs)) if logs else math.nan
