"""sim stage: discrete-event timing of the outer-product accelerator, PhaseWork → time + actions.

The events run on ``antsim.sim.flat`` (the PE array's processes on one specialised queue loop) or, for
the per-PE reference and other wirings, on ``antsim.sim.kernel`` (simpy's scheduling rules, fewer layers).
"""

from __future__ import annotations

from antsim.sim.engine import PhaseTiming, dram_bits_per_cycle, simulate_phase
from antsim.sim.params import SimParams
from antsim.sim.pe import STALL_KEYS
from antsim.sim.schedule import Densities, Schedule, build_schedule
from antsim.spec.encoding import encoded_bits, zero_run_placeholders

__all__ = [
    "STALL_KEYS", "Densities", "PhaseTiming", "Schedule", "SimParams", "build_schedule",
    "dram_bits_per_cycle", "encoded_bits", "simulate_phase", "zero_run_placeholders",
]
