"""DeepBench convolution CSVs: the one reader behind ``antsim gpu --check`` and ``read_results_csv``.

Columns (tests/data/deepbench/README.md): ``gpu, precision, source, W, H, C, N, K, R, S, pad_h,
pad_w, stride_h, stride_w, fwd_ms, dgrad_ms, wgrad_ms, fwd_algo``; one row per (layer shape,
precision). ``fwd_ms`` → fprop, ``dgrad_ms`` → dgrad, ``wgrad_ms`` → wgrad, in milliseconds. DeepBench
leaves dgrad empty or zero for input layers (not measured): such a phase is absent. Only the forward
algorithm cuDNN chose is recorded.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from antsim.errors import WorkloadError
from antsim.measure._csv import read_csv_rows
from antsim.vocabulary import Phase
from antsim.workloads.layers import Layer

DEEPBENCH_COLUMNS = ("gpu", "precision", "source", "W", "H", "C", "N", "K", "R", "S", "pad_h", "pad_w",
                     "stride_h", "stride_w", "fwd_ms", "dgrad_ms", "wgrad_ms", "fwd_algo")
PHASE_COLUMNS: dict[Phase, str] = {"fprop": "fwd_ms", "dgrad": "dgrad_ms", "wgrad": "wgrad_ms"}
_SHAPE_COLUMNS = DEEPBENCH_COLUMNS[3:14]
# ``source`` (benchmark family) and ``fwd_algo`` may be absent: layers are then named
# ``deepbench-<line>`` and the algorithm is unknown.
_OPTIONAL_COLUMNS = ("source", "fwd_algo")
REQUIRED_COLUMNS = tuple(c for c in DEEPBENCH_COLUMNS if c not in _OPTIONAL_COLUMNS)
# Measurement precision labels that are the same arithmetic as a model precision: DeepBench's T4 sheet
# calls FP16 storage with tensor-core math and FP32 accumulation ``fp16_mixed`` (deepbench/README.md),
# which is what the model's ``fp16`` is on a tensor-core GPU.
PRECISION_ALIASES: dict[str, tuple[str, ...]] = {"fp16": ("fp16", "fp16_mixed")}
# Algorithm labels as published, read as what they are: DeepBench's sheets carry the typo
# ``LICIT_PRECOMP_GEMM`` for ``IMPLICIT_PRECOMP_GEMM`` (deepbench/README.md).
ALGO_TYPOS = {"LICIT_PRECOMP_GEMM": "IMPLICIT_PRECOMP_GEMM"}


@dataclass(frozen=True)
class MeasuredLayer:
    """One measured layer: its shape and, per phase, the measured time (s).

    Attributes:
        layer: The convolution, named ``<source>-<line>`` (``deepbench-<line>`` without a source).
        times_s: Phase → measured seconds; a phase is absent when not measured (input-layer dgrad).
        precision: Precision label of the measurement (``fp32``, ``fp16_pseudo``, …) or "" if unknown.
        algo: Forward algorithm cuDNN chose (``IMPLICIT_PRECOMP_GEMM``, ``WINOGRAD``, …) or "".
        gpu: GPU label of the measurement or "".
        source: DeepBench's benchmark family (``Resnet``, ``DeepSpeech``, …) or "".
        line: Line of the CSV the row came from (0 when not read from a file).
    """

    layer: Layer
    times_s: Mapping[Phase, float] = field(default_factory=dict)
    precision: str = ""
    algo: str = ""
    gpu: str = ""
    source: str = ""
    line: int = 0

    @property
    def implicit_gemm(self) -> bool:
        """True when cuDNN ran an implicit-GEMM forward kernel (the rows the GPU model is judged on)."""
        return self.algo.upper().startswith("IMPLICIT")


def is_deepbench_header(header: Sequence[str]) -> bool:
    """True when a CSV header has DeepBench's three per-phase time columns."""
    return set(PHASE_COLUMNS.values()) <= {h.strip() for h in header}


