"""Screen ahead (``multi_fidelity.screen_ahead: B``): first looks for a batch of trials, full evaluations
in order of promise.

One trial at a time, a design can be screened out only by designs evaluated in full *before* it, so
the order the sampler proposes designs in decides how many of them are evaluated in full. A worker that
screens ahead takes ``B`` trials from the sampler at once (Optuna's ask/tell), gives each its first look
(the analytic screen or the proxy), and then repeats: drop (``PRUNED``, stage ``proxy``) every waiting
trial whose estimate is hopeless against the trials the study holds evaluated in full — by the same rule
and margins as one trial at a time (``antsim.dse.objective.screen_reason``) —, and evaluate in full the
most promising of the others (``promise``). The designs on the front are thus evaluated early and prune
more of the rest; what a design evaluated in full gets is unchanged (the same evaluator on the same
design), and no design is screened out but by one evaluated in full.

Measured: docs/sweep_screening.md ("Screening ahead").
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import optuna
from optuna.trial import FrozenTrial

from antsim.dse.objective import Objective
from antsim.dse.spec import SweepSpec
from antsim.spec.arch import ArchSpec


@dataclass(frozen=True)
class Candidate:
    """A trial of the batch after its first look, waiting for a verdict.

    Attributes:
        trial: The live (``RUNNING``) trial.
        params: Its sampled parameters.
        arch: The design they make.
        first: The first look's metrics (unscaled).
    """

    trial: optuna.Trial
    params: dict[str, Any]
    arch: ArchSpec
    first: dict[str, float]


# Smallest value a metric enters the promise's logarithm with (a zero metric is a perfect one, not an error).
_TINY = 1e-300


def promise(spec: SweepSpec, metrics: dict[str, float]) -> float:
    """Σ over the objectives of ``log(value)`` (``−log`` for a maximised one): smaller is more promising.

    [choice] The product of the objectives, which does not depend on their units. Replayed offline on 64
    random designs of resnet18_cifar_pareto.yaml's space (screen and full model recorded; sampler seed 7,
    the set it was chosen on / held-out seed 23), batches of 16, 32, 64 ordered by it needed 20, 16, 15 /
    20, 18, 13 full evaluations for the same front; ordered by how many batch designs an estimate dominates,
    21, 18, 18 / 20, 19, 14; one trial at a time, 28 / 27 (docs/sweep_screening.md).
    """
    total = 0.0
    for name, direction in spec.objectives.items():
        value = math.log(max(float(metrics[name]), _TINY))
        total += -value if direction == "maximize" else value
    return total


def by_promise(objective: Objective, candidates: Iterable[Candidate], calibrated: Sequence[FrozenTrial]
               ) -> list[Candidate]:
    """The candidates, most promising first: by their calibrated estimate, by their first look while the
    screen is not calibrated for them (the ties kept in trial order)."""

    def key(c: Candidate) -> tuple[float, int]:
        estimate = objective.estimate(c.params, c.first, calibrated)
        return promise(objective.spec, estimate or c.first), c.trial.number

    return sorted(candidates, key=key)


class Heartbeats:
    """Heartbeats for every trial a worker holds while it screens ahead (Optuna's heartbeat thread covers
    the one trial of ``Study.optimize``): a batch's waiting trials are not taken for a dead worker's.

    Args:
        storage: The worker's storage (``record_heartbeat`` skips a beat while it is unreachable).
        trial_ids: The trials to beat for.
        interval_s: Seconds between beats (the storage's heartbeat interval).
    """

    def __init__(self, storage: optuna.storages.RDBStorage, trial_ids: Iterable[int], interval_s: float) -> None:
        self.storage, self.interval_s = storage, interval_s
        self._ids = set(trial_ids)
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="antsim-screen-ahead-heartbeat", daemon=True)

    def drop(self, trial_id: int) -> None:
        """Stop beating for a trial (it has finished)."""
        with self._guard:
            self._ids.discard(trial_id)

    def _beat(self) -> None:
        while not self._stop.wait(self.interval_s):
            with self._guard:
                ids = sorted(self._ids)
            for trial_id in ids:
                self.storage.record_heartbeat(trial_id)

    def __enter__(self) -> Heartbeats:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
