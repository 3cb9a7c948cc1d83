"""Result snapshots shared by every backend (accelerator simulator, GPU model, measurements).

One ``LayerResult`` per (layer, phase); a ``NetworkResult`` holds them in network order with the
design and workload echoed, and serialises to the JSON schema ``antsim.result/1`` (docs/formats.md)
and to a flat CSV. Compare, report and sweep code read only these types, never a backend.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import json
import math
import numbers
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Self, cast

import numpy as np

from antsim.errors import AntsimError
from antsim.version import __version__
from antsim.vocabulary import (
    FIDELITIES,
    LIBRARIES,
    PHASES,
    PRECISION_NAMES,
    SELECTIONS,
    TIMING_MODELS,
    Fidelity,
    Library,
    Phase,
    Precision,
    Selection,
    TimingModel,
    parse_phase,
)

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
        details: Backend-specific extras: the backend's record (``AcceleratorLayerDetails``,
            ``GpuLayerDetails``, ``MeasuredLayerDetails``) as its producer stores it, or the plain mapping read
            from a file; a stage reads them through ``<Record>.of(result)``, which refuses a missing or
            ill-typed key in one line.
        area_mm2: Area of the design that produced it (None for GPU/measured).
        output: The phase's functional result (numpy array) when the backend computed it; never serialised.
        kind: The layer's kind, ``conv`` or ``gemm`` (``antsim.workloads.gemm``); serialised only when not
            ``conv``, so conv results read and write as before.
    """

    layer: str
    phase: Phase
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
            layer=str(d["layer"]), phase=parse_phase(d["phase"], "record phase"), time_s=float(d["time_s"]),
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
        workload: The workload echoed, a ``WorkloadEcho`` (a mapping given is converted, and refused when a
            key is unknown or of the wrong type): ``network``, ``layers`` (list of layer dicts), ``batch``,
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
        object.__setattr__(self, "workload", WorkloadEcho.from_mapping(self.workload))
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown backend {self.backend!r}; known: {', '.join(BACKENDS)}")

    @property
    def totals(self) -> Totals:
        """Sums over records: ``cycles``, ``time_s``, ``energy_j`` (None if any record lacks it), ``area_mm2``."""
        return Totals.of(self.records, self.area_mm2)

    @property
    def echo(self) -> WorkloadEcho:
        """The workload echo, typed (``workload`` holds it; a mapping given at construction was converted)."""
        return cast(WorkloadEcho, self.workload)

    def record(self, layer: str, phase: Phase) -> LayerResult:
        for r in self.records:
            if r.layer == layer and r.phase == phase:
                return r
        raise KeyError((layer, phase))

    def keys(self) -> list[tuple[str, Phase]]:
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
            "totals": self.totals.to_dict(),
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
        except AntsimError as exc:  # an echo key unknown or of the wrong type: the message names it
            raise AntsimError(f"{source}: {exc}") from None
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


# --- Typed records: the workload echo, the totals and each backend's details -----------------------------------
#
# Each record is a frozen dataclass whose fields are the JSON keys it writes, in the order it writes them, and
# also reads as that JSON object (a read-only ``Mapping``), so code and files that treat ``workload``,
# ``details`` or ``totals`` as a mapping read the same keys and values as before. A value of the wrong type is
# refused with one line naming the key; an optional key (``_optional``) is left out of the JSON when None.

_KINDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "int": ("an integer", lambda v: isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))),
    "float": ("a number", lambda v: isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))),
    "str": ("a string", lambda v: isinstance(v, str)),
    "bool": ("true or false", lambda v: isinstance(v, (bool, np.bool_))),
    "Mapping": ("an object", lambda v: isinstance(v, Mapping)),
    "tuple": ("a list", lambda v: isinstance(v, (list, tuple))),
}


def _one_of(words: tuple[str, ...]) -> tuple[str, Callable[[Any], bool]]:
    return f"one of {', '.join(words)}", lambda v: isinstance(v, str) and v in words


# A field typed by a vocabulary (``antsim.vocabulary``) accepts only its words: a result file with
# ``"fidelity": "slow"`` is refused when read, not carried on as a string.
_KINDS.update({"Phase": _one_of(PHASES), "Fidelity": _one_of(FIDELITIES), "Precision": _one_of(PRECISION_NAMES),
               "Selection": _one_of(SELECTIONS), "Library": _one_of(LIBRARIES), "TimingModel": _one_of(TIMING_MODELS)})


