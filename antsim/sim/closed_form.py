"""The discrete-event model's timing without simpy: a recurrence over steps around one DRAM FIFO.

``antsim.sim.engine`` runs event processes on simpy's scheduling rules (``antsim.sim.kernel``):
``PEArray``, ``StreamFetcher``, ``AccumulatorDrain``, ``DramChannel``. Everything in that model is a ``max`` /
``+`` recurrence except the order in which the shared DRAM channel serves its requests, so this tier computes the
same quantities directly:

* array, per step ``s`` (``t`` = the previous release): ``start = max(t, ready[s], drained[half[s]])``;
  per PE ``done = max(start + own[s], screened[s])`` with the anticipation recurrence of
  ``antsim.sim.array``; the barrier releases at ``max_p done``;
* fetcher: the stationary share of a new tile / pass is requested once the previous step released, the
  streamed chunk once a staging slot is free (slot ``i`` of ``k`` frees when chunk ``i − k``'s last step
  releases); ``ready[s]`` is the end of its transfer;
* drain: the halo / reduction links serve drains in step order from their release
  (``drained = max(release, previous drained) + halo + reduction``); then the read-back and the
  write-back are requested;
* DRAM: one FIFO server; a request starts at ``max(arrival, end of the previous one)`` and takes
  ``bits / bits_per_cycle``. Requests are served in arrival order; each completion immediately
  propagates through the recurrences above (every time it sets is later than the completion), so the
  arrivals can be taken from a heap in order and nothing already served is ever overtaken.

Ties. Requests that arrive at the same instant are served in the order simpy creates them, and simpy
processes the events of one instant breadth first: the timeouts scheduled for it in the order they were
created, then the events each of those triggered, and so on. Every event here carries its *position*
(``Pos``): its time, the zero-delay events (hops) since the timeout that started its chain, and where that
timeout was created (three creation points deep). Waiting for an event is ``max(now, event)``; a request is
keyed by the position it was made at, so the heap orders same-instant requests as simpy does (a drain with
no halo and no reduction asks three hops after its barrier, a fetcher woken by a staging slot two: the
slot's put, then its get). Two rules stand in for what positions do not record: at one position the
fetcher's request precedes the drain's (the release event and the slot's put that wake the fetcher are
triggered before the drain's process starts), and a request queued behind a transfer is granted by the
next request made in the event that freed the port, else by the port's release event.

Exactness. ``tests/sim/test_closed_form.py`` requires equal cycles, stalls, actions and details on random
schedules and on real dataflow output. On schedules made to tie (a DRAM moving one value per 1–4
cycles, a third of the steps without work, zero halos; the test file's generator) 5 of 6,000 differ, by
one cycle or in the stall split only: two requests whose chains share every recorded creation point but
branch at one event (which of its children came first is not recorded). On the zoo networks
(``scripts/timing_tier_vs_des.py``, docs/timing_tier.md) no record differs.

What differs from the event tier: no simpy ``Environment`` exists, so nothing counts events (the event tier
reports none in ``details`` either); stall averages may differ in the last bits of the floating-point sum.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from antsim.sim.params import SimParams
from antsim.sim.pe import STALL_KEYS
from antsim.sim.schedule import Schedule
from antsim.spec.arch import ArchSpec

# DRAM request kinds (the heap's payload): which block asked, for what.
_STATIONARY, _STREAMED, _READBACK, _WRITE = 0, 1, 2, 3


Pos = tuple[float | int, ...]
"""Where in simulated time an event is processed: (time, hops after the timeout that started its chain,
where that timeout was created: time, hops, its own root's time). Tuples compare as simpy processes the
events of one instant (breadth first; the timeouts in the order they were created), so waiting for an
event that is processed at ``e`` from ``now`` resumes at ``max(now, e)``."""

_DEPTH = 3  # creation points a position remembers; ties deeper than that fall back to the block order
_KEPT = 2 * _DEPTH
_UNKNOWN: Pos = (math.inf, 0) + (0.0, 0) * _DEPTH
_ORIGIN: Pos = (0.0, 0) + (0.0, 0) * _DEPTH


def _after(pos: Pos, hops: int = 1) -> Pos:
    """The position of an event triggered ``hops`` zero-delay events after ``pos``."""
    return (pos[0], pos[1] + hops) + pos[2:]


def _timeout(pos: Pos, delay: float) -> Pos:
    """Where a wait of ``delay`` cycles started at ``pos`` ends (a zero delay is one more event)."""
    if delay <= 0:
        return _after(pos)
    return (pos[0] + delay, 0) + pos[:_KEPT]


class _Arrivals:
    """The DRAM channel: requests in the order simpy creates them, served first in, first out."""

    def __init__(self, bits_per_cycle: float) -> None:
        self.bits_per_cycle = bits_per_cycle
        self.heap: list[tuple[Pos, bool, int, int, int]] = []
        self.created = 0
        self.free_at = 0.0
        self.last_done: Pos = (-math.inf, 0) + (0.0, 0) * _DEPTH  # where the port was last released
        self.busy_cycles = 0.0
        self.read_bits = 0.0
        self.write_bits = 0.0

    def request(self, pos: Pos, kind: int, step: int) -> None:
        self.created += 1
        # At one position the fetcher's request comes first: the slot's put and the release event that wake
        # it are triggered before the drain's process starts, and its chain to the request is no longer.
        heapq.heappush(self.heap, (pos, kind >= _READBACK, self.created, kind, step))

    def _granted_late(self) -> Pos:
        """Where a request that queued behind the last transfer resumes. The port is freed when that
        transfer's timeout is processed; the queue's head is granted by the release event one hop later,
        or earlier by the next request created in between (simpy grants waiting requests whenever any
        request is made), whose own process made it in the same event."""
        freed, released = self.last_done, _after(self.last_done)
        between = [entry[0] for entry in self.heap if freed <= entry[0] < released]  # few pending: cheap
        return _after(min(between)) if between else _after(freed, 2)

    def serve_next(self, bits: float) -> Pos:
        """Serve the earliest request of ``bits``: returns where its transfer's timeout ends."""
        pos = heapq.heappop(self.heap)[0]
        granted = _after(pos) if pos > self.last_done else self._granted_late()
        duration = bits / self.bits_per_cycle
        self.busy_cycles += duration
        self.last_done = _timeout(granted, duration)
        self.free_at = self.last_done[0]
        return self.last_done


class ClosedFormRun:
    """One evaluation of a schedule: the array, fetcher and drain recurrences around ``_Arrivals``.

    Args:
        arch: The design (DRAM bandwidth; whether each PE has an anticipation unit).
        schedule: Work and traffic per step and PE (``antsim.sim.schedule.build_schedule``).
        params: Staging depth and anticipation lookahead.
    """

    def __init__(self, arch: ArchSpec, schedule: Schedule, params: SimParams) -> None:
        self.schedule = schedule
        self.n = schedule.n_steps
        self.n_pes = schedule.n_pes
        # bits per core cycle, as engine.dram_bits_per_cycle (which imports this module)
        self.dram = _Arrivals(arch.dram.bandwidth_gbps * 8.0 / arch.technology.clock_ghz)
        self.staging_chunks = params.staging_chunks
        self.screening = arch.screens_pairs
        self.lookahead = params.anticipation_lookahead
        pairs = schedule.issued + schedule.conflicts
        self.lockstep_wait = np.maximum(schedule.lockstep[:, None] - pairs, 0.0)
        self.own = pairs + self.lockstep_wait
        self.own_max = self.own.max(axis=1, initial=0.0).tolist()
        self.own_sum = self.own.sum(axis=1).tolist()
        self.stall_pe = {key: np.zeros(schedule.n_pes) for key in STALL_KEYS}
        self.shared = dict.fromkeys(STALL_KEYS, 0.0)  # cycles every PE spends alike
        self.barrier_total = 0.0  # without screening: Σ over steps and PEs of (release − done)
        n = self.n
        # Per step, where the events other blocks wait for are processed (_UNKNOWN until computed).
        self.ready: list[Pos] = [_UNKNOWN] * n
        self.release: list[Pos] = [_UNKNOWN] * n
        self.drained: list[Pos] = [_UNKNOWN] * n
        self.started = [0.0] * n
        self.halo_end = [0.0] * n
        # The schedule's per-step columns as Python lists: one lookup per step, no numpy scalars.
        self.stationary_bits = schedule.stationary_bits.tolist()
        self.streamed_bits = schedule.streamed_bits.tolist()
        self.readback_bits = schedule.readback_bits.tolist()
        self.output_bits = schedule.output_bits.tolist()
        self.halo_cycles = schedule.halo_cycles.tolist()
        self.reduction_cycles = schedule.reduction_cycles.tolist()
        self.fetches = schedule.fetches.tolist()
        self.frees = schedule.frees.tolist()
        self.half_wait = schedule.half_wait.tolist()
        self.puts: list[Pos] = []  # staging slots freed, in order (the put's own processing)
        self.screens = _Screening(schedule) if self.screening else None
        self.end = 0.0
        # The fetcher: next step, its stage there (0 stationary, 1 slot, 2 streamed, 3 in flight), where.
        self.f_step, self.f_stage, self.f_pos, self.gets = 0, 0, _ORIGIN, 0
        self.a_step, self.a_pos = 0, _ORIGIN  # the array: next step, where it released the last
        self.links_free: Pos = (-math.inf, 0) + (0.0, 0) * _DEPTH  # where the previous drain released the links

    # --- the fetcher -------------------------------------------------------------------------------
    def advance_fetcher(self) -> bool:
        """Move the fetcher as far as known times allow; True if it requested or readied anything."""
        moved = False
        while self.f_step < self.n and self.f_stage < 3:
            f = self.f_step
            if self.f_stage == 0:
                self.f_stage = 1
                if self.stationary_bits[f] > 0:
                    if f > 0:  # the new tile or pass overwrites the input buffer once the last step released
                        if self.release[f - 1] is _UNKNOWN:
                            self.f_stage = 0
                            return moved
                        self.f_pos = max(self.f_pos, _after(self.release[f - 1]))
                    self._request(_STATIONARY, f)
                    return True
            if self.f_stage == 1:
                if self.fetches[f] and not self._take_slot():
                    return moved
                self.f_stage = 2
            moved = True
            if self.streamed_bits[f] > 0:
                self._request(_STREAMED, f)
                return True
            self._chunk_ready(f, _after(self.f_pos))
        return moved

    def _request(self, kind: int, step: int) -> None:
        self.dram.request(self.f_pos, kind, step)
        self.f_stage = 3  # in flight until fetch_done

    def _take_slot(self) -> bool:
        """Take a staging slot (False while the slot it needs has no known free time)."""
        needed = self.gets - self.staging_chunks
        if needed >= 0:
            if needed >= len(self.puts):
                return False
            put = self.puts[needed]
            if put > self.f_pos:  # waits: the put's event grants the get, whose event resumes the fetcher
                self.f_pos = _after(put, 2)
                self.gets += 1
                return True
        self.gets += 1
        self.f_pos = _after(self.f_pos)  # a free slot: the get still succeeds as its own event
        return True

    def _chunk_ready(self, step: int, ready: Pos) -> None:
        self.ready[step] = ready
        self.f_step, self.f_stage = step + 1, 0

    def fetch_done(self, kind: int, step: int, done: Pos) -> None:
        """A fetcher transfer ended (``done``: its timeout's position)."""
        self.f_pos = done
        if kind == _STATIONARY:
            self.f_stage = 1
        else:
            self._chunk_ready(step, _after(done))

    # --- the array ---------------------------------------------------------------------------------
    def advance_array(self) -> bool:
        """Run every array step whose chunk and accumulator half have known times; True if any ran."""
        step, n, ready_at, drained_at = self.a_step, self.n, self.ready, self.drained
        first = step
        while step < n and ready_at[step] is not _UNKNOWN:
            pos, ready = self.a_pos, ready_at[step]
            if ready > pos:
                self.shared["memory_stall"] += ready[0] - pos[0]
                pos = ready
            freed_by = self.half_wait[step]
            if freed_by >= 0 and drained_at[freed_by] > pos:
                self._account_half(pos[0], drained_at[freed_by][0], freed_by)
                pos = drained_at[freed_by]
            start = pos[0]
            self.started[step] = start
            release = self._multiply(step, start)
            # A step with work ends on a timeout (simpy's now + delay, to the last bit); one without
            # releases in the same event that started it.
            self._released(step, _timeout(pos, release - start) if release > start else pos)
            step += 1
        return step > first

    def _account_half(self, start: float, end: float, drained_step: int) -> None:
        """A wait from ``start`` to ``end`` on a drain: its halo part, then its reduction part."""
        halo_part = max(0.0, min(end, self.halo_end[drained_step]) - start)
        self.shared["halo"] += halo_part
        self.shared["reduction"] += (end - start) - halo_part

    def _multiply(self, step: int, start: float) -> float:
        """The per-PE part of one step (``antsim.sim.array``); returns the barrier release."""
        if not self.n_pes:
            return start
        release = start + self.own_max[step]
        if self.screens is None:
            self.barrier_total += self.n_pes * self.own_max[step] - self.own_sum[step]
            return release
        waits_for = self.ready[step][0]
        if step >= self.lookahead:
            waits_for = max(waits_for, self.started[step - self.lookahead])
        return max(release, self.screens.screen(step, waits_for))

    def _released(self, step: int, release: Pos) -> None:
        """The barrier of ``step`` released: free its slot, start its drain, move the array on."""
        self.release[step] = release
        if release[0] > self.end:
            self.end = release[0]
        if self.frees[step]:
            self.puts.append(release)
        self._drain(step, release)
        self.a_step, self.a_pos = step + 1, release

    # --- the drain ---------------------------------------------------------------------------------
    def _drain(self, step: int, release: Pos) -> None:
        """Halo exchange and reduction on the shared links, then the drain's first DRAM request."""
        # The drain's process starts right after the release; its links request succeeds as an event,
        # or, while the previous drain holds the links, when that drain's release event grants it.
        links = self.links_free
        pos = _after(release) if links < release else _after(links, 2)
        pos = _timeout(pos, self.halo_cycles[step])
        self.halo_end[step] = pos[0]
        pos = _timeout(pos, self.reduction_cycles[step])
        self.links_free = pos
        self.drained[step] = _after(pos)
        if pos[0] > self.end:
            self.end = pos[0]
        if self.readback_bits[step] > 0:
            self.dram.request(pos, _READBACK, step)
        elif self.output_bits[step] > 0:
            self.dram.request(pos, _WRITE, step)

    # --- the loop ----------------------------------------------------------------------------------
    def run(self) -> float:
        """Serve DRAM requests in order until every block is done; returns the end of the phase."""
        dram = self.dram
        tables = (self.stationary_bits, self.streamed_bits, self.readback_bits, self.output_bits)
        self._propagate()
        while dram.heap:
            kind, step = dram.heap[0][3], dram.heap[0][4]
            bits = tables[kind][step]
            done = dram.serve_next(bits)
            self.end = max(self.end, done[0])
            if kind == _WRITE:
                dram.write_bits += bits
                continue
            dram.read_bits += bits
            if kind == _READBACK:
                if self.output_bits[step] > 0:
                    dram.request(done, _WRITE, step)
                continue
            self.fetch_done(kind, step, done)
            self._propagate()
        if self.a_step < self.n:
            raise RuntimeError("closed-form timing stopped before the last step (internal error)")
        self._account_tail(self.end)
        return self.end

    def _propagate(self) -> None:
        while self.advance_fetcher() | self.advance_array():
            pass

    def _account_tail(self, end: float) -> None:
        """The cycles after the last barrier: the last drain, then the write-back (as the event tier)."""
        last = self.n - 1
        if last < 0:
            self.shared["memory_stall"] += end
            return
        drained = self.drained[last][0]
        self._account_half(self.release[last][0], min(end, drained), last)
        self.shared["memory_stall"] += max(0.0, end - drained)

    def anticipation_busy_cycles(self) -> float:
        """Cycles an anticipation unit screens, averaged over PEs."""
        return float(self.schedule.screen.sum()) / max(1, self.n_pes) if self.screening else 0.0

    def mean_stalls(self) -> dict[str, float]:
        """Stall category → cycles averaged over PEs (each PE's categories sum to the phase's cycles)."""
        s = self.schedule
        if not self.n_pes:
            return dict(self.shared)
        self.stall_pe["busy"] += s.issued.sum(axis=0)
        self.stall_pe["bank_conflict"] += s.conflicts.sum(axis=0)
        self.stall_pe["barrier_wait"] += self.lockstep_wait.sum(axis=0)
        if self.screens is not None and self.n:
            multiplied = np.asarray(self.started)[:, None] + self.own
            screened = self.screens.rows()
            self.stall_pe["anticipation"] += np.maximum(screened - multiplied, 0.0).sum(axis=0)
            release = np.array([pos[0] for pos in self.release])
            self.stall_pe["barrier_wait"] += (release[:, None] - np.maximum(multiplied, screened)).sum(axis=0)
        per_pe = {key: float(self.stall_pe[key].mean()) for key in STALL_KEYS}
        per_pe["barrier_wait"] += self.barrier_total / self.n_pes
        return {key: per_pe[key] + self.shared[key] for key in STALL_KEYS}


class _Screening:
    """The PEs' anticipation units, step by step: ``screened[s] = max(screened[s − 1], waits_for[s]) +
    screen[s]`` per PE (``antsim.sim.array``), with one numpy row per step only where it is needed.

    When a step's inputs arrive after every unit finished its previous step (``waits_for`` ≥ the latest
    unit), all units start from ``waits_for``: the row is ``waits_for + screen[s]`` — the same floats the
    recurrence gives — and its maximum is ``waits_for + max screen[s]``; such rows are only built at the end,
    for the stall ledger, all at once. The other steps take the recurrence's numpy row.

    Args:
        schedule: Screening cycles per step and PE.
    """

    def __init__(self, schedule: Schedule) -> None:
        self.cycles = schedule.screen
        self.cycles_max = schedule.screen.max(axis=1, initial=0.0).tolist()
        self.waits_for = [0.0] * schedule.n_steps
        self.kept: dict[int, np.ndarray] = {}  # rows of the steps some unit was still busy for
        self.latest = 0.0  # when the slowest unit finished the last step screened

    def _row(self, step: int) -> np.ndarray:
        if step < 0:
            return np.zeros(self.cycles.shape[1])
        kept = self.kept.get(step)
        return kept if kept is not None else self.waits_for[step] + self.cycles[step]

    def screen(self, step: int, waits_for: float) -> float:
        """Screen ``step`` once its inputs are there at ``waits_for``; returns when the slowest unit is done."""
        self.waits_for[step] = waits_for
        if waits_for >= self.latest:
            self.latest = waits_for + self.cycles_max[step]
        else:
            row = np.maximum(self._row(step - 1), waits_for) + self.cycles[step]
            self.kept[step] = row
            self.latest = float(row.max())
        return self.latest

    def rows(self) -> np.ndarray:
        """When each unit finished each step (steps × PEs)."""
        screened = np.asarray(self.waits_for)[:, None] + self.cycles
        for step, row in self.kept.items():
            screened[step] = row
        return screened
