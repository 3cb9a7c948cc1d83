"""From ``PhaseWork`` to a step schedule: what each PE computes and what moves over DRAM, per step.

A *step* is one chunk of one pass. Usually there is one pass and steps are the PhaseWork chunks. When a
PE's stationary operand does not fit its input buffer, the layer is tiled in time: ``passes`` passes,
each holding ``1/passes`` of every PE's stationary values and re-streaming the whole streamed operand
(the extra DRAM reads show up in ``dram.read_bits``). Partial outputs between passes stay on chip
[assumption], so the halo exchange, the reduction and the write-back happen once, in the last pass.

When a chunk's partial outputs exceed one accumulator half (banks × entries_per_bank), the chunk is
split into sub-chunks that each re-stream its streamed operand (what a smaller output-channel group
would do); the compute is unchanged and the extra DRAM reads are counted.

A dense design (``sparsity_support: false``, SCNN's DCNN) accumulates each multiplier's products along a
fixed path (no scatter crossbar — ``antsim.energy`` gives it no crossbar area either), so it has no
bank conflicts: its ``conflict_cycles`` are dropped [assumption, SCNN §"DCNN"].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from antsim.dataflow.work import PhaseWork
from antsim.sim.params import SimParams
from antsim.sim.traffic import bits_per_value, ceil_div, encoded_bits
from antsim.spec.arch import ArchSpec


@dataclass(frozen=True)
class Densities:
    """Densities that set the compressed sizes (fraction of non-zeros, in (0, 1]).

    ``output`` is the density of the outputs *as written back*: the post-processing unit applies the
    non-linearity / sparsification and compresses them (SCNN's PPU does ReLU + compression), so only
    ``output_values × output`` non-zeros leave the chip.
    """

    stationary: float
    streamed: float
    output: float = 1.0


@dataclass(frozen=True)
class Schedule:
    """Per-step work and traffic of one (layer, phase).

    Per step and PE (shape ``(steps, n_pes)``): ``issued`` pairs, ``conflicts`` stall cycles, ``screen``
    cycles of the anticipation unit (0 without one). Per step (shape ``(steps,)``): ``stationary_bits``
    loaded before the step (first step of each pass), ``streamed_bits`` prefetched for the step,
    ``halo_cycles`` and ``reduction_cycles`` of the drain after the step, ``output_bits`` written back.
    """

    issued: np.ndarray
    conflicts: np.ndarray
    screen: np.ndarray
    stationary_bits: np.ndarray
    streamed_bits: np.ndarray
    halo_cycles: np.ndarray
    reduction_cycles: np.ndarray
    output_bits: np.ndarray
    passes: int
    restream_factor: np.ndarray

    @property
    def n_steps(self) -> int:
        return int(self.issued.shape[0])

    @property
    def n_pes(self) -> int:
        return int(self.issued.shape[1])


def stationary_passes(arch: ArchSpec, work: PhaseWork, density: float) -> int:
    """Passes needed so every PE's share of the stationary operand fits ``arch.buffers.input_kb``."""
    capacity_bits = arch.buffers.input_kb * 8192.0
    need_bits = float(work.stationary_values.max(initial=0)) * bits_per_value(arch.compression, density)
    return max(1, ceil_div(need_bits, capacity_bits))


def accumulator_restreams(arch: ArchSpec, work: PhaseWork) -> np.ndarray:
    """Per chunk: how many times its streamed operand is streamed (1, or more on accumulator overflow)."""
    capacity = arch.accumulators.banks * arch.accumulators.entries_per_bank
    worst = work.partial_outputs.max(axis=1, initial=0).astype(np.float64)
    return np.maximum(1, np.ceil(worst / capacity - 1e-9)).astype(np.int64)


def _split(values: np.ndarray, passes: int, index: int) -> np.ndarray:
    """The ``index``-th of ``passes`` near-equal integer parts of ``values`` (parts sum to ``values``)."""
    return (values * (index + 1)) // passes - (values * index) // passes


def _screen_cycles(arch: ArchSpec, candidates: np.ndarray) -> np.ndarray:
    if arch.anticipation.policy == "none" or not arch.sparsity_support:
        return np.zeros(candidates.shape, dtype=np.float64)
    return candidates.astype(np.float64) / arch.anticipation.pairs_per_cycle


def _drain_cycles(work: PhaseWork, params: SimParams) -> tuple[np.ndarray, np.ndarray]:
    halo = np.ceil(work.halo_outputs.max(axis=1, initial=0) / params.halo_values_per_cycle)
    reduction = np.zeros(work.n_chunks)
    if work.needs_reduction and work.n_pes > 1:
        worst = work.partial_outputs.max(axis=1, initial=0)
        depth = math.ceil(math.log2(work.n_pes))
        reduction = np.where(worst > 0, np.ceil(worst / params.reduction_values_per_cycle) + depth, 0.0)
    return halo.astype(np.float64), reduction.astype(np.float64)


def build_schedule(arch: ArchSpec, work: PhaseWork, densities: Densities,
                   params: SimParams | None = None) -> Schedule:
    """Lay ``work`` out as steps (pass-major, then chunk) with their bits and drain cycles.

    Args:
        arch: The design (buffers, accumulators, compression, anticipation).
        work: The dataflow's per-chunk, per-PE work.
        densities: Densities of the stationary, streamed and output streams (for compressed sizes).
        params: Link widths and staging (defaults: ``SimParams()``).

    Returns:
        The schedule; ``passes`` and ``restream_factor`` say how much re-streaming capacity forced.
    """
    params = params or SimParams()
    comp = arch.compression
    passes = stationary_passes(arch, work, densities.stationary)
    restream = accumulator_restreams(arch, work)
    streamed = np.array([encoded_bits(float(v), densities.streamed, comp) for v in work.streamed_dram_values])
    streamed = streamed * restream
    halo, reduction = _drain_cycles(work, params)
    outputs = np.array([encoded_bits(float(v) * densities.output, densities.output, comp)
                        for v in work.output_values])
    stationary_total = encoded_bits(float(work.stationary_values.sum()), densities.stationary, comp)
    issued = np.concatenate([_split(work.issued_pairs, passes, j) for j in range(passes)])
    conflicts = np.concatenate([_split(work.conflict_cycles, passes, j) for j in range(passes)])
    if not arch.sparsity_support:  # a dense design has no scatter crossbar, hence no bank conflicts
        conflicts = np.zeros_like(conflicts)
    candidates = np.concatenate([_split(work.candidate_pairs, passes, j) for j in range(passes)])
    n = work.n_chunks
    stationary = np.zeros(n * passes)
    if n:
        stationary[::n] = stationary_total / passes
    last = np.zeros(n * passes, dtype=bool)
    last[(passes - 1) * n:] = True
    return Schedule(
        issued=issued.astype(np.float64), conflicts=conflicts.astype(np.float64),
        screen=_screen_cycles(arch, candidates), stationary_bits=stationary,
        streamed_bits=np.tile(streamed, passes),
        halo_cycles=np.where(last, np.tile(halo, passes), 0.0),
        reduction_cycles=np.where(last, np.tile(reduction, passes), 0.0),
        output_bits=np.where(last, np.tile(outputs, passes), 0.0),
        passes=passes, restream_factor=restream,
    )
