"""Running a sweep: create or resume the study, run N worker processes against it, report progress.

Each worker owns its storage connection and loops: under the slot lock (``antsim.dse.storage``) it fails
stale trials, checks the quota and creates one trial; it then evaluates the trial with a heartbeat thread
running (``Study.optimize(n_trials=1)``), so a worker killed mid-trial leaves a trial that the next worker
or resumed sweep marks ``FAIL`` once its heartbeat is older than the grace period. Re-running the same
command resumes the study and runs only the trials still missing.

Faults end in one line, never a traceback, and leave the study consistent:
- a worker killed (SIGKILL) or dying: the others finish the study (its trial is failed as stale and redone);
  ``SweepSummary.lost_workers`` says what happened, and ``WorkersLost`` is raised only when the study is
  left short of its trials (rerun the same command to resume) — or, when every lost worker stopped with an
  ``AntsimError`` of one type, that type with the workers' joined lines (``_lost_error``);
- a worker paused (SIGSTOP) past the grace period: the others fail its trial and redo it; when it wakes, its
  result is dropped (one line on stderr) and it goes on with new trials;
- the storage unreachable (a PostgreSQL restart): each worker says so once and retries for
  ``SweepOptions.storage_retry_s``; a trial whose result could not be stored is failed as stale and redone.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import pickle
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from antsim.dse import ahead as ahead_mod
from antsim.dse import attrs
from antsim.dse import storage as st
from antsim.dse.evaluators import Evaluator, resolve_evaluator, workload_tensors
from antsim.dse.objective import Objective, calibrated_trials, completed_trials
from antsim.dse.operand_share import share_operands, shareable
from antsim.dse.progress import Monitor, Outcomes, trial_outcomes
from antsim.dse.screen import screener_of, workload_operands
from antsim.dse.spec import SweepSpec, grid_values, load_sweep
from antsim.dse.workload import proxy_workload, resolve_workload
from antsim.errors import AntsimError, SpecError
from antsim.parallel import one_blas_thread_per_worker

Progress = Callable[[str], None]

# How often a worker whose study holds its last trials in other workers' hands looks again (they may finish, or go
# stale and need redoing). [choice] 0.25 s: the sweep ends at most this long after its last trial (it was 1 s, on
# average 0.5 s of every 2-worker sweep's wall time); a look is three small queries under the slot lock.
WAIT_POLL_S = 0.25


@dataclass(frozen=True)
class SweepOptions:
    """How to run a sweep (the CLI flags; defaults from the spec).

    Attributes:
        storage_url: RDB URL (``sqlite:///…`` or ``postgresql://…``).
        study_name: Optuna study name.
        n_trials: Finished trials the study should hold in total (resumes count earlier ones).
        timeout_s: Stop starting new trials after this many seconds (None: no limit).
        workers: Worker processes on this machine.
        seed: Sampler seed (worker ``i`` of a study with ``m`` trials uses ``seed + 10007·i + m``).
        heartbeat_s: Heartbeat interval (s); a trial is stale after 3 missed beats.
        evaluator: Override of the spec's evaluator (a picklable callable when ``workers > 1``).
        storage_retry_s: How long a worker retries an unreachable storage before giving up (a database
            restart takes seconds; 120 s covers a slow one).
    """

    storage_url: str
    study_name: str
    n_trials: int
    timeout_s: float | None = None
    workers: int = 1
    seed: int = 0
    heartbeat_s: int = 5
    evaluator: Evaluator | None = None
    storage_retry_s: float = 120.0


@dataclass
class SweepSummary:
    """What a ``run_sweep`` call did and where the study stands."""

    study_name: str
    storage_url: str
    n_trials: int
    counts: st.TrialCounts = field(default_factory=st.TrialCounts)
    outcomes: Outcomes = field(default_factory=Outcomes)
    found_failed: int = 0  # FAIL trials (killed workers, evaluator errors) the run found from earlier runs
    ran: int = 0
    elapsed_s: float = 0.0
    lost_workers: tuple[str, ...] = ()  # workers that died while the others finished the study


class WorkersLost(AntsimError):
    """Worker processes died (a signal, an unreachable storage) before the study held its trials."""


class StorageUnreachable(AntsimError):
    """The study's storage stayed unreachable for longer than ``SweepOptions.storage_retry_s``."""


def make_sampler(spec: SweepSpec, seed: int) -> optuna.samplers.BaseSampler:
    """The spec's sampler, seeded (NSGA-II / TPE read constraints the objective sets on each trial).

    Raises:
        SpecError: options the sampler does not accept.
    """
    name, options = spec.sampler.name, dict(spec.sampler.options)
    factories: dict[str, Callable[[], optuna.samplers.BaseSampler]] = {
        "nsga2": lambda: optuna.samplers.NSGAIISampler(seed=seed, **options),
        "tpe": lambda: optuna.samplers.TPESampler(seed=seed, **options),
        "random": lambda: optuna.samplers.RandomSampler(seed=seed, **options),
        "grid": lambda: optuna.samplers.GridSampler(grid_values(spec), seed=seed, **options),
        "qmc": lambda: optuna.samplers.QMCSampler(seed=seed, warn_independent_sampling=False,
                                                  warn_asynchronous_seeding=False, **options),
    }
    try:
        return factories[name]()
    except (TypeError, ValueError) as exc:
        raise SpecError(spec.source, "sampler.options", f"rejected by the {name} sampler: {exc}") from None


def effective_trials(spec: SweepSpec, n_trials: int) -> int:
    """``n_trials``, capped at the grid size for the grid sampler."""
    if spec.sampler.name != "grid":
        return n_trials
    size = 1
    for values in grid_values(spec).values():
        size *= len(values)
    return min(n_trials, size)


def spec_evaluator(spec: SweepSpec) -> Evaluator:
    """The spec's evaluator with its options bound (and the ``timing`` tier when it is not the default)."""
    options = dict(spec.evaluator.options)
    if spec.timing != "events":
        options["timing"] = spec.timing
    return resolve_evaluator(spec.evaluator.name, options, spec.source)


def spec_signature(spec: SweepSpec) -> str:
    """What must not change when a study is resumed: space, objectives, constraints, base arch, workload,
    fidelity and timing tier."""
    workload = resolve_workload(spec)
    data = {"space": {k: v.model_dump(mode="json") for k, v in spec.space.items()},
            "objectives": spec.objectives,
            "constraints": {k: v.model_dump(mode="json") for k, v in spec.constraints.items()},
            "base_arch": spec.base_arch_spec.to_dict() if spec.base_arch_spec else None,
            "layers": [layer.to_dict() for layer in workload.layers], "phases": list(workload.phases),
            "densities": workload.densities, "sparsity": workload.sparsity, "fidelity": spec.fidelity,
            **({"batch_sample": workload.batch_sample} if workload.batch_sample else {}),
            # only when not the default, so that a study made before the key existed still resumes
            **({"timing": spec.timing} if spec.timing != "events" else {})}
    return json.dumps(data, sort_keys=True)


def prepare_study(spec: SweepSpec, opts: SweepOptions) -> optuna.Study:
    """Create the study, or load it and check that it was made by the same sweep.

    Raises:
        AntsimError: the study exists with other objectives or another space / workload.
    """
    storage = st.make_storage(opts.storage_url, opts.heartbeat_s)
    study = optuna.create_study(storage=storage, study_name=opts.study_name, directions=spec.directions,
                                load_if_exists=True)
    if [d.name.lower() for d in study.directions] != spec.directions:
        raise AntsimError(f"study {opts.study_name!r} in {opts.storage_url} has directions "
                          f"{[d.name.lower() for d in study.directions]}, the spec wants {spec.directions};"
                          " use another study name", subject="study")
    signature = spec_signature(spec)
    stored = attrs.study_signature(study)
    if stored is None:
        attrs.set_study_identity(study, signature, list(spec.objectives))
    if study.metric_names != list(spec.objectives):
        # optuna-dashboard and optuna.visualization label the axes with these (else "Objective 0", …)
        study.set_metric_names(list(spec.objectives))
    elif stored != signature:
        raise AntsimError(f"study {opts.study_name!r} in {opts.storage_url} was made by a sweep with another "
                          "space, objectives, constraints, base arch or workload; use another study name",
                          subject="study")
    return study


class _Worker:
    """One worker's loop (in the main process or a spawned one)."""

    def __init__(self, spec: SweepSpec, opts: SweepOptions, index: int) -> None:
        self.spec, self.opts, self.index = spec, opts, index
        self.storage = st.make_storage(opts.storage_url, opts.heartbeat_s)
        probe = optuna.load_study(study_name=opts.study_name, storage=self.storage)
        seed = opts.seed + 10007 * index + len(probe.get_trials(deepcopy=False))
        self.study = optuna.load_study(study_name=opts.study_name, storage=self.storage,
                                       sampler=make_sampler(spec, seed))
        workload = resolve_workload(spec)
        evaluator = opts.evaluator or spec_evaluator(spec)
        self.objective = Objective(spec, workload, evaluator, proxy_workload(spec, workload), screener_of(spec))
        self.lock = st.SlotLock(opts.storage_url, opts.study_name)
        self.ran = 0
        self.errors_in_a_row = 0
        self.current: tuple[int, int] | None = None  # (trial id, number) of the trial being evaluated

    def _claimed(self, trial: optuna.Trial) -> tuple[float, ...]:
        # Heartbeat and owner mark first, then let the next worker in: from here the trial cannot be orphaned.
        self.current = (trial._trial_id, trial.number)
        self.storage.record_heartbeat(trial._trial_id)
        attrs.set_worker(trial, f"{socket.gethostname()}:{os.getpid()}/{self.index}")
        self.lock.release()
        try:
            values = self.objective(trial)
        except optuna.TrialPruned:
            self.errors_in_a_row = 0
            raise
        except Exception as exc:
            attrs.set_error(trial, repr(exc)[:500])
            self.errors_in_a_row += 1
            raise
        self.errors_in_a_row = 0
        return values

    def _step(self, n_trials: int) -> str:
        """Under the slot lock: fail stale trials, then ``done``, ``wait`` (others hold the last trials) or
        run one trial (``ran``)."""
        grace = 3 * self.opts.heartbeat_s
        self.lock.acquire()
        try:
            optuna.storages.fail_stale_trials(self.study)
            st.fail_orphans(self.study, grace)
            counts = st.count_trials(self.study)
            if counts.finished >= n_trials:
                return "done"
            if counts.finished + counts.running >= n_trials:
                return "wait"
            self.current = None
            ahead = self._ahead_size(n_trials - counts.finished - counts.running)
            if ahead:
                self.ran += self._run_ahead(self._claim_batch(ahead))
                return "ran"
            self.study.optimize(self._claimed, n_trials=1, catch=(Exception,))
            self.ran += 1
            return "ran"
        finally:
            self.lock.release()

    def _ahead_size(self, free: int) -> int:
        """How many trials to take at once (``multi_fidelity.screen_ahead``; 0: one through ``Study.optimize``,
        as without it): at most an equal share of the free slots among this machine's workers, so that the
        last trials are not all held by one worker while the others wait."""
        mf = self.spec.multi_fidelity
        if mf is None or not mf.enabled or mf.screen_ahead <= 1 or not self.objective.screens:
            return 0
        return max(1, min(mf.screen_ahead, free // max(1, self.opts.workers)))

    def _claim_batch(self, size: int) -> list[optuna.Trial]:
        """Under the slot lock: ask ``size`` trials and mark each as this worker's (heartbeat, owner), then
        let the next worker in."""
        trials = [self.study.ask() for _ in range(size)]
        for trial in trials:
            self.storage.record_heartbeat(trial._trial_id)
            attrs.set_worker(trial, f"{socket.gethostname()}:{os.getpid()}/{self.index}")
        self.lock.release()
        return trials

    def _run_ahead(self, trials: list[optuna.Trial]) -> int:
        """Screen ahead (``antsim.dse.ahead``): every trial's first look, then, until none is left, prune the
        hopeless ones and evaluate the most promising in full. Trials left unfinished by an error (5 evaluator
        failures in a row, the storage gone) are failed untagged or left to go stale: redone either way."""
        with ahead_mod.Heartbeats(self.storage, [t._trial_id for t in trials], self.opts.heartbeat_s) as beats:
            try:
                waiting: list[ahead_mod.Candidate] = []
                for trial in trials:
                    alive, candidate = self._guarded(trial, beats, self._first_look, trial)
                    if alive:
                        waiting.append(candidate)
                while waiting and self.errors_in_a_row < 5:
                    completed = completed_trials(self.study)
                    waiting = [c for c in waiting if self._guarded(c.trial, beats, self.objective.check, c.trial,
                                                                   c.params, c.first, completed)[0]]
                    if waiting:
                        best, *waiting = ahead_mod.by_promise(self.objective, waiting, calibrated_trials(completed))
                        self._guarded(best.trial, beats, self.objective.full, best.trial, best.arch, final=True)
            finally:
                self._fail_unfinished(trials)
        return len(trials)

    def _first_look(self, trial: optuna.Trial) -> ahead_mod.Candidate:
        params, arch = self.objective.sample(trial)
        return ahead_mod.Candidate(trial, params, arch, self.objective.first_look(trial, arch))

    def _guarded(self, trial: optuna.Trial, beats: ahead_mod.Heartbeats, step: Callable[..., Any], *args: Any,
                 final: bool = False) -> tuple[bool, Any]:
        """Run one step of a batch trial and tell the study how it ended, as ``Study.optimize`` would: its
        values (``final``: the step returned them), ``PRUNED`` (infeasible, screened) or ``FAIL`` (the
        evaluator raised; counted, ``error`` set). Returns whether the trial goes on, and the step's result."""
        self.current = (trial._trial_id, trial.number)
        try:
            out = step(*args)
            if not final:
                return True, out
            self.study.tell(trial, out)
            self.errors_in_a_row = 0
        except optuna.TrialPruned:
            self.errors_in_a_row = 0
            self._tell_or_drop(trial, TrialState.PRUNED)
        except Exception as exc:
            if st.is_connection_error(exc):
                raise
            if not self._trial_taken_away():  # else: failed by another worker while this one was stopped
                attrs.set_error(trial, repr(exc)[:500])
                self.errors_in_a_row += 1
                self._tell_or_drop(trial, TrialState.FAIL)
        beats.drop(trial._trial_id)
        return False, None

    def _tell_or_drop(self, trial: optuna.Trial, state: TrialState) -> None:
        try:
            self.study.tell(trial, state=state)
        except Exception:
            if not self._trial_taken_away():
                raise

    def _fail_unfinished(self, trials: list[optuna.Trial]) -> None:
        """Fail (untagged: not counted, so redone) the batch's trials still running; those the storage cannot
        be told about go stale and are failed by the next stale-trial check."""
        for trial in trials:
            with contextlib.suppress(Exception):
                if self.storage.get_trial(trial._trial_id).state == TrialState.RUNNING:
                    self.study.tell(trial, state=TrialState.FAIL)

    def run(self, n_trials: int, deadline: float | None) -> int:
        """Run trials until the study holds ``n_trials`` finished ones or ``deadline`` passes.

        Raises:
            StorageUnreachable: the storage failed for longer than ``storage_retry_s``.
            RuntimeError: 5 trials in a row failed in the evaluator.
        """
        outage: float | None = None
        while deadline is None or time.time() < deadline:
            try:
                step = self._step(n_trials)
            except Exception as exc:
                if st.is_connection_error(exc):
                    outage = self._storage_down(exc, outage)
                    continue
                if not self._trial_taken_away():
                    raise
                step = "ran"
            outage = None
            if step == "done":
                break
            if self.errors_in_a_row >= 5:
                raise RuntimeError(f"worker {self.index}: 5 trials in a row failed in the evaluator; "
                                   "see the trials' 'error' attribute")
            if step == "wait":  # other workers hold the last trials; wait for them to finish or go stale
                time.sleep(min(WAIT_POLL_S, self.opts.heartbeat_s / 2))
        return self.ran

    def _storage_down(self, exc: BaseException, since: float | None) -> float:
        return _storage_down(self.index, self.opts, exc, since)

    def _trial_taken_away(self) -> bool:
        """True when this worker's trial was failed by another one (it was paused past the grace period):
        its result is dropped and the trial redone, so the worker goes on."""
        if self.current is None:
            return False
        trial_id, number = self.current
        try:
            state = self.storage.get_trial(trial_id).state
        except Exception:  # noqa: BLE001 - cannot tell: let the original error through
            return False
        if state != TrialState.FAIL:
            return False
        _say(f"worker {self.index}: trial {number} was failed while this worker was stopped (no heartbeat for"
             f" {3 * self.opts.heartbeat_s} s); its result is dropped and the trial redone")
        return True


def _storage_down(index: int, opts: SweepOptions, exc: BaseException, since: float | None) -> float:
    """Note an outage once, wait a second; raise once it has lasted ``storage_retry_s``."""
    now = time.time()
    cause = st.describe_error(exc)
    if since is None:
        _say(f"worker {index}: storage unreachable ({cause}); retrying for up to {opts.storage_retry_s:.0f} s")
        since = now
    elif now - since > opts.storage_retry_s:
        raise StorageUnreachable(f"storage {opts.storage_url}: unreachable for {now - since:.0f} s ({cause}); the"
                                 " study is consistent: rerun the same command to resume once the database is"
                                 " back", subject="storage") from None
    time.sleep(1.0)
    return since


def start_worker(spec: SweepSpec, opts: SweepOptions, index: int) -> _Worker:
    """A worker, once its storage answers. A server that restarts while a worker is still opening the study
    (a spawned worker starts seconds after the others under load) is waited out as one that restarts
    mid-sweep: the same once-said line, the same ``storage_retry_s`` limit."""
    outage: float | None = None
    while True:
        try:
            return _Worker(spec, opts, index)
        except Exception as exc:
            if not st.is_connection_error(exc):
                raise
            outage = _storage_down(index, opts, exc, outage)


def _say(line: str) -> None:
    sys.stderr.write(f"antsim sweep: {line}\n")
    sys.stderr.flush()


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Optuna's per-trial INFO lines and its experimental/heartbeat warnings off inside the block only:
    the caller's log level and warning filters are restored after (a library call changes no global state)."""
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
            warnings.filterwarnings("ignore", message=".*Heartbeat.*")
            yield
    finally:
        optuna.logging.set_verbosity(verbosity)


def _orphan_watchdog(parent_pid: int) -> None:
    """Exit this worker when its parent dies (a SIGKILLed ``antsim sweep`` must not leave workers behind)."""
    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


def warm_operands(spec: SweepSpec, opts: SweepOptions, shared: Path | None = None) -> None:
    """Make the operands this process's trials will use — the generated tensors (the ``simulator`` evaluator)
    and the analytic screen's per-(layer, phase) operands — into the per-process caches of
    ``antsim.dse.evaluators`` and ``antsim.dse.screen``, which key them by exactly what the trials' calls key
    them by (the same workload, the spec's seed). A spawned worker does this while the parent creates the
    study, dividing the layers' tensors with the sweep's other workers through the folder ``shared``
    (``antsim.dse.operand_share``; None: every layer made here). Best effort: operands that cannot be made
    here are made (and fail) in the trial that needs them, as without this call."""
    screens = screener_of(spec) is not None and spec.base_arch_spec is not None
    if not screens and (opts.evaluator is not None or spec.evaluator.name != "simulator"):
        return  # another evaluator (the analytic toy of the tests, a user's function) makes its own operands
    dense = not spec.base_arch_spec.sparsity_support if screens else None  # type: ignore[union-attr]
    try:
        workload = resolve_workload(spec)
        if shared is not None and shareable(workload):
            share_operands(workload, spec.seed, shared)
        workload_tensors(workload, spec.seed)
        if dense is not None:
            workload_operands(workload, spec.seed, dense)
    except Exception:  # noqa: BLE001 - see the docstring: the trial that needs them says what went wrong
        return


def _worker_main(spec_path: str, opts: SweepOptions, index: int, n_trials: int, deadline: float | None,
                 parent_pid: int, messages: Any, study_ready: Any, shared: Path) -> None:
    """A spawned worker: it reads the spec and makes its operands (``warm_operands``, with the other workers
    through the folder ``shared``) at once, opens the study when the parent sets ``study_ready`` (an Event),
    then runs trials. Its error becomes one line for the parent
    (``messages``: index, line, and the ``AntsimError`` itself when it pickles, so the parent's error keeps its
    type) and an exit status."""
    _orphan_watchdog(parent_pid)
    try:
        with _quiet():
            spec = load_sweep(spec_path)
            warm_operands(spec, opts, shared)
            study_ready.wait()
            start_worker(spec, opts, index).run(n_trials, deadline)
    except AntsimError as exc:
        messages.put((index, str(exc).replace("\n", " "), _picklable(exc)))
        sys.exit(2)
    except Exception as exc:  # an internal error: one line, the traceback only in the main process (--debug)
        what = str(exc).splitlines()[0] if str(exc) else ""
        messages.put((index, f"internal error: {type(exc).__name__}{': ' + what if what else ''}", None))
        sys.exit(1)
    _exit_at_once()


def _exit_at_once() -> None:
    """End a worker that finished cleanly without the interpreter's teardown (its modules, the operands:
    measured 0.5-0.7 s of every sweep's wall time while the parent waited). Nothing is lost: every trial is
    committed to the storage and the parent's queue is written synchronously."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _picklable(exc: AntsimError) -> AntsimError | None:
    """``exc`` if it survives the trip to the parent (pickles and unpickles), else None (the line alone)."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any failure: the parent gets the line only
        return None
    return exc


def _lost_error(lost: list[str], errors: list[AntsimError], tail: str) -> AntsimError:
    """The parent's one-line error for workers that did not exit cleanly: ``WorkersLost``, or the workers'
    own error type (its ``subject`` kept) when every one of them stopped with an ``AntsimError`` of one type
    (``StorageUnreachable`` with two workers as with one)."""
    message = f"{'; '.join(lost)}; {tail}"
    if len(errors) != len(lost) or len({type(e) for e in errors}) != 1:
        return WorkersLost(message)
    error = errors[0]  # the parent's own unpickled copy: its message becomes the joined line
    error.args = (message,)
    return error


def run_sweep(spec: SweepSpec, opts: SweepOptions, progress: Progress | None = None) -> SweepSummary:
    """Create or resume the study and run ``opts.workers`` workers until it holds ``opts.n_trials`` trials.

    Args:
        spec: The validated sweep (``load_sweep``); everything is checked before the storage is opened.
        opts: Storage, study, budget and workers.
        progress: Called with one-line progress reports (the CLI writes them to stderr).

    Returns:
        The final trial counts and how many trials this call ran.

    Raises:
        AntsimError: storage or study mismatch; ``WorkersLost`` or the workers' own error type (workers died or
            stopped and the study is short of its trials); ``StorageUnreachable``. RuntimeError: 5 evaluator
            failures in a row (one worker).
    """
    with _quiet():
        return _run_sweep(spec, opts, progress)


def _run_sweep(spec: SweepSpec, opts: SweepOptions, progress: Progress | None) -> SweepSummary:
    n_trials = effective_trials(spec, opts.n_trials)
    make_sampler(spec, opts.seed)  # bad sampler options fail before the study is created
    start = time.time()
    deadline = start + opts.timeout_s if opts.timeout_s else None
    # Worker processes start first: their imports and operands (seconds) overlap the study's creation.
    workers = _Workers(spec, opts, n_trials, deadline) if opts.workers > 1 else None
    try:
        return _run_study(spec, opts, progress, workers, start)
    finally:
        if workers:
            workers.stop()


def _run_study(spec: SweepSpec, opts: SweepOptions, progress: Progress | None, workers: _Workers | None,
               start: float) -> SweepSummary:
    """``_run_sweep`` once the worker processes (``workers``; None: one worker, in this process) are started."""
    n_trials = effective_trials(spec, opts.n_trials)
    deadline = start + opts.timeout_s if opts.timeout_s else None
    study = prepare_study(spec, opts)
    summary = SweepSummary(opts.study_name, opts.storage_url, n_trials)
    finished_before = st.count_trials(study).finished
    numbers_before = len(study.get_trials(deepcopy=False))
    monitor = Monitor(study, spec, n_trials, progress) if progress else None
    if monitor:
        monitor.start()
    lost: list[str] = []
    errors: list[AntsimError] = []
    try:
        if workers is None:
            start_worker(spec, opts, 0).run(n_trials, deadline)
        else:
            lost, errors = workers.join()
    finally:
        if monitor:
            monitor.stop()
    try:
        summary.counts = st.count_trials(study)
        trials = study.get_trials(deepcopy=False)
    except Exception as exc:  # the storage went away as the workers ended: say what they said, no counts
        if not (lost and st.is_connection_error(exc)):
            raise
        raise _lost_error(lost, errors, "the study is consistent: rerun the same command to resume once the"
                          " database is back") from None
    summary.outcomes = trial_outcomes(trials)
    # trials that existed when this run began and are FAIL now: FAIL already, or RUNNING under a dead
    # worker and failed by this run's stale-trial check; either way redone, and the summary says so
    summary.found_failed = sum(1 for t in trials if t.number < numbers_before and t.state == TrialState.FAIL)
    summary.ran = summary.counts.finished - finished_before
    summary.elapsed_s = time.time() - start
    summary.lost_workers = tuple(lost)
    if lost and summary.counts.finished < n_trials:
        raise _lost_error(lost, errors, f"the study holds {summary.counts.finished}/{n_trials} finished trials and"
                          " is consistent: rerun the same command to resume")
    return summary


class _Workers:
    """The worker processes of one sweep, started (``spawn``, one BLAS thread each) before the study exists:
    each imports the model and makes its share of the operands (in the temporary folder ``shared``, removed by
    ``stop``), then waits for ``join`` to say the study is ready."""

    def __init__(self, spec: SweepSpec, opts: SweepOptions, n_trials: int, deadline: float | None) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.messages, self.study_ready = ctx.SimpleQueue(), ctx.Event()
        self.shared = Path(tempfile.mkdtemp(prefix="antsim-sweep-operands-"))
        self.procs = [ctx.Process(target=_worker_main, args=(spec.source, opts, i, n_trials, deadline, os.getpid(),
                                                             self.messages, self.study_ready, self.shared),
                                  name=f"antsim-sweep-worker-{i}") for i in range(opts.workers)]
        with one_blas_thread_per_worker():
            for p in self.procs:
                p.start()

    def join(self) -> tuple[list[str], list[AntsimError]]:
        """Let the workers open the study and wait for them; what became of each one that did not exit
        cleanly, and the ``AntsimError`` of each of those that stopped with one."""
        self.study_ready.set()
        for p in self.procs:
            p.join()
        said: dict[int, str] = {}
        raised: dict[int, AntsimError] = {}
        while not self.messages.empty():
            index, message, error = self.messages.get()
            said[index] = message
            if error is not None:
                raised[index] = error
        failed = [i for i, p in enumerate(self.procs) if p.exitcode != 0]
        return ([_fate(i, self.procs[i].exitcode, said.get(i)) for i in failed],
                [raised[i] for i in failed if i in raised])

    def stop(self) -> None:
        """Terminate the workers still running (the study could not be prepared, an interrupt): a worker that
        never saw the study has touched nothing; one mid-trial leaves a trial that goes stale and is redone."""
        for p in self.procs:
            if p.is_alive():
                p.terminate()
        for p in self.procs:
            p.join()
        shutil.rmtree(self.shared, ignore_errors=True)


def _fate(index: int, exitcode: int | None, message: str | None) -> str:
    """One phrase for a worker that did not exit cleanly (killed by a signal, or its own error)."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"worker {index} was killed by {name}"
    return f"worker {index} stopped: {message}" if message else f"worker {index} exited with status {exitcode}"
