"""Study storage: RDB URLs (SQLite by default, PostgreSQL for many machines), heartbeats, the trial quota.

Exactly ``n_trials`` finished trials per study, whatever the number of workers and machines: a worker
takes a *slot lock* (a file lock next to an SQLite database, a PostgreSQL advisory lock on a server), fails
stale trials, counts the finished and running trials, and creates its trial only if the quota allows, all
while holding the lock. Finished = ``COMPLETE`` + ``PRUNED`` + ``FAIL`` raised by the evaluator (tagged
``error``); a ``FAIL`` left by a killed worker (stale heartbeat) is not counted, so a resumed sweep redoes it.
"""

from __future__ import annotations

import datetime
import fcntl
import io
import warnings
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
import sqlalchemy.exc  # Optuna's RDB storage is built on SQLAlchemy: always installed with it
from optuna.trial import TrialState

from antsim.dse import attrs
from antsim.errors import AntsimError, MissingExtraError

#: Trial user attribute set as soon as a worker owns a trial (its heartbeat is then recorded).
WORKER_ATTR = attrs.WORKER
#: Trial user attribute holding the repr of an evaluator exception (a counted FAIL).
ERROR_ATTR = attrs.ERROR


def default_storage_url(spec_path: str | Path) -> str:
    """``sqlite:///<spec folder>/results/<spec stem>.db`` (absolute)."""
    path = Path(spec_path).resolve()
    return f"sqlite:///{path.parent / 'results' / (path.stem + '.db')}"


def normalise_url(url: str) -> str:
    """``postgresql://`` → ``postgresql+psycopg://`` (psycopg 3); other URLs unchanged.

    Raises:
        AntsimError: a URL that is not an SQLAlchemy RDB URL.
        MissingExtraError: a PostgreSQL URL without psycopg installed.
    """
    if url.startswith(("postgresql://", "postgres://")):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    if url.startswith("postgresql"):
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise MissingExtraError("storage URL postgresql://…: needs psycopg (pip install 'antsim[postgres]')",
                                    subject="storage") from None
    if "://" not in url:
        raise AntsimError(f"storage URL {url!r}: not an RDB URL (sqlite:///file.db or postgresql://user@host/db)",
                          subject="storage")
    return url


def sqlite_path(url: str) -> Path | None:
    """The database file of an ``sqlite:///`` URL (None for other URLs or in-memory SQLite)."""
    if not url.startswith("sqlite:///") or url in ("sqlite://", "sqlite:///:memory:"):
        return None
    return Path(url[len("sqlite:///"):])


_SCHEMA_LOCK = "antsim-schema"  # SlotLock key under which a new database's tables are created


def make_storage(url: str, heartbeat_s: int) -> optuna.storages.RDBStorage:
    """An RDB storage with heartbeats every ``heartbeat_s`` s and a grace of 3 beats.

    Raises:
        AntsimError: the database cannot be opened.
    """
    url = normalise_url(url)
    engine_kwargs: dict[str, Any] = {}
    db = sqlite_path(url)
    if db is not None:
        db.parent.mkdir(parents=True, exist_ok=True)
        # Several worker processes write one file: wait for the lock instead of failing at once.
        engine_kwargs["connect_args"] = {"timeout": 120}
    else:
        engine_kwargs["pool_pre_ping"] = True
    try:
        # Workers started together on a new database would race to create Optuna's tables (and its
        # alembic version row); the first to hold the lock creates them, the others find them made.
        # Not to be called while this process holds a SlotLock of the same SQLite file (same lock file).
        with _schema_lock(url), warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # heartbeats: we rely on them
            storage = optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs, heartbeat_interval=heartbeat_s,
                                                 grace_period=3 * heartbeat_s)
    except Exception as exc:  # SQLAlchemy raises many types; the user needs only the message
        raise AntsimError(f"storage {url}: cannot open ({type(exc).__name__}: {exc})".splitlines()[0],
                          subject="storage") from None
    if db is not None:
        _fast_sqlite(storage)
    storage.record_heartbeat = _TolerantHeartbeat(storage.record_heartbeat)  # type: ignore[method-assign]
    return storage


@contextmanager
def _schema_lock(url: str) -> Iterator[None]:
    """Hold the storage's slot lock while Optuna creates its tables, if the lock can be taken: a database
    in a read-only folder (export, listing) cannot get a lock file, and needs no schema created either."""
    lock = SlotLock(url, _SCHEMA_LOCK)
    try:
        lock.acquire()
    except OSError:
        yield
        return
    try:
        yield
    finally:
        lock.release()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _fast_sqlite(storage: optuna.storages.RDBStorage) -> None:
    """WAL journal with ``synchronous=NORMAL``: one fsync per checkpoint instead of one per commit.

    A trial writes ~25 small commits (parameters, attributes, heartbeats); with the default rollback
    journal each costs an fsync (~20 ms here), ten times the evaluation of a small design. A killed
    process loses nothing committed; a power cut may lose the last commits but never corrupts the
    file. WAL needs a local file system (use PostgreSQL across machines anyway).
    """
    import sqlalchemy

    sqlalchemy.event.listen(storage.engine, "connect", _sqlite_pragmas)
    storage.engine.dispose()  # reconnect so every pooled connection gets the pragmas


