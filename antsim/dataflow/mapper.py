"""``map_phase``: lay one (layer, phase) onto the PE array and account for its work (``PhaseWork``).

Definitions (docs/api.md, ``ProductCounts``):

* ``total`` — non-zero × non-zero products the mapping forms *without* the fetch filter: per cell,
  stationary fiber non-zeros × unfiltered streamed fiber non-zeros. The same for ``none``, ``ant``
  and ``oracle``; stride phases (``mapping.stride_phases``) lower it by never pairing classes that
  can only give non-integer / out-of-window coordinates.
* ``valid`` — products that land on an output: exactly the contributing non-zero pairs.
* ``skipped = total − issued products``: products of pairs the anticipation unit did not issue,
  including pairs never formed because the fetch filter dropped their streamed rows. Skipping is
  conservative, so ``skipped ≤ rcp``.
* Dense design (``sparsity_support: false``): a dense engine with the same multipliers. Every element
  is treated as a non-zero (zeros are multiplied) and, like any dense convolution engine (sliding
  window / im2col), it only forms the pairs that meet at an output: no Cartesian mapping, so no RCPs.
  ``total = valid`` = element pairs that contribute (the dense MACs minus padding taps), packed into
  ``ceil(valid/(F·I))`` full multiplier cycles per (chunk, PE), with no bank conflicts (a dense array
  accumulates in place, without SCNN's scatter crossbar); the output is still exact.

Fidelities: ``fast`` and ``exact`` share the vector-level accounting (tiling, vectors, cells, ANT
screen), so every field except ``conflict_cycles`` is identical between them; valid products and
output footprints come from mask correlation (``fast``) or product enumeration (``exact``) and are
tested equal. ``conflict_cycles``: ``exact`` hashes every issued product; ``fast`` does the same on
a systematic sample of at most 32,768 candidate pairs (exact when they all fit); for ``oracle`` the
sample is whole slots, enumerated from their first pair so that their valid products pack into F·I
groups exactly as ``exact`` packs them, one or more per PE geometry class (again exact when every pair
fits; ``exact.sampled_oracle_conflicts``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from antsim.dataflow.anticipation import PairCounts, count_pairs, oracle_counts
from antsim.dataflow.banks import BankMap
from antsim.dataflow.batching import BatchTiles, batch_tiled, choose_tile_size
from antsim.dataflow.context import MappingContext
from antsim.dataflow.drift import lockstep_pairs
from antsim.dataflow.exact import ConflictEstimate, run_exact, sampled_conflicts, sampled_oracle_conflicts
from antsim.dataflow.fibers import (
    StreamedInput,
    StreamedOperand,
    Vectors,
    dense_streamed_fibers,
    nonzero_mask,
    stationary_counts,
    stationary_vectors,
    streamed_vectors,
)
from antsim.dataflow.footprint import Footprint, dense_footprint, fast_footprint, tap_footprint
from antsim.dataflow.options import MappingOptions
from antsim.dataflow.output_partition import OutputPartition, partition_wgrad
from antsim.dataflow.pairing import make_cells
from antsim.dataflow.reuse import FOOTPRINTS, array_digest
from antsim.dataflow.sampling import ImageSample, check_batch_sample, expand_images, plan_sample, select_images
from antsim.dataflow.tiling import StrideClasses, Tiling, make_tiling, stride_classes
from antsim.dataflow.work import PhaseWork
from antsim.errors import MappingError
from antsim.phases import PhaseProblem, phase_problem
from antsim.results import ProductCounts
from antsim.sparsity.tensors import Tensors
from antsim.spec.arch import ArchSpec
from antsim.spec.encoding import bits_per_value
from antsim.vocabulary import FIDELITIES, POLICIES, Fidelity, Phase
from antsim.workloads.layers import Layer


def map_phase(arch: ArchSpec, layer: Layer, phase: Phase, tensors: Tensors, fidelity: Fidelity = "fast",
              batch_sample: int = 0) -> PhaseWork:
    """Map ``phase`` of ``layer`` onto ``arch`` and count its work per chunk and PE.

    Args:
        arch: the accelerator (PE grid, F, I, banks, Kc, stride phases, anticipation policy).
        layer: the convolution. phase: ``fprop`` | ``dgrad`` | ``wgrad``.
        tensors: the operands (zeros are sparsity); wgrad uses ``tensors.wgrad_activations``.
        fidelity: ``fast`` (vector-level counts, mask-correlation valid counts, estimated bank
            conflicts) or ``exact`` (every product enumerated; functional output; exact conflicts).
        batch_sample: ``fast`` only: map this many of the batch's images (evenly spaced) and estimate
            the others from them (``antsim.dataflow.sampling``); 0 or ≥ the batch maps every image.

    Raises:
        MappingError: unknown fidelity or policy, or a batch sample at ``exact`` fidelity.
        WorkloadError: unknown phase or tensor shapes that do not match the layer.
    """
    if fidelity not in FIDELITIES:
        raise MappingError(f"fidelity must be one of {', '.join(FIDELITIES)}; got {fidelity!r}")
    policy = arch.anticipation.policy
    if policy not in POLICIES:
        raise MappingError(f"anticipation.policy must be one of {', '.join(POLICIES)}; got {policy!r}")
    check_batch_sample(batch_sample, fidelity)
    tensors.check_shapes(layer)
    options = MappingOptions.from_arch(arch, fidelity, phase)
    if 0 < batch_sample < layer.N and not options.dense:
        work, tiles, per_image = _map_sampled(arch, options, layer, phase, tensors, batch_sample)
    elif options.dense and layer.N > 1 and fidelity == "fast":
        work, tiles, per_image = _map_dense_batch(arch, options, layer, phase, tensors)
    else:
        inputs = _MappingInputs.build(arch, layer, phase, tensors)
        per_image = inputs.per_image
        tiles = BatchTiles(inputs.tile_size(arch, per_image), layer.N)
        work = _map_images(arch, options, inputs, tiles)
    streamed_per_image = phase_problem(layer, phase).streamed_shape[0] > 1
    return batch_tiled(work, tiles, work.tiling["groups"], per_image, streamed_per_image=streamed_per_image)


def _map_dense_batch(arch: ArchSpec, options: MappingOptions, layer: Layer, phase: Phase, tensors: Tensors
                     ) -> tuple[PhaseWork, BatchTiles, np.ndarray]:
    """A dense design's image-major work for the batch: it counts every element as a non-zero, so every
    image's work is the same — mapped on one image and repeated (exact; tested against the full batch)."""
    inputs = _MappingInputs.build(arch, layer.with_batch(1), phase, select_images(tensors, np.arange(1)))
    per_image = np.repeat(inputs.per_image, layer.N, axis=0)
    tiles = BatchTiles(inputs.tile_size(arch, per_image), layer.N)
    same = ImageSample(np.arange(1), np.zeros(layer.N, np.int64), np.ones(layer.N), np.ones(layer.N),
                       float(layer.N))
    note = "dense design: every image's work is the same (every element counts), mapped on one image and repeated"
    work = expand_images(_map_images(arch, options, inputs, BatchTiles(1, 1)), tiles, same, per_image, None, note)
    return replace(work, layer_name=layer.name), tiles, per_image


