"""The Optuna objective: sample a design, check it, evaluate it (proxy first when multi-fidelity), record it.

Each trial stores, as user attributes: ``arch_name``, ``metrics`` (full evaluation), ``proxy_metrics`` and
``estimate`` (multi-fidelity), ``stage`` (``full`` | ``proxy`` | ``none``), ``feasible``, ``reason``,
``constraints`` (one value per bound, ≤ 0 satisfied — also set with ``Trial.set_constraint`` for the
NSGA-II / TPE samplers), and the evaluation times ``eval_s`` / ``eval_cpu_s`` / ``proxy_eval_s`` /
``proxy_eval_cpu_s`` (wall and CPU seconds). Infeasible designs never crash the sweep: an arch rule broken
by a combination of sampled values, or a ``MappingError`` (e.g. a buffer too small), makes the trial
``PRUNED`` with its reason; a violated constraint keeps the trial ``COMPLETE`` with its objective values
and ``feasible: false``.
"""

from __future__ import annotations

import copy
import math
import statistics
import time
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import optuna
from optuna.trial import FrozenTrial, TrialState

from antsim.dse import attrs
from antsim.dse.screen import EXACT_METRICS
from antsim.dse.spec import SweepSpec, param_kind
from antsim.dse.workload import Workload
from antsim.errors import MappingError, SpecError
from antsim.spec.arch import ArchSpec, arch_from_dict

if TYPE_CHECKING:
    from antsim.dse.evaluators import Evaluator


def suggest(trial: optuna.Trial, spec: SweepSpec) -> dict[str, Any]:
    """Ask the trial for one value per search-space parameter (the parameter name is its dotted path)."""
    params: dict[str, Any] = {}
    for path, p in spec.space.items():
        if p.choices is not None:
            params[path] = trial.suggest_categorical(path, list(p.choices))
        elif param_kind(path) == "int":
            params[path] = trial.suggest_int(path, int(p.low), int(p.high), step=int(p.step or 1),  # type: ignore[arg-type]
                                             log=p.log)
        else:
            params[path] = trial.suggest_float(path, float(p.low), float(p.high), step=p.step,  # type: ignore[arg-type]
                                               log=p.log)
    return params


def arch_dict(spec: SweepSpec, params: dict[str, Any], name: str) -> dict[str, Any]:
    """The base arch as a plain dict with ``params`` (dotted paths) substituted and renamed."""
    assert spec.base_arch_spec is not None, "load the spec with load_sweep"
    data = copy.deepcopy(spec.base_arch_spec.to_dict())
    for path, value in params.items():
        node = data
        *parents, leaf = path.split(".")
        for part in parents:
            node = node[part]
        node[leaf] = value
    data["name"] = name
    data["description"] = f"{spec.stem} sweep point from {spec.base_arch_spec.name}"
    return data


def build_arch(spec: SweepSpec, params: dict[str, Any], name: str) -> ArchSpec:
    """Validate a sampled point with the arch's own rules.

    Raises:
        SpecError: a combination of values the arch rejects (an infeasible point).
    """
    return arch_from_dict(arch_dict(spec, params, name), source=name)


def complete_metrics(metrics: dict[str, float]) -> dict[str, float]:
    """Add the derived metrics ``edp`` (J·s) and ``power_w`` (W) to an evaluator's output."""
    out = {k: float(v) for k, v in metrics.items()}
    t, e = out["time_s"], out["energy_j"]
    out["edp"] = e * t
    out["power_w"] = e / t if t > 0 else math.inf
    return out


def constraint_keys(spec: SweepSpec) -> list[str]:
    """One name per bound: ``<metric>.max`` / ``<metric>.min``."""
    return [f"{name}.{side}" for name, c in spec.constraints.items()
            for side, bound in (("max", c.max), ("min", c.min)) if bound is not None]


def constraint_values(spec: SweepSpec, metrics: dict[str, float]) -> tuple[list[float], list[str]]:
    """Normalised violation per bound, in ``constraint_keys`` order (≤ 0 means satisfied), and a reason
    for each broken bound."""
    values: list[float] = []
    reasons: list[str] = []
    for name, c in spec.constraints.items():
        v = metrics.get(name, math.nan)
        for bound, sign in ((c.max, 1.0), (c.min, -1.0)):
            if bound is None:
                continue
            excess = sign * (v - bound) / (abs(bound) or 1.0)
            values.append(excess if math.isfinite(excess) else 1.0)
            if not excess <= 0:
                reasons.append(f"{name} {v:.4g} {'>' if sign > 0 else '<'} {bound:.4g}")
    return values, reasons


