"""Result snapshots shared by every backend (accelerator simulator, GPU model, measurements).

One ``LayerResult`` per (layer, phase); a ``NetworkResult`` holds them in network order with the
design and workload echoed, and serialises to the JSON schema ``antsim.result/1`` (docs/formats.md)
and to a flat CSV. Compare, report and sweep code read only these types, never a backend.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from antsim.errors import AntsimError
from antsim.version import __version__

SCHEMA = "antsim.result/1"
BACKENDS = ("accelerator", "gpu", "measured", "external")


@dataclass(frozen=True)
class ProductCounts:
    """Cartesian products of one (layer, phase), in products (non-zero × non-zero pairs).

    ``total``: every pair the mapping forms; ``valid``: pairs that contribute to an output;
    ``rcp = total − valid``; ``skipped``: products in pairs the anticipation unit never issued
    (so multiplier work = ``total − skipped``). Invariant: ``0 ≤ skipped ≤ rcp``.
    """

    total: int
    valid: int
    skipped: int = 0

    @property
    def rcp(self) -> int:
        return self.total - self.valid

    @property
    def issued(self) -> int:
        return self.total - self.skipped

    def __post_init__(self) -> None:
        if not (0 <= self.valid <= self.total and 0 <= self.skipped <= self.total - self.valid):
            raise ValueError(f"inconsistent product counts: {self.to_dict()}")

    def __add__(self, other: ProductCounts) -> ProductCounts:
        return ProductCounts(self.total + other.total, self.valid + other.valid, self.skipped + other.skipped)

    def to_dict(self) -> dict[str, int]:
        return {"total": int(self.total), "valid": int(self.valid), "rcp": int(self.rcp),
                "skipped": int(self.skipped)}

    @classmethod
    def from_dict(cls, d: Mapping[str, int]) -> ProductCounts:
        return cls(int(d["total"]), int(d["valid"]), int(d.get("skipped", 0)))


@dataclass(frozen=True)
class LayerResult:
    """What one backend says about one (layer, phase).

    Attributes:
        layer: Layer name. phase: ``fprop`` | ``dgrad`` | ``wgrad``.
        time_s: Execution time in seconds.
        cycles: Accelerator cycles (None for GPU/measured results).
        energy_j: Energy in joules (None when the backend does not know it).
        energy_breakdown_j: Component → joules; sums to ``energy_j``.
        products: Cartesian-product accounting (accelerator only).
        stalls: Cycle breakdown, category → cycles (accelerator) — e.g. ``busy``, ``bank_conflict``,
            ``barrier_wait``, ``halo``, ``reduction``, ``memory_stall``, ``anticipation``.
        actions: Component → action → count (accelerator only; the input to energy pricing).
        details: Backend-specific extras (GEMM shape and tile for the GPU, tiling for the accelerator).
        area_mm2: Area of the design that produced it (None for GPU/measured).
        output: The phase's functional result (numpy array) when the backend computed it; never serialised.
        kind: The layer's kind, ``conv`` or ``gemm`` (``antsim.workloads.gemm``); serialised only when not
            ``conv``, so conv results read and write as before.
    """

    layer: str
    phase: str
    time_s: float
    cycles: int | None = None
    energy_j: float | None = None
    energy_breakdown_j: Mapping[str, float] = field(default_factory=dict)
    products: ProductCounts | None = None
    stalls: Mapping[str, float] = field(default_factory=dict)
    actions: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)
    area_mm2: float | None = None
    output: Any = field(default=None, compare=False, repr=False)
    kind: str = "conv"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record (docs/formats.md); ``output`` is not included, ``kind`` only when not ``conv``."""
        return {**({"kind": self.kind} if self.kind != "conv" else {}),
            "layer": self.layer,
            "phase": self.phase,
            "cycles": None if self.cycles is None else int(self.cycles),
            "time_s": float(self.time_s),
            "energy_j": None if self.energy_j is None else float(self.energy_j),
            "energy_breakdown_j": {k: float(v) for k, v in self.energy_breakdown_j.items()},
            "products": None if self.products is None else self.products.to_dict(),
            "stalls": {k: float(v) for k, v in self.stalls.items()},
            "actions": {c: {a: float(n) for a, n in acts.items()} for c, acts in self.actions.items()},
            "details": _jsonable(self.details),
            "area_mm2": None if self.area_mm2 is None else float(self.area_mm2),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LayerResult:
        products = d.get("products")
        return cls(
            layer=str(d["layer"]), phase=str(d["phase"]), time_s=float(d["time_s"]),
            cycles=d.get("cycles"), energy_j=d.get("energy_j"),
            energy_breakdown_j=dict(d.get("energy_breakdown_j") or {}),
            products=None if products is None else ProductCounts.from_dict(products),
            stalls=dict(d.get("stalls") or {}), actions=dict(d.get("actions") or {}),
            details=dict(d.get("details") or {}), area_mm2=d.get("area_mm2"), kind=str(d.get("kind", "conv")),
        )


@dataclass(frozen=True)
class NetworkResult:
    """All (layer, phase) results of one design on one workload.

    Attributes:
        design: Name of the design (arch ``name``, GPU name, or a measurement label).
        backend: One of ``BACKENDS``.
        records: Layer results in network order (layer-major, then phase).
        spec: The design echoed (arch spec or GPU spec as a plain dict) so a reader can rerun it.
        workload: The workload echoed: ``network``, ``layers`` (list of layer dicts), ``batch``,
            ``phases``, and for the accelerator ``densities``, ``sparsity``, ``tensors``, ``seed``, ``fidelity``.
        area_mm2: Design area (accelerator only).
        meta: Anything else worth echoing (antsim version, GPU precision, …).
    """

    design: str
    backend: str
    records: tuple[LayerResult, ...]
    spec: Mapping[str, Any] = field(default_factory=dict)
    workload: Mapping[str, Any] = field(default_factory=dict)
    area_mm2: float | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "records", tuple(self.records))
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown backend {self.backend!r}; known: {', '.join(BACKENDS)}")

    @property
    def totals(self) -> dict[str, float | int | None]:
        """Sums over records: ``cycles``, ``time_s``, ``energy_j`` (None if any record lacks it), ``area_mm2``."""
        cycles = [r.cycles for r in self.records]
        energy = [r.energy_j for r in self.records]
        return {
            "cycles": None if any(c is None for c in cycles) else int(sum(cycles)),  # type: ignore[arg-type]
            "time_s": float(math.fsum(r.time_s for r in self.records)),
            "energy_j": None if any(e is None for e in energy) else float(math.fsum(energy)),  # type: ignore[arg-type]
            "area_mm2": self.area_mm2,
        }

    def record(self, layer: str, phase: str) -> LayerResult:
        for r in self.records:
            if r.layer == layer and r.phase == phase:
                return r
        raise KeyError((layer, phase))

    def keys(self) -> list[tuple[str, str]]:
        return [(r.layer, r.phase) for r in self.records]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "antsim_version": __version__,
            "design": self.design,
            "backend": self.backend,
            "spec": _jsonable(self.spec),
            "workload": _jsonable(self.workload),
            "meta": _jsonable(self.meta),
            "records": [r.to_dict() for r in self.records],
            "totals": self.totals,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], source: str = "<dict>") -> NetworkResult:
        if not isinstance(d, Mapping):
            raise AntsimError(f"{source}: not an {SCHEMA} result (a JSON {type(d).__name__}, not an object)")
        if d.get("schema") != SCHEMA:
            raise AntsimError(f"{source}: schema: expected {SCHEMA!r}; got {d.get('schema')!r}")
        try:
            return cls(
                design=str(d["design"]), backend=str(d["backend"]),
                records=tuple(LayerResult.from_dict(r) for r in d["records"]),
                spec=d.get("spec") or {}, workload=d.get("workload") or {},
                area_mm2=(d.get("totals") or {}).get("area_mm2"), meta=d.get("meta") or {},
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise AntsimError(f"{source}: malformed {SCHEMA} result: {exc!r}".replace("\n", " ")) from None

    def write_json(self, path: str | Path) -> None:
        """Write deterministic JSON (sorted keys) atomically."""
        write_text_atomic(path, json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n")

    @classmethod
    def read_json(cls, path: str | Path) -> NetworkResult:
        path = Path(path)
        if not path.is_file():
            raise AntsimError(f"{path}: result file not found")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise AntsimError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        except UnicodeDecodeError as exc:
            raise AntsimError(f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x})") from None
        except RecursionError:
            raise AntsimError(f"{path}: JSON nested too deeply") from None
        return cls.from_dict(data, source=str(path))

    def write_csv(self, path: str | Path) -> None:
        """One row per record: identity, time, cycles, energy, products and flattened breakdowns."""
        rows = [flatten_record(r) for r in self.records]
        if any(r.kind != "conv" for r in self.records):  # a kind column only when GEMM layers are present
            rows = [{"name": row["name"], "kind": r.kind, **row} for row, r in zip(rows, self.records, strict=True)]
        columns: list[str] = []
        for row in rows:
            columns += [c for c in row if c not in columns]
        lines: list[list[Any]] = [columns] + [[row.get(c, "") for c in columns] for row in rows]
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows(lines)
        write_text_atomic(path, buffer.getvalue())


def flatten_record(record: LayerResult) -> dict[str, Any]:
    """A record as one flat CSV row (``name`` is the layer, as in the layers CSV)."""
    row: dict[str, Any] = {"name": record.layer, "phase": record.phase, "time_s": record.time_s,
                           "cycles": record.cycles, "energy_j": record.energy_j}
    if record.products is not None:
        row.update({f"products_{k}": v for k, v in record.products.to_dict().items()})
    row.update({f"stall_{k}": v for k, v in record.stalls.items()})
    row.update({f"energy_{k}_j": v for k, v in record.energy_breakdown_j.items()})
    row.update({k: v for k, v in _jsonable(record.details).items() if not isinstance(v, (dict, list))})
    return row


def check_writable_folder(path: str | Path, flag: str) -> None:
    """Raise unless the folder ``path`` goes into (or its nearest existing ancestor) is a writable folder.

    Raises:
        AntsimError: naming ``flag`` (the option or key that gave the path), the path and the folder.
    """
    path = Path(path)
    existing = path.parent if str(path.parent) else Path(".")
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise AntsimError(f"{flag} {path}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise AntsimError(f"{flag} {path}: folder {existing} is not writable")


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and rename, so a crash never leaves half a file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text)
        tmp.replace(path)
    except OSError as exc:  # full disk, a folder at the path, no permission: one line, no .tmp left behind
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise AntsimError(f"{path}: cannot write ({exc.strerror or exc})") from None


def _jsonable(value: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and dataclass-free mappings to JSON types."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def geomean(values: Sequence[float]) -> float:
    """Geometric mean of positive values."""
    if not values or min(values) <= 0:
        raise ValueError("geomean needs positive values")
    return float(math.exp(math.fsum(math.log(v) for v in values) / len(values)))
