"""Several workers on one study (SQLite and a real PostgreSQL server); kill mid-trial and resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState
from sweep_helpers import REPO, write_spec

from antsim.dse.runner import SweepOptions, run_sweep
from antsim.dse.spec import load_sweep
from antsim.dse.storage import WORKER_ATTR, make_storage


def _study(url: str, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=make_storage(url, heartbeat_s=60))


def _assert_consistent(study: optuna.Study, n_trials: int) -> list[optuna.trial.FrozenTrial]:
    trials = study.get_trials(deepcopy=False)
    numbers = [t.number for t in trials]
    assert len(numbers) == len(set(numbers)) and sorted(numbers) == list(range(len(numbers)))
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == n_trials
    return trials


def _two_workers(tmp_path: Path, url: str) -> None:
    # delay_s makes trials overlap so both workers really compete for the last slots.
    spec_path = write_spec(tmp_path, "two", n_trials=9,
                           evaluator={"name": "analytic", "options": {"delay_s": 0.15}})
    spec = load_sweep(spec_path)
    summary = run_sweep(spec, SweepOptions(storage_url=url, study_name="two", n_trials=9, workers=2, seed=1))
    assert summary.counts.finished == 9
    trials = _assert_consistent(_study(url, "two"), 9)
    assert len(trials) == 9  # nothing over the quota, nothing failed
    owners = {t.user_attrs[WORKER_ATTR].rsplit("/", 1)[1] for t in trials}
    assert owners == {"0", "1"}
    # Resuming a complete study runs nothing more.
    again = run_sweep(spec, SweepOptions(storage_url=url, study_name="two", n_trials=9, workers=1, seed=1))
    assert again.counts.finished == 9 and len(_study(url, "two").trials) == 9


def test_two_worker_processes_sqlite_exact_trial_count(tmp_path: Path) -> None:
    _two_workers(tmp_path, f"sqlite:///{tmp_path / 'two.db'}")


@pytest.mark.postgres
def test_two_worker_processes_postgresql(tmp_path: Path, postgres_url: str) -> None:
    _two_workers(tmp_path, postgres_url)


def _running_trials(url: str, name: str) -> int:
    try:
        study = _study(url, name)
    except KeyError:
        return 0
    states = [t.state for t in study.get_trials(deepcopy=False)]
    if sum(s == TrialState.COMPLETE for s in states) >= 2 and TrialState.RUNNING in states:
        return 1
    return 0


def test_sigkill_mid_trial_then_resume(tmp_path: Path) -> None:
    spec_path = write_spec(tmp_path, "kill", n_trials=8,
                           evaluator={"name": "analytic", "options": {"delay_s": 0.4}})
    db = tmp_path / "kill.db"
    url = f"sqlite:///{db}"
    cmd = [sys.executable, "-m", "antsim", "sweep", str(spec_path), "--storage", url, "--heartbeat", "1"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not (db.exists() and _running_trials(url, "kill")):
            time.sleep(0.1)
        assert _running_trials(url, "kill"), "the sweep never reached a running trial"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    killed = _study(url, "kill").get_trials(deepcopy=False)
    assert any(t.state == TrialState.RUNNING for t in killed)
    done_before = sum(t.state == TrialState.COMPLETE for t in killed)
    resumed = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    trials = _assert_consistent(_study(url, "kill"), 8)
    abandoned = [t for t in trials if t.state == TrialState.FAIL]
    assert len(abandoned) == 1 and "error" not in abandoned[0].user_attrs
    # Trials finished before the kill were kept, not redone.
    assert sum(t.state == TrialState.COMPLETE for t in trials[:done_before]) == done_before
