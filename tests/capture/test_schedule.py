"""Learning-rate schedules (``antsim.capture.schedule``) against their closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from antsim.capture.schedule import LrSchedule, make_schedule
from antsim.errors import WorkloadError


def test_cosine_warms_up_linearly_then_follows_half_a_cosine() -> None:
    s = make_schedule("cosine", 0.1, steps=105, warmup=5)
    np.testing.assert_allclose([s.at(i) for i in range(5)], [0.02, 0.04, 0.06, 0.08, 0.10], rtol=1e-12)
    # after the warm-up: 0.05·(1 + cos(π·t/100)) for t = step − 5
    for t in (0, 25, 50, 75, 99):
        assert s.at(5 + t) == pytest.approx(0.05 * (1 + math.cos(math.pi * t / 100)), rel=1e-12)
    assert s.at(55) == pytest.approx(0.05)  # half-way: half the peak
    decay = [s.at(i) for i in range(5, 105)]
    assert all(a > b for a, b in zip(decay, decay[1:], strict=False)) and decay[-1] > 0


def test_step_divides_by_ten_at_half_and_three_quarters() -> None:
    s = make_schedule("step", 0.2, steps=40, warmup=2)
    assert [s.at(i) for i in (0, 1)] == pytest.approx([0.1, 0.2])
    assert [s.at(i) for i in (2, 19, 20, 29, 30, 39)] == pytest.approx([0.2, 0.2, 0.02, 0.02, 0.002, 0.002])


def test_constant_and_default_warmup() -> None:
    assert {make_schedule("constant", 0.005, 30).at(i) for i in range(30)} == {0.005}
    assert make_schedule("cosine", 0.1, 400).warmup == 20  # 5 % of the run
    assert make_schedule("cosine", 0.1, 10).warmup == 1 and make_schedule("cosine", 0.1, 1).warmup == 0
    assert make_schedule("cosine", 0.1, 1).at(0) == 0.1


@pytest.mark.parametrize(("kind", "lr", "steps", "warmup", "text", "subject"), [
    ("linear", 0.1, 10, 1, "schedule 'linear'", "schedule"), ("cosine", 0.0, 10, 1, "learning rate", "lr"),
    ("cosine", float("nan"), 10, 1, "learning rate", "lr"), ("cosine", 0.1, 10, 10, "warm-up steps", "warmup"),
    ("step", 0.1, 10, -1, "warm-up steps", "warmup")])
def test_bad_schedules_are_refused(kind: str, lr: float, steps: int, warmup: int, text: str, subject: str) -> None:
    with pytest.raises(WorkloadError, match=text) as info:
        LrSchedule(kind, lr, steps, warmup)
    assert info.value.subject == subject and "--" not in str(info.value)
