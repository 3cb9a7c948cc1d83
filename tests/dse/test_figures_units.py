"""Sweep figures in units a reader reads: SI prefixes chosen from the data, log axes across decades, the
importance figure naming its evaluator and warning when the trials are too few to rank parameters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pytest
from sweep_helpers import write_spec

import antsim.dse.figures as figures
from antsim.cli import main
from antsim.dse.figures import (
    IMPORTANCE_MIN_TRIALS,
    SweepInfo,
    _get_importance_info,
)
from antsim.dse.metrics import readable_axis
from antsim.dse.spec import load_sweep
from antsim.dse.storage import make_storage


@pytest.mark.parametrize(("name", "values", "divisor", "label", "log"), [
    ("time_s", [1.17e-6, 1.18e-6], 1e-6, "time per step (µs)", False),
    ("time_s", [2.5e-2, 0.4], 1e-3, "time per step (ms)", False),      # largest value read as 400 ms
    ("time_s", [1.2e-6, 3.0e-3], 1e-3, "time per step (ms), log scale", True),
    ("energy_j", [6.6e-7, 6.7e-7], 1e-9, "energy per step (nJ)", False),
    ("energy_j", [0.002, 0.0031], 1e-3, "energy per step (mJ)", False),
    ("energy_j", [12.0, 40.0], 1.0, "energy per step (J)", False),
    ("area_mm2", [3.27, 38.0], 1.0, "area (mm²)", False),
    ("area_mm2", [0.1, 38.0], 1.0, "area (mm²), log scale", True),
    ("power_w", [-1.0, 2.0], 1.0, "power (W)", False),                  # signed: never a log axis
    ("edp", [2.0e-13, 5.0e-13], 1e-15, "energy-delay product (fJ·s)", False),
    ("edp_js", [2.0e-13, 5.0e-13], 1e-15, "energy-delay product (fJ·s)", False),  # an earlier report's name
    ("cycles", [2.0e6, 3.0e7], 1e6, "cycles (×10^6)", False),
    ("rcp_fraction", [0.2, 0.4], 1.0, "RCP fraction", False),
    ("values_0", [0.5, 2.0], 1.0, "values_0", False),                   # outside the table: as it is
])
def test_readable_axis(name: str, values: list[float], divisor: float, label: str, log: bool) -> None:
    axis = readable_axis(name, np.array(values + [np.nan]))
    assert axis.label == label and axis.log is log and axis.divisor == pytest.approx(divisor)
    top = max(abs(v) for v in values) / axis.divisor
    assert name in ("area_mm2", "rcp_fraction", "values_0") or 1 <= top < 1000


def _info(objectives: tuple[str, ...], values: np.ndarray, pareto: list[bool]) -> SweepInfo:
    n = len(values)
    return SweepInfo("test", objectives, ("minimize",) * len(objectives), np.arange(n), values,
                     np.ones(n, dtype=bool), np.array(pareto, dtype=bool))


def _ticks_have_no_offset(ax: Any) -> bool:
    ax.figure.canvas.draw()
    return ax.xaxis.get_offset_text().get_text() == "" and ax.yaxis.get_offset_text().get_text() == ""


def test_tradeoff_axes_in_microseconds_and_nanojoules_without_offsets() -> None:
    values = np.array([[1.171e-6, 6.612e-7, 3.27], [1.181e-6, 6.631e-7, 3.29], [1.175e-6, 6.62e-7, 3.28]])
    fig = figures.render_tradeoffs(_info(("time_s", "energy_j", "area_mm2"), values, [True, False, True]))
    labels = [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]
    assert labels == [("time per step (µs)", "energy per step (nJ)"), ("time per step (µs)", "area (mm²)"),
                      ("energy per step (nJ)", "area (mm²)")]
    assert all(_ticks_have_no_offset(ax) for ax in fig.axes)
    x_points = fig.axes[0].collections[2].get_offsets()[:, 0]   # the Pareto points, in µs
    np.testing.assert_allclose(sorted(x_points), [1.171, 1.175])


def test_values_across_decades_go_on_log_axes() -> None:
    values = np.array([[0.5, 1e-6, 1e-3], [4.0, 1e-4, 2e-3], [300.0, 2e-3, 3e-3]])
    pareto = figures.render_pareto(_info(("area_mm2", "energy_j", "time_s"), values, [True, False, False]))
    history = figures.render_history(_info(("time_s",), np.array([[1e-6], [1e-3], [5e-3]]), [True, False, False]))
    ax = pareto.axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert ax.get_xlabel() == "area (mm²), log scale" and ax.get_ylabel() == "energy per step (mJ), log scale"
    assert pareto.axes[1].get_ylabel() == "Pareto points: time per step (ms)"  # the colour bar of the third
    assert history.axes[0].get_yscale() == "log" and history.axes[0].get_ylabel() == "time per step (ms), log scale"


def _study(tmp_path: Path, n_trials: int) -> tuple[Any, optuna.Study]:
    spec_path = write_spec(tmp_path, "imp", n_trials=n_trials, sampler="random")
    assert main(["sweep", str(spec_path)]) == 0
    storage = make_storage(f"sqlite:///{tmp_path / 'results' / 'imp.db'}", 60)
    return load_sweep(spec_path), optuna.load_study(study_name="imp", storage=storage)


@pytest.mark.filterwarnings("ignore:PedAnovaImportanceEvaluator computes")
def test_importance_names_its_evaluator_and_warns_below_the_trial_count(tmp_path: Path) -> None:
    spec, study = _study(tmp_path, 24)
    info = _get_importance_info(spec, study)
    complete = sum(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    assert info.evaluator.startswith("PED-ANOVA") and info.n_trials == complete < IMPORTANCE_MIN_TRIALS
    assert all(imp and abs(sum(imp.values()) - 1) < 1e-9 for imp in info.importances)
    assert all(note.startswith(f"warning: {complete} complete trials, under {IMPORTANCE_MIN_TRIALS}")
               for note in info.notes)
    # the evaluator named is the one that ran: Optuna's PED-ANOVA at the same quantile gives the same shares
    direct = optuna.importance.get_param_importances(
        study, evaluator=optuna.importance.PedAnovaImportanceEvaluator(target_quantile=0.1),
        target=lambda t: t.values[0])
    assert info.importances[0] == pytest.approx(dict(direct))
    fig = figures.render_importance(info)
    title, warning = fig._suptitle.get_text().split("\n")
    assert title == f"Parameter importance: PED-ANOVA (top 10 % of trials vs all), {complete} complete trials"
    assert warning == info.notes[0]