def _tiling(arch: ArchSpec, problem: PhaseProblem) -> Tiling:
    """The planar tiling with the arch's Kc (``mapping.output_channel_group``; 0 = what one accumulator half holds)."""
    acc = arch.accumulators
    return make_tiling(problem, arch.pe_array.rows, arch.pe_array.cols, arch.mapping.output_channel_group,
                       acc.banks * acc.entries_per_bank)


def _map_sampled(arch: ArchSpec, options: MappingOptions, layer: Layer, phase: Phase, tensors: Tensors,
                 batch_sample: int) -> tuple[PhaseWork, BatchTiles, np.ndarray]:
    """Image-major work of the batch estimated from ``batch_sample`` images (``antsim.dataflow.sampling``),
    its batch tiles and the exact (N, n_pes) stationary values per image."""
    problem = phase_problem(layer, phase)
    pe = arch.pe_array
    tiling = _tiling(arch, problem)
    classes = stride_classes(problem, arch.mapping.stride_phases)
    stationary_tensor = problem.stationary(tensors)
    per_image = stationary_counts(tiling, classes, stationary_tensor)
    streamed_nnz = None
    if problem.streamed_shape[0] > 1:
        streamed_nnz = np.count_nonzero(problem.streamed(tensors).reshape(layer.N, -1), axis=1)
    sample = plan_sample(per_image.sum(axis=1), streamed_nnz, batch_sample)
    inputs = _MappingInputs.build(arch, layer.with_batch(len(sample.images)), phase,
                                  select_images(tensors, sample.images))
    tiles = BatchTiles(inputs.tile_size(arch, per_image), layer.N)
    sample_tiles = BatchTiles(min(tiles.size, len(sample.images)), len(sample.images))
    held = sampled = None
    if problem.needs_reduction:  # a tile's held dW entries are the union over all its images: count them
        held = _footprint(problem, tiling, *_nonzero_masks(problem, tensors, False), tiles)
        sampled = _sample_footprint(held, sample.images, tiling)
    work = _map_images(arch, options, inputs, sample_tiles, sampled)
    work = expand_images(work, tiles, sample, per_image, held)
    if options.policy == "oracle" and held is not None:  # the oracle issues exactly the valid products
        counts = oracle_counts(work.candidate_pairs.ravel(), work.valid_products.ravel(), pe.F, pe.I)
        work = replace(work, issued_pairs=_per_slot(tiling, counts.issued_pairs),
                       issued_products=_per_slot(tiling, counts.issued_products),
                       stationary_reads=_per_slot(tiling, counts.stationary_reads))
    return replace(work, layer_name=layer.name), tiles, per_image


