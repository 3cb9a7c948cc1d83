"""Measured and external per-layer results read from CSV files into a ``NetworkResult``.

Two formats are read (chosen from the header):

* **antsim CSV** (what ``antsim measure`` writes; also the format for any external model's outputs):
  columns ``name, phase, time_s`` and optionally ``energy_j``; optionally the layer shape
  ``N, C, K, H, W, R, S, stride, pad`` (with ``stride_h, stride_w, pad_h, pad_w`` overriding the square
  values). Any other column (``device``, ``device_name``, ``time_min_s``, ``algorithm``, …) is kept in the
  record's ``details``; columns whose value is the same on every row also go to the result's ``meta``.
* **DeepBench CSV** (read by ``antsim.measure.deepbench``): one row per (layer shape, precision), each
  giving up to three records (fprop, dgrad, wgrad; milliseconds → seconds; an input layer's unmeasured
  dgrad has no record). Only the rows of one precision are used (``fp32`` when present, unless
  ``precision`` says otherwise); layers are named ``<source>-<line>``, so a workload from
  ``read_deepbench_layers`` joins by name and any other workload by shape.

Joining: each workload layer is looked up by name first; when its name is not in the CSV and the CSV
has shape columns, by its shape (batch included). A row found by name whose shape columns disagree
with the layer is an error, so a measurement at another batch size is never silently compared.
Several rows of one shape: the first in file order is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from antsim.errors import WorkloadError
from antsim.measure._csv import read_csv_rows
from antsim.measure.deepbench import distinct_layers, is_deepbench_header, read_deepbench_csv
from antsim.results import LayerResult, MeasuredLayerDetails, NetworkResult, WorkloadEcho
from antsim.vocabulary import Phase
from antsim.workloads.layers import PHASES, Layer

SHAPE_COLUMNS = ("N", "C", "K", "H", "W", "R", "S", "stride", "pad")
_HW_COLUMNS = ("stride_h", "stride_w", "pad_h", "pad_w")
_CORE_COLUMNS = ("name", "phase", "time_s", "energy_j")

ShapeKey = tuple[int, ...]


def shape_key(layer: Layer) -> ShapeKey:
    """The join key of a layer: ``(N, C, K, H, W, R, S, stride_h, stride_w, pad_h, pad_w)``."""
    return (layer.N, layer.C, layer.K, layer.H, layer.W, layer.R, layer.S,
            layer.stride_h, layer.stride_w, layer.pad_h, layer.pad_w)


def read_results_csv(path: str | Path, layers: Sequence[Layer], design: str | None = None,
                     backend: str = "measured", precision: str | None = None,
                     phases: Sequence[Phase] | None = None) -> NetworkResult:
    """Read a measurement / external-model CSV (antsim or DeepBench format) for a workload.

    Args:
        path: The CSV file.
        layers: The workload, in network order, at the batch size that was measured.
        design: Name of the design; default from the file (``device:device_name`` columns, DeepBench's
            ``gpu`` column, else the file stem).
        backend: ``"measured"`` (default) or ``"external"`` (a model's outputs).
        precision: DeepBench only: which ``precision`` rows to use (default ``fp32`` if present).
        phases: Phases required for every layer (default: every phase the file has, in PHASES order).

    Returns:
        One record per (layer, phase) in workload order; ``time_s`` in seconds, ``energy_j`` in joules
        when the file has it.

    Raises:
        WorkloadError: missing/unreadable file, missing columns, bad values, or a workload layer (or
            phase) the file lacks — the message names the first missing layer.
    """
    path = Path(path)
    header, rows = read_csv_rows(path, "results CSV")
    if not layers:
        raise WorkloadError(f"{path}: the workload has no layers")
    if is_deepbench_header(header):
        table, meta = _deepbench_table(path, precision)
        default_design = str(meta.get("gpu", path.stem))
    else:
        table, meta = _antsim_table(path, header, rows)
        default_design = _design_from_meta(meta, path)
    wanted = tuple(p for p in PHASES if p in (phases if phases is not None else table.phases))
    records = [record for layer in layers for record in table.records(layer, wanted)]
    workload = WorkloadEcho.of(network=path.stem, layers=[layer.to_dict() for layer in layers],
                               batch=layers[0].N, phases=list(wanted))
    spec = {"source": str(path), "format": table.format}
    return NetworkResult(design=design or default_design, backend=backend, records=tuple(records),
                         spec=spec, workload=workload, meta=meta)


def measured_batch(path: str | Path) -> tuple[int, str] | None:
    """``(N, "<path> column N")`` when an antsim-format CSV's ``N`` column holds one batch size, else None.

    A CSV joined to a workload by layer name sets that workload's batch unless ``--batch`` is given, so a
    measurement at batch 8 is never joined to layers at batch 1. DeepBench CSVs carry their own layers.

    Raises:
        WorkloadError: an unreadable CSV, or an ``N`` cell that is not an integer.
    """
    path = Path(path)
    header, rows = read_csv_rows(path, "results CSV")
    if is_deepbench_header(header) or "N" not in header:
        return None
    batches = {_number(path, line, "N", row.get("N", ""), int) for line, row in rows}
    return (batches.pop(), f"{path} column N") if len(batches) == 1 else None


class _Table:
    """Rows of one CSV indexed by layer name and by shape; builds records for workload layers."""

    def __init__(self, path: Path, fmt: str, has_shape: bool) -> None:
        self.path, self.format, self.has_shape = path, fmt, has_shape
        self.by_name: dict[str, dict[str, LayerResult]] = {}
        self.shape_of: dict[str, ShapeKey] = {}
        self.by_shape: dict[ShapeKey, dict[str, LayerResult]] = {}
        self.phases: set[Phase] = set()

    def add(self, name: str, shape: ShapeKey | None, record: LayerResult) -> None:
        self.phases.add(record.phase)
        self.by_name.setdefault(name, {}).setdefault(record.phase, record)
        if shape is not None:
            self.shape_of.setdefault(name, shape)
            self.by_shape.setdefault(shape, {}).setdefault(record.phase, record)

    def records(self, layer: Layer, phases: Sequence[Phase]) -> list[LayerResult]:
        key = shape_key(layer)
        if layer.name in self.by_name:
            found = self.by_name[layer.name]
            if self.has_shape and self.shape_of.get(layer.name, key) != key:
                raise WorkloadError(
                    f"{self.path}: layer {layer.name!r}: CSV shape {_fmt(self.shape_of[layer.name])} differs "
                    f"from the workload's {_fmt(key)} (another batch size?)")
        elif self.has_shape and key in self.by_shape:
            found = self.by_shape[key]
        else:
            how = "by name or shape" if self.has_shape else "by name (the CSV has no shape columns)"
            raise WorkloadError(f"{self.path}: layer {layer.name!r} {_fmt(key)} not found {how}")
        out = []
        for phase in phases:
            if phase not in found:
                if self.format == "deepbench":
                    continue  # DeepBench did not measure it (input layer); documented in the module doc
                raise WorkloadError(f"{self.path}: layer {layer.name!r} has no {phase} row")
            r = found[phase]
            out.append(LayerResult(layer=layer.name, phase=phase, time_s=r.time_s, energy_j=r.energy_j,
                                   details=r.details))
        return out


def _fmt(key: ShapeKey) -> str:
    n, c, k, h, w, r, s, sh, sw, ph, pw = key
    return f"(N={n} C={c} K={k} H={h} W={w} R={r} S={s} stride={sh}x{sw} pad={ph}x{pw})"


def _number(path: Path, line: int, column: str, text: str, kind: type = float) -> Any:
    try:
        value = kind(text)
    except ValueError:
        raise WorkloadError(f"{path}: line {line}: column {column} must be a number; got {text!r}") from None
    if kind is float and not (value >= 0 and value != float("inf")):
        raise WorkloadError(f"{path}: line {line}: column {column} must be a finite number >= 0;"
                            f" got {text!r}")
    return value


def _row_shape(path: Path, line: int, row: dict[str, str]) -> ShapeKey:
    ints = {c: _number(path, line, c, row.get(c, ""), int)
            for c in ("N", "C", "K", "H", "W", "R", "S")}
    hw = {}
    pairs = (("stride_h", "stride"), ("stride_w", "stride"), ("pad_h", "pad"), ("pad_w", "pad"))
    for column, square in pairs:
        text = row.get(column) or row.get(square, "")
        hw[column] = _number(path, line, column if row.get(column) else square, text, int)
    return (ints["N"], ints["C"], ints["K"], ints["H"], ints["W"], ints["R"], ints["S"],
            hw["stride_h"], hw["stride_w"], hw["pad_h"], hw["pad_w"])


def _columns(row: dict[str, str], skip: Sequence[str]) -> dict[str, float | str]:
    """The row's other non-empty columns in file order: numbers as floats, any other text kept."""
    out: dict[str, float | str] = {}
    for column, text in row.items():
        if column in skip or column == "" or text == "":
            continue
        try:
            out[column] = float(text)
        except ValueError:
            out[column] = text
    return out


def _constant_columns(rows: list[tuple[int, dict[str, str]]], skip: Sequence[str]) -> dict[str, Any]:
    first = rows[0][1]
    return {c: v for c, v in _columns(first, skip).items()
            if all(row.get(c, "") == first[c] for _, row in rows)}


def _antsim_table(path: Path, header: list[str], rows: list[tuple[int, dict[str, str]]]
                  ) -> tuple[_Table, dict[str, Any]]:
    missing = [c for c in ("name", "phase", "time_s") if c not in header]
    if missing:
        raise WorkloadError(f"{path}: header lacks column {missing[0]!r} (needs name, phase, time_s"
                            f"[, energy_j][, {','.join(SHAPE_COLUMNS)}]; or the DeepBench columns)")
    has_shape = all(c in header for c in SHAPE_COLUMNS)
    table = _Table(path, "antsim", has_shape)
    skip = (*_CORE_COLUMNS, *SHAPE_COLUMNS, *_HW_COLUMNS)
    for line, row in rows:
        phase = row["phase"]
        if phase not in PHASES:
            raise WorkloadError(f"{path}: line {line}: column phase must be one of {', '.join(PHASES)};"
                                f" got {phase!r}")
        if not row["name"]:
            raise WorkloadError(f"{path}: line {line}: column name is empty")
        energy = row.get("energy_j", "")
        time_s = _number(path, line, "time_s", row["time_s"])
        record = LayerResult(layer=row["name"], phase=phase, time_s=time_s,
                             energy_j=_number(path, line, "energy_j", energy) if energy else None,
                             details=MeasuredLayerDetails(_columns(row, skip)))
        table.add(row["name"], _row_shape(path, line, row) if has_shape else None, record)
    return table, _constant_columns(rows, skip)


def _deepbench_table(path: Path, precision: str | None) -> tuple[_Table, dict[str, Any]]:
    measured = read_deepbench_csv(path, precision or "default")
    table = _Table(path, "deepbench", has_shape=True)
    for m in measured:
        for phase, time_s in m.times_s.items():
            columns: dict[str, float | int | str] = {"source": m.source, "deepbench_line": m.line}
            if phase == "fprop" and m.algo:
                columns["algorithm"] = m.algo
            table.add(m.layer.name, shape_key(m.layer), LayerResult(layer=m.layer.name, phase=phase, time_s=time_s,
                                                                    details=MeasuredLayerDetails(columns)))
    meta = {"gpu": measured[0].gpu, "precision": measured[0].precision, "source_format": "deepbench"}
    return table, meta


def _design_from_meta(meta: dict[str, Any], path: Path) -> str:
    device, name = meta.get("device"), meta.get("device_name")
    if device and name:
        return f"{device}:{name}"
    return str(device or name or path.stem)


def read_deepbench_layers(path: str | Path, precision: str | None = None) -> list[Layer]:
    """The distinct layer shapes of a DeepBench CSV as a workload (names ``<source>-<line>``).

    Feed the result to ``read_results_csv(path, layers)`` to get DeepBench's times for them.

    Raises:
        WorkloadError: not a DeepBench CSV, or a row with an impossible shape.
    """
    return distinct_layers(read_deepbench_csv(path, precision or "default"))