def _optional() -> Any:
    """A field whose key is left out of the JSON when it is None (absent in files that lack it)."""
    return field(default=None, metadata={"omit_none": True})


def _kind(annotation: str) -> tuple[str, bool, str | None]:
    """What a field's annotation says: its kind, whether None passes, and the kind of its items (a mapping's
    values, a tuple's elements; None when any value passes): ``("Mapping", True, "float")`` for
    ``"Mapping[str, float] | None"``."""
    nullable = annotation.endswith(" | None")
    core = annotation.removesuffix(" | None")
    kind, _, inside = core.partition("[")
    inside = inside.removesuffix("]").removesuffix(", ...")
    item = inside.split(", ", 1)[-1] if kind == "Mapping" else inside  # a mapping's value type, a tuple's element type
    item_kind = item.split("[", 1)[0]
    return kind, nullable, item_kind if item_kind in _KINDS and " | " not in item else None


def _checked(key: str, annotation: str, value: Any) -> Any:
    """``value`` in its stored form (lists as tuples, mappings as dicts), or AntsimError naming ``key``
    (``key[i]`` or ``key.name`` for an item of the wrong kind)."""
    kind, nullable, item = _kind(annotation)
    if value is None and nullable:
        return None
    what, test = _KINDS[kind]
    if not test(value):
        raise AntsimError(f"{key}: expected {what}{' or null' if nullable else ''}; got {value!r}"[:300])
    if kind == "tuple":
        return tuple(value if item is None else (_checked(f"{key}[{i}]", item, v) for i, v in enumerate(value)))
    if kind == "Mapping":
        return {k: v if item is None else _checked(f"{key}.{k}", item, v) for k, v in value.items()}
    return value


def _json_value(value: Any) -> Any:
    """A stored value as the JSON form the producers wrote before the records (tuples were lists)."""
    if isinstance(value, tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _json_value(v) for k, v in value.items()}
    return value


