"""Hardware blocks of the outer-product accelerator as event processes (one event per chunk, not per product).

They run on ``antsim.sim.kernel`` (simpy's scheduling rules, fewer layers); the same code runs on simpy
(``tests/sim/test_kernel.py``), whose ``Resource(capacity=1)`` and ``Container`` the kernel's ``lock()``
and ``slots()`` stand for.

Blocks hold their ``env``, their locks and slots and their counters; behaviours are generator methods
named after what the hardware does (docs/development.md habits 4–6). All state lives on the blocks, so several
simulations can run in one process.

* ``DramChannel`` — one channel shared by all PEs (a capacity-1 ``Resource``): transfers are serialised
  and take ``bits / bits_per_cycle`` cycles.
* ``StreamFetcher`` — loads each pass's stationary operand, then prefetches the streamed operand chunk by
  chunk into ``staging_chunks`` on-chip slots (a ``Container``): double-buffered prefetch.
* ``RcpAnticipator`` — ANT's unit in front of one PE: screens a chunk's candidate pairs at
  ``pairs_per_cycle``, up to ``lookahead`` chunks ahead of the multipliers.
* ``PE`` — multiplies its chunk's issued pairs at one F×I pair per cycle plus bank-conflict stalls; the
  chunk is done when both the multipliers and the screening are done; then waits at the barrier.
* ``ChunkBarrier`` — releases all PEs when the last one arrives.
* ``AccumulatorDrain`` — after each chunk: halo exchange with neighbours, cross-PE reduction (wgrad),
  then the write-back of the chunk's outputs over DRAM (wgrad: once per batch tile and group, after
  reading back the earlier tiles' dW). It frees the accumulator half it drained.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import numpy as np

from antsim.sim.kernel import Environment, Event
from antsim.sim.schedule import Schedule

Proc = Generator[Event, Any, None]


class DramChannel:
    """Off-chip memory channel shared by all PEs.

    Args:
        env: Simulation environment.
        bits_per_cycle: Bandwidth in bits per core cycle (GB/s × 8 / GHz).
    """

    def __init__(self, env: Environment, bits_per_cycle: float) -> None:
        self.env = env
        self.bits_per_cycle = bits_per_cycle
        self.port = env.lock()
        self.read_bits = 0.0
        self.write_bits = 0.0
        self.busy_cycles = 0.0

    def transfer(self, bits: float, write: bool = False) -> Proc:
        """Move ``bits`` over the channel, waiting for it to be free first."""
        if bits <= 0:
            return
        with self.port.request() as request:
            yield request
            duration = bits / self.bits_per_cycle
            yield self.env.timeout(duration)
        self.busy_cycles += duration
        if write:
            self.write_bits += bits
        else:
            self.read_bits += bits


class StreamFetcher:
    """Loads the stationary operand per pass and prefetches streamed chunks into staging slots.

    Args:
        env: Simulation environment.
        dram: The shared channel.
        schedule: Bits per step.
        staging_chunks: On-chip slots for streamed chunks (2 = double buffering).
        released: Per-step events fired when every PE has finished the step (frees the input buffer).
    """

    def __init__(self, env: Environment, dram: DramChannel, schedule: Schedule, staging_chunks: int,
                 released: list[Event]) -> None:
        self.env = env
        self.dram = dram
        self.schedule = schedule
        self.released = released
        self.staging = env.slots(staging_chunks)
        self.ready = [env.event() for _ in range(schedule.n_steps)]
        self.ready_at = [0.0] * schedule.n_steps
        # Python floats, not numpy scalars: the same values, and the event queue compares them faster.
        self.stationary_bits = schedule.stationary_bits.tolist()
        # Which steps' release the fetcher waits for (the next step loads a stationary share): the only
        # release events anyone observes.
        self.waits_for_release = self.stationary_bits[1:] + [0.0]
        self.streamed_bits = schedule.streamed_bits.tolist()
        self.fetches = schedule.fetches.tolist()
        self.frees = schedule.frees.tolist()
        env.process(self.prefetch_chunks())

    def prefetch_chunks(self) -> Proc:
        """Stream each step's operand as soon as a staging slot is free, in step order.

        A step that reuses the chunk already staged (the next image of a batch tile on the same weight
        group) takes no new slot."""
        for step in range(self.schedule.n_steps):
            stationary = self.stationary_bits[step]
            if stationary > 0:
                if step > 0:  # the next tile or pass overwrites the input buffer: wait until it is not read
                    yield self.released[step - 1]
                yield from self.dram.transfer(stationary)
            if self.fetches[step]:
                yield self.staging.get(1)
            if self.streamed_bits[step] > 0:
                yield from self.dram.transfer(self.streamed_bits[step])
            self.ready_at[step] = self.env.now
            self.ready[step].succeed()

    def free_slot(self, step: int) -> None:
        """``step`` finished on every PE: if it was the last to use its staged chunk, free the slot."""
        if self.frees[step]:
            self.staging.put(1)


class RcpAnticipator:
    """ANT's RCP anticipation unit of one PE: a pipeline stage that screens candidate vector pairs.

    Args:
        env: Simulation environment.
        screen_cycles: Cycles to screen each step's candidates (candidates / pairs_per_cycle).
        ready: Per-step events: the streamed chunk is on chip.
        started: Per-step events of the PE it feeds: the PE started multiplying that step.
        lookahead: How many steps it may run ahead of its PE (its pair queue).
    """

    def __init__(self, env: Environment, screen_cycles: np.ndarray, ready: list[Event],
                 started: list[Event], lookahead: int) -> None:
        self.env = env
        self.screen_cycles = screen_cycles
        self.ready = ready
        self.started = started
        self.lookahead = lookahead
        self.screened = [env.event() for _ in range(len(screen_cycles))]
        self.busy_cycles = 0.0
        env.process(self.screen_pairs())

    def screen_pairs(self) -> Proc:
        """Screen each step's candidates once its operands are on chip and the queue has room."""
        for step, cycles in enumerate(self.screen_cycles):
            if not self.ready[step].processed:
                yield self.ready[step]
            if step - self.lookahead >= 0 and not self.started[step - self.lookahead].processed:
                yield self.started[step - self.lookahead]
            yield self.env.timeout(cycles)
            self.busy_cycles += cycles
            self.screened[step].succeed()


