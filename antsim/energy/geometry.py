"""The sizes of an arch that energy and area scale with (per PE unless the name says otherwise)."""

from __future__ import annotations

import math

from antsim.spec.arch import ArchSpec

BITS_PER_KB = 8 * 1024


def has_index(arch: ArchSpec) -> bool:
    """Whether stored words carry an index (sparse designs with a compressed format)."""
    return arch.sparsity_support and arch.compression.format != "dense"


def word_bits(arch: ArchSpec) -> int:
    """Bits of one stored operand word: value plus index (value only in a dense design)."""
    return arch.compression.value_bits + (arch.compression.index_bits if has_index(arch) else 0)


def accumulator_bank_kb(arch: ArchSpec) -> float:
    """One accumulator bank (one buffer half): entries × partial-sum bits, in KB."""
    acc = arch.accumulators
    return acc.entries_per_bank * acc.value_bits / BITS_PER_KB


def accumulator_bits(arch: ArchSpec) -> int:
    """All accumulator storage of one PE in bits (both halves when double-buffered)."""
    acc = arch.accumulators
    return acc.banks * acc.entries_per_bank * acc.value_bits * (2 if acc.double_buffered else 1)


def bank_fifo_bits(arch: ArchSpec) -> int:
    """Bank-FIFO storage of one PE in bits (``accumulators.queue_depth``; 0 without FIFOs).

    Each queued product holds its value and the entry it adds into: ``queue_depth × banks × (value_bits +
    ⌈log2 entries_per_bank⌉)`` (docs/accumulator_banks.md §2).
    """
    acc = arch.accumulators
    return acc.queue_depth * acc.banks * (acc.value_bits + bank_fifo_entry_bits(arch))


def bank_fifo_entry_bits(arch: ArchSpec) -> int:
    """Bits that name one entry of a bank: ⌈log2 entries_per_bank⌉."""
    return max(1, (arch.accumulators.entries_per_bank - 1).bit_length())


def bank_fifo_kb(arch: ArchSpec) -> float:
    """One bank's FIFO in KB (the size its per-bit access energy scales with)."""
    acc = arch.accumulators
    return acc.queue_depth * (acc.value_bits + bank_fifo_entry_bits(arch)) / BITS_PER_KB


def weight_fifo_bits(arch: ArchSpec) -> int:
    """Weight-FIFO storage of one PE in bits.

    Each entry holds one F-vector of words: SCNN's 50-entry FIFO is 0.5 KB, which is
    50 × 4 × (16 + 4) b = 4000 b (docs/energy_area_reference.md §2c).
    """
    return arch.buffers.weight_fifo_entries * arch.pe_array.F * word_bits(arch)


def weight_fifo_kb(arch: ArchSpec) -> float:
    """Weight-FIFO size of one PE in KB."""
    return weight_fifo_bits(arch) / BITS_PER_KB


def crossbar_inputs(arch: ArchSpec) -> int:
    """Scatter-crossbar inputs per PE: one per multiplier (F·I)."""
    return arch.pe_array.F * arch.pe_array.I


def anticipation_lanes(arch: ArchSpec) -> int:
    """Parallel screening lanes of the anticipation unit (0 without one): ceil(pairs screened per cycle)."""
    if arch.anticipation.policy == "none":
        return 0
    return math.ceil(arch.anticipation.pairs_per_cycle)


def size_scale(size_kb: float, ref_kb: float, exponent: float) -> float:
    """Access energy per bit relative to the reference size: (size / ref)^exponent."""
    return (size_kb / ref_kb) ** exponent
