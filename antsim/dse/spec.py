"""Sweep spec: ``sweeps/*.yaml`` (``kind: sweep``) → frozen, validated ``SweepSpec``.

Every check happens here, before any storage is touched: the search space (each parameter a dotted
``ArchSpec`` path; each bound and choice validated by building the arch through
``antsim.spec.arch.arch_from_dict`` — the arch's own rules), the objectives, the constraints, the sampler,
the workload and the multi-fidelity screen. Errors are one-line ``SpecError``s naming the file and key.
"""

from __future__ import annotations

import copy
import inspect
import typing
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from antsim.dse.evaluators import resolve_evaluator
from antsim.dse.metrics import METRICS, Direction
from antsim.dse.workload import proxy_workload, resolve_workload
from antsim.errors import SpecError
from antsim.simulate import check_dram_technology
from antsim.sparsity.densities import Densities, DensityError
from antsim.sparsity.generators import sparsity_models
from antsim.spec.arch import ArchSpec, arch_field_paths, arch_from_dict, load_arch
from antsim.spec.yamlio import load_yaml, validate_model
from antsim.vocabulary import PHASES, Fidelity, Phase, TimingModel
from antsim.workloads.gemm import Gemm

SAMPLERS = ("nsga2", "tpe", "random", "grid", "qmc")
_DIRECTIONS = {"min": "minimize", "minimize": "minimize", "max": "maximize", "maximize": "maximize"}


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class ParamSpec(_Model):
    """One search-space dimension: a range ``{low, high[, step, log]}`` or ``{choices: [...]}``."""

    low: float | None = None
    high: float | None = None
    step: float | None = Field(None, gt=0)
    log: bool = False
    choices: tuple[Any, ...] | None = None


class WorkloadSpec(_Model):
    """What each design point is evaluated on (the same knobs as ``antsim simulate``)."""

    network: str | None = None
    layers_csv: str | None = None
    layers: tuple[dict[str, Any], ...] | None = Field(None, description="inline layer dicts (Layer fields)")
    select: tuple[str, ...] | None = Field(None, description="keep only these layer names")
    phases: tuple[Phase, ...] = PHASES
    batch: int | None = Field(None, ge=1, le=4096,
                              description="batch N; default: the layers' own N (layers CSV / inline), the tensors"
                                          " file's batch, or 1 for a zoo network")
    densities: dict[str, float] = Field(default_factory=lambda: Densities().to_dict())  # w, a, g at 0.1
    sparsity: str = "swat"
    tensors: str | None = None
    batch_sample: int = Field(0, ge=0, le=4096,
                              description="fast fidelity: map this many images of each layer's batch and estimate"
                                          " the others (antsim.dataflow.sampling); 0 = every image")


class ConstraintSpec(_Model):
    """``metric ≤ max`` and/or ``metric ≥ min``."""

    max: float | None = None
    min: float | None = None


class SamplerSpec(_Model):
    name: str = "nsga2"
    options: dict[str, Any] = Field(default_factory=dict)


class EvaluatorSpec(_Model):
    """``simulator`` (antsim.simulate), ``analytic`` (a closed-form toy for tests) or ``module:function``."""

    name: str = "simulator"
    options: dict[str, Any] = Field(default_factory=dict)


SCREENS = ("proxy_layers", "analytic")


class MultiFidelitySpec(_Model):
    """Two-stage screening: a cheap proxy evaluation, the full one only for promising trials.

    ``screen: proxy_layers`` (the default): the proxy is ``proxy_layers`` representative layers (spread
    over the network, or the names given in ``proxy_select``) and ``proxy_phases``, through the evaluator.
    ``screen: analytic``: the whole workload through ``antsim.dse.screen.analytic_screen`` (closed-form
    counts from the operand masks, docs/sweep_screening.md); the ``proxy_*`` keys do not apply. The screen's
    metrics are scaled to full-workload estimates by the median full/screen ratio of the fully evaluated
    trials (``analytic``: of those with the same ``anticipation.policy`` when the space samples it); a trial
    whose estimate, improved by ``margin`` (per metric: ``margins``), is still dominated by a fully evaluated
    feasible trial (or breaks a constraint by more than the margin) is pruned.
    """

    enabled: bool = True
    screen: str = "proxy_layers"
    proxy_layers: int = Field(2, ge=1)
    proxy_select: tuple[str, ...] | None = None
    proxy_phases: tuple[Phase, ...] | None = None
    margin: float = Field(0.1, ge=0, le=10)
    margins: dict[str, float] = Field(default_factory=dict,
                                      description="per-metric margins overriding margin (e.g. energy_j: 0.03)")
    warmup_trials: int = Field(6, ge=1, description="first full evaluations (calibrate the proxy ratio)")
    screen_ahead: int = Field(1, ge=1, le=1024, description="trials a worker takes at once: first looks for all,"
                              " full evaluations most promising first (antsim.dse.ahead); 1: one at a time")


