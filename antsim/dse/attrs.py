"""The user attributes antsim keeps on Optuna trials and studies: their key names and typed get/set.

Optuna stores ``user_attrs`` as JSON under the key names below, so they are the sweep's storage format:
``trials.csv`` columns, ``optuna-dashboard`` and earlier studies read them. Every ``antsim.dse`` module
reads and writes them through these functions, so a key is spelt once.

Trial attributes (set by ``antsim.dse.objective.Objective`` unless noted):
    ``arch_name``: the sampled design's name. ``metrics``: the full evaluation's metrics. ``stage``: how
    far the trial got (``full``, ``proxy`` screened by the multi-fidelity proxy, ``none`` refused by the
    mapping). ``constraints``: the constraint values the samplers read (<= 0 satisfied). ``feasible``,
    ``reason``: whether the design meets every constraint, and why not. ``eval_s``/``eval_cpu_s`` and
    ``proxy_eval_s``/``proxy_eval_cpu_s``: wall and CPU seconds of the full and proxy evaluations.
    ``proxy_metrics``, ``estimate``: the proxy's metrics and the full-workload estimate made from them.
    ``worker`` (``antsim.dse.runner``): ``host:pid/index`` of the worker that owns the trial.
    ``error`` (``antsim.dse.runner``): the evaluator's exception when the trial failed.
Study attributes (``antsim.dse.runner.prepare_study``): ``antsim_signature`` (what must not change on a
resume) and ``objectives``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

ARCH_NAME = "arch_name"
METRICS = "metrics"
STAGE = "stage"
CONSTRAINTS = "constraints"
FEASIBLE = "feasible"
REASON = "reason"
EVAL_S = "eval_s"
EVAL_CPU_S = "eval_cpu_s"
PROXY_EVAL_S = "proxy_eval_s"
PROXY_EVAL_CPU_S = "proxy_eval_cpu_s"
PROXY_METRICS = "proxy_metrics"
ESTIMATE = "estimate"
WORKER = "worker"
ERROR = "error"
STUDY_SIGNATURE = "antsim_signature"
STUDY_OBJECTIVES = "objectives"

Stage = Literal["full", "proxy", "none"]
# The timer keys an evaluation writes: wall seconds, and the CPU seconds kept beside them.
CPU_KEY = {EVAL_S: EVAL_CPU_S, PROXY_EVAL_S: PROXY_EVAL_CPU_S}


class _HasAttrs(Protocol):
    """A trial or study (live or frozen): what the readers need."""

    @property
    def user_attrs(self) -> dict[str, Any]: ...


class _SetsAttrs(Protocol):
    """A live trial or study: what the writers need."""

    def set_user_attr(self, key: str, value: Any) -> None: ...


# --- readers ---------------------------------------------------------------------------------------------

def is_feasible(t: _HasAttrs) -> bool:
    """True when the trial was evaluated and met every constraint (False when unset)."""
    return bool(t.user_attrs.get(FEASIBLE, False))


def reason(t: _HasAttrs) -> str:
    """Why the design was refused or screened ('' when it was not)."""
    return str(t.user_attrs.get(REASON) or "")


def stage(t: _HasAttrs) -> str:
    """``full``, ``proxy``, ``none`` or '' (the trial never reached an evaluation)."""
    return str(t.user_attrs.get(STAGE, ""))


def arch_name(t: _HasAttrs) -> str | None:
    return _str_or_none(t.user_attrs.get(ARCH_NAME))


def metrics(t: _HasAttrs) -> dict[str, float] | None:
    """The full evaluation's metrics (None when the trial has none)."""
    return _metrics(t.user_attrs.get(METRICS))


def proxy_metrics(t: _HasAttrs) -> dict[str, float] | None:
    return _metrics(t.user_attrs.get(PROXY_METRICS))


def estimate(t: _HasAttrs) -> dict[str, float] | None:
    return _metrics(t.user_attrs.get(ESTIMATE))


def seconds(t: _HasAttrs, key: str) -> float | None:
    """One of the timers (``EVAL_S``, ``EVAL_CPU_S``, ``PROXY_EVAL_S``, ``PROXY_EVAL_CPU_S``), None when unset."""
    value = t.user_attrs.get(key)
    return None if value is None else float(value)


def worker(t: _HasAttrs) -> str | None:
    return _str_or_none(t.user_attrs.get(WORKER))


def error(t: _HasAttrs) -> str | None:
    return _str_or_none(t.user_attrs.get(ERROR))


def study_signature(study: _HasAttrs) -> str | None:
    return _str_or_none(study.user_attrs.get(STUDY_SIGNATURE))


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _metrics(value: Any) -> dict[str, float] | None:
    return None if value is None else {str(k): v for k, v in dict(value).items()}


# --- writers ---------------------------------------------------------------------------------------------

def set_arch_name(trial: _SetsAttrs, name: str) -> None:
    trial.set_user_attr(ARCH_NAME, name)


def set_metrics(trial: _SetsAttrs, values: Mapping[str, float]) -> None:
    trial.set_user_attr(METRICS, dict(values))


def set_proxy_metrics(trial: _SetsAttrs, values: Mapping[str, float]) -> None:
    trial.set_user_attr(PROXY_METRICS, dict(values))


def set_estimate(trial: _SetsAttrs, values: Mapping[str, float]) -> None:
    trial.set_user_attr(ESTIMATE, dict(values))


def set_stage(trial: _SetsAttrs, value: Stage) -> None:
    trial.set_user_attr(STAGE, value)


def set_constraints(trial: _SetsAttrs, values: Sequence[float]) -> None:
    trial.set_user_attr(CONSTRAINTS, list(values))


def set_verdict(trial: _SetsAttrs, feasible: bool, why: str) -> None:
    """``feasible`` and ``reason`` together (a refused design always says why)."""
    trial.set_user_attr(FEASIBLE, feasible)
    trial.set_user_attr(REASON, why)


def set_seconds(trial: _SetsAttrs, key: str, wall_s: float, cpu_s: float) -> None:
    """A timer (``EVAL_S`` or ``PROXY_EVAL_S``) and its CPU-seconds twin."""
    trial.set_user_attr(key, wall_s)
    trial.set_user_attr(CPU_KEY[key], cpu_s)


def set_worker(trial: _SetsAttrs, owner: str) -> None:
    trial.set_user_attr(WORKER, owner)


def set_error(trial: _SetsAttrs, text: str) -> None:
    trial.set_user_attr(ERROR, text)


def set_study_identity(study: _SetsAttrs, signature: str, objectives: Sequence[str]) -> None:
    """The signature a resume is checked against, and the objectives' names."""
    study.set_user_attr(STUDY_SIGNATURE, signature)
    study.set_user_attr(STUDY_OBJECTIVES, list(objectives))
