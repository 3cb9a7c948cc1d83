"""Dataflow stage: the three training convolutions laid onto an SCNN-like PE array.

``map_phase(arch, layer, phase, tensors, fidelity)`` returns a ``PhaseWork`` (see ``work.py``):
planar tiling (``tiling``), compressed fibers and F/I vectors (``fibers``), pairing cells
(``pairing``), anticipation policies none/ant/oracle (``anticipation``), valid products and output
footprints by mask correlation (``footprint``, the ``fast`` path), the accumulator bank hash
(``banks``), product enumeration with exact bank conflicts and the sampled fast estimate (``exact``).
``map_phase`` reads the arch's switches once into ``MappingOptions`` (``options``) and hands the
pair-level stages one ``MappingContext`` (``context``: geometry, vectors, cells, banks).
"""

from __future__ import annotations

from antsim.dataflow.mapper import FIDELITIES, map_phase
from antsim.dataflow.work import PhaseWork

__all__ = ["FIDELITIES", "PhaseWork", "map_phase"]
