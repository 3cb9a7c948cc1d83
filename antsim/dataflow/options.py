"""``MappingOptions``: how one (layer, phase) is mapped, read once from the arch and the caller.

Built by ``map_phase`` before any operand is read and passed unchanged to every stage, so a stage
never re-derives a flag from the arch (the fetch-filter rule, for one, lives only here).
"""

from __future__ import annotations

from dataclasses import dataclass

from antsim.spec.arch import ArchSpec
from antsim.vocabulary import Fidelity, Phase, Policy


@dataclass(frozen=True)
class MappingOptions:
    """The mapping's switches (defaults: a sparse ``fast`` SCNN mapping without the fetch filter).

    Attributes:
        fidelity: ``fast`` (mask correlation, sampled bank conflicts) or ``exact`` (every product enumerated).
        policy: ``anticipation.policy``: ``none`` | ``ant`` | ``oracle``.
        dense: the design has no sparsity support: every element counts as a non-zero.
        ideal_dense: a dense design that forms only the pairs meeting at an output
            (``mapping.dense_packing: ideal``); False for SCNN's DCNN (``cartesian``) and sparse designs.
        fetch_filter: streamed non-zeros that cannot reach a PE's tile are not delivered to it (the
            fetch filter of an anticipating design, an ideal dense engine, or wgrad's tiled dY).
        channel_inner: streamed fibers ordered ``(u, v, ko)`` (``mapping.streamed_order: channel_inner``)
            rather than ``(ko, u, v)``.
        tiled_dy: wgrad with ``mapping.wgrad_dy: tiled``: the reach-filtered dY is the mapping itself, so
            ``total`` counts the pairs of the delivered dY (the non-delivered ones are never candidates,
            not RCPs some unit skipped).
    """

    fidelity: Fidelity = "fast"
    policy: Policy = "none"
    dense: bool = False
    ideal_dense: bool = False
    fetch_filter: bool = False
    channel_inner: bool = True
    tiled_dy: bool = False

    @classmethod
    def from_arch(cls, arch: ArchSpec, fidelity: Fidelity, phase: Phase = "fprop") -> MappingOptions:
        policy = arch.anticipation.policy
        dense = not arch.sparsity_support
        # An ideal dense engine forms only the pairs that meet at an output; SCNN's DCNN ("cartesian")
        # pairs every element of its tile with every weight of the group, as SCNN does, zeros included.
        ideal_dense = dense and arch.mapping.dense_packing == "ideal"
        # An ideal dense engine addresses exactly the streamed values its tile needs, as the fetch filter
        # does; SCNN (policy none) broadcasts its weight blocks. wgrad's streamed operand is dY, a plane:
        # tiled like the activations (mapping.wgrad_dy, docs/model.md "wgrad's dY"), each PE gets the part
        # within the kernel's reach of its tile, which is what the reach filter delivers.
        tiled_dy = phase == "wgrad" and arch.mapping.wgrad_dy == "tiled"
        fetch_filter = ideal_dense or tiled_dy or (arch.anticipation.fetch_filter and policy != "none")
        return cls(fidelity, policy, dense, ideal_dense, fetch_filter, arch.mapping.streamed_order == "channel_inner",
                   tiled_dy)
