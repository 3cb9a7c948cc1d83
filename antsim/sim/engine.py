"""Wire the blocks for one (layer, phase), run the simpy environment, collect timing and action counts."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import simpy

from antsim.dataflow.work import PhaseWork
from antsim.sim.blocks import AccumulatorDrain, ChunkBarrier, DramChannel, RcpAnticipator, StreamFetcher
from antsim.sim.counts import action_counts
from antsim.sim.params import SimParams
from antsim.sim.pe import PE, STALL_KEYS
from antsim.sim.schedule import Densities, Schedule, build_schedule
from antsim.spec.arch import ArchSpec


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


class _Array:
    """All blocks of one simulation, wired together (state for one run only)."""

    def __init__(self, arch: ArchSpec, schedule: Schedule, params: SimParams) -> None:
        self.env = simpy.Environment()
        env = self.env
        self.dram = DramChannel(env, dram_bits_per_cycle(arch))
        self.drain = AccumulatorDrain(env, self.dram, schedule)
        self.barrier = ChunkBarrier(env, schedule.n_pes, schedule.n_steps, self._release)
        self.fetcher = StreamFetcher(env, self.dram, schedule, params.staging_chunks, self.barrier.released)
        self.pes: list[PE] = []
        self.anticipators: list[RcpAnticipator] = []
        screening = arch.sparsity_support and arch.anticipation.policy != "none"
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
        for pe in self.pes:
            pe.account_tail(end)
        return end


def simulate_phase(arch: ArchSpec, work: PhaseWork, densities: Densities,
                   params: SimParams | None = None) -> PhaseTiming:
    """Time one (layer, phase) on ``arch`` from the dataflow's ``work``.

    Args:
        arch: The design.
        work: Per-chunk, per-PE work from ``antsim.dataflow.map_phase``.
        densities: Densities of the stationary, streamed and output streams (compressed sizes).
        params: Link widths, staging depth and anticipation lookahead (default ``SimParams()``).

    Returns:
        Cycles, per-category stall cycles averaged over PEs, action counts and details.
    """
    params = params or SimParams()
    schedule = build_schedule(arch, work, densities, params)
    array = _Array(arch, schedule, params)
    end = array.run()
    n = max(1, len(array.pes))
    stalls = {key: math.fsum(pe.stalls[key] for pe in array.pes) / n for key in STALL_KEYS}
    actions = action_counts(arch, work, array.dram.read_bits, array.dram.write_bits)
    busy = stalls["busy"]
    details = {
        "passes": schedule.passes,
        "accumulator_restreams": int(schedule.restream_factor.sum() - len(schedule.restream_factor)),
        "steps": schedule.n_steps,
        "dram_busy_cycles": float(array.dram.busy_cycles),
        "anticipation_busy_cycles": math.fsum(u.busy_cycles for u in array.anticipators) / n,
        "multiplier_utilization": busy / end if end > 0 else 0.0,
    }
    return PhaseTiming(cycles=math.ceil(end - 1e-9), end_cycle=end, stalls=stalls, actions=actions,
                       details=details)
