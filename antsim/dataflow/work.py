"""The contract between the dataflow stage and the timing stage: ``PhaseWork``.

The dataflow (``antsim.dataflow.map_phase``) lays one (layer, phase) onto the PE array and says, per
work chunk and per PE, how much work there is; the discrete-event model (``antsim.sim``) turns that into
time and action counts. Nothing here knows about time or energy.

Chunk axis: the work is a sequence of ``n_chunks`` chunks executed in order with a barrier after each
(SCNN: one output-channel group — for one image — per chunk). Every per-PE array has shape
``(n_chunks, n_pes)``; PE index = row * cols + col of the PE grid.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from antsim.results import ProductCounts

PER_PE_FIELDS = (
    "candidate_pairs", "issued_pairs", "conflict_cycles", "issued_products", "valid_products",
    "stationary_reads", "streamed_delivered", "halo_outputs", "partial_outputs",
)
PER_CHUNK_FIELDS = ("streamed_dram_values", "output_values")


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
        streamed_dram_values: streamed-operand non-zeros read from DRAM for the chunk.
        output_values: outputs of the chunk after halo exchange / reduction (written back).
    Attributes (scalars and the rest):
        layer_name, phase, n_pes.
        stationary_values: non-zeros of the stationary operand held per PE (shape ``(n_pes,)``) —
            for buffer capacity and the one-time DRAM load.
        stationary_operand / streamed_operand: ``"weights"``, ``"activations"`` or ``"grad_output"``.
        needs_reduction: True when PEs hold partial sums of the same outputs (wgrad).
        products: exact product accounting for the whole (layer, phase).
        output: the functional result (numpy array) when computed (``exact``), else ``None``.
        tiling: plain-dict description of the mapping (tile sizes, groups, stride phases, …).
        notes: estimates used at this fidelity, in words.
    """

    layer_name: str
    phase: str
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
    stationary_values: np.ndarray
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

    @property
    def n_chunks(self) -> int:
        return int(self.issued_pairs.shape[0])
