"""The processing element: an F×I multiplier array fed one vector pair per cycle, with its stall ledger."""

from __future__ import annotations

from antsim.sim.blocks import AccumulatorDrain, ChunkBarrier, Proc, RcpAnticipator, StreamFetcher
from antsim.sim.kernel import Environment, Event
from antsim.sim.schedule import Schedule

STALL_KEYS = ("busy", "bank_conflict", "anticipation", "barrier_wait", "halo", "reduction", "memory_stall")


class PE:
    """One PE: multiplies its steps in order and accounts every cycle to one stall category.

    Per step: wait for the streamed chunk (``memory_stall``), wait for a free accumulator half
    (``halo`` / ``reduction``, whichever drain phase it waits through), multiply ``issued`` pairs
    (``busy``) plus ``conflicts`` stall cycles (``bank_conflict``), wait for the anticipation unit to
    finish screening the step (``anticipation``), then wait at the barrier (``barrier_wait``).

    Args:
        env: Simulation environment.
        index: PE index (row * cols + col).
        schedule: Work per step.
        fetcher: Provides ``ready`` events per step.
        drain: Provides ``drained`` events and halo end times per step.
        barrier: The array-wide step barrier.
        anticipator: The PE's RCP anticipation unit, or ``None``.
    """

    def __init__(self, env: Environment, index: int, schedule: Schedule, fetcher: StreamFetcher,
                 drain: AccumulatorDrain, barrier: ChunkBarrier,
                 anticipator: RcpAnticipator | None = None) -> None:
        self.env = env
        self.index = index
        self.issued = schedule.issued[:, index].tolist()
        self.conflicts = schedule.conflicts[:, index].tolist()
        self.fetcher = fetcher
        self.drain = drain
        self.barrier = barrier
        self.half_wait = schedule.half_wait.tolist()  # the drain that frees each step's accumulator half
        self.lockstep = schedule.lockstep.tolist()
        self.anticipator = anticipator
        self.started: list[Event] = []  # filled by attach_anticipator: only a unit waits on them
        self.stalls = dict.fromkeys(STALL_KEYS, 0.0)
        self.last_release = 0.0
        if anticipator is not None:
            self.attach_anticipator(anticipator)
        env.process(self.multiply_chunks())

    def attach_anticipator(self, anticipator: RcpAnticipator) -> None:
        """Put an RCP anticipation unit in front of this PE (before the simulation runs)."""
        self.anticipator = anticipator
        if not self.started:
            self.started = [self.env.event() for _ in self.issued]

    def multiply_chunks(self) -> Proc:
        """Run every step: operands, accumulator half, multiply, screen, barrier.

        Events that have already been processed are not yielded again (time would not advance): this
        halves the event count without changing any timing.
        """
        env = self.env
        for step, issued in enumerate(self.issued):
            ready = self.fetcher.ready[step]
            if not ready.processed:
                t0 = env.now
                yield ready
                self.stalls["memory_stall"] += env.now - t0
            freed_by = self.half_wait[step]
            if freed_by >= 0 and not self.drain.drained[freed_by].processed:
                yield from self._wait_for_half(freed_by)
            if self.anticipator is not None:
                self.started[step].succeed()
            yield env.timeout(issued + self.conflicts[step])
            self.stalls["busy"] += issued
            self.stalls["bank_conflict"] += self.conflicts[step]
            behind = self.lockstep[step] - (issued + self.conflicts[step])
            if behind > 0:  # the broadcast waits for slower PEs: this one's FIFO runs dry (a finer barrier)
                yield env.timeout(behind)
                self.stalls["barrier_wait"] += behind
            if self.anticipator is not None and not self.anticipator.screened[step].processed:
                t2 = env.now
                yield self.anticipator.screened[step]
                self.stalls["anticipation"] += env.now - t2
            t3 = env.now
            yield self.barrier.arrive(step)
            self.stalls["barrier_wait"] += env.now - t3
        self.last_release = env.now

    def _wait_for_half(self, drained_step: int) -> Proc:
        t0 = self.env.now
        yield self.drain.drained[drained_step]
        self.drain.account_wait(self.stalls, t0, self.env.now, drained_step)

    def account_tail(self, end: float) -> None:
        """Cycles after the PE's last barrier until the layer ends: last drains, then the write-back."""
        self.drain.account_tail(self.stalls, self.last_release, end)
