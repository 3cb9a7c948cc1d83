"""Several workers on one study (SQLite and a real PostgreSQL server); kill mid-trial and resume."""

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
                           evaluator={"name": "analytic", "options": {"delay_s": 0.3}})
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


def _freshly_running(study: optuna.Study | None, within_s: float) -> bool:
    """A trial finished and another one RUNNING that started less than ``within_s`` ago (so still running)."""
    if study is None:
        return False
    trials = study.get_trials(deepcopy=False)
    now = datetime.datetime.now()
    return any(t.state == TrialState.COMPLETE for t in trials) and any(
        t.state == TrialState.RUNNING and (now - t.datetime_start).total_seconds() < within_s for t in trials)


def _try_load(url: str, name: str) -> optuna.Study | None:
    try:
        return _study(url, name)
    except KeyError:
        return None


def test_sigkill_mid_trial_then_resume(tmp_path: Path) -> None:
    delay = 1.5  # long enough that a trial seen starting is still running when the kill lands
    spec_path = write_spec(tmp_path, "kill", n_trials=4,
                           evaluator={"name": "analytic", "options": {"delay_s": delay}})
    db = tmp_path / "kill.db"
    url = f"sqlite:///{db}"
    cmd = [sys.executable, "-m", "antsim", "sweep", str(spec_path), "--storage", url, "--heartbeat", "1"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    study = None
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            study = study or (_try_load(url, "kill") if db.exists() else None)
            if _freshly_running(study, delay / 3):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the sweep never reached a running trial")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    killed = _study(url, "kill").get_trials(deepcopy=False)
    assert any(t.state == TrialState.RUNNING for t in killed)
    done_before = [t.number for t in killed if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    resumed = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stderr
    trials = _assert_consistent(_study(url, "kill"), 4)
    abandoned = [t for t in trials if t.state == TrialState.FAIL]
    assert len(abandoned) == 1 and "error" not in abandoned[0].user_attrs
    # Trials finished before the kill were kept, not redone.
    assert all(trials[n].state in (TrialState.COMPLETE, TrialState.PRUNED) for n in done_before)


def test_timeout_stops_starting_trials_and_leaves_none_running(tmp_path: Path) -> None:
    spec = load_sweep(write_spec(tmp_path, "slow", n_trials=1000,
                                 evaluator={"name": "analytic", "options": {"delay_s": 0.5}}))
    url = f"sqlite:///{tmp_path / 'slow.db'}"
    # 5 s: on a loaded machine the study's set-up alone can take over a second before the first trial.
    summary = run_sweep(spec, SweepOptions(storage_url=url, study_name="slow", n_trials=1000, timeout_s=5.0))
    trials = _study(url, "slow").get_trials(deepcopy=False)
    assert 1 <= summary.counts.finished == len(trials) < 1000
    assert all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials)


def _open_at_once(url: str, barrier, results) -> None:  # type: ignore[no-untyped-def]
    barrier.wait()  # every process opens the new database at the same moment
    try:
        make_storage(url, heartbeat_s=1)
        results.put("ok")
    except Exception as exc:  # noqa: BLE001 - reported to the test
        results.put(str(exc))


def _open_together(urls: list[str]) -> None:
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    for url in urls:  # without the schema lock most attempts lose a process to the table race
        barrier, results = context.Barrier(4), context.Queue()
        workers = [context.Process(target=_open_at_once, args=(url, barrier, results)) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(120)
        assert [results.get(timeout=5) for _ in workers] == ["ok"] * 4


@pytest.mark.slow  # ~40 s: four spawned processes per attempt, four attempts
def test_workers_opening_a_new_database_together_all_succeed(tmp_path: Path) -> None:
    _open_together([f"sqlite:///{tmp_path / f'new{attempt}.db'}" for attempt in range(4)])


@pytest.mark.slow  # ~30 s: as above, on a throw-away PostgreSQL server
@pytest.mark.postgres
def test_workers_opening_a_new_postgresql_database_together_all_succeed(postgres_url: str) -> None:
    import sqlalchemy

    from antsim.dse.storage import normalise_url

    engine = sqlalchemy.create_engine(normalise_url(postgres_url), isolation_level="AUTOCOMMIT")
    urls = []
    with engine.connect() as connection:
        for attempt in range(3):
            name = f"fresh_{os.getpid()}_{attempt}"
            connection.execute(sqlalchemy.text(f"CREATE DATABASE {name}"))
            urls.append(postgres_url.rsplit("/", 1)[0] + f"/{name}")
    engine.dispose()
    _open_together(urls)



def test_a_spawned_workers_error_keeps_its_type_in_the_parents_one_line_error(tmp_path: Path) -> None:
    """Both workers re-read the spec file, broken after the parent read it: each stops with the spec's own
    SpecError, which the parent raises as a SpecError (one line, both workers' words)."""
    from antsim.errors import SpecError

    spec_path = write_spec(tmp_path, "broken", n_trials=4)
    spec = load_sweep(spec_path)
    spec_path.write_text(spec_path.read_text().replace("kind: sweep", "kind: nonsense"))
    url = f"sqlite:///{tmp_path / 'broken.db'}"
    with pytest.raises(SpecError) as info:
        run_sweep(spec, SweepOptions(storage_url=url, study_name="broken", n_trials=4, workers=2))
    message = str(info.value)
    assert type(info.value) is SpecError and "\n" not in message
    assert message.count("stopped: ") == 2 and message.count("nonsense") == 2, message
    assert "rerun the same command to resume" in message


def test_workers_lost_unless_every_lost_worker_raised_one_antsim_error_type() -> None:
    from antsim.dse.runner import StorageUnreachable, WorkersLost, _lost_error
    from antsim.errors import SpecError

    lines = ["worker 0 stopped: a", "worker 1 stopped: b"]
    same = _lost_error(lines, [StorageUnreachable("a", subject="storage"), StorageUnreachable("b")], "rerun")
    assert type(same) is StorageUnreachable and same.subject == "storage"
    assert str(same) == "worker 0 stopped: a; worker 1 stopped: b; rerun"
    mixed = _lost_error(lines, [StorageUnreachable("a"), SpecError("f", "k", "b")], "rerun")
    killed = _lost_error(lines + ["worker 2 was killed by SIGKILL"], [SpecError("f", "k", "a")] * 2, "rerun")
    assert type(mixed) is WorkersLost and type(killed) is WorkersLost
    assert str(killed) == "worker 0 stopped: a; worker 1 stopped: b; worker 2 was killed by SIGKILL; rerun"


def test_worker_processes_started_before_a_study_that_cannot_be_opened_are_stopped(tmp_path: Path) -> None:
    """The workers start before the parent prepares the study (their imports and operands overlap it): when the
    study cannot be prepared (another sweep's study of the same name), the parent's one-line error is raised and
    no worker is left running, none having touched the study."""
    import multiprocessing

    from antsim.errors import AntsimError

    url = f"sqlite:///{tmp_path / 'taken.db'}"
    optuna.create_study(storage=make_storage(url, heartbeat_s=60), study_name="taken", directions=["maximize"])
    spec = load_sweep(write_spec(tmp_path, "taken", n_trials=4))
    with pytest.raises(AntsimError, match="has directions"):
        run_sweep(spec, SweepOptions(storage_url=url, study_name="taken", n_trials=4, workers=2))
    assert multiprocessing.active_children() == []
    assert _study(url, "taken").get_trials() == []


def test_warm_operands_makes_exactly_what_the_trials_read(tmp_path: Path) -> None:
    """``warm_operands`` (a spawned worker's first step, before the study exists) fills the per-process operand
    caches with the entries the trials' own calls then find: the simulator's generated tensors and the analytic
    screen's phase operands, the same objects, none made twice; another evaluator gets nothing made for it."""
    from antsim.dse import evaluators, screen
    from antsim.dse.runner import warm_operands
    from antsim.dse.workload import resolve_workload

    opts = SweepOptions(storage_url="sqlite:///unused.db", study_name="warm", n_trials=1)
    screened = load_sweep(write_spec(tmp_path, "warm", evaluator="simulator", seed=5,
                                     multi_fidelity={"screen": "analytic"}))
    evaluators._GENERATED.clear()
    screen._OPERANDS.clear()
    warm_operands(screened, opts)
    tensors, operands = dict(evaluators._GENERATED), dict(screen._OPERANDS)
    assert len(tensors) == 3 and len(operands) == 9  # 3 layers; × 3 phases
    workload = resolve_workload(screened)  # as the worker's Objective builds it
    made = screen.workload_operands(workload, screened.seed, False)
    assert dict(screen._OPERANDS) == operands and all(any(m is o for o in operands.values()) for m in made)
    got = evaluators.workload_tensors(workload, screened.seed)
    assert dict(evaluators._GENERATED) == tensors and all(any(g is t for t in tensors.values()) for g in got.values())
    evaluators._GENERATED.clear()
    screen._OPERANDS.clear()
    warm_operands(load_sweep(write_spec(tmp_path, "toy")), opts)  # the analytic toy evaluator, no screen
    assert evaluators._GENERATED == {} and screen._OPERANDS == {}