class JsonRecord(Mapping[str, Any]):
    """A frozen dataclass of JSON keys that also reads as the JSON object ``to_dict`` builds."""

    where: ClassVar[str] = "record"  # the JSON key a record sits at, for error messages

    def __post_init__(self) -> None:
        for f in fields(self):  # type: ignore[arg-type]
            if f.name in self._unchecked():
                continue
            object.__setattr__(self, f.name, _checked(f"{self.where}.{f.name}", str(f.type), getattr(self, f.name)))

    @classmethod
    def _unchecked(cls) -> tuple[str, ...]:
        return ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: every field in order, optional ones only when set."""
        return {f.name: _json_value(getattr(self, f.name)) for f in fields(self)  # type: ignore[arg-type]
                if not (f.metadata.get("omit_none") and getattr(self, f.name) is None)}

    @functools.cached_property
    def _view(self) -> dict[str, Any]:
        return self.to_dict()

    def __getitem__(self, key: str) -> Any:
        return self._view[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._view)

    def __len__(self) -> int:
        return len(self._view)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Self:
        """The record of a JSON object; an unknown key, a missing required one or a wrong type is refused."""
        known = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        for key in data:
            if key not in known:
                raise AntsimError(f"{cls.where}: unknown key {key!r}; known: {', '.join(known)}")
        for f in fields(cls):  # type: ignore[arg-type]
            if f.name not in data and f.default is MISSING and f.default_factory is MISSING:
                raise AntsimError(f"{cls.where}.{f.name}: missing")
        return cls(**{k: data[k] for k in known if k in data})


class LayerDetails(JsonRecord):
    """Base of the per-backend ``LayerResult.details`` records."""

    where: ClassVar[str] = "details"

    @classmethod
    def of(cls, record: LayerResult) -> Self:
        """``record``'s details as this backend's record: the record itself when the producer stored one,
        else parsed from the mapping (a result read from a file).

        Raises:
            AntsimError: naming the (layer, phase) and the key missing, unknown or of the wrong type.
        """
        if isinstance(record.details, cls):
            return record.details
        try:
            return cls.from_mapping(record.details)
        except AntsimError as exc:
            raise AntsimError(f"record {record.layer}/{record.phase}: {exc}") from None


@dataclass(frozen=True, eq=False)
class AcceleratorLayerDetails(LayerDetails):
    """What the accelerator simulator (``antsim.simulate.simulate_layer``) records about one (layer, phase).

    Attributes:
        fidelity, seed: How the layer was run. tiling: The dataflow's tiling choices (``antsim.dataflow``).
        notes: The dataflow's notes on estimates it made. stationary_operand, streamed_operand: Operand roles.
        chunks: Work chunks mapped. passes: Stationary passes over the input buffer.
        accumulator_restreams: Extra passes of partial sums through the accumulators.
        steps: Timing steps. dram_busy_cycles, anticipation_busy_cycles: Busy cycles of the DRAM link and of
            an anticipation unit (averaged over PEs). multiplier_utilization: busy / total cycles.
        batch_sample: Images mapped per batch when the rest were estimated (``antsim.dataflow.sampling``).
        operand_densities: Measured densities of the operands when they were given (a tensors file).
    """

    fidelity: Fidelity
    seed: int
    tiling: Mapping[str, Any]
    notes: tuple[str, ...]
    stationary_operand: str
    streamed_operand: str
    chunks: int
    passes: int
    accumulator_restreams: int
    steps: int
    dram_busy_cycles: float
    anticipation_busy_cycles: float
    multiplier_utilization: float
    batch_sample: int | None = _optional()
    operand_densities: Mapping[str, float] | None = _optional()


@dataclass(frozen=True, eq=False)
class GpuLayerDetails(LayerDetails):
    """What the GPU model (``antsim.gpu.estimate.estimate_layer``) records about one (layer, phase).

    Attributes:
        M, N, K, algorithm: The chosen GEMM formulation. precision: The requested precision; run_precision: the
            one the kernel runs at. tile, split_k, ctas, ctas_per_sm, waves, kernels: The launch plan.
        bound: The limiting term. compute_s, l2_s, dram_s, store_s, reduce_s, side_s: Its time terms (s).
        dram_bytes, l2_bytes, executed_flops, useful_flops, workspace_bytes: Its traffic and work.
        structured: ``2:4`` when it ran sparse tensor-core MMA. algo, family: cuDNN's name and its family.
        tensor_cores: Whether it ran on tensor cores. selection, library: The kernel menu (``antsim.gpu.menus``).
        conv_time_s, step_time_s, step_kernels, step_times_s: A training-step estimate only
            (``antsim.gpu.step``): the kernels' own time, the step kernels' time, each step kernel, and each
            one's time by name (written as ``step_NAME_s`` keys).
    """

    M: int
    N: int
    K: int
    algorithm: str
    precision: Precision
    tile: str
    split_k: int
    ctas: int
    ctas_per_sm: int
    waves: float
    bound: str
    compute_s: float
    l2_s: float
    dram_s: float
    store_s: float
    reduce_s: float
    kernels: int
    dram_bytes: float
    l2_bytes: float
    executed_flops: float
    useful_flops: float
    structured: str | None
    algo: str
    family: str
    tensor_cores: bool
    run_precision: Precision
    side_s: float
    workspace_bytes: float
    selection: Selection
    library: Library
    conv_time_s: float | None = _optional()
    step_time_s: float | None = _optional()
    step_kernels: tuple[Mapping[str, Any], ...] | None = _optional()
    step_times_s: Mapping[str, float] | None = _optional()

    @classmethod
    def _unchecked(cls) -> tuple[str, ...]:
        return ("step_times_s",)  # checked below, naming the step_NAME_s key the file has

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.step_times_s is not None:
            _checked(f"{self.where}.step_times_s", "Mapping[str, Any]", self.step_times_s)
            object.__setattr__(self, "step_times_s", {name: _checked(f"{self.where}.step_{name}_s", "float", value)
                                                      for name, value in self.step_times_s.items()})

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in super().to_dict().items() if k != "step_times_s"}
        return out | {f"step_{name}_s": t for name, t in (self.step_times_s or {}).items()}

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Self:
        """As ``JsonRecord.from_mapping``; the ``step_NAME_s`` keys become ``step_times_s``."""
        steps = {k[len("step_"):-len("_s")]: v for k, v in data.items() if _is_step_time(k)}
        plain = {k: v for k, v in data.items() if not _is_step_time(k)}
        return super().from_mapping({**plain, "step_times_s": steps} if steps else plain)


def _is_step_time(key: str) -> bool:
    """A ``step_NAME_s`` key of one step kernel's time (``step_time_s`` is their sum, not a kernel)."""
    return key.startswith("step_") and key.endswith("_s") and key != "step_time_s" and len(key) > len("step__s")


