"""run_sweep leaves the caller's Optuna log level and warning filters as they were."""

from __future__ import annotations

import warnings
from pathlib import Path

import optuna
from sweep_helpers import write_spec

from antsim.dse.runner import SweepOptions, run_sweep
from antsim.dse.spec import load_sweep


def test_run_sweep_changes_no_global_logging_or_warning_state(tmp_path: Path) -> None:
    spec = load_sweep(write_spec(tmp_path, "quiet", n_trials=3))
    before_level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # a caller's own choice, not the default INFO
    try:
        with warnings.catch_warnings():  # the test's own scope, so a failure cannot leak filters either
            warnings.simplefilter("default")
            filters = list(warnings.filters)
            summary = run_sweep(spec, SweepOptions(storage_url=f"sqlite:///{tmp_path / 'q.db'}",
                                                   study_name="quiet", n_trials=3, seed=1))
            assert summary.counts.finished == 3  # it ran
            assert optuna.logging.get_verbosity() == optuna.logging.WARNING
            assert warnings.filters == filters
    finally:
        optuna.logging.set_verbosity(before_level)
