"""Convolution layers (the workload unit) and the layers-CSV reader."""

from __future__ import annotations

import csv
import io
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from antsim.errors import WorkloadError
from antsim.results import write_text_atomic
from antsim.vocabulary import PHASES as PHASES  # re-exported here, where the phases were first defined
from antsim.workloads.gemm import GEMM_CSV_COLUMNS, GEMM_CSV_OPTIONAL, KINDS, Gemm, gemm_csv_cells, gemm_from_row


def _pair(value: int | tuple[int, int] | list[int], what: str, name: str) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair):
        raise WorkloadError(f"layer {name!r}: {what} must be an int or a pair of ints; got {value!r}")
    return pair


@dataclass(frozen=True)
class Layer:
    """One 2-D convolution layer, PyTorch ``conv2d`` semantics (cross-correlation).

    ``stride`` and ``pad`` are an int or an ``(h, w)`` pair; both are stored as pairs.
    Output plane: ``P = (H + 2·pad_h − R)//stride_h + 1``, likewise ``Q``.
    """

    name: str
    N: int
    C: int
    K: int
    H: int
    W: int
    R: int
    S: int
    stride: tuple[int, int] = field(default=(1, 1))
    pad: tuple[int, int] = field(default=(0, 0))

    def __post_init__(self) -> None:
        object.__setattr__(self, "stride", _pair(self.stride, "stride", self.name))
        object.__setattr__(self, "pad", _pair(self.pad, "pad", self.name))
        for key in ("N", "C", "K", "H", "W", "R", "S"):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise WorkloadError(f"layer {self.name!r}: {key} must be a positive int; got {value!r}")
        if min(self.stride) < 1 or min(self.pad) < 0:
            raise WorkloadError(
                f"layer {self.name!r}: stride must be >= 1 and pad >= 0; got stride={self.stride}, pad={self.pad}"
            )
        if self.P < 1 or self.Q < 1:
            raise WorkloadError(f"layer {self.name!r}: kernel larger than padded input; output {self.P}x{self.Q}")

    stride_h = property(lambda self: self.stride[0])
    stride_w = property(lambda self: self.stride[1])
    pad_h = property(lambda self: self.pad[0])
    pad_w = property(lambda self: self.pad[1])

    @property
    def P(self) -> int:
        """Output height."""
        return (self.H + 2 * self.pad[0] - self.R) // self.stride[0] + 1

    @property
    def Q(self) -> int:
        """Output width."""
        return (self.W + 2 * self.pad[1] - self.S) // self.stride[1] + 1

    @property
    def macs(self) -> int:
        """Dense multiply-accumulates of one phase (the same for fprop, dgrad and wgrad)."""
        return self.N * self.K * self.P * self.Q * self.C * self.R * self.S

    def with_batch(self, batch: int) -> Layer:
        """The same layer at another batch size."""
        return replace(self, N=batch)

    def to_dict(self) -> dict:
        """Plain dict with square stride/pad collapsed to ints (round-trips through ``Layer(**d)``)."""
        d = asdict(self)
        d["stride"] = self.stride[0] if self.stride[0] == self.stride[1] else list(self.stride)
        d["pad"] = self.pad[0] if self.pad[0] == self.pad[1] else list(self.pad)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Layer:
        kwargs: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}
        return cls(**kwargs)


def layer_from_dict(d: dict) -> Any:
    """A ``Layer`` or, for ``kind: gemm``, a ``Gemm`` from its ``to_dict`` form (a result's echoed layers)."""
    return Gemm.from_dict(d) if d.get("kind") == "gemm" else Layer.from_dict(d)


_CSV_REQUIRED = ("name", "N", "C", "K", "H", "W", "R", "S", "stride", "pad")
_CSV_OPTIONAL = ("stride_h", "stride_w", "pad_h", "pad_w")


def read_layers_csv(path: str | Path) -> list[Any]:
    """Read a layers CSV: header ``name,N,C,K,H,W,R,S,stride,pad`` (optional ``stride_h,stride_w,pad_h,pad_w``).

    With a ``kind`` column, each row is a ``conv`` (empty = conv) ``Layer`` or a ``gemm`` ``Gemm``
    (columns in ``antsim.workloads.gemm``); without one every row is a conv ``Layer``.

    Raises:
        WorkloadError: missing file, missing column, non-integer value or an invalid layer; the message
            names the file, the row and the column.
    """
    path = Path(path)
    if not path.is_file():
        raise WorkloadError(f"{path}: layers CSV not found")
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            header = [h.strip() for h in (reader.fieldnames or [])]
            check_unique_header(path, header)
            if "kind" in header:
                return _named_once(path, _read_kinds(path, header, reader))
            missing = [c for c in _CSV_REQUIRED if c not in header]
            unknown = [c for c in header if c not in _CSV_REQUIRED + _CSV_OPTIONAL]
            if missing or unknown:
                raise WorkloadError(
                    f"{path}: header must hold {','.join(_CSV_REQUIRED)} (optional {','.join(_CSV_OPTIONAL)});"
                    f" missing {missing}, unknown {unknown}"
                )
            layers = [_layer_from_row(path, line, row) for line, row in enumerate(reader, start=2)]
    except UnicodeDecodeError as exc:
        raise WorkloadError(f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x})") from None
    except csv.Error as exc:
        raise WorkloadError(f"{path}: not a readable CSV ({exc})") from None
    return _named_once(path, layers)


