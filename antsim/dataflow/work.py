"""The contract between the dataflow stage and the timing stage: ``PhaseWork``.

The dataflow (``antsim.dataflow.map_phase``) lays one (layer, phase) onto the PE array and says, per
work chunk and per PE, how much work there is; the discrete-event model (``antsim.sim``) turns that into
time and action counts. Nothing here knows about time or energy.

Chunk axis: the work is a sequence of ``n_chunks`` chunks executed in order with a barrier after each
(SCNN: one output-channel group of one image per chunk). The order is the mapping's loop nest over the
batch: batch tile > output-channel group > image (``chunk_tile``, ``chunk_group``, ``chunk_image`` label
each chunk), so the images of a tile share a staged weight group and, in wgrad, one accumulator half.
Every per-PE array has shape ``(n_chunks, n_pes)``; PE index = row * cols + col of the PE grid.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from antsim.results import ProductCounts
from antsim.vocabulary import Phase

PER_PE_FIELDS = (
    "candidate_pairs", "issued_pairs", "conflict_cycles", "issued_products", "valid_products",
    "stationary_reads", "streamed_delivered", "halo_outputs", "partial_outputs",
)
PER_CHUNK_FIELDS = ("streamed_dram_values", "output_values", "stationary_dram_values", "output_readback_values",
                    "drains", "chunk_tile", "chunk_group", "chunk_image", "lockstep_pairs")


@dataclass(frozen=True)
class PhaseWork:
    """Per-chunk, per-PE work of one (layer, phase) on one architecture.

    Attributes (per PE, shape ``(n_chunks, n_pes)``, int64):
        candidate_pairs: operand-vector pairs formed for the PE (after fetch filtering) — what the
            anticipation unit screens (equals ``issued_pairs`` with policy ``none``).
        issued_pairs: vector pairs issued to the F×I multipliers (one per cycle when nothing stalls).
        conflict_cycles: extra cycles the issued pairs stall on accumulator bank conflicts (exact when
            ``fidelity == "exact"``, an estimate stated in ``notes`` at ``fast``).
        issued_products: non-zero × non-zero products computed (in issued pairs).
        valid_products: products that land on an output (accumulator updates), halo included.
        stationary_reads: stationary-operand values read from the PE's input buffer.
        streamed_delivered: streamed-operand values delivered to the PE (broadcast / FIFO writes).
        halo_outputs: distinct output entries the PE produced outside its own tile (exchanged with
            neighbours after the chunk).
        partial_outputs: distinct output entries the PE holds at the end of the chunk (drained from the
            accumulators; for wgrad these are partial sums that need the cross-PE reduction).
    Attributes (per chunk, shape ``(n_chunks,)``, int64):
        streamed_dram_values: streamed-operand non-zeros read from DRAM for the chunk (0 when the chunk
            reuses the weight group its batch tile already staged).
        output_values: outputs written back after the chunk (after halo exchange / reduction; 0 for a
            chunk whose partial sums stay in the accumulators for the next image of its tile).
        stationary_dram_values: stationary non-zeros loaded from DRAM before the chunk (every image of
            the batch tile, at the tile's first chunk; 0 elsewhere).
        output_readback_values: partial sums read back from DRAM to accumulate into before the
            write-back (wgrad: dW of the earlier batch tiles).
        drains: True when the accumulator half is drained after the chunk (halo, reduction,
            write-back); False while wgrad partial sums accumulate over the images of a tile.
        chunk_tile, chunk_group, chunk_image: the chunk's batch tile, output-channel group and image.
        lockstep_pairs: the fewest multiplier cycles the chunk takes when its PEs may drift apart by at
            most one weight FIFO (``antsim.dataflow.drift``; 0 when they run free or work is packed).
    Attributes (scalars and the rest):
        layer_name, phase, n_pes.
        stationary_values: non-zeros of the stationary operand loaded into each PE over the whole
            batch (shape ``(n_pes,)``; input-buffer writes).
        stationary_resident: the most stationary non-zeros a PE holds at once — its largest batch tile
            (shape ``(n_pes,)``; the input-buffer capacity check).
        stationary_operand / streamed_operand: ``"weights"``, ``"activations"`` or ``"grad_output"``.
        needs_reduction: True when PEs hold partial sums of the same outputs (wgrad).
        products: exact product accounting for the whole (layer, phase).
        output: the functional result (numpy array) when computed (``exact``), else ``None``.
        tiling: plain-dict description of the mapping (tile sizes, groups, stride phases, …).
        notes: estimates used at this fidelity, in words.
    """

    layer_name: str
    phase: Phase
    n_pes: int
    candidate_pairs: np.ndarray
    issued_pairs: np.ndarray
    conflict_cycles: np.ndarray
    issued_products: np.ndarray
    valid_products: np.ndarray
    stationary_reads: np.ndarray
    streamed_delivered: np.ndarray
    halo_outputs: np.ndarray
    partial_outputs: np.ndarray
    streamed_dram_values: np.ndarray
    output_values: np.ndarray
    stationary_dram_values: np.ndarray
    output_readback_values: np.ndarray
    drains: np.ndarray
    chunk_tile: np.ndarray
    chunk_group: np.ndarray
    chunk_image: np.ndarray
    lockstep_pairs: np.ndarray
    stationary_values: np.ndarray
    stationary_resident: np.ndarray
    stationary_operand: str
    streamed_operand: str
    needs_reduction: bool
    products: ProductCounts
    output: Any = field(default=None, compare=False, repr=False)
    tiling: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        n_chunks = self.issued_pairs.shape[0]
        for name in PER_PE_FIELDS:
            if getattr(self, name).shape != (n_chunks, self.n_pes):
                raise ValueError(f"PhaseWork.{name} must have shape {(n_chunks, self.n_pes)}")
        for name in PER_CHUNK_FIELDS:
            if getattr(self, name).shape != (n_chunks,):
                raise ValueError(f"PhaseWork.{name} must have shape {(n_chunks,)}")
        for name in ("stationary_values", "stationary_resident"):
            if getattr(self, name).shape != (self.n_pes,):
                raise ValueError(f"PhaseWork.{name} must have shape {(self.n_pes,)}")
        if n_chunks and not self.drains[-1]:
            raise ValueError("PhaseWork.drains: the last chunk must drain the accumulators")

    @property
    def n_chunks(self) -> int:
        return int(self.issued_pairs.shape[0])
