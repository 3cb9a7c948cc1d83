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
from antsim.spec.arch import ArchSpec, Compression
from antsim.spec.encoding import bits_per_value, ceil_div, entries_per_value


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
    loaded before the step (first step of each batch tile and pass), ``streamed_bits`` prefetched for the
    step, ``fetches`` (the step needs a new staging slot: a new weight group, or per-image dY) and
    ``frees`` (its slot is released when the step ends), ``halo_cycles`` and ``reduction_cycles`` of the
    drain after the step, ``readback_bits`` read and ``output_bits`` written back by that drain,
    ``half_wait`` (the step whose drain frees the accumulator half this step uses; −1: none),
    ``lockstep`` (the fewest multiplier cycles the step takes on any PE: PEs drift at most one weight
    FIFO apart, so a PE with less work waits for the broadcast; 0: free-running).
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
    readback_bits: np.ndarray
    fetches: np.ndarray
    frees: np.ndarray
    half_wait: np.ndarray
    lockstep: np.ndarray

    @property
    def n_steps(self) -> int:
        return int(self.issued.shape[0])

    @property
    def n_pes(self) -> int:
        return int(self.issued.shape[1])


def stationary_passes(arch: ArchSpec, work: PhaseWork, density: float) -> int:
    """Passes needed so every PE's resident stationary values (its largest batch tile) fit
    ``arch.buffers.input_kb``."""
    capacity_bits = arch.buffers.input_kb * 8192.0
    need_bits = float(work.stationary_resident.max(initial=0)) * bits_per_value(arch.compression, density)
    return max(1, ceil_div(need_bits, capacity_bits))


def accumulator_restreams(arch: ArchSpec, work: PhaseWork) -> np.ndarray:
    """Per chunk: how many times its streamed operand is streamed (1, or more on accumulator overflow).

    Chunks that accumulate into the same half (the images of a wgrad batch tile) share the factor of the
    entries the half holds when it is drained."""
    capacity = arch.accumulators.banks * arch.accumulators.entries_per_bank
    worst = work.partial_outputs.max(axis=1, initial=0).astype(np.float64)
    factor = np.maximum(1, np.ceil(worst / capacity - 1e-9)).astype(np.int64)
    if work.drains.all():  # every chunk drains its own half (also: no chunks)
        return factor
    run = np.cumsum(work.drains) - work.drains  # non-decreasing: each run is one contiguous stretch
    starts = np.flatnonzero(_changes(run))
    return np.repeat(np.maximum.reduceat(factor, starts), np.diff(np.append(starts, len(run))))


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


def _steps(work: PhaseWork, passes: int) -> tuple[np.ndarray, np.ndarray]:
    """Chunk and pass of every step: batch tile by batch tile, each tile's passes, its chunks in order."""
    if passes == 1:
        return np.arange(work.n_chunks), np.zeros(work.n_chunks, np.int64)
    chunks, pass_of = [], []
    bounds = np.flatnonzero(_changes(work.chunk_tile))
    for tile_chunks in np.split(np.arange(work.n_chunks), bounds[1:]):
        for j in range(passes):
            chunks.append(tile_chunks)
            pass_of.append(np.full(len(tile_chunks), j))
    return np.concatenate(chunks), np.concatenate(pass_of)


def _changes(*labels: np.ndarray) -> np.ndarray:
    """True where any label differs from the previous step's (and at the first step)."""
    changed = np.ones(len(labels[0]), bool)
    if len(changed) > 1:
        differs = changed[1:]
        np.not_equal(labels[0][1:], labels[0][:-1], out=differs)
        for lab in labels[1:]:
            differs |= lab[1:] != lab[:-1]
    return changed


def _half_wait(drains: np.ndarray, halves: int) -> np.ndarray:
    """Per step, the drain step that frees its accumulator half (a run of steps ending in a drain shares
    one half; run r reuses the half of run r − halves), −1 when the half is fresh."""
    if drains.all():  # every step drains its own half: run r is step r (the general form gives the same)
        return np.maximum(np.arange(len(drains), dtype=np.int64) - halves, -1)
    run = np.cumsum(drains) - drains
    drain_steps = np.flatnonzero(drains)
    earlier = run - halves
    return np.where(earlier >= 0, drain_steps[np.maximum(earlier, 0)], -1)


