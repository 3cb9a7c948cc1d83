"""Learning-rate schedules of the capture's SGD (no PyTorch needed: a schedule is a pure function of the step).

* ``constant`` — ``lr`` at every step (the capture's behaviour before schedules existed).
* ``cosine`` — linear warm-up from ``lr / warmup`` to ``lr`` over the first ``warmup`` steps (Goyal et al.,
  "Accurate, Large Minibatch SGD", 2017, §2.2 gradual warm-up), then half a cosine from ``lr`` down to 0 at
  the last step (Loshchilov & Hutter, "SGDR", ICLR 2017, eq. 5 without restarts, eta_min = 0).
* ``step`` — the same warm-up, then ``lr`` divided by 10 at 50 % and again at 75 % of the steps (He et al.,
  "Deep Residual Learning", CVPR 2016, §4.2: CIFAR-10 lr 0.1 divided by 10 at 32k and 48k of 64k iterations).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from antsim.errors import WorkloadError

SCHEDULES = ("cosine", "step", "constant")
WARMUP_FRACTION = 0.05  # default warm-up: 5 % of the run (Goyal et al. warm up 5 of 90 epochs, 5.6 %)
STEP_MILESTONES = (0.5, 0.75)  # fractions of the run where ``step`` divides lr by STEP_FACTOR (He et al. 2016)
STEP_FACTOR = 10.0


@dataclass(frozen=True)
class LrSchedule:
    """Learning rate as a function of the (0-based) step of a ``steps``-step run.

    Attributes:
        kind: ``cosine``, ``step`` or ``constant``.
        lr: Peak learning rate (reached at the end of the warm-up).
        steps: Length of the run.
        warmup: Warm-up steps (ignored by ``constant``).
    """

    kind: str
    lr: float
    steps: int
    warmup: int

    def __post_init__(self) -> None:
        if self.kind not in SCHEDULES:
            raise WorkloadError(f"schedule {self.kind!r}: known schedules: {', '.join(SCHEDULES)}", subject="schedule")
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise WorkloadError(f"learning rate must be a positive number; got {self.lr!r}", subject="lr")
        if not isinstance(self.warmup, int) or not 0 <= self.warmup < max(self.steps, 1):
            raise WorkloadError(f"warm-up steps must be an integer in [0, steps); got {self.warmup!r} "
                                f"for {self.steps} steps", subject="warmup")

    def at(self, step: int) -> float:
        """The learning rate used by step ``step`` (0 ≤ step < steps)."""
        if self.kind == "constant":
            return self.lr
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        if self.kind == "step":
            drops = sum(step >= round(m * self.steps) for m in STEP_MILESTONES)
            return self.lr / STEP_FACTOR ** drops
        span = self.steps - self.warmup
        progress = (step - self.warmup) / span if span > 1 else 0.0
        # progress ends at (span-1)/span on the last step, so no step trains at lr 0
        return 0.5 * self.lr * (1.0 + math.cos(math.pi * progress))


def make_schedule(kind: str, lr: float, steps: int, warmup: int | None = None) -> LrSchedule:
    """``LrSchedule`` with the default warm-up (``WARMUP_FRACTION`` of the steps, at least 1 when the run
    has more than one step) unless ``warmup`` is given.

    Raises:
        WorkloadError: unknown kind, a non-positive lr, or a warm-up outside [0, steps).
    """
    if warmup is None:
        warmup = 0 if kind == "constant" or steps < 2 else max(1, round(WARMUP_FRACTION * steps))
    return LrSchedule(kind, lr, steps, warmup)
