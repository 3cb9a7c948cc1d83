"""run_sweep leaves the caller's Optuna log level and warning filters as they were."""

from __future__ import annotations

import warnings
from pathlib import Path

import optuna
import pytest
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


def _refused() -> Exception:
    import sqlalchemy

    return sqlalchemy.exc.OperationalError("connect", {}, ConnectionRefusedError("Connection refused"))


def test_a_worker_that_starts_while_the_storage_restarts_waits_it_out(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """The study cannot be opened twice (a server restarting as a late worker starts): the worker says so
    once and starts on the third try; any other error is not retried; an outage past the limit is refused."""
    from antsim.dse import runner

    attempts: list[int] = []

    class Flaky:
        def __init__(self, spec, opts, index, fail: int = 2) -> None:  # type: ignore[no-untyped-def]
            attempts.append(index)
            if len(attempts) <= fail:
                raise _refused()

    monkeypatch.setattr(runner, "_Worker", Flaky)
    clock = [1000.0]
    monkeypatch.setattr(runner.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    monkeypatch.setattr(runner.time, "time", lambda: clock[0])
    opts = SweepOptions(storage_url="postgresql://u@127.0.0.1/db", study_name="s", n_trials=1, storage_retry_s=30)
    assert isinstance(runner.start_worker(None, opts, 3), Flaky) and attempts == [3, 3, 3]  # type: ignore[arg-type]
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("antsim sweep: worker 3: storage unreachable (") and "retrying for up to 30 s" in line

    monkeypatch.setattr(runner, "_Worker", lambda *a: (_ for _ in ()).throw(ValueError("bad spec")))
    with pytest.raises(ValueError, match="bad spec"):
        runner.start_worker(None, opts, 0)  # type: ignore[arg-type]

    def always(*args) -> None:  # type: ignore[no-untyped-def]
        raise _refused()

    monkeypatch.setattr(runner, "_Worker", always)
    with pytest.raises(runner.StorageUnreachable, match=r"unreachable for 3\d s"):
        runner.start_worker(None, opts, 0)  # type: ignore[arg-type]