def study_names(url: str) -> list[str]:
    """Names of the studies in the storage ([] when the SQLite file does not exist yet)."""
    db = sqlite_path(normalise_url(url))
    if db is not None and not db.exists():
        return []
    storage = make_storage(url, heartbeat_s=60)
    return [s.study_name for s in storage.get_all_studies()]


@dataclass
class TrialCounts:
    """Trials of a study by what they mean for the quota."""

    complete: int = 0
    pruned: int = 0
    errors: int = 0
    running: int = 0
    abandoned: int = 0

    @property
    def finished(self) -> int:
        return self.complete + self.pruned + self.errors


def count_trials(study: optuna.Study) -> TrialCounts:
    """Classify every trial of ``study`` (see the module docstring)."""
    counts = TrialCounts()
    for t in study.get_trials(deepcopy=False):
        if t.state == TrialState.COMPLETE:
            counts.complete += 1
        elif t.state == TrialState.PRUNED:
            counts.pruned += 1
        elif t.state == TrialState.FAIL:
            if attrs.error(t) is not None:
                counts.errors += 1
            else:
                counts.abandoned += 1
        else:
            counts.running += 1
    return counts


def fail_orphans(study: optuna.Study, grace_s: float) -> int:
    """Fail RUNNING trials that no worker ever claimed (killed between ask and first heartbeat).

    Trials with a heartbeat are handled by ``optuna.storages.fail_stale_trials``; a trial without the
    worker attribute older than ``grace_s`` has no heartbeat and would otherwise stay RUNNING forever.
    """
    now = datetime.datetime.now()
    failed = 0
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        start = t.datetime_start
        if attrs.worker(t) is not None or start is None or (now - start).total_seconds() < grace_s:
            continue
        try:
            failed += bool(study._storage.set_trial_state_values(t._trial_id, state=TrialState.FAIL))
        except optuna.exceptions.UpdateFinishedTrialError:
            pass
    return failed


class SlotLock:
    """Mutual exclusion among all workers of one study while they count trials and create one.

    SQLite: ``flock`` on ``<db>.lock`` (one machine). PostgreSQL: a session advisory lock keyed by the
    study name (any number of machines). Other back-ends: no lock (the quota may then be overshot by up
    to workers − 1 trials in a race).
    """

    def __init__(self, url: str, study_name: str) -> None:
        self.url, self.study_name = normalise_url(url), study_name
        self._handle: Any = None
        self._engine: Any = None

    def acquire(self) -> None:
        db = sqlite_path(self.url)
        if db is not None:
            self._handle = open(f"{db}.lock", "a+")  # noqa: SIM115 - held across calls
            fcntl.flock(self._handle, fcntl.LOCK_EX)
        elif self.url.startswith("postgresql"):
            import sqlalchemy

            if self._engine is None:
                self._engine = sqlalchemy.create_engine(self.url, poolclass=sqlalchemy.pool.NullPool)
            self._handle = self._engine.connect()
            key = zlib.crc32(f"antsim-sweep:{self.study_name}".encode()) - 2**31
            self._handle.execute(sqlalchemy.text("SELECT pg_advisory_lock(:k)"), {"k": key})

    def release(self) -> None:
        """Release the lock (idempotent; a PostgreSQL session the server dropped has no lock left to end)."""
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        if isinstance(handle, io.IOBase):
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()
            return
        try:
            handle.close()  # closing the PostgreSQL session also ends its advisory lock
        except Exception as exc:  # the server restarted under us: the session, and its lock, are gone
            if not is_connection_error(exc):
                raise

    @property
    def held(self) -> bool:
        return self._handle is not None

    @contextmanager
    def hold(self) -> Iterator[SlotLock]:
        self.acquire()
        try:
            yield self
        finally:
            self.release()


def is_connection_error(exc: BaseException) -> bool:
    """True for a lost or refused database connection (a server restart), as SQLAlchemy or Optuna raise it.

    Optuna wraps SQLAlchemy errors of a commit in ``StorageInternalError``; the cause tells which it was.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sqlalchemy.exc.DBAPIError) and (
                current.connection_invalidated or isinstance(current, (sqlalchemy.exc.OperationalError,
                                                                      sqlalchemy.exc.InterfaceError))):
            return True
        current = current.__cause__ or current.__context__
    return False


def describe_error(exc: BaseException) -> str:
    """``Type: first line`` of the innermost database error (what the user can act on)."""
    current, seen = exc, {id(exc)}
    while (current.__cause__ or current.__context__) is not None and id(current.__cause__ or current.__context__) \
            not in seen:
        current = current.__cause__ or current.__context__  # type: ignore[assignment]
        seen.add(id(current))
    text = str(getattr(current, "orig", None) or current).strip().splitlines()
    return f"{type(current).__name__}: {text[0] if text else ''}"[:200]


class _TolerantHeartbeat:
    """``record_heartbeat`` that skips a beat while the database is unreachable: Optuna's heartbeat thread
    would otherwise die with a traceback, and a restarted server leaves the trial beating again."""

    def __init__(self, record: Any) -> None:
        self._record = record

    def __call__(self, trial_id: int) -> None:
        try:
            self._record(trial_id)
        except Exception as exc:
            if not is_connection_error(exc):
                raise
