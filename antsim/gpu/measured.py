"""Measured GPU layer times: readers (DeepBench CSV, generic ``name,phase,time_s``) and error metrics.

The error of a model against measurements is the **geometric-mean absolute error**
``exp(mean |ln(pred / meas)|) − 1``: symmetric in over- and under-prediction (×2 and ×0.5 both
count as 100 %), and robust to the wide range of layer times. ``bias`` is ``exp(mean ln(pred / meas))``
(> 1: the model predicts too slow on average).

Generic ``name,phase,time_s`` files are read by ``antsim.measure.external.read_results_csv`` (joined
by layer name to a workload); this module reads DeepBench files on their own, since their rows carry
the layer shapes and need no workload.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from antsim.errors import WorkloadError
from antsim.workloads.layers import Layer

DEEPBENCH_COLUMNS = ("gpu", "precision", "source", "W", "H", "C", "N", "K", "R", "S", "pad_h", "pad_w",
                     "stride_h", "stride_w", "fwd_ms", "dgrad_ms", "wgrad_ms", "fwd_algo")
_PHASE_COLUMNS = {"fprop": "fwd_ms", "dgrad": "dgrad_ms", "wgrad": "wgrad_ms"}


@dataclass(frozen=True)
class MeasuredLayer:
    """One measured layer: its shape and, per phase, the measured time (s).

    Attributes:
        layer: The convolution (DeepBench W,H,C,N,K,R,S,pad,stride mapped onto ``Layer``).
        times_s: Phase → measured seconds; a phase is absent when not measured (input-layer dgrad).
        precision: Precision label of the measurement (``fp32``, ``fp16_pseudo``, …) or "" if unknown.
        algo: Forward algorithm cuDNN chose (``IMPLICIT_PRECOMP_GEMM``, ``WINOGRAD``, …) or "".
        gpu: GPU label of the measurement or "".
    """

    layer: Layer
    times_s: Mapping[str, float] = field(default_factory=dict)
    precision: str = ""
    algo: str = ""
    gpu: str = ""

    @property
    def implicit_gemm(self) -> bool:
        """True when cuDNN ran an implicit-GEMM forward kernel (the rows the model is judged on)."""
        return self.algo.upper().startswith("IMPLICIT")


def is_deepbench_csv(path: str | Path) -> bool:
    """True when the file's header is DeepBench's (see tests/data/deepbench/README.md)."""
    with Path(path).open(newline="") as handle:
        header = next(csv.reader(handle), [])
    return {"fwd_ms", "dgrad_ms", "wgrad_ms"} <= {h.strip() for h in header}


def read_deepbench_csv(path: str | Path) -> list[MeasuredLayer]:
    """Read a DeepBench conv CSV (one row per layer and precision; times in ms).

    Layers are named ``<source>-<line>`` (line of the CSV), unique in the file.

    Raises:
        WorkloadError: missing file or column, non-numeric value, invalid layer shape.
    """
    rows = _read_rows(path, DEEPBENCH_COLUMNS)
    return [_deepbench_row(Path(path), line, row) for line, row in rows]


def _deepbench_row(path: Path, line: int, row: dict[str, str]) -> MeasuredLayer:
    ints = {}
    for key in DEEPBENCH_COLUMNS[3:14]:
        try:
            ints[key] = int(row[key])
        except ValueError:
            raise WorkloadError(f"{path}: line {line}: column {key} must be an integer; got {row[key]!r}") from None
    name = f"{row['source'].replace(' ', '_')}-{line}"
    try:
        layer = Layer(name=name, N=ints["N"], C=ints["C"], K=ints["K"], H=ints["H"], W=ints["W"], R=ints["R"],
                      S=ints["S"], stride=(ints["stride_h"], ints["stride_w"]), pad=(ints["pad_h"], ints["pad_w"]))
    except WorkloadError as exc:
        raise WorkloadError(f"{path}: line {line}: {exc}") from None
    times = {}
    for phase, column in _PHASE_COLUMNS.items():
        ms = _float(path, line, column, row[column], allow_empty=True)
        if ms is not None and ms > 0:  # empty/zero dgrad: an input layer, not measured
            times[phase] = ms * 1e-3
    return MeasuredLayer(layer, times, row["precision"], row["fwd_algo"], row["gpu"])


def _read_rows(path: str | Path, required: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    path = Path(path)
    if not path.is_file():
        raise WorkloadError(f"{path}: measurement CSV not found")
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        header = [h.strip() for h in (reader.fieldnames or [])]
        missing = [c for c in required if c not in header]
        if missing:
            raise WorkloadError(f"{path}: header lacks column(s) {', '.join(missing)}; need {','.join(required)}")
        rows = [(line, {k.strip(): (v or "").strip() for k, v in row.items() if k is not None})
                for line, row in enumerate(reader, start=2)]
    if not rows:
        raise WorkloadError(f"{path}: no rows")
    return rows


def _float(path: Path, line: int, column: str, text: str, allow_empty: bool) -> float | None:
    if text == "" and allow_empty:
        return None
    try:
        value = float(text)
    except ValueError:
        raise WorkloadError(f"{path}: line {line}: column {column} must be a number; got {text!r}") from None
    if not math.isfinite(value):
        raise WorkloadError(f"{path}: line {line}: column {column} must be finite; got {text!r}")
    return value


def geomean_abs_error(ratios: Iterable[float]) -> float:
    """``exp(mean |ln r|) − 1`` of predicted/measured ratios (0.2 = 20 %); NaN for no ratios."""
    logs = [abs(math.log(r)) for r in ratios]
    return math.exp(math.fsum(logs) / len(logs)) - 1 if logs else math.nan


def bias(ratios: Iterable[float]) -> float:
    """``exp(mean ln r)`` of predicted/measured ratios; NaN for no ratios."""
    logs = [math.log(r) for r in ratios]
    return math.exp(math.fsum(logs) / len(logs)) if logs else math.nan