class SweepSpec(_Model):
    """A whole sweep: base arch, search space, workload, objectives, constraints, sampler, budget."""

    kind: Literal["sweep"] = "sweep"
    version: Literal[1] = 1
    description: str = ""
    base_arch: str
    space: dict[str, ParamSpec]
    workload: WorkloadSpec
    objectives: dict[str, Direction]
    constraints: dict[str, ConstraintSpec] = Field(default_factory=dict)
    sampler: SamplerSpec = SamplerSpec()
    evaluator: EvaluatorSpec = EvaluatorSpec()
    n_trials: int = Field(50, ge=1, le=1_000_000)
    timeout_s: float | None = Field(None, gt=0)
    seed: int = Field(0, ge=0, lt=2**32, description="sampler and operand seed (numpy's seed range)")
    fidelity: Fidelity = "fast"
    # The full evaluation's timing tier (``antsim.simulate.simulate_network(timing=…)``, docs/timing_tier.md):
    # ``events`` (the discrete-event model, the default: a sweep's results as before) or ``closed_form`` (the
    # same recurrences without simpy; the evaluator ``simulator`` only).
    timing: TimingModel = "events"
    multi_fidelity: MultiFidelitySpec | None = None
    # Filled by load_sweep (not YAML keys a user writes; extra=forbid keeps them out of files).
    source: str = Field("<dict>", exclude=True)
    base_arch_spec: ArchSpec | None = Field(None, exclude=True)

    @property
    def stem(self) -> str:
        return Path(self.source).stem

    @property
    def directions(self) -> list[Direction]:
        return list(self.objectives.values())


def _normalise(data: dict[str, Any], source: str) -> dict[str, Any]:
    """Shorthands → full form (``sampler: tpe``; ``objectives: {time_s: min}``; YAML lists → tuples)."""
    data = copy.deepcopy(data)
    for key in ("sampler", "evaluator"):
        if isinstance(data.get(key), str):
            data[key] = {"name": data[key]}
    objectives = data.get("objectives")
    if isinstance(objectives, dict):
        for name, direction in objectives.items():
            if direction not in _DIRECTIONS:
                raise SpecError(source, f"objectives.{name}", "direction must be min or max", direction)
        data["objectives"] = {k: _DIRECTIONS[v] for k, v in objectives.items()}
    if isinstance(data.get("multi_fidelity"), bool):
        data["multi_fidelity"] = {"enabled": data["multi_fidelity"]}
    return _tuples(data)


def _tuples(value: Any) -> Any:
    """Lists → tuples recursively (strict pydantic wants tuples for tuple fields)."""
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def _check_names(spec: SweepSpec, source: str) -> None:
    if not spec.space:
        raise SpecError(source, "space", "must hold at least one parameter")
    if not spec.objectives:
        raise SpecError(source, "objectives", "must name at least one objective")
    for name in spec.objectives:
        if name not in METRICS:
            raise SpecError(source, f"objectives.{name}", f"unknown objective; known: {', '.join(METRICS)}")
    for name, c in spec.constraints.items():
        if name not in METRICS:
            raise SpecError(source, f"constraints.{name}", f"unknown metric; known: {', '.join(METRICS)}")
        if c.max is None and c.min is None:
            raise SpecError(source, f"constraints.{name}", "give max and/or min")
    if spec.sampler.name not in SAMPLERS:
        raise SpecError(source, "sampler.name", f"unknown sampler; known: {', '.join(SAMPLERS)}",
                        spec.sampler.name)
    w = spec.workload
    given = [k for k in ("network", "layers_csv", "layers") if getattr(w, k) is not None]
    if len(given) != 1:
        raise SpecError(source, "workload", "give exactly one of network, layers_csv, layers", given or None)
    _check_densities(w.densities, source)
    if not w.phases:
        raise SpecError(source, "workload.phases", "must name at least one of fprop, dgrad, wgrad", [])
    if len(set(w.phases)) != len(w.phases):
        raise SpecError(source, "workload.phases", "names a phase twice", list(w.phases))
    if w.tensors is None:
        if w.sparsity not in sparsity_models():
            raise SpecError(source, "workload.sparsity", f"unknown model; known: {', '.join(sparsity_models())}",
                            w.sparsity)
    elif {"densities", "sparsity"} & w.model_fields_set:
        key = sorted({"densities", "sparsity"} & w.model_fields_set)[0]
        raise SpecError(source, f"workload.{key}", "cannot apply with workload.tensors (the tensors file's"
                        " operands carry their own)", getattr(w, key))


