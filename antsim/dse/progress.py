"""One-line progress reports of a running sweep (trials done / total, Pareto size, best values, ETA)."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import optuna
from optuna.trial import FrozenTrial, TrialState

from antsim.dse import attrs
from antsim.dse import storage as st
from antsim.dse.pareto import pareto_mask
from antsim.dse.spec import SweepSpec

SCREENED_PREFIX = "screened:"  # objective.Objective._screen's reason prefix (a design skipped, not infeasible)


@dataclass(frozen=True)
class Outcomes:
    """Finished and running trials by what they say about the design.

    ``infeasible`` is every design the sweep refused: an arch rule or a mapping error (PRUNED) and a
    broken constraint (COMPLETE, ``feasible`` false); ``screened`` are designs the multi-fidelity screen
    skipped; ``failed`` raised in the evaluator; ``abandoned`` lost their worker (FAIL, redone).
    """

    feasible: int = 0
    infeasible: int = 0
    screened: int = 0
    failed: int = 0
    abandoned: int = 0
    running: int = 0

    @property
    def finished(self) -> int:
        """Trials that count toward the quota (an abandoned trial is redone, so it does not)."""
        return self.feasible + self.infeasible + self.screened + self.failed

    def describe(self) -> str:
        abandoned = f", {self.abandoned} abandoned by a lost worker (redone)" if self.abandoned else ""
        return (f"{self.feasible} feasible, {self.infeasible} infeasible, {self.screened} screened, "
                f"{self.failed} failed{abandoned}")


def trial_outcomes(trials: Sequence[FrozenTrial]) -> Outcomes:
    """Classify trials (see ``Outcomes``)."""
    n = dict.fromkeys(("feasible", "infeasible", "screened", "failed", "abandoned", "running"), 0)
    for t in trials:
        if t.state == TrialState.COMPLETE:
            n["feasible" if attrs.is_feasible(t) else "infeasible"] += 1
        elif t.state == TrialState.PRUNED:
            screened = attrs.reason(t).startswith(SCREENED_PREFIX)
            n["screened" if screened else "infeasible"] += 1
        elif t.state == TrialState.FAIL:
            n["failed" if attrs.error(t) is not None else "abandoned"] += 1
        else:
            n["running"] += 1
    return Outcomes(**n)


def progress_line(study: optuna.Study, spec: SweepSpec, n_trials: int, done_at_start: int,
                  elapsed_s: float) -> tuple[str, int]:
    """The report and the number of finished trials it counts."""
    trials = study.get_trials(deepcopy=False)
    counts = trial_outcomes(trials)
    feasible = [t for t in trials if t.state == TrialState.COMPLETE and attrs.is_feasible(t)]
    signs = [1.0 if d == "minimize" else -1.0 for d in spec.directions]
    points = [[s * v for s, v in zip(signs, t.values, strict=True)] for t in feasible]
    best = ", ".join(f"{name} {min(p[i] for p in points) * signs[i]:.4g}"
                     for i, name in enumerate(spec.objectives)) if points else "no feasible trial yet"
    front = int(pareto_mask([t.values for t in feasible], spec.directions).sum()) if feasible else 0
    new = counts.finished - done_at_start
    remaining = max(n_trials - counts.finished, 0)
    eta = _duration(elapsed_s / new * remaining) if new > 0 else "?"
    line = (f"[sweep {study.study_name}] {counts.finished}/{n_trials} trials ({counts.describe()}, "
            f"{counts.running} running) | Pareto {front} | best {best} | ETA {eta}")
    return line, counts.finished


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


class Monitor:
    """A thread that polls the study every ``interval_s`` and reports when the trial counts change."""

    def __init__(self, study: optuna.Study, spec: SweepSpec, n_trials: int, report: Callable[[str], None],
                 interval_s: float = 1.0) -> None:
        self.study, self.spec, self.n_trials, self.report = study, spec, n_trials, report
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="antsim-sweep-progress")
        self._start = time.time()
        self._done_at_start = st.count_trials(study).finished
        self._last = ""

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        try:
            self._emit()
        except Exception as exc:  # the storage is gone (the error that ends the sweep says so): no last line
            if not st.is_connection_error(exc):
                raise

    def _emit(self) -> None:
        line, _ = progress_line(self.study, self.spec, self.n_trials, self._done_at_start,
                                time.time() - self._start)
        key = line.rsplit("| ETA", 1)[0]
        if key != self._last:
            self._last = key
            self.report(line)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self._emit()
            except Exception:  # a progress report must never kill the sweep (e.g. a locked database)
                continue