def _sample_footprint(held: Footprint, images: np.ndarray, tiling: Tiling) -> Footprint:
    """The sample's wgrad footprint read off the batch's: valid products are per image (the same integers its
    own footprint counts), and its held outputs are left 0 — ``expand_images`` replaces them by ``held``'s."""
    valid = held.valid_products.reshape(tiling.n_images, -1)[images].ravel()
    zeros = np.zeros(len(valid), np.int64)
    return Footprint(valid, zeros, zeros, np.zeros(len(images) * tiling.n_groups, np.int64))


def _footprint(problem: PhaseProblem, tiling: Tiling, stationary_mask: np.ndarray, streamed_mask: np.ndarray,
               tiles: BatchTiles, dense: bool = False) -> Footprint:
    """``fast_footprint`` through the stage cache (it reads only what its key holds); a dense design's
    (all-ones masks) from the one-channel closed form."""
    if dense:
        return FOOTPRINTS.get_keyed(lambda: ("dense", problem, tiling, array_digest(tiles.tile_of_image)),
                                    lambda: dense_footprint(problem, tiling, tiles.tile_of_image))
    return FOOTPRINTS.get_keyed(lambda: (problem, tiling, array_digest(stationary_mask),
                                         array_digest(streamed_mask), array_digest(tiles.tile_of_image)),
                                lambda: fast_footprint(problem, tiling, stationary_mask, streamed_mask,
                                                       tiles.tile_of_image))


@dataclass(frozen=True)
class _MappingInputs:
    """What every part of the mapping of one (layer, phase) reads: problem, tiling, stride classes,
    operand tensors and stationary vectors, the dense-wgrad output partition, and per-image stationary
    counts."""

    layer: Layer
    problem: PhaseProblem
    tiling: Tiling
    classes: StrideClasses
    stationary_tensor: np.ndarray
    streamed_tensor: np.ndarray
    stationary_vectors: Vectors
    partition: OutputPartition | None
    per_image: np.ndarray
    tensors: Tensors

    @classmethod
    def build(cls, arch: ArchSpec, layer: Layer, phase: Phase, tensors: Tensors) -> _MappingInputs:
        problem = phase_problem(layer, phase)
        pe = arch.pe_array
        tiling = _tiling(arch, problem)
        classes = stride_classes(problem, arch.mapping.stride_phases)
        dense = not arch.sparsity_support
        stationary_tensor, streamed_tensor = problem.stationary(tensors), problem.streamed(tensors)
        vectors = stationary_vectors(problem, tiling, classes, stationary_tensor, dense, pe.I)
        partition = partition_wgrad(layer, tiling, pe.F, pe.I) if _output_partition(arch, phase) else None
        per_image = _stationary_per_image(tiling, vectors) if partition is None else partition.stationary_per_image
        return cls(layer, problem, tiling, classes, stationary_tensor, streamed_tensor, vectors, partition, per_image,
                   tensors)

    def tile_size(self, arch: ArchSpec, per_image: np.ndarray) -> int:
        """Images per batch tile for ``per_image`` (N, n_pes) stationary values (``choose_tile_size``)."""
        capacity = _input_capacity(arch, self.stationary_tensor, not arch.sparsity_support)
        return choose_tile_size(arch.mapping.batch_tile, per_image, capacity)