@dataclass(frozen=True, eq=False)
class MeasuredLayerDetails(LayerDetails):
    """What a measurement or an external model's CSV says about one (layer, phase) beyond its time and energy.

    Attributes:
        columns: The row's other columns in file order (numbers as floats, text kept): ``device``,
            ``time_min_s``, ``algorithm``, …; a DeepBench row gives ``source``, ``deepbench_line`` and, for
            fprop, ``algorithm`` (``antsim.measure.external``).
    """

    columns: Mapping[str, float | int | str]

    def __post_init__(self) -> None:
        super().__post_init__()
        for key, value in self.columns.items():
            if not isinstance(key, str) or isinstance(value, bool) or not isinstance(value, (str, numbers.Real)):
                raise AntsimError(f"{self.where}.{key}: expected a number or a string; got {value!r}"[:300])

    @property
    def algorithm(self) -> str | None:
        """The algorithm the measurement recorded (its text), or None."""
        value = self.columns.get("algorithm")
        return None if value is None else str(value)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.columns)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Self:
        return cls(columns=dict(data))


@dataclass(frozen=True, eq=False)
class WorkloadEcho(JsonRecord):
    """The workload a result was computed on, echoed so a reader can rerun or join it (``NetworkResult.workload``).

    Every key is optional: ``echoed`` lists the keys the producer gave, in order, and only those are written
    (a GPU result has no ``densities``; ``layers_csv`` is written as null when the layers came from a network).

    Attributes:
        network: Network name or layers-file stem. layers_csv: The layers file, when one was read.
        batch: The training batch. batch_source: Where the batch came from (``--batch``, the CSV's N, …).
        phases: The phases run. layers: Each layer's ``to_dict``.
        densities, sparsity, tensors, seed, fidelity, regime, batch_sample: How the accelerator's operands
            were made and run (``antsim.simulate.simulate_network``).
        timing: The timing tier when it is not the default ``events`` (``closed_form``: ``antsim.sim.closed_form``).
    """

    where: ClassVar[str] = "workload"

    network: str | None = None
    layers_csv: str | None = None
    batch: int | None = None
    batch_source: str | None = None
    phases: tuple[Phase, ...] | None = None
    layers: tuple[Mapping[str, Any], ...] | None = None
    densities: Mapping[str, float] | None = None
    sparsity: str | None = None
    tensors: str | None = None
    seed: int | None = None
    fidelity: Fidelity | None = None
    regime: str | None = None
    batch_sample: int | None = None
    timing: TimingModel | None = None
    echoed: tuple[str, ...] = ()

    @classmethod
    def _unchecked(cls) -> tuple[str, ...]:
        return ("echoed",)

    def __post_init__(self) -> None:
        super().__post_init__()
        for f in fields(self):
            if f.name != "echoed" and f.name not in self.echoed and getattr(self, f.name) is not None:
                object.__setattr__(self, "echoed", (*self.echoed, f.name))  # a field given directly is echoed

    @classmethod
    def of(cls, **keys: Any) -> Self:
        """The echo of exactly these keys, in this order (the one constructor every producer calls)."""
        known = [f.name for f in fields(cls) if f.name != "echoed"]
        for key in keys:
            if key not in known:
                raise AntsimError(f"{cls.where}: unknown key {key!r}; known: {', '.join(known)}")
        return cls(**keys, echoed=tuple(keys))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Self:
        return data if isinstance(data, cls) else cls.of(**{str(k): v for k, v in data.items()})

    def with_keys(self, **keys: Any) -> WorkloadEcho:
        """This echo with ``keys`` added or replaced (a new key goes last, a replaced one keeps its place)."""
        return WorkloadEcho.of(**{**{k: getattr(self, k) for k in self.echoed}, **keys})

    def to_dict(self) -> dict[str, Any]:
        return {k: _json_value(getattr(self, k)) for k in self.echoed}


@dataclass(frozen=True, eq=False)
class Totals(JsonRecord):
    """Sums over a result's records (``NetworkResult.totals``): cycles and energy are None when any record
    lacks them; ``area_mm2`` is the design's."""

    where: ClassVar[str] = "totals"

    cycles: int | None
    time_s: float
    energy_j: float | None
    area_mm2: float | None

    @classmethod
    def of(cls, records: Sequence[LayerResult], area_mm2: float | None) -> Totals:
        cycles = [r.cycles for r in records]
        energy = [r.energy_j for r in records]
        return cls(cycles=None if any(c is None for c in cycles) else int(sum(c or 0 for c in cycles)),
                   time_s=float(math.fsum(r.time_s for r in records)),
                   energy_j=None if any(e is None for e in energy) else float(math.fsum(e or 0.0 for e in energy)),
                   area_mm2=area_mm2)



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
