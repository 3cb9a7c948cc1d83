"""``antsim.dse.progress``: trials sorted into what they say about a design, and the one-line report (counts,
Pareto size and best values by brute force over the trials written here, ETA from the rate so far)."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from optuna.distributions import IntDistribution
from optuna.trial import FrozenTrial, TrialState
from sweep_helpers import write_spec

from antsim.dse.progress import Outcomes, _duration, progress_line, trial_outcomes
from antsim.dse.spec import load_sweep


def _trial(state: TrialState, values: list[float] | None = None, **user_attrs: object) -> FrozenTrial:
    return optuna.trial.create_trial(state=state, values=values, params={"x": 1},
                                     distributions={"x": IntDistribution(0, 2)}, user_attrs=user_attrs)


TRIALS = [
    _trial(TrialState.COMPLETE, [1.0, 2.0], feasible=True),
    _trial(TrialState.COMPLETE, [0.5, 1.0], feasible=False, reason="area_mm2 9 > 8"),  # a broken constraint
    _trial(TrialState.PRUNED, reason="screened: dominated by trial 0"),
    _trial(TrialState.PRUNED, reason="pe_array.F: arch rule"),
    _trial(TrialState.FAIL, error="ValueError()"),
    _trial(TrialState.FAIL),  # its worker died: redone, not counted
    _trial(TrialState.RUNNING),
]


def test_trials_are_sorted_into_outcomes() -> None:
    counts = trial_outcomes(TRIALS)
    assert counts == Outcomes(feasible=1, infeasible=2, screened=1, failed=1, abandoned=1, running=1)
    assert counts.finished == 5
    assert counts.describe() == ("1 feasible, 2 infeasible, 1 screened, 1 failed, 1 abandoned by a lost worker "
                                 "(redone)")
    assert Outcomes(feasible=2).describe() == "2 feasible, 0 infeasible, 0 screened, 0 failed"


def test_progress_line_counts_the_front_and_the_best_by_direction(tmp_path: Path) -> None:
    spec = load_sweep(write_spec(tmp_path, objectives={"time_s": "min", "power_w": "max"}, constraints={}))
    study = optuna.create_study(storage=optuna.storages.InMemoryStorage(), directions=list(spec.directions))
    points = [(1.0, 2.0), (2.0, 5.0), (3.0, 4.0), (0.5, 1.0), (2.0, 5.0)]
    for time_s, power_w in points:
        study.add_trial(_trial(TrialState.COMPLETE, [time_s, power_w], feasible=True))
    study.add_trial(_trial(TrialState.COMPLETE, [0.1, 9.0], feasible=False))  # dominates all, but infeasible
    # Brute force: a point is on the front unless another is no slower, no less powerful, and better in one.
    front = sum(not any(o[0] <= p[0] and o[1] >= p[1] and o != p for o in points) for p in points)
    assert front == 4  # (3.0, 4.0) is dominated by (2.0, 5.0), counted twice as its duplicate is
    line, finished = progress_line(study, spec, n_trials=10, done_at_start=2, elapsed_s=40.0)
    assert finished == 6
    assert line == (f"[sweep {study.study_name}] 6/10 trials (5 feasible, 1 infeasible, 0 screened, 0 failed, "
                    f"0 running) | Pareto {front} | best time_s 0.5, power_w 5 | ETA 0m40s")  # 4 trials in 40 s


@pytest.mark.parametrize(("seconds", "text"), [(0.4, "0m00s"), (59.6, "1m00s"), (3599, "59m59s"),
                                                (3600, "1h00m"), (3725, "1h02m"), (float("inf"), "?")])
def test_duration(seconds: float, text: str) -> None:
    assert _duration(seconds) == text


def test_no_feasible_trial_and_no_rate_yet(tmp_path: Path) -> None:
    spec = load_sweep(write_spec(tmp_path))
    study = optuna.create_study(storage=optuna.storages.InMemoryStorage(), directions=list(spec.directions))
    line, finished = progress_line(study, spec, n_trials=3, done_at_start=0, elapsed_s=5.0)
    assert finished == 0 and "0/3 trials" in line and "Pareto 0" in line
    assert "best no feasible trial yet" in line and line.endswith("ETA ?")