@dataclass(frozen=True)
class _Measured:
    """The counts a mapping measured: pairs (``count_pairs`` / ``oracle_counts``), the output footprint,
    the bank-conflict estimate and the functional output (``exact`` only)."""

    counts: PairCounts
    footprint: Footprint
    conflicts: ConflictEstimate
    output: np.ndarray | None


def _map_images(arch: ArchSpec, options: MappingOptions, inputs: _MappingInputs, tiles: BatchTiles,
                footprint: Footprint | None = None) -> PhaseWork:
    """The image-major work (chunk ``n · groups + g``) of ``inputs``; wgrad's partial sums accumulate
    over ``tiles`` (reported on each tile's last image). ``footprint``: ``fast`` only, the output footprint
    when the caller already holds it (a batch sample's, ``_sample_footprint``)."""
    context = _context(arch, options, inputs)
    if footprint is None:
        footprint, output, exact_conflicts = _footprint_and_output(context, options, inputs, tiles)
    else:
        output = exact_conflicts = None
    counts = count_pairs(context, options.policy)
    if options.policy == "oracle" or options.ideal_dense:
        counts = oracle_counts(counts.candidate_pairs, footprint.valid_products, context.F, context.I)
    conflicts = _conflicts(context, options, counts, exact_conflicts)
    work = _assemble(inputs.layer.name, context, options, _Measured(counts, footprint, conflicts, output))
    if arch.mapping.pe_sync == "fifo" and counts.cell_issued_pairs is not None:
        fifo_values = arch.buffers.weight_fifo_entries * context.F
        work = replace(work, lockstep_pairs=lockstep_pairs(context.cells, counts.cell_issued_pairs,
                                                           context.tiling.n_chunks, context.tiling.n_pes,
                                                           fifo_values))
    if options.dense and not options.ideal_dense:
        work = replace(work, tiling={**work.tiling, "dense_packing": "cartesian"}, notes=(
            *work.notes, "dense cartesian (SCNN's DCNN): every element of a PE's tile paired with every weight of"
            " the group in F x I vectors as SCNN pairs them, zeros and border pairs included; no bank conflicts"
            " [assumption: DNNsim's DCNN counts none]"))
    if inputs.partition is not None:
        work = _output_partitioned(work, inputs.partition, context.tiling, tiles)
    return work


def _context(arch: ArchSpec, options: MappingOptions, inputs: _MappingInputs) -> MappingContext:
    """The streamed vectors, pairing cells and banks of ``inputs`` under ``options``."""
    problem, tiling, classes, pe = inputs.problem, inputs.tiling, inputs.classes, arch.pe_array
    streamed: StreamedOperand
    if options.dense and options.fidelity == "fast":  # every element counts: the fibers' sizes are closed forms
        streamed = dense_streamed_fibers(problem, tiling, classes, pe.F, options.fetch_filter)
    else:
        wanted = StreamedInput(inputs.streamed_tensor, pe.F, inputs.stationary_vectors)  # only fibers cells pair with
        streamed = streamed_vectors(problem, tiling, classes, wanted, options)
    cells = make_cells(problem, tiling, classes, inputs.stationary_vectors, streamed)
    acc = arch.accumulators
    banks = BankMap(acc.banks, acc.bank_hash, pe.F, acc.queue_depth)
    return MappingContext(problem, tiling, classes, inputs.stationary_vectors, streamed, cells, banks, pe.F, pe.I)


