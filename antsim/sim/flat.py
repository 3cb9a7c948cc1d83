"""The PE-array wiring's event processes on one specialised queue loop (``simulate_phase``'s default run).

``antsim.sim.engine._Blocks`` runs four blocks (``StreamFetcher``, ``PEArray``, one ``AccumulatorDrain``
process per step, ``DramChannel``) on a general event environment: event objects with callback lists,
process objects, lock and slot objects that simpy's ``Resource`` and ``Container`` can stand in for. Most of
a phase's simulation went to that machinery, not to the blocks' decisions. ``FlatRun`` runs the same
processes, line for line, with the machinery cut down to what this one wiring needs:

* a queue entry is ``(time, priority, insertion count, target)`` and its turn calls ``target(time)``:
  the target is a process's ``send`` (a timeout or a grant the process waits on) or the ``fire`` of an
  event (``_Flag``), of the DRAM port or drain links (``_Lock``) or of the staging slots (``_Slots``);
* an event has at most one waiter (every event of this wiring is waited on by one known process), so it
  keeps a ``processed`` flag and that waiter instead of a callback list;
* a process is a generator that arranges its own wake-up before it yields (``me`` is its ``send``, handed
  to it in a one-element list when it starts).

Every entry the blocks put on ``antsim.sim.kernel``'s queue is put here, at the same point of the same
process, with the same time expression (``now + delay``), so the queue hands them out in the same order
and every float is the same: ``tests/sim/test_kernel.py`` requires every field of the timing to equal
that of the blocks run on simpy itself (random schedules with narrow DRAM, ties, screening, one to three
staging slots, single and double accumulators, passes and re-streams, and real dataflow of every phase).
Entries the kernel leaves out (events nobody observes) are left out here too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from heapq import heappop, heappush
from itertools import count
from typing import Any

from antsim.sim.array import ArraySteps
from antsim.sim.blocks import DrainLedger
from antsim.sim.kernel import NORMAL, URGENT
from antsim.sim.schedule import Schedule

Wake = Callable[[Any], Any]  # a process's send, or an entry's fire: called with the entry's time
Proc = Generator[None, Any, None]


class _Flag:
    """An event with at most one waiting process: ``processed`` once its queue entry has had its turn."""

    __slots__ = ("processed", "waiter")

    def __init__(self) -> None:
        self.processed = False
        self.waiter: Wake | None = None

    def fire(self, now: float) -> None:
        self.processed = True
        if self.waiter is not None:
            self.waiter(now)


class _Lock:
    """``antsim.sim.kernel.FifoLock`` with the requesting process's ``send`` for its request: granted in
    request order, a grant resumes the holder one entry later, a release with a waiter grants one entry
    later (simpy's ``Release``)."""

    __slots__ = ("queue", "eid", "busy", "waiting")

    def __init__(self, run: FlatRun) -> None:
        self.queue, self.eid = run.queue, run.eid
        self.busy = False
        self.waiting: deque[Wake] = deque()

    def take(self, me: Wake, now: float) -> bool:
        """Request the lock: True when it is granted at once (the caller then waits its one hop itself),
        False when ``me`` is in line (a grant entry wakes it; a free lock with waiters grants the oldest)."""
        if self.busy or self.waiting:
            self.waiting.append(me)
            if not self.busy:
                self.fire(now)
            return False
        self.busy = True
        return True

    def release(self, now: float) -> None:
        self.busy = False
        if self.waiting:
            heappush(self.queue, (now, NORMAL, next(self.eid), self.fire))

    def fire(self, now: float) -> None:
        if not self.busy and self.waiting:
            self.busy = True
            heappush(self.queue, (now, NORMAL, next(self.eid), self.waiting.popleft()))


class _Slots:
    """``antsim.sim.kernel.Slots``: free staging slots taken one at a time; a return with a waiter grants
    one entry later (simpy's ``ContainerPut``)."""

    __slots__ = ("queue", "eid", "level", "waiting")

    def __init__(self, run: FlatRun, capacity: int) -> None:
        self.queue, self.eid = run.queue, run.eid
        self.level = capacity
        self.waiting: deque[Wake] = deque()

    def take(self, me: Wake, now: float) -> bool:
        """Take a slot: True when granted at once (the caller then waits its one hop itself), False when
        ``me`` waits for a return (or behind older requests granted now: their entries come first)."""
        if self.waiting or self.level < 1:
            self.waiting.append(me)
            if self.level >= 1:
                self.fire(now)
            return False
        self.level -= 1
        return True

    def put(self, now: float) -> None:
        self.level += 1
        if self.waiting:
            heappush(self.queue, (now, NORMAL, next(self.eid), self.fire))

    def fire(self, now: float) -> None:
        while self.waiting and self.level >= 1:
            self.level -= 1
            heappush(self.queue, (now, NORMAL, next(self.eid), self.waiting.popleft()))


class FlatRun:
    """One (layer, phase) on the PE-array wiring: fetcher, array, drains and DRAM on one queue.

    Args:
        schedule: Work and traffic per step.
        bits_per_cycle: DRAM bandwidth in bits per core cycle.
        staging_chunks: On-chip slots for streamed chunks.
        screening: Whether each PE has an anticipation unit.
        lookahead: Steps an anticipation unit may screen ahead of its PE.
    """

    def __init__(self, schedule: Schedule, bits_per_cycle: float, staging_chunks: int, screening: bool,
                 lookahead: int) -> None:
        n = schedule.n_steps
        self.schedule = schedule
        self.bits_per_cycle = bits_per_cycle
        self.queue: list[tuple[float, int, int, Wake]] = []
        self.eid = count()
        self.port, self.links, self.staging = _Lock(self), _Lock(self), _Slots(self, staging_chunks)
        self.read_bits = self.write_bits = self.busy_cycles = 0.0
        self.ready, self.drained, self.released = [_Flag() for _ in range(n)], [_Flag() for _ in range(n)], \
            [_Flag() for _ in range(n)]
        self.ready_at = [0.0] * n
        self.ledger = DrainLedger(schedule)
        self.array = ArraySteps(schedule, self.ready_at, self.ledger, screening, lookahead)
        self.dram = self  # the channel's counters (``read_bits``, ``write_bits``, ``busy_cycles``) live here
        self.now: float = 0  # simpy's initial time, an int as there
        self.clock: float = 0  # the latest time a process went on to without a queue entry (see ``run``)
        box: list[Wake] = []
        self._start(self._prefetch_chunks(box), box, self.now)
        box = []
        self._start(self._multiply_steps(box), box, self.now)

    def _start(self, process: Proc, box: list[Wake], now: float) -> None:
        """Queue a process's start at ``now`` (URGENT, as simpy's ``Initialize``); ``box`` hands it its own
        send (``me``) when it starts."""
        send = process.send
        box.append(send)
        next(process)
        heappush(self.queue, (now, URGENT, next(self.eid), send))

    def run(self) -> float:
        """Hand out the queue's entries in order until none is left; returns the end time.

        A process that would wait for an entry of its own (a timeout, a grant's hop) at ``at`` goes on at
        once when every entry in the queue is later than ``at``: that entry would be handed out next, to
        it, so going on is what its turn would do, and every later entry keeps its order. The end is the
        later of the last entry handed out and the last such instant (``clock``)."""
        queue = self.queue
        now = self.now
        while queue:
            now, _, _, target = heappop(queue)
            target(now)
        self.now = max(now, self.clock)
        self.array.account_tail(float(self.now))
        return float(self.now)

    def _transfer(self, me: Wake, now: float, bits: float, write: bool = False) -> Generator[None, Any, float]:
        """``DramChannel.transfer`` of ``bits > 0``: request the port, hold it ``bits / bits_per_cycle``
        (each wait taken at once when nothing comes first, see ``run``)."""
        queue = self.queue
        if not self.port.take(me, now):
            now = yield
        elif queue and queue[0][0] <= now:
            heappush(queue, (now, NORMAL, next(self.eid), me))
            now = yield
        duration = bits / self.bits_per_cycle
        at = now + duration
        if queue and queue[0][0] <= at:
            heappush(queue, (at, NORMAL, next(self.eid), me))
            now = yield
        else:
            now = self.clock = at
        self.port.release(now)
        self.busy_cycles += duration
        if write:
            self.write_bits += bits
        else:
            self.read_bits += bits
        return now

    def _prefetch_chunks(self, box: list[Wake]) -> Proc:
        """``StreamFetcher.prefetch_chunks``."""
        now = yield
        me = box[0]
        schedule, queue, eid, ready, ready_at = self.schedule, self.queue, self.eid, self.ready, self.ready_at
        stationary_bits, streamed_bits = schedule.stationary_bits.tolist(), schedule.streamed_bits.tolist()
        fetches = schedule.fetches.tolist()
        for step in range(schedule.n_steps):
            stationary = stationary_bits[step]
            if stationary > 0:
                if step > 0 and not self.released[step - 1].processed:
                    self.released[step - 1].waiter = me
                    now = yield
                now = yield from self._transfer(me, now, stationary)
            if fetches[step]:
                if not self.staging.take(me, now):
                    now = yield
                elif queue and queue[0][0] <= now:
                    heappush(queue, (now, NORMAL, next(eid), me))
                    now = yield
            bits = streamed_bits[step]
            if bits > 0:
                now = yield from self._transfer(me, now, bits)
            ready_at[step] = now
            heappush(queue, (now, NORMAL, next(eid), ready[step].fire))
        yield  # done: nothing resumes it

    def _multiply_steps(self, box: list[Wake]) -> Proc:
        """``PEArray.multiply_steps``."""
        now = yield
        me = box[0]
        schedule, array, queue, eid, ready = self.schedule, self.array, self.queue, self.eid, self.ready
        half_wait, frees = schedule.half_wait.tolist(), schedule.frees.tolist()
        observed = schedule.stationary_bits[1:].tolist() + [0.0]  # the fetcher waits for these releases
        shared = array.shared_stalls
        for step in range(schedule.n_steps):
            if not ready[step].processed:
                t0 = now
                ready[step].waiter = me
                now = yield
                shared["memory_stall"] += now - t0
            freed_by = half_wait[step]
            if freed_by >= 0 and not self.drained[freed_by].processed:
                t0 = now
                self.drained[freed_by].waiter = me
                now = yield
                self.ledger.account_wait(shared, t0, now, freed_by)
            start = now
            release = array.release_time(step, start)
            if release > start:
                at = now + (release - start)
                if queue and queue[0][0] <= at:
                    heappush(queue, (at, NORMAL, next(eid), me))
                    now = yield
                else:
                    now = self.clock = at
            if observed[step]:
                heappush(queue, (now, NORMAL, next(eid), self.released[step].fire))
            if frees[step]:
                self.staging.put(now)
            drain_box: list[Wake] = []
            self._start(self._drain_chunk(step, drain_box), drain_box, now)
        array.last_release = now
        yield  # done: nothing resumes it

    def _drain_chunk(self, step: int, box: list[Wake]) -> Proc:
        """``AccumulatorDrain.drain_chunk``."""
        now = yield
        me = box[0]
        ledger, queue, eid = self.ledger, self.queue, self.eid
        if not self.links.take(me, now):
            now = yield
        elif queue and queue[0][0] <= now:
            heappush(queue, (now, NORMAL, next(eid), me))
            now = yield
        at = now + ledger.halo_cycles[step]
        if queue and queue[0][0] <= at:
            heappush(queue, (at, NORMAL, next(eid), me))
            now = yield
        else:
            now = self.clock = at
        ledger.halo_end[step] = now
        at = now + ledger.reduction_cycles[step]
        if queue and queue[0][0] <= at:
            heappush(queue, (at, NORMAL, next(eid), me))
            now = yield
        else:
            now = self.clock = at
        self.links.release(now)
        ledger.drained_at[step] = now
        if ledger.observed[step]:
            heappush(queue, (now, NORMAL, next(eid), self.drained[step].fire))
        if ledger.readback_bits[step] > 0:
            now = yield from self._transfer(me, now, ledger.readback_bits[step])
        bits = ledger.output_bits[step]
        if bits > 0:
            now = yield from self._transfer(me, now, bits, write=True)
        yield  # done: nothing resumes it

    def mean_stalls(self) -> dict[str, float]:
        return self.array.mean_stalls()

    def anticipation_busy_cycles(self) -> float:
        return self.array.screen_busy_cycles / max(1, self.schedule.n_pes)