class Objective:
    """Callable Optuna objective for one sweep.

    Args:
        spec: The validated sweep.
        workload: The full workload.
        evaluator: ``(arch, workload, fidelity, seed) -> metrics``.
        proxy: The multi-fidelity proxy workload (``screen: proxy_layers``), or None.
        screener: The multi-fidelity screen evaluated on the full workload (``screen: analytic``:
            ``antsim.dse.screen.analytic_screen``), or None. With neither, every trial is evaluated in full.
    """

    def __init__(self, spec: SweepSpec, workload: Workload, evaluator: Evaluator,
                 proxy: Workload | None = None, screener: Evaluator | None = None) -> None:
        self.spec, self.workload, self.evaluator, self.proxy = spec, workload, evaluator, proxy
        self.screener = screener
        self.constraint_keys = constraint_keys(spec)

    def __call__(self, trial: optuna.Trial) -> tuple[float, ...]:
        params, arch = self.sample(trial)
        if self.screens:
            first = self.first_look(trial, arch)
            self.check(trial, params, first, completed_trials(trial.study))
        return self.full(trial, arch)

    @property
    def screens(self) -> bool:
        """True when a trial gets a first look (proxy or analytic screen) before its full evaluation."""
        return self.proxy is not None or self.screener is not None

    def sample(self, trial: optuna.Trial) -> tuple[dict[str, Any], ArchSpec]:
        """The trial's parameters and the design they make.

        Raises:
            optuna.TrialPruned: the arch's rules reject the combination (recorded as infeasible).
        """
        params = suggest(trial, self.spec)
        name = f"{self.spec.base_arch_spec.name}-trial{trial.number}"  # type: ignore[union-attr]
        attrs.set_arch_name(trial, name)
        try:
            return params, build_arch(self.spec, params, name)
        except SpecError as exc:
            self._infeasible(trial, f"arch rule: {exc.key}: {exc.rule}")

    def full(self, trial: optuna.Trial, arch: ArchSpec) -> tuple[float, ...]:
        """Evaluate the design on the whole workload and record metrics, constraints and verdict."""
        metrics = self._evaluate(trial, arch, self.workload, attrs.EVAL_S)
        attrs.set_metrics(trial, metrics)
        attrs.set_stage(trial, "full")
        values, reasons = constraint_values(self.spec, metrics)
        attrs.set_constraints(trial, values)
        for key, value in zip(self.constraint_keys, values, strict=True):
            trial.set_constraint(key, value)  # read by the NSGA-II / TPE samplers
        attrs.set_verdict(trial, not reasons, "; ".join(reasons))
        return tuple(metrics[m] for m in self.spec.objectives)

    def _infeasible(self, trial: optuna.Trial, reason: str) -> NoReturn:
        attrs.set_verdict(trial, False, reason)
        for key in self.constraint_keys:
            trial.set_constraint(key, 1.0)
        raise optuna.TrialPruned(reason)

    def _evaluate(self, trial: optuna.Trial, arch: ArchSpec, workload: Workload, timer_key: str) -> dict[str, float]:
        start, cpu_start = time.perf_counter(), time.process_time()
        try:
            metrics = self.evaluator(arch, workload, self.spec.fidelity, self.spec.seed)
        except MappingError as exc:
            self._timed(trial, timer_key, start, cpu_start)
            attrs.set_stage(trial, "none")
            self._infeasible(trial, f"mapping: {exc}")
        self._timed(trial, timer_key, start, cpu_start)
        return complete_metrics(metrics)

    @staticmethod
    def _timed(trial: optuna.Trial, key: str, start: float, cpu_start: float) -> None:
        # CPU seconds as well as wall seconds: on a shared machine only the former compare across runs.
        attrs.set_seconds(trial, key, time.perf_counter() - start, time.process_time() - cpu_start)

    def first_look(self, trial: optuna.Trial, arch: ArchSpec) -> dict[str, float]:
        """Stage 1: the proxy's (or the screen's) metrics of the design, recorded on the trial."""
        if self.screener is not None:
            proxy_metrics = self._screened(trial, arch)
        else:
            assert self.proxy is not None
            proxy_metrics = self._evaluate(trial, arch, self.proxy, attrs.PROXY_EVAL_S)
        attrs.set_proxy_metrics(trial, proxy_metrics)
        return proxy_metrics

    def estimate(self, params: dict[str, Any], first: dict[str, float], calibrated: Sequence[FrozenTrial]
                 ) -> dict[str, float] | None:
        """The full-workload estimate of a first look, or None while the screen is not calibrated (fewer
        than ``warmup_trials`` fully evaluated trials, or no peers of its kind)."""
        mf = self.spec.multi_fidelity
        assert mf is not None
        if len(calibrated) < mf.warmup_trials:
            return None
        peers = calibration_peers(self.spec, params, calibrated)
        if not peers:
            return None  # nothing of its kind evaluated yet: no ratio to trust, evaluate it in full
        return scale_proxy(first, peers, EXACT_METRICS if self.screener is not None else ())

    def check(self, trial: optuna.Trial, params: dict[str, Any], first: dict[str, float],
              completed: Sequence[FrozenTrial]) -> None:
        """Prune the trial when the estimate from its first look is hopeless against the ``completed``
        trials (``completed_trials``).

        Raises:
            optuna.TrialPruned: hopeless (stage ``proxy``, the reason recorded).
        """
        mf = self.spec.multi_fidelity
        assert mf is not None
        calibrated = calibrated_trials(completed)
        estimate = self.estimate(params, first, calibrated)
        if estimate is None:
            return
        attrs.set_estimate(trial, estimate)
        exact = EXACT_METRICS if self.screener is not None else ()
        reason = screen_reason(self.spec, estimate, calibrated, mf.margin, exact, mf.margins)
        if reason:
            attrs.set_stage(trial, "proxy")
            self._infeasible(trial, f"screened: {reason} ({mf.screen} screen)")

    def _screened(self, trial: optuna.Trial, arch: ArchSpec) -> dict[str, float]:
        """The analytic screen's metrics (timed as the proxy evaluation)."""
        assert self.screener is not None
        start, cpu_start = time.perf_counter(), time.process_time()
        metrics = self.screener(arch, self.workload, self.spec.fidelity, self.spec.seed)
        self._timed(trial, attrs.PROXY_EVAL_S, start, cpu_start)
        return complete_metrics(metrics)