def _footprint_and_output(context: MappingContext, options: MappingOptions, inputs: _MappingInputs,
                          tiles: BatchTiles) -> tuple[Footprint, np.ndarray | None, np.ndarray | None]:
    """The output footprint, and at ``exact`` fidelity the functional output and exact bank conflicts."""
    problem, tiling = context.problem, context.tiling
    stationary_mask, streamed_mask = _nonzero_masks(problem, inputs.tensors, options.dense)
    if options.fidelity != "exact":
        return _footprint(problem, tiling, stationary_mask, streamed_mask, tiles, options.dense), None, None
    result = run_exact(context, options.policy)
    footprint = result.footprint
    if problem.needs_reduction and tiles.size > 1:  # dW partial sums accumulate over each tile's images
        held = tap_footprint(problem, tiling, stationary_mask, streamed_mask, tiles.tile_of_image)
        footprint = replace(held, valid_products=footprint.valid_products)
    return footprint, result.output, result.conflict_cycles


def _nonzero_masks(problem: PhaseProblem, tensors: Tensors, dense: bool) -> tuple[np.ndarray, np.ndarray]:
    """The stationary and streamed non-zero masks of ``problem`` (``nonzero_mask``), read off the masks the operands
    came with when they did (``Tensors.nonzero_masks``: the same arrays, no compare of every element)."""
    masks = tensors.nonzero_masks()
    if masks is None or dense:
        return nonzero_mask(problem.stationary(tensors), dense), nonzero_mask(problem.streamed(tensors), dense)
    return problem.stationary(masks), problem.streamed(masks)


def _conflicts(context: MappingContext, options: MappingOptions, counts: PairCounts,
               exact_conflicts: np.ndarray | None) -> ConflictEstimate:
    """Bank-conflict cycles per slot: none on a dense design (it accumulates in place), exact's when
    enumerated, else the sampled estimate (``sampled_conflicts`` / ``sampled_oracle_conflicts``)."""
    if options.dense:
        return ConflictEstimate(np.zeros(context.n_slots, dtype=np.int64), 1)
    if exact_conflicts is not None:
        return ConflictEstimate(exact_conflicts, 1)
    if options.policy == "oracle":
        return sampled_oracle_conflicts(context, counts.issued_pairs)
    return sampled_conflicts(context, options.policy, issued_pairs=counts.issued_pairs)


def _output_partition(arch: ArchSpec, phase: Phase) -> bool:
    return not arch.sparsity_support and phase == "wgrad" and arch.mapping.wgrad_partition == "output"


def _input_capacity(arch: ArchSpec, stationary: np.ndarray, dense: bool) -> float:
    """Stationary non-zeros one PE's input buffer holds, in the arch's compressed format."""
    density = 1.0 if dense or stationary.size == 0 else np.count_nonzero(stationary) / stationary.size
    return arch.buffers.input_kb * 8192.0 / bits_per_value(arch.compression, density)


def _stationary_per_image(tiling: Tiling, vectors: Vectors) -> np.ndarray:
    """(N, n_pes) stationary non-zeros of each image's tile on each PE."""
    keys = vectors.image * tiling.n_pes + tiling.pe_of_stationary()[vectors.sp1, vectors.sp2]
    return np.bincount(keys, minlength=tiling.n_images * tiling.n_pes).astype(np.int64).reshape(
        tiling.n_images, tiling.n_pes)