class ChunkBarrier:
    """Synchronises all PEs at the end of every step (SCNN's output-channel-group boundary).

    Args:
        env: Simulation environment.
        n_pes: PEs that must arrive.
        n_steps: Steps.
        on_release: Called with the step index when the last PE arrives.
    """

    def __init__(self, env: Environment, n_pes: int, n_steps: int,
                 on_release: Callable[[int], None]) -> None:
        self.n_pes = n_pes
        self.arrived = [0] * n_steps
        self.released = [env.event() for _ in range(n_steps)]
        self.on_release = on_release

    def arrive(self, step: int) -> Event:
        """Register one PE at ``step``; returns the event that fires when all have arrived."""
        self.arrived[step] += 1
        if self.arrived[step] == self.n_pes:
            self.released[step].succeed()
            self.on_release(step)
        return self.released[step]


class DrainLedger:
    """When each step's drain ended its halo exchange and its drain, and how a wait on it splits into
    stall categories (shared by ``AccumulatorDrain`` and ``antsim.sim.flat``).

    Args:
        schedule: Halo / reduction cycles and output bits per step.
    """

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self.halo_end = [0.0] * schedule.n_steps
        self.drained_at = [0.0] * schedule.n_steps
        # A drain event is observed only by the step whose accumulator half it frees.
        self.observed = [False] * schedule.n_steps
        for drained_step in schedule.half_wait[schedule.half_wait >= 0].tolist():
            self.observed[drained_step] = True
        self.halo_cycles = schedule.halo_cycles.tolist()  # Python floats (see StreamFetcher)
        self.reduction_cycles = schedule.reduction_cycles.tolist()
        self.readback_bits = schedule.readback_bits.tolist()
        self.output_bits = schedule.output_bits.tolist()

    def account_wait(self, stalls: dict[str, float], start: float, end: float, drained_step: int) -> None:
        """Add a wait from ``start`` to ``end`` on the drain of ``drained_step`` to ``stalls``, split into
        its halo part (until that drain's halo exchange ended) and its reduction part."""
        halo_part = max(0.0, min(end, self.halo_end[drained_step]) - start)
        stalls["halo"] += halo_part
        stalls["reduction"] += (end - start) - halo_part

    def account_tail(self, stalls: dict[str, float], last_release: float, end: float) -> None:
        """Add the cycles from the last barrier (``last_release``) to the layer's ``end`` to ``stalls``: the
        last drain, then the write-back (``memory_stall``)."""
        last = self.schedule.n_steps - 1
        if last < 0:
            stalls["memory_stall"] += end
            return
        drained_at = self.drained_at[last]
        self.account_wait(stalls, last_release, min(end, drained_at), last)
        stalls["memory_stall"] += max(0.0, end - drained_at)


class AccumulatorDrain(DrainLedger):
    """Halo exchange, cross-PE reduction and write-back after each step, one step at a time.

    Args:
        env: Simulation environment.
        dram: The shared channel (for the write-back).
        schedule: Halo / reduction cycles and output bits per step.
    """

    def __init__(self, env: Environment, dram: DramChannel, schedule: Schedule) -> None:
        super().__init__(schedule)
        self.env = env
        self.dram = dram
        self.links = env.lock()
        self.drained = [env.event() for _ in range(schedule.n_steps)]

    def start(self, step: int) -> None:
        """Begin draining ``step`` (called when its barrier releases)."""
        self.env.process(self.drain_chunk(step))

    def drain_chunk(self, step: int) -> Proc:
        """Exchange halos, reduce partial sums, free the accumulator half, then read back the partial
        sums of earlier batch tiles (wgrad) and write the accumulated outputs back."""
        with self.links.request() as request:
            yield request
            yield self.env.timeout(self.halo_cycles[step])
            self.halo_end[step] = self.env.now
            yield self.env.timeout(self.reduction_cycles[step])
        self.drained_at[step] = self.env.now
        if self.observed[step]:  # an event nobody waits for or looks at changes nothing (antsim/sim/kernel.py)
            self.drained[step].succeed()
        if self.readback_bits[step] > 0:
            yield from self.dram.transfer(self.readback_bits[step])
        if self.output_bits[step] > 0:
            yield from self.dram.transfer(self.output_bits[step], write=True)