def encoded_bits_each(values: np.ndarray, density: float, compression: Compression) -> np.ndarray:
    """``antsim.spec.encoding.encoded_bits`` of every element, as float64: the same operations in the same
    order, element by element, so each bit count is the one the scalar function gives
    (``tests/sim/test_schedule.py`` checks that bit for bit)."""
    values = np.asarray(values, dtype=np.float64)
    density = min(max(float(density), 1e-12), 1.0)
    vb, ib = compression.value_bits, compression.index_bits
    fmt = compression.format
    if fmt == "zero_run":
        bits = values * entries_per_value(compression, density) * (vb + ib)
    elif fmt == "bitmap":
        bits = values * vb + values / density
    elif fmt == "coordinate":
        bits = values * (vb + ib)
    else:  # dense
        bits = values / density * vb
    return np.where(values > 0, bits, 0.0)


def build_schedule(arch: ArchSpec, work: PhaseWork, densities: Densities,
                   params: SimParams | None = None) -> Schedule:
    """Lay ``work`` out as steps (batch tile, then pass, then chunk) with their bits and drain cycles.

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
    chunk, pass_of = _steps(work, passes)
    single = passes == 1  # steps are the chunks in order: no gathering, every step is its chunk's last pass
    streamed = encoded_bits_each(work.streamed_dram_values, densities.streamed, comp) * restream
    halo, reduction = _drain_cycles(work, params)
    outputs = encoded_bits_each(work.output_values * densities.output, densities.output, comp)
    readback = encoded_bits_each(work.output_readback_values * densities.output, densities.output, comp)
    tile_values = np.bincount(work.chunk_tile, weights=work.stationary_dram_values)
    tile_bits = encoded_bits_each(tile_values, densities.stationary, comp) / passes
    tile = work.chunk_tile if single else work.chunk_tile[chunk]
    # A batch tile's pass starts: load its stationary share.
    stationary = np.where(_changes(tile) if single else _changes(tile, pass_of), tile_bits[tile], 0.0)
    # Weights are staged once per (tile, group) and pass; wgrad's dY differs per image.
    if work.streamed_operand != "weights":
        fetches = np.ones(len(chunk), bool)
    else:
        fetches = _changes(tile, work.chunk_group) if single else _changes(tile, pass_of, work.chunk_group[chunk])
    last = pass_of == passes - 1

    def in_last_pass(values: np.ndarray) -> np.ndarray:
        """Per step: the chunk's value in its last pass, 0 in the others (drains happen once)."""
        return values if single else np.where(last, values[chunk], 0.0)

    def split(values: np.ndarray) -> np.ndarray:
        if single:  # the whole of each chunk in its one pass (the general form gives the same integers)
            return values
        v = values[chunk]
        return (v * (pass_of[:, None] + 1)) // passes - (v * pass_of[:, None]) // passes

    conflicts = split(work.conflict_cycles)
    if not arch.sparsity_support:  # a dense design has no scatter crossbar, hence no bank conflicts
        conflicts = np.zeros_like(conflicts)
    halves = 2 if arch.accumulators.double_buffered else 1
    return Schedule(
        issued=split(work.issued_pairs).astype(np.float64), conflicts=conflicts.astype(np.float64),
        screen=_screen_cycles(arch, split(work.candidate_pairs)), stationary_bits=stationary,
        streamed_bits=streamed if single else streamed[chunk],
        halo_cycles=in_last_pass(halo), reduction_cycles=in_last_pass(reduction),
        output_bits=in_last_pass(outputs), passes=passes, restream_factor=restream,
        readback_bits=in_last_pass(readback),
        fetches=fetches, frees=np.append(fetches[1:], True)[:len(fetches)],
        half_wait=_half_wait(work.drains if single else work.drains[chunk], halves),
        lockstep=split(work.lockstep_pairs[:, None])[:, 0].astype(np.float64),
    )
