"""The PE array as one event process: every PE between two barriers, vectorised over PEs.

The array-wide barrier at the end of every step (SCNN's output-channel-group boundary) means no PE can
start step ``s`` before all have finished step ``s − 1``; the streamed chunk and the accumulator half a
step waits for are shared by all PEs too. So all PEs start a step at the same instant, and what differs
between them inside a step — multiplier cycles, bank conflicts, the lock-step wait of the weight FIFO,
their anticipation units' screening — is a closed form per PE. ``PEArray`` therefore runs one process
that waits for the shared events and advances to the barrier release, and computes the per-PE part with
numpy: the same timing and the same stall ledger as one ``antsim.sim.pe.PE`` process (plus one
``RcpAnticipator``) per PE, with a few events per step instead of a few per PE and step.
``tests/sim/test_array.py`` checks the two against each other on random schedules.

Per PE ``p`` and step ``s`` (``start`` is when the array starts the step, ``L`` the lookahead):

* anticipation: ``screened[s, p] = max(ready[s], start[s − L], screened[s − 1, p]) + screen[s, p]`` —
  the unit screens a step once its chunk is on chip and its PE has started step ``s − L``;
* multipliers: ``own[s, p] = issued + conflicts + max(0, lockstep[s] − issued − conflicts)``;
* done: ``max(start + own, screened)``; the barrier releases at the latest PE's done.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from antsim.sim.blocks import AccumulatorDrain, DrainLedger, Proc, StreamFetcher
from antsim.sim.kernel import Environment
from antsim.sim.pe import STALL_KEYS
from antsim.sim.schedule import Schedule


class ArraySteps:
    """The PE array's numbers, whatever runs its steps: per step, when the barrier releases given when the
    step started (``release_time``), and the stall ledger.

    Args:
        schedule: Work per step and PE.
        ready_at: When each step's streamed chunk arrived (filled by the fetcher as steps run).
        drain: Halo end and drain times per step (``DrainLedger``), for the stall split.
        screening: Whether each PE has an anticipation unit in front of it.
        lookahead: Steps an anticipation unit may screen ahead of its PE.
    """

    def __init__(self, schedule: Schedule, ready_at: list[float], drain: DrainLedger, screening: bool,
                 lookahead: int) -> None:
        self.schedule = schedule
        self.ready_at = ready_at
        self.drain = drain
        self.screening = screening
        self.lookahead = lookahead
        n_pes = schedule.n_pes
        # Multiplier cycles per PE and step, the FIFO's lock-step wait included.
        pairs = schedule.issued + schedule.conflicts
        self.lockstep_wait = np.maximum(schedule.lockstep[:, None] - pairs, 0.0)
        self.own_cycles = pairs + self.lockstep_wait
        self.started_at = [0.0] * schedule.n_steps  # Python lists while running: cheaper to set than arrays
        # Per step: the latest PE's multipliers alone (a time plus the largest own cycles is the largest
        # of the sums: rounding is monotone), and when each PE's anticipation unit is done (filled as the
        # steps run).
        self.own_max_list: list[float] = self.own_cycles.max(axis=1, initial=0.0).tolist()
        self.released_at = [0.0] * schedule.n_steps
        self.screened_rows = np.zeros((schedule.n_steps, n_pes)) if screening else np.zeros((0, n_pes))
        # A step every unit starts idle keeps only its start (``row_base``; NaN: the row was computed).
        self.row_base = np.full(schedule.n_steps if screening else 0, np.nan)
        self.screen_max: list[float] = schedule.screen.max(axis=1, initial=0.0).tolist() if screening else []
        self.screen_idle_at = 0.0  # when the last anticipation unit finishes what it has screened
        self.stalls = {key: np.zeros(n_pes) for key in STALL_KEYS}
        self.shared_stalls = dict.fromkeys(STALL_KEYS, 0.0)  # cycles every PE spends alike
        self.screen_busy_cycles = float(schedule.screen.sum()) if screening else 0.0
        self.last_release = 0.0

    def release_time(self, step: int, start: float) -> float:
        """When the barrier of ``step``, started at ``start``, releases (the latest PE is done)."""
        self.started_at[step] = start
        release = self._screen(step, start) if self.screening else float(start + self.own_max_list[step])
        self.released_at[step] = release
        return release

    def _screen(self, step: int, start: float) -> float:
        """Advance every anticipation unit through ``step``; returns when the last PE's step is done (the
        later of its multipliers and its unit: the largest of the element-wise maxima is the larger of
        the two maxima).

        When every unit is idle by the time the step may be screened (the usual case), each unit's row
        is ``waits_for + screen[step]`` (the maximum with an earlier, smaller time is ``waits_for``) and
        its largest entry is ``waits_for + max(screen[step])`` (rounding is monotone): the row itself is
        only built when a later step needs it or after the run (``_account_steps``)."""
        waits_for = float(self.ready_at[step])
        if step >= self.lookahead:
            waits_for = max(waits_for, float(self.started_at[step - self.lookahead]))
        multiplied = start + self.own_max_list[step]
        if waits_for >= self.screen_idle_at:
            self.row_base[step] = waits_for
            self.screen_idle_at = waits_for + self.screen_max[step]
            return max(multiplied, self.screen_idle_at)
        screened = self.screened_rows[step]
        np.maximum(self._screened_row(step - 1), waits_for, out=screened)
        screened += self.schedule.screen[step]
        self.screen_idle_at = float(screened.max(initial=0.0))
        return max(multiplied, float(screened.max(initial=start)))

    def _screened_row(self, step: int) -> np.ndarray:
        """The units' done times after ``step`` (built now if that step kept only its start)."""
        row = self.screened_rows[step]
        if not np.isnan(self.row_base[step]):
            np.add(self.row_base[step], self.schedule.screen[step], out=row)
            self.row_base[step] = np.nan
        return row

    def _account_steps(self) -> None:
        """Add every step's per-PE stalls to the ledger, step by step (a sequential accumulate adds the
        rows in the same order, so every sum is the one a running total gives)."""
        schedule = self.schedule
        if self.screening:
            kept = ~np.isnan(self.row_base)
            self.screened_rows[kept] = self.row_base[kept, None] + schedule.screen[kept]
        self.stalls["busy"] += schedule.issued.sum(axis=0)
        self.stalls["bank_conflict"] += schedule.conflicts.sum(axis=0)
        self.stalls["barrier_wait"] += self.lockstep_wait.sum(axis=0)
        multiplied = np.array(self.started_at)[:, None] + self.own_cycles
        done = np.maximum(multiplied, self.screened_rows) if self.screening else multiplied
        self._add_rows("barrier_wait", np.array(self.released_at)[:, None] - done)
        if self.screening:
            self._add_rows("anticipation", np.maximum(self.screened_rows - multiplied, 0.0))

    def _add_rows(self, key: str, rows: np.ndarray) -> None:
        if len(rows):
            self.stalls[key] = np.add.accumulate(np.vstack([self.stalls[key][None], rows]), axis=0)[-1]

    def account_tail(self, end: float) -> None:
        """Cycles after the last barrier until the layer ends: last drains, then the write-back; and the
        per-PE stalls of every step."""
        self._account_steps()
        self.drain.account_tail(self.shared_stalls, self.last_release, end)

    def mean_stalls(self) -> dict[str, float]:
        """Stall category → cycles averaged over PEs (each PE's categories sum to the layer's cycles)."""
        n_pes = self.schedule.n_pes  # a sum over PEs divided by their count: ndarray.mean's operations
        per_pe = {key: float(self.stalls[key].sum()) / n_pes if n_pes else 0.0 for key in STALL_KEYS}
        return {key: per_pe[key] + float(self.shared_stalls[key]) for key in STALL_KEYS}