def _output_partitioned(work: PhaseWork, part: OutputPartition, tiling: Tiling, tiles: BatchTiles) -> PhaseWork:
    """``work`` (planar accounting) re-cut with each PE owning a block of dW entries (dense wgrad).

    A PE's block accumulates over the images of a batch tile; its finished entries are drained once,
    after the tile's last image (the same entries every image: a dense engine touches all of them)."""
    planar_valid = work.valid_products.sum(axis=1)
    if not np.array_equal(part.valid_products.sum(axis=1), planar_valid):  # pragma: no cover - invariant
        raise AssertionError("output partition lost or invented valid products")
    zeros = part.zeros
    image = np.arange(tiling.n_chunks) // tiling.n_groups
    last_of_tile = (image % tiles.size == tiles.size - 1) | (image == tiling.n_images - 1)
    notes = (*work.notes, "wgrad_partition output: each PE owns a contiguous block of the C*R*S dW entries (all"
             " Kc channels of the group), gets the group's whole dY and the activation planes of its channels;"
             " no halo, no cross-PE reduction")
    return replace(work, candidate_pairs=part.issued_pairs, issued_pairs=part.issued_pairs, conflict_cycles=zeros,
                   issued_products=part.valid_products, valid_products=part.valid_products,
                   stationary_reads=part.stationary_reads, streamed_delivered=part.streamed_delivered,
                   halo_outputs=zeros, partial_outputs=part.partial_outputs * last_of_tile[:, None],
                   stationary_values=part.stationary_per_image.sum(axis=0), needs_reduction=False,
                   tiling={**work.tiling, "wgrad_partition": "output",
                           "entries_per_pe": [int(part.entries_per_pe.min()), int(part.entries_per_pe.max())],
                           "stationary_values_max_per_image": int(part.stationary_per_image.max(initial=0))},
                   notes=notes)


def _per_slot(tiling: Tiling, values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.int64).reshape(tiling.n_chunks, tiling.n_pes)


def _delivered(problem: PhaseProblem, tiling: Tiling, streamed: StreamedOperand) -> np.ndarray:
    """Streamed values delivered to each PE per chunk, (n_chunks, n_pes)."""
    layout, per_block = streamed.layout, streamed.delivered_nnz
    Nt, Ct = problem.streamed_shape[:2]
    per_chunk = per_block.reshape(Nt, Ct, tiling.n_groups, layout.n_sets).sum(axis=1)
    per_chunk = np.broadcast_to(per_chunk, (tiling.n_images, tiling.n_groups, layout.n_sets))
    return per_chunk.reshape(tiling.n_chunks, layout.n_sets)[:, layout.set_of_pe]


def _dram(problem: PhaseProblem, tiling: Tiling, streamed: StreamedOperand) -> np.ndarray:
    """Streamed non-zeros read from DRAM per chunk (each block once per chunk)."""
    Nt, Ct = problem.streamed_shape[:2]
    per_chunk = streamed.fetched_nnz.reshape(Nt, Ct, tiling.n_groups).sum(axis=1)
    return np.broadcast_to(per_chunk, (tiling.n_images, tiling.n_groups)).ravel().astype(np.int64)


def _assemble(layer_name: str, context: MappingContext, options: MappingOptions, measured: _Measured) -> PhaseWork:
    """The image-major ``PhaseWork`` (one image per batch tile; ``batch_tiled`` sets the batch loop)."""
    problem, tiling, cells = context.problem, context.tiling, context.cells
    counts, footprint = measured.counts, measured.footprint
    valid = int(footprint.valid_products.sum())
    reference = cells.nnz_t if options.tiled_dy else cells.nnz_t_all
    total = valid if options.ideal_dense else int(np.sum(cells.nnz_s * reference, dtype=np.int64))
    products = ProductCounts(total=total, valid=valid, skipped=total - int(counts.issued_products.sum()))
    chunk = np.arange(tiling.n_chunks)
    per_image = _stationary_per_image(tiling, context.stationary)  # once: the per-PE sums are its column sums
    stationary = per_image.sum(axis=0)
    return PhaseWork(
        layer_name=layer_name, phase=problem.phase, n_pes=tiling.n_pes,
        candidate_pairs=_per_slot(tiling, counts.candidate_pairs),
        issued_pairs=_per_slot(tiling, counts.issued_pairs),
        conflict_cycles=_per_slot(tiling, measured.conflicts.cycles),
        issued_products=_per_slot(tiling, counts.issued_products),
        valid_products=_per_slot(tiling, footprint.valid_products),
        stationary_reads=_per_slot(tiling, counts.stationary_reads),
        streamed_delivered=_delivered(problem, tiling, context.streamed).astype(np.int64),
        halo_outputs=_per_slot(tiling, footprint.halo_outputs),
        partial_outputs=_per_slot(tiling, footprint.partial_outputs),
        streamed_dram_values=_dram(problem, tiling, context.streamed),
        output_values=np.asarray(footprint.output_values, dtype=np.int64),
        stationary_dram_values=np.zeros(tiling.n_chunks, np.int64),
        output_readback_values=np.zeros(tiling.n_chunks, np.int64), drains=np.ones(tiling.n_chunks, bool),
        chunk_tile=chunk // tiling.n_groups, chunk_group=chunk % tiling.n_groups,
        chunk_image=chunk // tiling.n_groups, lockstep_pairs=np.zeros(tiling.n_chunks, np.int64),
        stationary_values=stationary, stationary_resident=stationary.copy(),
        stationary_operand=problem.stationary_operand, streamed_operand=problem.streamed_operand,
        needs_reduction=problem.needs_reduction, products=products, output=measured.output,
        tiling=_tiling_dict(context, options, int(per_image.max(initial=0))),
        notes=_notes(options, measured.conflicts.sample_step),
    )