def _named_once(path: Path, layers: list[Any]) -> list[Any]:
    if not layers:
        raise WorkloadError(f"{path}: no layers")
    names = [layer.name for layer in layers]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise WorkloadError(f"{path}: duplicate layer names {dup}")
    return layers


_KIND_COLUMNS = ("name", "kind", *_CSV_REQUIRED[1:], *_CSV_OPTIONAL,
                 *(c for c in GEMM_CSV_COLUMNS + GEMM_CSV_OPTIONAL if c not in _CSV_REQUIRED))


def _read_kinds(path: Path, header: list[str], reader: csv.DictReader) -> list[Any]:
    """Rows of a CSV with a ``kind`` column: each a conv ``Layer`` or a ``Gemm`` by its kind cell."""
    unknown = [c for c in header if c not in _KIND_COLUMNS]
    if unknown:
        raise WorkloadError(f"{path}: unknown columns {unknown}; a CSV with a kind column takes"
                            f" {','.join(_KIND_COLUMNS)}")
    layers: list[Any] = []
    for line, raw in enumerate(reader, start=2):
        if None in raw:
            raise WorkloadError(f"{path}: line {line}: more cells than header columns")
        row = {k.strip(): (v or "").strip() for k, v in raw.items()}
        kind = row.get("kind") or "conv"
        if kind not in KINDS:
            raise WorkloadError(f"{path}: line {line}: column kind must be one of {', '.join(KINDS)}; got {kind!r}")
        if not row.get("name"):
            raise WorkloadError(f"{path}: line {line}: column name is empty")
        if kind == "gemm":
            layers.append(gemm_from_row(f"{path}: line {line}", row))
            continue
        missing = [c for c in _CSV_REQUIRED if c not in header]
        if missing:
            raise WorkloadError(f"{path}: line {line}: a conv row needs columns {missing}")
        layers.append(_layer_from_row(path, line, {k: v for k, v in row.items() if k in _CSV_REQUIRED + _CSV_OPTIONAL}))
    return layers


def check_unique_header(path: Path, header: list[str]) -> None:
    """Raise ``WorkloadError`` for a CSV header naming a column twice (csv.DictReader keeps only the last)."""
    seen: set[str] = set()
    for column in header:
        if column in seen:
            raise WorkloadError(f"{path}: header: column {column!r} appears twice")
        seen.add(column)


def _layer_from_row(path: Path, line: int, row: dict[str, str]) -> Layer:
    if None in row:  # csv.DictReader files cells beyond the header under the key None
        raise WorkloadError(f"{path}: line {line}: more cells than header columns")
    row = {k.strip(): (v or "").strip() for k, v in row.items()}
    values: dict[str, int] = {}
    for key in _CSV_REQUIRED[1:] + _CSV_OPTIONAL:
        text = row.get(key, "")
        if key in _CSV_OPTIONAL and text == "":
            continue
        try:
            values[key] = int(text)
        except ValueError:
            raise WorkloadError(f"{path}: line {line}: column {key} must be an integer; got {text!r}") from None
    stride = (values.pop("stride_h", values["stride"]), values.pop("stride_w", values["stride"]))
    pad = (values.pop("pad_h", values["pad"]), values.pop("pad_w", values["pad"]))
    values.pop("stride"), values.pop("pad")
    if not row.get("name"):
        raise WorkloadError(f"{path}: line {line}: column name is empty")
    try:
        return Layer(name=row["name"], stride=stride, pad=pad, **values)
    except WorkloadError as exc:
        raise WorkloadError(f"{path}: line {line}: {exc}") from None


def write_layers_csv(layers: list[Any], path: str | Path) -> None:
    """Write layers in the CSV format ``read_layers_csv`` reads (always with the h/w columns), atomically;
    with a ``kind`` column when any layer is a ``Gemm``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if any(isinstance(layer, Gemm) for layer in layers):
        _write_kinds(writer, layers)
        write_text_atomic(path, buffer.getvalue())
        return
    writer.writerow(_CSV_REQUIRED + _CSV_OPTIONAL)
    for l in layers:
        writer.writerow([l.name, l.N, l.C, l.K, l.H, l.W, l.R, l.S, l.stride_h, l.pad_h,
                         l.stride_h, l.stride_w, l.pad_h, l.pad_w])
    write_text_atomic(path, buffer.getvalue())


def _write_kinds(writer: Any, layers: list[Any]) -> None:
    writer.writerow(_KIND_COLUMNS)
    for layer in layers:
        if isinstance(layer, Gemm):
            cells = {"name": layer.name, "kind": "gemm", **gemm_csv_cells(layer)}
        else:
            l = layer
            cells = {"name": l.name, "kind": "conv", **{k: str(v) for k, v in zip(
                _CSV_REQUIRED[1:] + _CSV_OPTIONAL, [l.N, l.C, l.K, l.H, l.W, l.R, l.S, l.stride_h, l.pad_h,
                                                     l.stride_h, l.stride_w, l.pad_h, l.pad_w], strict=True)}}
        writer.writerow([cells.get(column, "") for column in _KIND_COLUMNS])