def _check_densities(densities: dict[str, float], source: str) -> None:
    """The one density rule of ``antsim.sparsity.densities`` (known keys, each in (0, 1]), with the key path."""
    try:
        Densities.from_mapping(densities)
    except DensityError as exc:
        if exc.unknown_key:
            raise SpecError(source, "workload.densities", exc.rule) from None
        raise SpecError(source, exc.at("workload.densities"), exc.rule, exc.value) from None


def _field_kind(info: Any) -> str:
    """``int`` | ``float`` | ``categorical`` for an arch field annotation."""
    ann = info.annotation
    if ann is bool or typing.get_origin(ann) is Literal or ann is str:
        return "categorical"
    return "int" if ann is int else "float"


def _with_value(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(base)
    node = data
    *parents, leaf = path.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
    return data


def _check_value(base: dict[str, Any], path: str, value: Any, source: str, key: str) -> None:
    """Build the arch with ``value`` at ``path``: the arch's own rule rejects an out-of-range bound."""
    try:
        arch_from_dict(_with_value(base, path, value), source=source)
    except SpecError as exc:
        raise SpecError(source, key, f"{exc.rule} (rule of arch key {exc.key or path})", value) from None


def _check_param(base: dict[str, Any], path: str, p: ParamSpec, source: str) -> None:
    fields = arch_field_paths()
    key = f"space.{path}"
    if path not in fields:
        raise SpecError(source, key, f"unknown parameter; known: {', '.join(sorted(fields))}")
    kind = _field_kind(fields[path])
    if p.choices is not None:
        if p.low is not None or p.high is not None or p.step is not None or p.log:
            raise SpecError(source, key, "give either choices or low/high[/step/log], not both")
        if not p.choices:
            raise SpecError(source, f"{key}.choices", "empty range: no choices", [])
        if len(set(map(repr, p.choices))) != len(p.choices):
            raise SpecError(source, f"{key}.choices", "duplicate choices", list(p.choices))
        for i, choice in enumerate(p.choices):
            _check_value(base, path, choice, source, f"{key}.choices[{i}]")
        return
    if kind == "categorical":
        raise SpecError(source, key, "a non-numeric parameter needs choices: [...]")
    if p.low is None or p.high is None:
        raise SpecError(source, key, "give low and high (or choices)")
    if p.low > p.high:
        raise SpecError(source, key, f"low > high ({p.low} > {p.high})")
    if p.low == p.high:
        raise SpecError(source, key, f"empty range (low == high == {p.low})")
    if kind == "int":
        for name, v in (("low", p.low), ("high", p.high), ("step", p.step)):
            if v is not None and v != int(v):
                raise SpecError(source, f"{key}.{name}", "must be an integer for an int parameter", v)
    if p.log and p.step is not None and not (kind == "int" and p.step == 1):
        raise SpecError(source, key, "log and step cannot be combined")
    if p.log and p.low <= 0:
        raise SpecError(source, f"{key}.low", "must be > 0 for a log range", p.low)
    for name in ("low", "high"):
        v = getattr(p, name)
        _check_value(base, path, int(v) if kind == "int" else float(v), source, f"{key}.{name}")


def param_kind(path: str) -> str:
    """``int`` | ``float`` | ``categorical`` for a dotted arch path."""
    return _field_kind(arch_field_paths()[path])


def grid_values(spec: SweepSpec) -> dict[str, list[Any]]:
    """Every value of each parameter for the grid sampler (ranges need a ``step`` or ``choices``)."""
    out: dict[str, list[Any]] = {}
    for path, p in spec.space.items():
        if p.choices is not None:
            out[path] = list(p.choices)
            continue
        if p.step is None and param_kind(path) != "int":
            raise SpecError(spec.source, f"space.{path}", "the grid sampler needs a step or choices")
        step = p.step or 1
        n = int((p.high - p.low) // step) + 1  # type: ignore[operator]
        values = [p.low + i * step for i in range(n)]  # type: ignore[operator]
        out[path] = [int(v) for v in values] if param_kind(path) == "int" else values
    return out


def _resolve_paths(spec_data: dict[str, Any], base: Path) -> dict[str, Any]:
    data = copy.deepcopy(spec_data)
    if isinstance(data.get("base_arch"), str):
        data["base_arch"] = str((base / data["base_arch"]).resolve())
    workload = data.get("workload")
    if isinstance(workload, dict):
        for key in ("layers_csv", "tensors"):
            if isinstance(workload.get(key), str):
                workload[key] = str((base / workload[key]).resolve())
    return data


def load_sweep(path: str | Path) -> SweepSpec:
    """Load and fully validate a sweep YAML (nothing touches a study before this returns).

    Raises:
        SpecError: naming the file and the key (unknown parameter, empty range, low > high, a bound the
            arch rejects, unknown objective / metric / sampler, bad workload, …).
    """
    path = Path(path)
    source = str(path)
    raw = load_yaml(path, kind="sweep")
    for internal in ("source", "base_arch_spec"):
        if internal in raw:
            raise SpecError(source, internal, "unknown key")
    data = _resolve_paths(_normalise(raw, source), path.parent)
    spec: SweepSpec = validate_model(SweepSpec, data, source)
    _check_names(spec, source)
    try:
        base = load_arch(spec.base_arch)
    except SpecError as exc:  # name the sweep spec too: its base_arch key points at the bad file
        raise SpecError(source, "base_arch", str(exc)) from None
    try:
        check_dram_technology(base, spec.base_arch)
    except SpecError as exc:
        raise SpecError(source, "base_arch", str(exc)) from None
    base_dict = base.to_dict()
    for p_path, p in spec.space.items():
        _check_param(base_dict, p_path, p, source)
    spec = spec.model_copy(update={"source": source, "base_arch_spec": base})
    _check_workload(spec)
    _check_evaluator(spec)
    if spec.sampler.name == "grid":
        grid_values(spec)
    return spec


def _check_evaluator(spec: SweepSpec) -> None:
    func = resolve_evaluator(spec.evaluator.name, None, spec.source)
    if spec.timing != "events" and spec.evaluator.name != "simulator":
        raise SpecError(spec.source, "timing", f"applies to evaluator simulator only (not {spec.evaluator.name})",
                        spec.timing)
    if "timing" in spec.evaluator.options:
        raise SpecError(spec.source, "evaluator.options.timing", "set the timing tier with the top-level key"
                        " timing (echoed in the study and export)", spec.evaluator.options["timing"])
    try:
        inspect.signature(func).bind_partial(None, None, None, None, **spec.evaluator.options)
    except TypeError as exc:
        raise SpecError(spec.source, "evaluator.options", f"not accepted by {spec.evaluator.name}: {exc}") from None


def _check_workload(spec: SweepSpec) -> None:
    """Resolve the workload once so a bad network / CSV / selection fails before the study exists."""
    workload = resolve_workload(spec)
    _check_screen(spec, workload)
    proxy_workload(spec, workload)


# Arch keys the analytic screen's estimate does not read (antsim/dse/screen.py): bank conflicts are the busiest
# of Poisson-loaded banks whatever the hash, and bank FIFOs are not modelled.
_UNSCREENED_PARAMETERS = ("accumulators.bank_hash", "accumulators.queue_depth")


def _check_screen(spec: SweepSpec, workload: Any) -> None:
    """``multi_fidelity.screen``: a known screen; ``analytic`` takes no ``proxy_*`` key, sparse designs and conv
    layers only."""
    mf = spec.multi_fidelity
    if mf is None:
        return
    for name, value in mf.margins.items():
        if name not in METRICS:
            raise SpecError(spec.source, f"multi_fidelity.margins.{name}",
                            f"unknown metric; known: {', '.join(METRICS)}")
        if not 0 <= value <= 10:
            raise SpecError(spec.source, f"multi_fidelity.margins.{name}", "must be in [0, 10]", value)
    if mf.screen not in SCREENS:
        raise SpecError(spec.source, "multi_fidelity.screen", f"unknown screen; known: {', '.join(SCREENS)}",
                        mf.screen)
    if mf.screen != "analytic":
        return
    for key in ("proxy_layers", "proxy_select", "proxy_phases"):
        if key in mf.model_fields_set:
            raise SpecError(spec.source, f"multi_fidelity.{key}", "applies to screen: proxy_layers only (the analytic"
                            " screen looks at the whole workload)", getattr(mf, key))
    assert spec.base_arch_spec is not None
    if not spec.base_arch_spec.sparsity_support or "sparsity_support" in spec.space:
        raise SpecError(spec.source, "multi_fidelity.screen", "analytic screens sparse designs only (a dense"
                        " design's every element would be a non-zero to count); use proxy_layers", mf.screen)
    blind = [name for name in _UNSCREENED_PARAMETERS if name in spec.space]
    if blind:  # the screen would rank every value of it alike and prune good ones: refuse, do not guess
        raise SpecError(spec.source, f"space.{blind[0]}", "the analytic screen does not model this parameter"
                        " (docs/sweep_screening.md, Limits); sweep it with screen: proxy_layers", "analytic")

    for layer in workload.layers:
        if isinstance(layer, Gemm):
            raise SpecError(spec.source, "multi_fidelity.screen", f"analytic screens conv layers only; {layer.name!r}"
                            " is a GEMM layer", mf.screen)
