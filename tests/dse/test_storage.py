"""``antsim.dse.storage``: URL handling, the trial quota's classification (against counts written here), orphan
trials failed after their grace, a SQLite slot lock that excludes a second holder, and the database errors
told apart from others."""

from __future__ import annotations

import fcntl
from pathlib import Path

import optuna
import pytest
import sqlalchemy.exc
from optuna.distributions import IntDistribution
from optuna.trial import TrialState

from antsim.dse.storage import (
    SlotLock,
    TrialCounts,
    count_trials,
    default_storage_url,
    describe_error,
    fail_orphans,
    is_connection_error,
    normalise_url,
    sqlite_path,
    study_names,
)
from antsim.errors import AntsimError


def test_default_url_is_the_results_folder_beside_the_spec(tmp_path: Path) -> None:
    spec = tmp_path / "sweeps" / "smoke.yaml"
    assert default_storage_url(spec) == f"sqlite:///{tmp_path.resolve() / 'sweeps' / 'results' / 'smoke.db'}"


def test_urls_are_normalised_and_non_urls_refused() -> None:
    assert normalise_url("sqlite:///a/b.db") == "sqlite:///a/b.db"
    with pytest.raises(AntsimError, match="not an RDB URL") as info:
        normalise_url("nonsense")
    assert info.value.subject == "storage"
    assert sqlite_path("sqlite:////abs/x.db") == Path("/abs/x.db") and sqlite_path("sqlite:///rel.db") == Path("rel.db")
    assert sqlite_path("sqlite:///:memory:") is None and sqlite_path("postgresql+psycopg://u@h/db") is None


def _trial(state: TrialState, **user_attrs: object) -> optuna.trial.FrozenTrial:
    values = [1.0] if state == TrialState.COMPLETE else None
    return optuna.trial.create_trial(state=state, values=values, params={"x": 1},
                                     distributions={"x": IntDistribution(0, 2)}, user_attrs=user_attrs)


def test_count_trials_counts_evaluator_errors_but_not_abandoned_trials() -> None:
    study = optuna.create_study(storage=optuna.storages.InMemoryStorage())
    for state, extra, n in ((TrialState.COMPLETE, {}, 3), (TrialState.PRUNED, {}, 2),
                            (TrialState.FAIL, {"error": "ValueError()"}, 1), (TrialState.FAIL, {}, 4),
                            (TrialState.RUNNING, {}, 1)):
        for _ in range(n):
            study.add_trial(_trial(state, **extra))
    counts = count_trials(study)
    assert counts == TrialCounts(complete=3, pruned=2, errors=1, running=1, abandoned=4)
    assert counts.finished == 3 + 2 + 1


def test_fail_orphans_fails_only_unclaimed_trials_past_the_grace(tmp_path: Path) -> None:
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'o.db'}")  # no heartbeat: no worker runs it
    orphan, claimed = study.ask(), study.ask()
    claimed.set_user_attr("worker", "host:1/0")
    assert fail_orphans(study, grace_s=3600.0) == 0  # both younger than an hour
    assert fail_orphans(study, grace_s=0.0) == 1
    states = {t.number: t.state for t in study.get_trials()}
    assert states == {orphan.number: TrialState.FAIL, claimed.number: TrialState.RUNNING}


def test_study_names_of_a_missing_database_is_empty_and_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "none" / "x.db"
    assert study_names(f"sqlite:///{db}") == [] and not db.parent.exists()


def test_a_sqlite_slot_lock_excludes_another_holder(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    lock = SlotLock(url, "study")
    with lock.hold():
        assert lock.held
        with open(tmp_path / "s.db.lock", "a+") as other, pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert not lock.held
    with open(tmp_path / "s.db.lock", "a+") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free again
    lock.release()  # idempotent


def _lost_connection() -> sqlalchemy.exc.OperationalError:
    return sqlalchemy.exc.OperationalError("SELECT 1", {}, ConnectionRefusedError("server closed the connection\n"
                                                                                  "unexpectedly"))


def test_connection_errors_are_found_through_their_causes() -> None:
    try:
        try:
            raise _lost_connection()
        except sqlalchemy.exc.OperationalError as inner:
            raise optuna.exceptions.StorageInternalError("commit failed") from inner
    except optuna.exceptions.StorageInternalError as outer:
        wrapped = outer
    assert is_connection_error(wrapped) and not is_connection_error(ValueError("x"))
    assert not is_connection_error(sqlalchemy.exc.IntegrityError("INSERT", {}, ValueError("duplicate")))
    assert describe_error(wrapped) == "OperationalError: server closed the connection"