def _tiling_dict(context: MappingContext, options: MappingOptions, stationary_max: int) -> dict:
    """The plain-dict description of the mapping (``PhaseWork.tiling``); ``dense`` means an ideal dense
    engine (a DCNN's ``dense_packing: cartesian`` is added by ``_map_images``). ``stationary_max``: the most
    stationary values one image's tile puts on one PE."""
    tiling, classes = context.tiling, context.classes
    return {
        "pe_grid": [tiling.rows, tiling.cols], "tile": [tiling.tile_h, tiling.tile_w],
        "output_tile": [tiling.out_tile_h, tiling.out_tile_w], "plane": list(tiling.plane),
        "output_plane": list(tiling.out_plane), "Kc": tiling.kc, "groups": tiling.n_groups,
        "images": tiling.n_images, "chunks": tiling.n_chunks,
        "stride_phases": {"stationary_modulus": list(classes.ms), "streamed_modulus": list(classes.mt),
                          "pairings": len(classes.groups)},
        "stationary_values_max_per_image": stationary_max,
        "policy": options.policy, "fetch_filter": options.fetch_filter, "dense": options.ideal_dense,
        "fidelity": options.fidelity,
    }


def _notes(options: MappingOptions, sample_step: int) -> tuple[str, ...]:
    """The estimates and conventions of this mapping, in words (``PhaseWork.notes``)."""
    fidelity, policy = options.fidelity, options.policy
    notes = ["total counts pairs of the delivered dY (mapping.wgrad_dy: tiled)" if options.tiled_dy else
             "total counts pairs of the unfiltered mapping; pairs removed by the fetch filter count as skipped",
             "stationary_values sums every image's tile (DRAM loads); tiling['stationary_values_max_per_image']"
             " is the buffer occupancy"]
    if fidelity == "fast" and policy == "oracle" and sample_step == 1:
        notes.append("conflict_cycles exact: every valid product hashed to banks, packed F*I per pair in"
                     " enumeration order as the exact path packs them")
    elif fidelity == "fast" and policy == "oracle":
        notes.append(f"conflict_cycles estimated from prefixes of the slots' candidate pairs packed F*I per"
                     f" group from each slot's first pair as exact packs them (1 pair in {sample_step}"
                     " enumerated; a slot enumerated whole keeps its exact count, others get their packed pairs"
                     " times their PE's conflicts per full group, shrunk toward the phase-wide rate)")
    elif fidelity == "fast" and sample_step == 1:
        notes.append("conflict_cycles exact: every issued pair's products hashed to banks")
    elif fidelity == "fast":
        notes.append(f"conflict_cycles estimated from a systematic 1-in-{sample_step} sample of candidate"
                     " pairs (exact bank hashing of the sampled issued pairs; per-PE rate shrunk toward the"
                     " phase-wide rate, times the PE's issued pairs)")
    if policy == "oracle":
        notes.append("oracle: valid products packed into ceil(valid/(F*I)) full pairs per (chunk, PE)")
    if options.fetch_filter:
        notes.append("fetch filter: streamed non-zeros whose row or column cannot reach a PE's tile are not"
                     " delivered to it")
    if options.ideal_dense:
        notes.append("dense design: every element counts as a non-zero (products include zeros); only pairs"
                     " that meet at an output are formed (total = valid), packed into full F*I cycles,"
                     " no bank conflicts")
    return tuple(notes)
