"""``MappingContext``: what the pair-level stages of one mapping read, built once per mapped image set.

Once the operands are vectorised and paired (``antsim.dataflow.mapper``), the pair counts, product
enumeration (``exact``), bank-conflict sampling and the assembly of ``PhaseWork`` all read the same
geometry, vectors, cells and banks; this frozen record carries them instead of six to nine arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from antsim.dataflow.banks import BankMap
from antsim.dataflow.fibers import StreamedOperand, Vectors
from antsim.dataflow.pairing import Cells
from antsim.dataflow.tiling import StrideClasses, Tiling
from antsim.phases import PhaseProblem


@dataclass(frozen=True)
class MappingContext:
    """One (layer, phase) laid onto the PE array, down to its pairing cells.

    Attributes:
        problem: the phase as a Cartesian-product problem. tiling: planar tiling on the PE grid.
        classes: stride classes. stationary: I-vectors of the stationary operand.
        streamed: F-vectors of the streamed operand (after the fetch filter) and its per-block counts.
        cells: the pairing cells. banks: the PE's accumulator banks and hash.
        F, I: streamed and stationary vector widths (the F×I multiplier array).
        derived: what a stage derived from this context's fields alone and leaves for a later stage (the ANT
            screen's joint table, ``anticipation.count_pairs`` → ``screen_pairs``); not an argument, so
            ``dataclasses.replace`` starts a new context with it empty and nothing derived from other fields
            is ever read back.
    """

    problem: PhaseProblem
    tiling: Tiling
    classes: StrideClasses
    stationary: Vectors
    streamed: StreamedOperand
    cells: Cells
    banks: BankMap
    F: int
    I: int
    derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def streamed_vectors(self) -> Vectors:
        return self.streamed.vectors

    @property
    def n_slots(self) -> int:
        """(chunk, PE) slots: ``chunk · n_pes + pe``."""
        return self.tiling.n_chunks * self.tiling.n_pes

    @property
    def group_size(self) -> int:
        """Products one multiplier cycle takes (F·I): the oracle packs valid products in groups of this."""
        return self.F * self.I
