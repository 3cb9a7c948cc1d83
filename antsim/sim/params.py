"""Timing parameters the arch spec does not (yet) carry, with the reason for each default.

These are micro-architectural widths SCNN and ANT do not publish. They are kept out of ``ArchSpec`` so the
arch schema stays the team contract; a sweep or a study can still vary them by passing ``SimParams``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SimParams:
    """Widths and depths of the blocks around the multiplier array.

    Attributes:
        halo_values_per_cycle: Output values one PE sends to its neighbours per cycle during the halo
            exchange. [assumption] 2: one 48-bit link per PE carries two 24-bit partial sums per cycle
            (SCNN does not state its halo link width; its halos are small, so this is rarely critical).
        reduction_values_per_cycle: Partial sums each PE feeds into the cross-PE reduction tree per cycle
            (wgrad). [assumption] 2, the same link as the halo exchange; the tree is pipelined, so a
            reduction of ``m`` partials per PE takes ``ceil(m / width) + ceil(log2(n_pes))`` cycles.
        staging_chunks: Chunks of the streamed operand staged on chip at once. 2 = double-buffered
            prefetch: chunk c+1 streams from DRAM while chunk c computes (docs/model.md §1).
        anticipation_lookahead: Chunks the RCP anticipation unit may screen ahead of the multipliers
            (its pair queue). 1: it screens chunk c+1 while the PE still multiplies chunk c, as a
            pipeline stage in front of the multipliers would; 0 makes screening start with the chunk.
    """

    halo_values_per_cycle: float = 2.0
    reduction_values_per_cycle: float = 2.0
    staging_chunks: int = 2
    anticipation_lookahead: int = 1

    def __post_init__(self) -> None:
        if self.halo_values_per_cycle <= 0 or self.reduction_values_per_cycle <= 0:
            raise ValueError("link widths must be positive")
        if self.staging_chunks < 1 or self.anticipation_lookahead < 0:
            raise ValueError("staging_chunks must be >= 1 and anticipation_lookahead >= 0")
