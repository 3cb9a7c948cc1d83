"""Faults during a two-worker ``antsim sweep``: a worker SIGKILLed or SIGSTOPped mid-trial, every worker
killed, a PostgreSQL restart. What the user sees is one line per fault (no traceback), and the study stays
consistent: trial numbers dense, nothing left RUNNING, exactly the quota finished, a lost trial FAIL."""

from __future__ import annotations

import datetime
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

from antsim.dse.storage import WORKER_ATTR, make_storage

pytestmark = pytest.mark.slow  # each runs a real sweep with spawned workers: 20-60 s on two cores

DELAY_S = 2.0   # analytic evaluator's sleep per trial: long enough to catch a trial mid-flight
N_TRIALS = 6


def _study(url: str) -> optuna.Study:
    return optuna.load_study(study_name="faults", storage=make_storage(url, heartbeat_s=60))


def _start(tmp_path: Path, url: str, workers: int = 2) -> subprocess.Popen[str]:
    spec = write_spec(tmp_path, "faults", n_trials=N_TRIALS,
                      evaluator={"name": "analytic", "options": {"delay_s": DELAY_S}})
    cmd = [sys.executable, "-m", "antsim", "sweep", str(spec), "--storage", url, "--heartbeat", "1",
           "--workers", str(workers)]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _trial_in_flight(url: str, exclude: set[int] = frozenset()) -> tuple[int, int]:  # type: ignore[assignment]
    """(pid of the worker, trial number) of a claimed trial that started less than a third of DELAY_S ago."""
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            trials = _study(url).get_trials(deepcopy=False)
        except Exception:  # noqa: BLE001 - the study is not created yet
            trials = []
        now = datetime.datetime.now()
        for t in trials:
            owner = t.user_attrs.get(WORKER_ATTR)
            if t.state == TrialState.RUNNING and owner and t.datetime_start is not None \
                    and (now - t.datetime_start).total_seconds() < DELAY_S / 3:
                pid = int(owner.split(":")[1].split("/")[0])
                if pid not in exclude:
                    return pid, t.number
        time.sleep(0.05)
    pytest.fail("the sweep never reached a claimed running trial")


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def _consistent(url: str, finished: int) -> list[optuna.trial.FrozenTrial]:
    trials = _study(url).get_trials(deepcopy=False)
    assert sorted(t.number for t in trials) == list(range(len(trials)))
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    assert sum(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials) == finished
    return trials


def _no_traceback(err: str) -> list[str]:
    assert "Traceback" not in err and "internal error" not in err, err
    return [line for line in err.splitlines() if not line.startswith("[sweep ")]


def test_a_killed_worker_leaves_one_line_and_the_other_finishes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'faults.db'}"
    proc = _start(tmp_path, url)
    pid, number = _trial_in_flight(url)
    os.kill(pid, signal.SIGKILL)
    status, out, err = _finish(proc)
    assert status == 0, err
    lines = _no_traceback(err)
    assert len(lines) == 1 and "was killed by SIGKILL" in lines[0] and "finished the study" in lines[0], lines
    assert f"{N_TRIALS}/{N_TRIALS} trials finished" in out and "1 abandoned by a lost worker (redone)" in out
    trials = _consistent(url, N_TRIALS)
    assert [t.number for t in trials if t.state == TrialState.FAIL] == [number]


def test_a_paused_worker_that_wakes_after_its_trial_was_failed_goes_on(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'faults.db'}"
    proc = _start(tmp_path, url)
    pid, number = _trial_in_flight(url)
    os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.time() + 120
        while _study(url).trials[number].state != TrialState.FAIL:  # the other worker fails it (stale)
            assert time.time() < deadline, "the paused worker's trial was never failed"
            time.sleep(0.1)
    finally:
        os.kill(pid, signal.SIGCONT)
    status, out, err = _finish(proc)
    assert status == 0, err
    lines = _no_traceback(err)
    assert lines == [f"antsim sweep: worker {_index(url, number)}: trial {number} was failed while this worker was"
                     " stopped (no heartbeat for 3 s); its result is dropped and the trial redone"], lines
    trials = _consistent(url, N_TRIALS)
    assert [t.number for t in trials if t.state == TrialState.FAIL] == [number]
    assert "error" not in trials[number].user_attrs  # the woken worker wrote nothing onto the failed trial