def completed_trials(study: optuna.Study) -> list[FrozenTrial]:
    """The study's ``COMPLETE`` trials (what a first look is checked against)."""
    return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))


def calibrated_trials(completed: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    """The trials with a first look and a full evaluation: they calibrate the screen and can prune."""
    return [t for t in completed if attrs.proxy_metrics(t) is not None and attrs.metrics(t) is not None]


# Trials of the same anticipation policy calibrate the analytic screen together: its ant estimate (the
# issue fraction) and its none estimate miss different terms, so one ratio for both would mix two errors.
# [choice] 3 peers: the fewest whose median is not one trial's own ratio.
CALIBRATION_KEYS = ("anticipation.policy",)
MIN_PEERS = 3


def calibration_peers(spec: SweepSpec, params: dict[str, Any], calibrated: Sequence[FrozenTrial]
                      ) -> list[FrozenTrial]:
    """The calibrated trials whose full/screen ratios scale this trial's screen: all of them for the
    ``proxy_layers`` screen; for ``analytic``, those sharing the sampled ``CALIBRATION_KEYS`` values, or
    none when fewer than ``MIN_PEERS`` do."""
    mf = spec.multi_fidelity
    if mf is None or mf.screen != "analytic":
        return list(calibrated)
    keys = [k for k in CALIBRATION_KEYS if k in spec.space]
    peers = [t for t in calibrated if all(t.params.get(k) == params.get(k) for k in keys)]
    return peers if len(peers) >= MIN_PEERS else []


def scale_proxy(proxy_metrics: dict[str, float], calibrated: Sequence[FrozenTrial],
                exact: Collection[str] = ()) -> dict[str, float]:
    """Full-workload estimate: each proxy metric × the median full/proxy ratio of calibrated trials (the
    ``exact`` metrics, which the screen computes as the full model does, unscaled)."""
    estimate: dict[str, float] = {}
    pairs = [(attrs.metrics(t) or {}, attrs.proxy_metrics(t) or {}) for t in calibrated]
    for name, value in proxy_metrics.items():
        ratios = [full[name] / proxy[name] for full, proxy in pairs if proxy.get(name) and name in full]
        ratios = [r for r in ratios if math.isfinite(r)]
        estimate[name] = value * statistics.median(ratios) if ratios and name not in exact else value
    return estimate


def screen_reason(spec: SweepSpec, estimate: dict[str, float], calibrated: Sequence[FrozenTrial],
                  margin: float, exact: Collection[str] = (), margins: Mapping[str, float] | None = None) -> str:
    """Why a design with this full-workload estimate is not worth a full evaluation ('' if it is).

    Hopeless means: a constraint broken by more than ``margin`` (relative), or every objective of a
    fully evaluated feasible trial at least ``(1 + margin)`` times better than the estimate. An ``exact``
    metric (one the screen computes as the full model does, or bounds from below) takes no margin; one in
    ``margins`` takes its own.
    """

    def margin_of(metric: str) -> float:
        return 0.0 if metric in exact else (margins or {}).get(metric, margin)

    values, reasons = constraint_values(spec, estimate)
    bounds = [m for m, c in spec.constraints.items() for b in (c.max, c.min) if b is not None]
    if any(v > margin_of(m) for v, m in zip(values, bounds, strict=True)):
        return "estimate breaks a constraint by more than the margin: " + "; ".join(reasons)
    goal = [(estimate[m], d == "maximize", margin_of(m)) for m, d in spec.objectives.items()]
    for t in calibrated:
        if not attrs.is_feasible(t) or t.values is None:
            continue
        if all((q >= v * (1 + g)) if up else (q * (1 + g) <= v)
               for q, (v, up, g) in zip(t.values, goal, strict=True)):
            return f"estimate dominated by trial {t.number} with margin {margin}" + (
                f" ({', '.join(f'{k} {v}' for k, v in margins.items())})" if margins else "")
    return ""
