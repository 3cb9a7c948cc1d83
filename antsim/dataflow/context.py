"""``MappingContext``: what the pair-level stages of one mapping read, built once per mapped image set.

Once the operands are vectorised and paired (``antsim.dataflow.mapper``), the pair counts, product
enumeration (``exact``), bank-conflict sampling and the assembly of ``PhaseWork`` all read the same
geometry, vectors, cells and banks; this frozen record carries them instead of six to nine arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

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
