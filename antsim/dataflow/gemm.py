"""``map_gemm_phase``: lay one (GEMM layer, phase) onto the PE array as ``PhaseWork``.

Each phase of a ``Gemm`` is ``count`` products ``C (M×N) = L (M×K) · R (K×N)``
(``antsim.workloads.gemm.gemm_phase``). Neither mapping needs a second simulator: each is a
convolution whose fprop *is* that product, mapped by the conv dataflow (``map_phase``: planar
tiling, fibers, F×I vectors, fetch filter, ANT screen, exact enumeration, bank conflicts, batch
tiles), and the resulting ``PhaseWork`` is relabelled with the GEMM's name, phase and operands. So
the timing, action counts and energy are the conv ones, unchanged.

**Right operand R stationary, left operand L streamed, in every phase** — as the conv phases place
them: fprop X stationary / W streamed; dgrad dY stationary / Wᵀ streamed; wgrad the saved B
stationary / dY streamed. Outputs accumulate in the PEs' banked accumulators as conv outputs do.

``mapping.gemm``:

* ``scnn`` — SCNN's plain mapping of a fully-connected layer: a 1×1 convolution, K input channels, M
  output channels, on an ``N × 1`` plane (a ``1 × 1`` plane at one column): conv ``(C=K, K=M, H=N,
  W=1, R=S=1)``, the ``count`` products as images. R's columns are tiled over the PE *rows* only (the
  plane is one column wide, so the other PE columns hold nothing); an I-vector holds the non-zeros of
  one input channel k over the PE's columns, an F-vector the non-zeros of one column k of L over F
  output rows (channel-inner, SCNN's weight order). Every pair meets at real outputs: no RCPs, but
  with one column per PE row an I-vector holds a single value, so a 4×4 multiplier array does 4
  useful products per cycle — 25 % of peak, the figure SCNN reports for its FC layers.
* ``cartesian`` — the GEMM-aware mapping: vectors formed along the reduction dimension k. k is cut
  into blocks of ``kb`` (``k_block``: the largest divisor of K up to ``cols·F·I``, or all of K when
  that divisor is below the PE columns) walked one after the other like input channels; within a block
  R is laid out as an ``N × kb`` plane (row = column n of R, width = k) and L as a ``1 × kb`` kernel
  with M output channels: conv ``(C=K/kb, K=M, H=N, W=kb, R=1, S=kb)``, whose single output column is
  ``o = x − v`` (valid only at 0, i.e. ``k_R == k_L``). The plane is tiled over the whole PE grid
  (PE row i: a block of n, PE column j: a range of the block's k); an I-vector holds I consecutive
  non-zeros of one column of R along k, an F-vector F consecutive non-zeros of one row of L along k
  (``streamed_order: spatial_inner`` is forced for it). A pair's products with mismatched k are the
  RCPs; vectors of different blocks never pair (a PE column walks at most F·I consecutive k of a
  block). Partial sums of PEs in PE columns j > 0 land outside their own output tile (the outputs
  belong to PE column 0): they are the conv model's halo exchange, i.e. the reduction over k.
  ANT's coordinate-range test on the width dimension is exactly the k-range test: a pair is issued
  iff the k ranges of its two vectors overlap (``DimMap.reach`` with ``o ∈ [0, 0]``), which never
  skips a valid product. The fetch filter delivers to a PE column only the L non-zeros in its k block.
* ``auto`` (default) — ``scnn`` on a sparse design without anticipation (policy ``none``: SCNN itself),
  ``cartesian`` otherwise (ANT, oracle, dense engines).

``count`` products with a shared weight L are the conv's images (weights staged once per batch tile);
products with their own L (attention: both operands are activations) are mapped one by one and their
chunks concatenated in order (each its own batch tile).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from antsim.dataflow.mapper import map_phase
from antsim.dataflow.work import PhaseWork
from antsim.errors import MappingError
from antsim.results import ProductCounts
from antsim.sparsity.gemm import GemmTensors
from antsim.sparsity.tensors import Tensors
from antsim.spec.arch import ArchSpec
from antsim.vocabulary import Fidelity, Phase
from antsim.workloads.gemm import Gemm, GemmPhase, gemm_phase
from antsim.workloads.layers import Layer

GEMM_MAPPINGS = ("scnn", "cartesian")
# PhaseWork names the operands as the conv phases do; an attention matrix is an activation.
_OPERAND_NAMES = {"weights": "weights", "activations": "activations", "attention": "activations",
                  "grad_output": "grad_output"}


def resolve_mapping(arch: ArchSpec) -> str:
    """``mapping.gemm`` with ``auto`` resolved (see the module docstring)."""
    choice = arch.mapping.gemm
    if choice != "auto":
        return choice
    return "scnn" if arch.sparsity_support and arch.anticipation.policy == "none" else "cartesian"


def k_block(arch: ArchSpec, K: int) -> int:
    """Reduction indices per k block of the ``cartesian`` mapping: the largest divisor of ``K`` up to
    ``cols·F·I`` (each PE column then walks at most F·I consecutive k of a block); ``K`` itself (one block)
    when that divisor is smaller than the PE columns (no k would be left for some of them)."""
    pe = arch.pe_array
    cap = pe.cols * pe.F * pe.I
    best = max(d for d in range(1, min(K, cap) + 1) if K % d == 0)
    return best if best >= pe.cols else K


def conv_view(name: str, p: GemmPhase, items: int, mapping: str, block: int | None = None) -> Layer:
    """The convolution whose fprop computes ``items`` products of phase ``p`` under ``mapping``
    (``block``: k per block of ``cartesian``, a divisor of ``p.K``; default one block)."""
    if mapping == "scnn":
        return Layer(name=name, N=items, C=p.K, K=p.M, H=p.N, W=1, R=1, S=1)
    kb = p.K if block is None else block
    return Layer(name=name, N=items, C=p.K // kb, K=p.M, H=p.N, W=kb, R=1, S=kb)


def conv_tensors(layer: Layer, left: np.ndarray, right: np.ndarray, mapping: str) -> Tensors:
    """``Tensors`` of ``conv_view``: weights from ``left`` (M, K), activations from ``right`` (n, K, N).

    ``cartesian``: k = block·W + offset, the block a conv channel, the offset the plane's width. dY is a
    zero placeholder: only the conv's fprop is mapped.
    """
    if mapping == "scnn":
        weights, acts = left[:, :, None, None], right[:, :, :, None]
    else:
        blocks, kb = layer.C, layer.W
        weights = left.reshape(left.shape[0], blocks, kb)[:, :, None, :]
        acts = right.reshape(right.shape[0], blocks, kb, right.shape[2]).transpose(0, 1, 3, 2)
    placeholder = np.broadcast_to(np.zeros(1, np.float32), (layer.N, layer.K, layer.P, layer.Q))
    return Tensors(np.ascontiguousarray(weights), np.ascontiguousarray(acts), placeholder)


def _arch_for(arch: ArchSpec, mapping: str) -> ArchSpec:
    if mapping == "scnn" or arch.mapping.streamed_order == "spatial_inner":
        return arch
    return arch.model_copy(update={"mapping": arch.mapping.model_copy(update={"streamed_order": "spatial_inner"})})


def map_gemm_phase(arch: ArchSpec, gemm: Gemm, phase: Phase, tensors: GemmTensors, fidelity: Fidelity = "fast"
                   ) -> PhaseWork:
    """Map ``phase`` of ``gemm`` onto ``arch`` (mapping ``mapping.gemm``) and count its work per chunk and PE.

    ``output`` (``exact``) has shape ``(count, M', N')`` of the phase GEMM.

    Raises:
        MappingError: unknown fidelity or policy. WorkloadError: unknown phase or tensor shapes that do
            not match the layer.
    """
    tensors.check_shapes(gemm)
    p = gemm_phase(gemm, phase)
    mapping = resolve_mapping(arch)
    if mapping not in GEMM_MAPPINGS:  # pragma: no cover - the spec's Literal refuses it first
        raise MappingError(f"mapping.gemm must be one of auto, {', '.join(GEMM_MAPPINGS)}; got {mapping!r}")
    target = _arch_for(arch, mapping)
    left, right = p.left(tensors), p.right(tensors)
    groups = [(left[0], right)] if p.left_shared else [(left[c], right[c:c + 1]) for c in range(p.count)]
    works = []
    for group_left, group_right in groups:
        layer = conv_view(gemm.name, p, group_right.shape[0], mapping, k_block(arch, p.K))
        works.append(map_phase(target, layer, "fprop", conv_tensors(layer, group_left, group_right, mapping),
                               fidelity))
    work = works[0] if len(works) == 1 else concat_works(works)
    return _relabel(work, arch, gemm, p, mapping)


def _relabel(work: PhaseWork, arch: ArchSpec, gemm: Gemm, p: GemmPhase, mapping: str) -> PhaseWork:
    output = None if work.output is None else np.asarray(work.output).reshape(p.count, p.M, p.N)
    tiling = {**work.tiling, "gemm_mapping": mapping, "gemm": {"M": p.M, "N": p.N, "K": p.K, "count": p.count},
              **({"k_block": k_block(arch, p.K)} if mapping == "cartesian" else {})}
    note = (f"gemm mapping {mapping}: the phase GEMM ({p.count} x {p.M}x{p.K} . {p.K}x{p.N}) mapped as the fprop"
            " of an equivalent convolution (antsim.dataflow.gemm)")
    return replace(work, layer_name=gemm.name, phase=p.phase, stationary_operand=_OPERAND_NAMES[p.right_kind],
                   streamed_operand=_OPERAND_NAMES[p.left_kind], needs_reduction=False, output=output,
                   tiling=tiling, notes=(*work.notes, note))


def guard_layer(arch: ArchSpec, layer: Layer | Gemm) -> Layer:
    """The conv layer the resource guard (``antsim.guard``) sizes for ``layer``: a conv layer itself; a GEMM
    as the conv view of its fprop with the ``count`` products as images. Its three conv phases have the
    GEMM phases' operand sizes (exactly under ``scnn``; up to the reduction layout under ``cartesian``)."""
    if not isinstance(layer, Gemm):
        return layer
    p = gemm_phase(layer, "fprop")
    return conv_view(layer.name, p, layer.count, resolve_mapping(arch), k_block(arch, p.K))