def _index(url: str, number: int) -> str:
    return str(_study(url).trials[number].user_attrs[WORKER_ATTR].rsplit("/", 1)[1])


def test_every_worker_killed_is_one_line_and_the_study_resumes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'faults.db'}"
    proc = _start(tmp_path, url)
    first, _ = _trial_in_flight(url)
    second, _ = _trial_in_flight(url, exclude={first})
    os.kill(first, signal.SIGKILL)
    os.kill(second, signal.SIGKILL)
    status, out, err = _finish(proc)
    assert status == 2 and out == ""
    (line,) = _no_traceback(err)
    assert line.startswith("antsim sweep: error: worker ") and line.count("was killed by SIGKILL") == 2
    assert "rerun the same command to resume" in line
    # the trials the dead workers held (a kill between two trials leaves none for that worker)
    held = [t.number for t in _study(url).get_trials(deepcopy=False) if t.state == TrialState.RUNNING]
    assert held
    resumed = _start(tmp_path, url)
    status, out, err = _finish(resumed)
    assert status == 0 and _no_traceback(err) == [], err
    assert f"{len(held)} FAIL trial(s) found from an earlier run (redone)" in out
    trials = _consistent(url, N_TRIALS)
    assert [t.number for t in trials if t.state == TrialState.FAIL] == held


@pytest.mark.postgres
def test_a_postgresql_restart_mid_sweep_is_retried(tmp_path: Path, postgres_server) -> None:  # type: ignore[no-untyped-def]
    import sqlalchemy

    from antsim.dse.storage import normalise_url

    engine = sqlalchemy.create_engine(normalise_url(postgres_server.url), isolation_level="AUTOCOMMIT")
    name = f"faults_{os.getpid()}"
    with engine.connect() as connection:
        connection.execute(sqlalchemy.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    url = postgres_server.url.rsplit("/", 1)[0] + f"/{name}"
    proc = _start(tmp_path, url)
    _trial_in_flight(url)
    postgres_server.restart()
    status, out, err = _finish(proc)
    assert status == 0, err
    lines = _no_traceback(err)
    assert all("storage unreachable" in line and "retrying for up to 120 s" in line for line in lines), lines
    assert f"{N_TRIALS}/{N_TRIALS} trials finished" in out
    _consistent(url, N_TRIALS)


@pytest.mark.postgres
@pytest.mark.parametrize("workers", [1, 2])
def test_a_database_gone_for_good_ends_in_one_error_and_resumes(tmp_path: Path, postgres_server,  # type: ignore[no-untyped-def]
                                                                workers: int) -> None:
    import threading

    import sqlalchemy

    from antsim.dse.runner import StorageUnreachable, SweepOptions, run_sweep
    from antsim.dse.spec import load_sweep
    from antsim.dse.storage import normalise_url

    engine = sqlalchemy.create_engine(normalise_url(postgres_server.url), isolation_level="AUTOCOMMIT")
    name = f"gone_{os.getpid()}_{workers}"
    with engine.connect() as connection:
        connection.execute(sqlalchemy.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    url = postgres_server.url.rsplit("/", 1)[0] + f"/{name}"
    spec = load_sweep(write_spec(tmp_path, "faults", n_trials=N_TRIALS,
                                 evaluator={"name": "analytic", "options": {"delay_s": DELAY_S}}))
    stopper = threading.Thread(target=lambda: (_trial_in_flight(url), postgres_server.stop()), daemon=True)
    stopper.start()
    try:
        with pytest.raises(StorageUnreachable) as info:  # two workers' StorageUnreachable: the same type
            run_sweep(spec, SweepOptions(storage_url=url, study_name="faults", n_trials=N_TRIALS, heartbeat_s=1,
                                         storage_retry_s=3.0, workers=workers))
    finally:
        stopper.join(60)
        postgres_server.start()
    message = str(info.value)
    assert "\n" not in message and "unreachable for" in message and "rerun the same command to resume" in message
    assert workers == 1 or message.count("stopped: storage ") == workers  # each worker's own line, joined
    summary = run_sweep(spec, SweepOptions(storage_url=url, study_name="faults", n_trials=N_TRIALS, heartbeat_s=1))
    assert summary.counts.finished == N_TRIALS
    _consistent(url, N_TRIALS)
