"""Wire the blocks for one (layer, phase), run the event kernel, collect timing and action counts."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from antsim.dataflow.work import PhaseWork
from antsim.errors import AntsimError
from antsim.sim.array import PEArray
from antsim.sim.blocks import AccumulatorDrain, ChunkBarrier, DramChannel, RcpAnticipator, StreamFetcher
from antsim.sim.closed_form import ClosedFormRun
from antsim.sim.counts import action_counts
from antsim.sim.flat import FlatRun
from antsim.sim.kernel import Environment, Event
from antsim.sim.params import SimParams
from antsim.sim.pe import PE, STALL_KEYS
from antsim.sim.schedule import Densities, Schedule, build_schedule
from antsim.spec.arch import ArchSpec
from antsim.vocabulary import TimingModel, parse_timing


@dataclass(frozen=True)
class PhaseTiming:
    """What the discrete-event model says about one (layer, phase).

    Attributes:
        cycles: Whole cycles until the last write-back (simulated time rounded up).
        end_cycle: Simulated time in (fractional) cycles.
        stalls: Category → cycles averaged over PEs; the categories of one PE sum to ``end_cycle``, so
            the averages do too (``STALL_KEYS``).
        actions: Component → action → count (``antsim/energy/actions.py`` names).
        details: Passes, re-streams, DRAM bits and busy cycles, utilisation, events processed.
    """

    cycles: int
    end_cycle: float
    stalls: Mapping[str, float]
    actions: Mapping[str, Mapping[str, float]]
    details: Mapping[str, Any] = field(default_factory=dict)


def dram_bits_per_cycle(arch: ArchSpec) -> float:
    """DRAM bandwidth in bits per core cycle (GB/s × 8 bits / (GHz))."""
    return arch.dram.bandwidth_gbps * 8.0 / arch.technology.clock_ghz


class _Blocks:
    """All blocks of one simulation, wired together (state for one run only).

    The PE array is one vectorised process (``PEArray``); ``per_pe=True`` wires one ``PE`` process (and
    one ``RcpAnticipator``) per PE instead — the reference the array is tested against. ``environment``
    makes the event environment (default ``antsim.sim.kernel.Environment``; ``SimpyEnvironment`` runs them on simpy).
    """

    def __init__(self, arch: ArchSpec, schedule: Schedule, params: SimParams, per_pe: bool = False,
                 environment: Callable[[], Environment] = Environment) -> None:
        self.env = environment()
        env = self.env
        self.n_pes = schedule.n_pes
        self.dram = DramChannel(env, dram_bits_per_cycle(arch))
        self.drain = AccumulatorDrain(env, self.dram, schedule)
        screening = arch.screens_pairs
        self.pes: list[PE] = []
        self.anticipators: list[RcpAnticipator] = []
        if not per_pe:
            released: list[Event] = []
            self.fetcher = StreamFetcher(env, self.dram, schedule, params.staging_chunks, released)
            self.array: PEArray | None = PEArray(env, schedule, self.fetcher, self.drain, self._release,
                                                 screening, params.anticipation_lookahead)
            released.extend(self.array.released)
            return
        self.array = None
        self.barrier = ChunkBarrier(env, schedule.n_pes, schedule.n_steps, self._release)
        self.fetcher = StreamFetcher(env, self.dram, schedule, params.staging_chunks, self.barrier.released)
        for index in range(schedule.n_pes):
            pe = PE(env, index, schedule, self.fetcher, self.drain, self.barrier)
            if screening:
                pe.started = [env.event() for _ in range(schedule.n_steps)]
                unit = RcpAnticipator(env, schedule.screen[:, index].tolist(), self.fetcher.ready,
                                      pe.started, params.anticipation_lookahead)
                pe.attach_anticipator(unit)
                self.anticipators.append(unit)
            self.pes.append(pe)

    def _release(self, step: int) -> None:
        self.fetcher.free_slot(step)
        self.drain.start(step)

    def run(self) -> float:
        self.env.run()
        end = float(self.env.now)
        if self.array is not None:
            self.array.account_tail(end)
        for pe in self.pes:
            pe.account_tail(end)
        return end

    def mean_stalls(self) -> dict[str, float]:
        """Stall category → cycles averaged over PEs."""
        if self.array is not None:
            return self.array.mean_stalls()
        n = max(1, len(self.pes))
        return {key: math.fsum(pe.stalls[key] for pe in self.pes) / n for key in STALL_KEYS}

    def anticipation_busy_cycles(self) -> float:
        """Cycles an anticipation unit screens, averaged over PEs."""
        n = max(1, self.n_pes)
        if self.array is not None:
            return self.array.screen_busy_cycles / n
        return math.fsum(u.busy_cycles for u in self.anticipators) / n


def simulate_phase(arch: ArchSpec, work: PhaseWork, densities: Densities,
                   params: SimParams | None = None, per_pe: bool = False,
                   timing: TimingModel = "events", *,
                   environment: Callable[[], Environment] | None = None) -> PhaseTiming:
    """Time one (layer, phase) on ``arch`` from the dataflow's ``work``.

    Args:
        arch: The design.
        work: Per-chunk, per-PE work from ``antsim.dataflow.map_phase``.
        densities: Densities of the stationary, streamed and output streams (compressed sizes).
        params: Link widths, staging depth and anticipation lookahead (default ``SimParams()``).
        per_pe: Run one event process per PE (the reference model; slower, same timing).
        timing: ``events`` (discrete events) or ``closed_form`` (the same timing as a recurrence,
            ``antsim.sim.closed_form``; ``per_pe`` does not apply).
        environment: The event environment's constructor (``events`` only). ``None`` (default): the PE
            array's processes on the specialised loop ``antsim.sim.flat`` (``per_pe``: the blocks on
            ``antsim.sim.kernel``); ``antsim.sim.kernel.Environment`` or ``SimpyEnvironment`` run the blocks
            on that environment — all three with the same results bit for bit (``tests/sim/test_kernel.py``).

    Returns:
        Cycles, per-category stall cycles averaged over PEs, action counts and details.

    Raises:
        AntsimError: an unknown ``timing``, or ``per_pe`` with ``closed_form``.
    """
    model = parse_timing(timing)
    if per_pe and model == "closed_form":
        raise AntsimError("simulate_phase: per_pe=True is the event model's per-PE reference; it has no"
                          " closed form (timing='events')")
    params = params or SimParams()
    schedule = build_schedule(arch, work, densities, params)
    blocks: _Blocks | ClosedFormRun | FlatRun
    if model == "closed_form":
        blocks = ClosedFormRun(arch, schedule, params)
    elif environment is None and not per_pe:
        blocks = FlatRun(schedule, dram_bits_per_cycle(arch), params.staging_chunks, arch.screens_pairs,
                         params.anticipation_lookahead)
    else:
        blocks = _Blocks(arch, schedule, params, per_pe, environment or Environment)
    end = blocks.run()
    stalls = blocks.mean_stalls()
    actions = action_counts(arch, work, blocks.dram.read_bits, blocks.dram.write_bits)
    busy = stalls["busy"]
    details = {
        "passes": schedule.passes,
        "accumulator_restreams": int(schedule.restream_factor.sum() - len(schedule.restream_factor)),
        "steps": schedule.n_steps,
        "dram_busy_cycles": float(blocks.dram.busy_cycles),
        "anticipation_busy_cycles": blocks.anticipation_busy_cycles(),
        "multiplier_utilization": busy / end if end > 0 else 0.0,
    }
    return PhaseTiming(cycles=math.ceil(end - 1e-9), end_cycle=end, stalls=stalls, actions=actions,
                       details=details)