def _density(array: np.ndarray) -> float:
    return float(np.count_nonzero(array)) / array.size if array.size else 1.0


def gemm_stream_densities(arch: ArchSpec, gemm: Gemm, phase: Phase, tensors: GemmTensors
                          ) -> tuple[float, float, float]:
    """(stationary, streamed, output) densities that size the compressed streams of ``phase``.

    Stationary: the right operand; streamed: the left one. [assumption] outputs leave as the conv phases'
    do (``antsim.simulate.output_density``): fprop at the density of B, dgrad at that of dY, wgrad dense. A
    dense design moves every value (all 1).
    """
    if not arch.sparsity_support:
        return 1.0, 1.0, 1.0
    p = gemm_phase(gemm, phase)
    output = {"fprop": _density(tensors.b), "dgrad": _density(tensors.grad_output), "wgrad": 1.0}[phase]
    return _density(p.right(tensors)), _density(p.left(tensors)), max(output, 1e-6)


def concat_works(works: list[PhaseWork]) -> PhaseWork:
    """The chunks of ``works`` (same PE grid) run one after the other: per-chunk arrays concatenated,
    batch tiles and images renumbered, buffer loads summed, residency the largest."""
    first = works[0]
    tile_base, image_base = np.cumsum([0] + [int(w.chunk_tile.max()) + 1 for w in works[:-1]]), \
        np.cumsum([0] + [int(w.chunk_image.max()) + 1 for w in works[:-1]])
    fields: dict = {}
    for name in ("candidate_pairs", "issued_pairs", "conflict_cycles", "issued_products", "valid_products",
                 "stationary_reads", "streamed_delivered", "halo_outputs", "partial_outputs",
                 "streamed_dram_values", "output_values", "stationary_dram_values", "output_readback_values",
                 "drains", "chunk_group", "lockstep_pairs"):
        fields[name] = np.concatenate([getattr(w, name) for w in works])
    fields["chunk_tile"] = np.concatenate([w.chunk_tile + b for w, b in zip(works, tile_base, strict=True)])
    fields["chunk_image"] = np.concatenate([w.chunk_image + b for w, b in zip(works, image_base, strict=True)])
    fields["stationary_values"] = np.sum([w.stationary_values for w in works], axis=0).astype(np.int64)
    fields["stationary_resident"] = np.max([w.stationary_resident for w in works], axis=0).astype(np.int64)
    products = ProductCounts(0, 0, 0)
    for w in works:
        products = products + w.products
    outputs = [w.output for w in works]
    output = None if any(o is None for o in outputs) else np.concatenate([np.asarray(o) for o in outputs])
    tiling = {**first.tiling, "images": int(sum(w.tiling.get("images", 0) for w in works)),
              "chunks": int(sum(w.n_chunks for w in works)), "batch_tiles": int(fields["chunk_tile"].max()) + 1}
    return replace(first, **fields, products=products, output=output, tiling=tiling)


__all__ = ["GEMM_MAPPINGS", "concat_works", "conv_tensors", "conv_view", "gemm_stream_densities", "guard_layer",
           "k_block", "map_gemm_phase", "resolve_mapping"]