class PEArray(ArraySteps):
    """All PEs of the array with their RCP anticipation units, stepping barrier to barrier, as one process
    on an event environment.

    Args:
        env: Simulation environment.
        schedule: Work per step and PE.
        fetcher: Provides ``ready`` events per step.
        drain: Provides ``drained`` events and halo end times per step.
        on_release: Called with the step index when the barrier releases (frees a staging slot, starts
            the step's drain).
        screening: Whether each PE has an anticipation unit in front of it.
        lookahead: Steps an anticipation unit may screen ahead of its PE.
    """

    def __init__(self, env: Environment, schedule: Schedule, fetcher: StreamFetcher,
                 drain: AccumulatorDrain, on_release: Callable[[int], None], screening: bool,
                 lookahead: int) -> None:
        super().__init__(schedule, fetcher.ready_at, drain, screening, lookahead)
        self.env = env
        self.fetcher = fetcher
        self.on_release = on_release
        self.released = [env.event() for _ in range(schedule.n_steps)]
        self.drained = drain.drained
        env.process(self.multiply_steps())

    def multiply_steps(self) -> Proc:
        """Run every step: wait for the chunk and the accumulator half, then multiply up to the barrier.

        Only the release time is needed to go on; the per-PE stall rows are added up after the run
        (``_account_steps``), in step order, as if added here."""
        env, schedule = self.env, self.schedule
        ready_events, drained_events = self.fetcher.ready, self.drained
        half_wait = schedule.half_wait.tolist()
        observed = self.fetcher.waits_for_release  # the only releases anyone waits for
        for step in range(schedule.n_steps):
            ready = ready_events[step]
            if not ready.processed:
                t0 = env.now
                yield ready
                self.shared_stalls["memory_stall"] += env.now - t0
            freed_by = half_wait[step]
            if freed_by >= 0 and not drained_events[freed_by].processed:
                t0 = env.now
                yield drained_events[freed_by]
                self.drain.account_wait(self.shared_stalls, t0, env.now, freed_by)
            start = env.now
            release = self.release_time(step, start)
            if release > start:
                yield env.timeout(release - start)
            if observed[step]:  # an event nobody waits for or looks at changes nothing (antsim/sim/kernel.py)
                self.released[step].succeed()
            self.on_release(step)
        self.last_release = env.now