def is_deepbench_csv(path: str | Path) -> bool:
    """True when the file's header has DeepBench's three per-phase time columns.

    Raises:
        WorkloadError: an unreadable file.
    """
    try:
        with Path(path).open(newline="") as handle:
            header = next(csv.reader(handle), [])
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise WorkloadError(f"{path}: not a readable CSV ({exc})") from None
    return is_deepbench_header(header)


def read_deepbench_csv(path: str | Path, precision: str | None = None) -> list[MeasuredLayer]:
    """Read a DeepBench conv CSV; with ``precision``, only that precision's rows.

    ``precision=None`` keeps every row. Use ``"default"`` for ``fp32`` when present, else the only
    precision in the file. A model precision also reads its measurement aliases (``fp16`` reads
    ``fp16_mixed`` rows, ``PRECISION_ALIASES``).

    Raises:
        WorkloadError: missing file or column, non-numeric or negative value, invalid layer shape, a
            precision the file lacks, or ``"default"`` on a file of several precisions none fp32.
    """
    path = Path(path)
    rows = [_row(path, line, row) for line, row in _read_rows(path)]
    if precision is None:
        return rows
    available = sorted({m.precision for m in rows})
    if precision == "default":
        if "fp32" not in available and len(available) > 1:
            raise WorkloadError(f"{path}: column precision: several precisions ({', '.join(available)}); choose one")
        precision = "fp32" if "fp32" in available else available[0]
    labels = PRECISION_ALIASES.get(precision, (precision,))
    if not set(labels) & set(available):
        raise WorkloadError(f"{path}: column precision: no rows of {precision!r}; the file has {', '.join(available)}")
    return [m for m in rows if m.precision in labels]


def _read_rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    header, rows = read_csv_rows(path, "measurement CSV")
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise WorkloadError(f"{path}: DeepBench CSV lacks column(s) {', '.join(missing)}")
    return rows


def _row(path: Path, line: int, row: dict[str, str]) -> MeasuredLayer:
    ints = {key: _integer(path, line, key, row[key]) for key in _SHAPE_COLUMNS}
    source = row.get("source", "")
    name = f"{source.replace(' ', '_') or 'deepbench'}-{line}"
    try:
        layer = Layer(name=name, N=ints["N"], C=ints["C"], K=ints["K"], H=ints["H"], W=ints["W"], R=ints["R"],
                      S=ints["S"], stride=(ints["stride_h"], ints["stride_w"]), pad=(ints["pad_h"], ints["pad_w"]))
    except WorkloadError as exc:
        raise WorkloadError(f"{path}: line {line}: {exc}") from None
    times = {}
    for phase, column in PHASE_COLUMNS.items():
        ms = _milliseconds(path, line, column, row[column])
        if ms > 0:  # empty/zero: not measured (DeepBench's input layers have no dgrad)
            times[phase] = ms * 1e-3
    algo = row.get("fwd_algo", "").strip()
    return MeasuredLayer(layer, times, row["precision"], ALGO_TYPOS.get(algo, algo), row["gpu"], source, line)


def _integer(path: Path, line: int, column: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise WorkloadError(f"{path}: line {line}: column {column} must be an integer; got {text!r}") from None


def _milliseconds(path: Path, line: int, column: str, text: str) -> float:
    if text == "":
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise WorkloadError(f"{path}: line {line}: column {column} must be a number; got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise WorkloadError(f"{path}: line {line}: column {column} must be a finite number >= 0; got {text!r}")
    return value


def distinct_layers(rows: Sequence[MeasuredLayer]) -> list[Layer]:
    """The layers of ``rows`` with each shape (batch included) once, first occurrence kept."""
    layers, seen = [], set()
    for m in rows:
        layer = m.layer
        shape = (layer.N, layer.C, layer.K, layer.H, layer.W, layer.R, layer.S, layer.stride, layer.pad)
        if shape not in seen:
            seen.add(shape)
            layers.append(layer)
    return layers
