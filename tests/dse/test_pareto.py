"""The one Pareto function: checked against brute-force dominance written from the definition, on
random points with mixed directions, ties, infeasible rows and NaN."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial
from sweep_helpers import write_spec

from antsim.dse.pareto import pareto_mask, pareto_trials
from antsim.dse.spec import load_sweep


def _better_or_equal(a: float, b: float, direction: str) -> bool:
    return a <= b if direction == "minimize" else a >= b


def _brute_front(rows: list[list[float]], directions: list[str], feasible: list[bool]) -> list[bool]:
    """From the definition, one pair at a time, in plain Python (no shared code with pareto_mask)."""
    usable = [f and not any(math.isnan(v) for v in row) for row, f in zip(rows, feasible, strict=True)]

    def dominates(a: list[float], b: list[float]) -> bool:
        at_least = all(_better_or_equal(x, y, d) for x, y, d in zip(a, b, directions, strict=True))
        return at_least and any(x != y for x, y in zip(a, b, strict=True))

    return [usable[i] and not any(usable[j] and dominates(rows[j], rows[i]) for j in range(len(rows)) if j != i)
            for i in range(len(rows))]


@pytest.mark.parametrize("seed", range(8))
def test_matches_brute_force_with_mixed_directions_ties_infeasible_and_nan(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = 80, int(rng.integers(1, 5))
    values = rng.integers(0, 5, size=(n, k)).astype(float)  # a small grid: many ties and duplicates
    values[rng.uniform(size=(n, k)) < 0.05] = np.nan
    directions = [str(d) for d in rng.choice(["minimize", "maximize"], size=k)]
    feasible = rng.uniform(size=n) > 0.2
    mask = pareto_mask(values, directions, feasible)
    assert mask.tolist() == _brute_front(values.tolist(), directions, feasible.tolist())
    assert mask.any()


def test_a_maximised_objective_flips_the_front() -> None:
    values = [[1.0, 1.0], [2.0, 2.0], [1.0, 2.0]]
    assert pareto_mask(values, ["minimize", "minimize"]).tolist() == [True, False, False]
    assert pareto_mask(values, ["minimize", "maximize"]).tolist() == [False, False, True]
    assert pareto_mask(values, ["maximize", "maximize"]).tolist() == [False, True, False]


def test_duplicates_are_all_kept_and_an_infeasible_row_dominates_nothing() -> None:
    values = [[1.0, 2.0], [1.0, 2.0], [0.0, 0.0], [3.0, 3.0]]
    assert pareto_mask(values, ["minimize"] * 2, [True, True, False, True]).tolist() == [True, True, False, False]
    nan_row = [[np.nan, 0.0], [1.0, 1.0]]  # a NaN row is neither on the front nor dominating
    assert pareto_mask(nan_row, ["minimize"] * 2).tolist() == [False, True]


def test_empty_and_malformed_input() -> None:
    assert pareto_mask([], ["minimize", "maximize"]).tolist() == []
    with pytest.raises(ValueError, match="2 direction"):
        pareto_mask([[1.0, 2.0, 3.0]], ["minimize", "minimize"])
    with pytest.raises(ValueError, match="'up'"):
        pareto_mask([[1.0]], ["up"])  # type: ignore[list-item]


def test_pareto_trials_keeps_feasible_complete_trials_by_the_specs_directions(tmp_path: Path) -> None:
    spec = load_sweep(write_spec(tmp_path, objectives={"time_s": "min", "power_w": "max"}))
    dist = {"x": FloatDistribution(0, 1)}

    def trial(number: int, values: list[float] | None, feasible: bool = True,
              state: TrialState = TrialState.COMPLETE):  # type: ignore[no-untyped-def]
        made = create_trial(state=state, values=values, params={"x": 0.5}, distributions=dist,
                            user_attrs={"feasible": feasible})
        made.number = number
        return made

    trials = [trial(0, [1.0, 5.0]), trial(1, [2.0, 6.0]), trial(2, [2.0, 4.0]), trial(3, [0.5, 9.0], feasible=False),
              trial(4, None, state=TrialState.PRUNED), trial(5, [1.0, 5.0])]
    assert [t.number for t in pareto_trials(spec, trials)] == [0, 1, 5]
