"""Analytic screen: a closed-form estimate of a design's full-network metrics from the operand masks.

``multi_fidelity.screen: analytic`` evaluates every trial with ``analytic_screen`` first (~0.2 s of CPU for
a ResNet-18 CIFAR step instead of ~3 s) and runs the discrete-event model only on the designs whose
calibrated estimate can still enter the front (``antsim.dse.objective``). docs/sweep_screening.md states
its error against the full model and what it buys.

Counted per (layer, phase) as the mapper counts them, with the mapping's own tiling, stride classes and
fetch sets (``antsim.dataflow.tiling``, ``antsim.dataflow.fibers.reach_tables``) — equal to
``antsim.dataflow.map_phase``'s numbers (tests/dse/test_screen.py):

* SCNN's candidate vector pairs per (chunk, PE): ``Σ ⌈nnz_stationary / I⌉ · ⌈nnz_streamed / F⌉`` over the
  PE's stationary fibers (``(n, ch, pe, class)``; ``(n, pe, class)`` in wgrad) and the streamed fiber of
  the chunk's output-channel group in the PE's fetch set — one matrix product per fetch set, no cell;
* products ``Σ nnz_s · nnz_t``, stationary reads ``Σ ⌈nnz_t / F⌉ · nnz_s``, streamed values delivered and
  read from DRAM, per-PE resident non-zeros (hence the stationary passes), and the valid products (a mask
  correlation, ``antsim.phases`` on 0/1 operands; design independent, made once per worker);
* the weight FIFO's lock-step bound (``antsim.dataflow.drift``) on up to ``LOCKSTEP_GROUPS`` groups;
* the area: ``antsim.simulate.design_area_mm2``, the full model's own call.

Estimated ([estimate] each, at its function): ANT's issued fraction (``issue_fraction``), bank conflicts
(``expected_max_load``), wgrad's reduction drain (``reduction_cycles``), the outputs written back
(``touched``), DRAM overlapped per chunk (``estimate_phase``). Energy: the action counts priced by
``antsim.energy.price``. Not modelled: the halo exchange, staging stalls, accumulator-overflow
re-streaming, bank FIFOs. The screen is therefore calibrated against full evaluations (median
full/screen ratio per metric and anticipation policy) before it prunes anything.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from antsim.dataflow.fibers import nonzero_mask, reach_tables
from antsim.dataflow.options import MappingOptions
from antsim.dataflow.tiling import StrideClasses, Tiling, make_tiling, stride_classes
from antsim.dse.evaluators import Evaluator, workload_tensors
from antsim.dse.workload import Workload
from antsim.energy import energy_per_action, leakage_power, load_table
from antsim.errors import SpecError
from antsim.phases import PhaseProblem, conv_sum, phase_problem
from antsim.simulate import design_area_mm2, output_density
from antsim.sparsity.tensors import Tensors
from antsim.spec.arch import ArchSpec
from antsim.spec.encoding import bits_per_value, encoded_bits
from antsim.vocabulary import Fidelity, Phase
from antsim.workloads.gemm import Gemm
from antsim.workloads.layers import Layer

if TYPE_CHECKING:
    from antsim.dse.spec import SweepSpec


# Metrics the screen computes as the full model does: the area (``design_area_mm2``, the same call) and the
# stationary passes (the same capacity rule on the same per-PE non-zeros; at a batch above 1 the screen's
# per-image count is a lower bound). The objective compares them without the margin (a broken area or
# passes bound is broken in the full model too).
EXACT_METRICS = ("area_mm2", "stationary_passes")


@dataclass(frozen=True)
class PhaseOperands:
    """What the screen needs of one (layer, phase), independent of the design.

    Attributes:
        problem: The Cartesian view of the phase.
        stationary: Coordinates ``(n, ch, y, x)`` of the stationary non-zeros (4 int64 arrays).
        streamed: Coordinates ``(nt, ct, ko, u, v)`` of the streamed non-zeros (5 int64 arrays).
        valid_products: Products of two non-zeros that land on an output.
        stationary_density, streamed_density, output_density: For the compressed sizes.
        stationary_class, streamed_class: Each non-zero's stride class with ``mapping.stride_phases`` on
            (``antsim.dataflow.tiling.stride_classes``; the classes depend on the layer and phase only).
        streamed_key: ``(nt · Ct + ct, u · V + v)`` of each streamed non-zero, the design-independent parts
            of its fiber key.
        shared: What the screen derives from these operands and a few design parameters, kept for the next
            design: keyed by exactly those parameters (``_shared``), filled lazily, never a field of equality.
    """

    problem: PhaseProblem
    stationary: tuple[np.ndarray, ...]
    streamed: tuple[np.ndarray, ...]
    valid_products: int
    stationary_density: float
    streamed_density: float
    output_density: float
    stationary_class: np.ndarray
    streamed_class: np.ndarray
    streamed_key: np.ndarray
    shared: dict[tuple[Any, ...], Any] = field(default_factory=dict, compare=False, repr=False)


def _valid_products(layer: Layer, phase: Phase, tensors: Tensors) -> int:
    """Valid products: the phase's convolution on 0/1 operands, summed — in closed form per kernel tap
    ``(r, s)``, where the sum over outputs factors into a sum over the tap's summed channel
    (``antsim.phases.conv_sum``)."""
    w = tensors.weights != 0
    if phase == "fprop":
        return conv_sum(tensors.activations != 0, w, layer.stride, layer.pad, "fprop")
    if phase == "dgrad":
        return conv_sum(tensors.grad_output != 0, w, layer.stride, layer.pad, "dgrad", (layer.H, layer.W))
    return conv_sum(tensors.wgrad_activations != 0, tensors.grad_output != 0, layer.stride, layer.pad, "wgrad",
                    kernel=(layer.R, layer.S))


def phase_operands(layer: Layer, phase: Phase, tensors: Tensors, dense: bool = False) -> PhaseOperands:
    """The design-independent part of one (layer, phase) (``dense``: every element counts as a non-zero)."""
    problem = phase_problem(layer, phase)
    stationary = problem.stationary(tensors)
    streamed = problem.streamed(tensors)
    st_mask, tr_mask = nonzero_mask(stationary, dense), nonzero_mask(streamed, dense)
    valid = _dense_valid(layer, phase) if dense else _valid_products(layer, phase, tensors)
    st_d = float(st_mask.mean()) if st_mask.size else 1.0
    tr_d = float(tr_mask.mean()) if tr_mask.size else 1.0
    out_d = 1.0 if dense else max(output_density(tensors, phase), 1e-6)
    # np.nonzero's indices are intp: int64 here, so no copy (copy=False)
    st_coords = tuple(a.astype(np.int64, copy=False) for a in np.nonzero(st_mask))
    nt, ct, _, u, v = tr_coords = tuple(a.astype(np.int64, copy=False) for a in np.nonzero(tr_mask))
    classes = stride_classes(problem, True)
    _, ct_n, _, _, n_v = problem.streamed_shape
    return PhaseOperands(problem, st_coords, tr_coords, valid, 1.0 if dense else st_d, 1.0 if dense else tr_d, out_d,
                         classes.stationary_class(st_coords[2], st_coords[3]), classes.streamed_class(u, v),
                         np.stack([nt * ct_n + ct, u * n_v + v]))


def _dense_valid(layer: Layer, phase: Phase) -> int:
    ones = Tensors(weights=np.ones((layer.K, layer.C, layer.R, layer.S)),
                   activations=np.ones((layer.N, layer.C, layer.H, layer.W)),
                   grad_output=np.ones((layer.N, layer.K, layer.P, layer.Q)))
    return _valid_products(layer, phase, ones)


@dataclass(frozen=True)
class PhaseCounts:
    """Per (chunk, PE) work of one (layer, phase) on one design (shape ``(n_chunks, n_pes)``, float64),
    plus per-phase totals.

    Attributes:
        candidate_pairs: vector pairs formed (policy ``none`` issues them all).
    Attributes (totals over the phase):
        products: non-zero × non-zero products of those pairs.
        stationary_reads: stationary values read (each stationary value once per F-vector it meets).
        resident: stationary non-zeros per PE (one image's tile), shape ``(n_pes,)``.
        streamed_delivered: streamed non-zeros delivered to PEs (weight-FIFO writes), summed.
        streamed_fetched: streamed non-zeros some PE receives (DRAM reads), summed.
        active_pes: PEs whose tile holds a stationary non-zero.
        lockstep: per chunk, the fewest multiplier cycles when PEs drift at most one weight FIFO apart
            (``antsim.dataflow.drift``; zeros with ``mapping.pe_sync: free``), from the candidate pairs.
        fetched_per_group: streamed non-zeros read from DRAM for each output-channel group, ``(G,)``.
    """

    candidate_pairs: np.ndarray
    products: float
    stationary_reads: float
    resident: np.ndarray
    streamed_delivered: float
    streamed_fetched: float
    active_pes: int
    lockstep: np.ndarray
    fetched_per_group: np.ndarray


def _tiling(arch: ArchSpec, problem: PhaseProblem) -> Tiling:
    acc = arch.accumulators
    return make_tiling(problem, arch.pe_array.rows, arch.pe_array.cols, arch.mapping.output_channel_group,
                       acc.banks * acc.entries_per_bank)


def _classes_of(ops: PhaseOperands, classes: StrideClasses) -> tuple[np.ndarray, np.ndarray]:
    """Stationary and streamed class of every non-zero under ``classes`` (stride phases on or off)."""
    if classes.n_stationary == 1 and classes.n_streamed == 1:
        return np.zeros_like(ops.stationary_class), np.zeros_like(ops.streamed_class)
    return ops.stationary_class, ops.streamed_class


def stationary_fiber_counts(problem: PhaseProblem, tiling: Tiling, classes: StrideClasses,
                            coords: tuple[np.ndarray, ...], cls: np.ndarray) -> np.ndarray:
    """Non-zeros of every stationary fiber, shape ``(N, Cs, n_pes, n_classes)`` (``Cs = 1`` in wgrad, whose
    fibers run through the channels); elements of a class that pairs with nothing are dropped. ``cls``:
    each non-zero's stride class."""
    n, ch, y, x = coords
    used = np.isin(cls, [a for a, _ in classes.groups])
    n_images = problem.stationary_shape[0]
    cs = problem.stationary_shape[1] if problem.channel_matched else 1
    ch_key = ch if problem.channel_matched else np.zeros_like(ch)
    key = ((n * cs + ch_key) * tiling.n_pes + tiling.pe_of_stationary()[y, x]) * classes.n_stationary + cls
    size = n_images * cs * tiling.n_pes * classes.n_stationary
    counts = np.bincount(key[used], minlength=size).astype(np.float64)
    return counts.reshape(n_images, cs, tiling.n_pes, classes.n_stationary)


def fetch_sets(problem: PhaseProblem, tiling: Tiling, fetch_filter: bool
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row patterns ``(n_row_sets, U)``, column patterns ``(n_col_sets, V)`` and each PE's fetch set
    (``row set · n_col_sets + column set``), as the fetcher groups PEs of the same reach."""
    n_u, n_v = problem.streamed_shape[3:]
    if not fetch_filter:
        return np.ones((1, n_u), bool), np.ones((1, n_v), bool), np.zeros(tiling.n_pes, np.int64)
    rows, cols = reach_tables(problem, tiling)
    row_pat, row_of = np.unique(rows, axis=0, return_inverse=True)
    col_pat, col_of = np.unique(cols, axis=0, return_inverse=True)
    pe = np.arange(tiling.n_pes)
    return row_pat, col_pat, (row_of.ravel()[pe // tiling.cols] * len(col_pat) + col_of.ravel()[pe % tiling.cols])


@dataclass(frozen=True)
class FetchSets:
    """The fetch sets of one (layer, phase) on one PE grid: ``fetch_sets``' three arrays, plus the ``(u, v)``
    membership table of ``streamed_fiber_counts`` — ``(U·V, n_sets + 2)``: every set, all of the plane,
    reached by some set — or None without a fetch filter (every set is the whole plane)."""

    row_pat: np.ndarray
    col_pat: np.ndarray
    set_of_pe: np.ndarray
    table: np.ndarray | None


def make_fetch_sets(problem: PhaseProblem, tiling: Tiling, fetch_filter: bool) -> FetchSets:
    """``fetch_sets`` and its membership table (see ``FetchSets``)."""
    row_pat, col_pat, set_of_pe = fetch_sets(problem, tiling, fetch_filter)
    if len(row_pat) == 1 and len(col_pat) == 1 and row_pat.all() and col_pat.all():  # no fetch filter
        return FetchSets(row_pat, col_pat, set_of_pe, None)
    n_uv = row_pat.shape[1] * col_pat.shape[1]
    member = (row_pat[:, None, :, None] & col_pat[None, :, None, :]).reshape(len(row_pat) * len(col_pat), n_uv)
    table = np.vstack([member, np.ones(n_uv, bool), member.any(axis=0)]).T.astype(np.float64)
    return FetchSets(row_pat, col_pat, set_of_pe, table)


# Entries kept per (layer, phase) before its kept parts are dropped and made anew. [choice] 64: a PE grid's
# fetch sets of ResNet-18 CIFAR's 60 phases take ~1.6 MiB (measured, resnet18_cifar_pareto.yaml's space),
# so a worker keeps at most ~100 MiB; that space has 7 × 7 grids × 2 fetch filters.
SHARED_ENTRIES = 64


def _shared(ops: PhaseOperands, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
    """``make()``, kept in ``ops.shared`` under ``key``: the caller's key must hold every design parameter
    that ``make`` reads (the operands themselves are ``ops``). Past ``SHARED_ENTRIES`` all is dropped."""
    if key not in ops.shared:
        if len(ops.shared) >= SHARED_ENTRIES:
            ops.shared.clear()
        ops.shared[key] = make()
    return ops.shared[key]


def shared_fetch_sets(ops: PhaseOperands, tiling: Tiling, fetch_filter: bool) -> FetchSets:
    """``make_fetch_sets``, kept per PE grid: the reach tables read the grid and the stationary tile extents
    only (``Tiling.row_extents`` / ``col_extents``; not the output-channel group)."""
    key = ("fetch_sets", tiling.rows, tiling.cols, tiling.tile_h, tiling.tile_w, fetch_filter)
    return _shared(ops, key, lambda: make_fetch_sets(ops.problem, tiling, fetch_filter))


def shared_classes(ops: PhaseOperands, enabled: bool) -> StrideClasses:
    """``stride_classes(ops.problem, enabled)``, kept per ``mapping.stride_phases``."""
    return _shared(ops, ("stride_classes", enabled), lambda: stride_classes(ops.problem, enabled))


@dataclass(frozen=True)
class StreamedCounts:
    """Streamed non-zeros: ``per_set`` of every fiber ``(Nt, Ct, G, n_classes, n_sets)``; ``fetched`` per block
    ``(Nt, Ct, G)`` (those at least one fetch set receives: DRAM reads); ``unfiltered`` per (block, class)
    ``(Nt, Ct, G, n_classes)`` (what the broadcast sends, the weight FIFO's measure)."""

    per_set: np.ndarray
    fetched: np.ndarray
    unfiltered: np.ndarray


def streamed_fiber_counts(ops: PhaseOperands, tiling: Tiling, classes: StrideClasses, cls: np.ndarray,
                          sets: FetchSets) -> StreamedCounts:
    """The ``StreamedCounts`` of the phase on this tiling and these fetch sets (``cls``: each streamed
    non-zero's stride class)."""
    nt_n, ct_n, _, n_u, n_v = ops.problem.streamed_shape
    n_blocks = nt_n * ct_n * tiling.n_groups
    fiber = ops.streamed_key[0] * tiling.n_groups
    fiber += ops.streamed[2] // tiling.kc
    fiber *= classes.n_streamed
    fiber += cls
    n_fibers = n_blocks * classes.n_streamed
    shape = (nt_n, ct_n, tiling.n_groups, classes.n_streamed)
    if sets.table is None:  # no fetch filter
        counts = np.bincount(fiber, minlength=n_fibers).astype(np.float64).reshape(shape)
        return StreamedCounts(counts[..., None], counts.sum(axis=3), counts)
    fiber *= n_u * n_v
    fiber += ops.streamed_key[1]
    grid = np.bincount(fiber, minlength=n_fibers * n_u * n_v).astype(np.float64).reshape(n_fibers, n_u * n_v)
    # One product with the (u, v) → [every fetch set, all, reached by some set] membership table: the sets'
    # counts, the unfiltered count and the DRAM reads of every fiber in one BLAS call.
    counts = grid @ sets.table  # (fibers, sets + 2)
    per_set, unfiltered, reached = counts[:, :-2], counts[:, -2], counts[:, -1]
    fetched = reached.reshape(n_blocks, classes.n_streamed).sum(axis=1)
    return StreamedCounts(per_set.reshape(*shape, sets.table.shape[1] - 2), fetched.reshape(shape[:3]),
                          unfiltered.reshape(shape))


def _pair_sum(stationary: np.ndarray, streamed: np.ndarray, set_of_pe: np.ndarray) -> np.ndarray:
    """``out[n, g, pe] = Σ_c stationary[n, c, pe] · streamed[nt(n), c, g, set(pe)]`` for one class pair.

    ``stationary`` (N, C, n_pes); ``streamed`` (Nt, C, G, n_sets) with Nt ∈ {1, N}."""
    n_images, n_ch, n_pes = stationary.shape
    n_groups = streamed.shape[2]
    if n_ch == 1:  # wgrad: no channel sum, one product per (n, g, pe)
        return stationary[:, 0, None, :] * streamed[:, 0][:, :, set_of_pe]
    out = np.zeros((n_images, n_groups, n_pes))
    by_set = np.ascontiguousarray(streamed.transpose(3, 0, 2, 1))  # (n_sets, Nt, G, C): one copy, then views
    for s in np.unique(set_of_pe):
        pes = np.flatnonzero(set_of_pe == s)
        out[:, :, pes] = np.matmul(by_set[s], stationary[:, :, pes])
    return out


def _pes_per_set(s_cnt: np.ndarray, set_of_pe: np.ndarray, n_sets: int) -> np.ndarray:
    """Stationary non-zeros summed over the PEs of each fetch set: (N, Cs, n_classes, n_sets)."""
    onehot = np.zeros((len(set_of_pe), n_sets))
    onehot[np.arange(len(set_of_pe)), set_of_pe] = 1.0
    return np.einsum("ncpa,ps->ncas", s_cnt, onehot)


def _total(stationary: np.ndarray, streamed: np.ndarray) -> float:
    """``Σ stationary[n, c, s] · streamed[nt(n), c, g, s]`` over everything (stationary summed per set)."""
    return float((stationary[:, :, None, :] * streamed).sum())


# Output-channel groups per (layer, phase) whose lock-step bound is counted window by window; the other
# groups take the counted ones' mean lock-step / busiest-PE ratio. [choice] 4: the count costs groups ×
# channels × PEs (~0.2 s for a 512-channel layer's 128 groups on 16 × 16 PEs); on 40 random ResNet-18
# designs 4 and 8 counted groups gave the same screen error (docs/sweep_screening.md).
LOCKSTEP_GROUPS = 4


def lockstep_pairs(s_vec: np.ndarray, t_vec: np.ndarray, unfiltered: np.ndarray, set_of_pe: np.ndarray,
                   groups: tuple[tuple[int, int], ...], fifo_values: int, which: np.ndarray) -> np.ndarray:
    """For the output-channel groups ``which``, per image: ``Σ_w max_PE pairs(w, PE)`` over the FIFO windows of
    the chunk's stream, shape ``(N, len(which))`` — the model of ``antsim.dataflow.drift.lockstep_pairs``:
    the chunk's blocks (channel, then class) are sent in order, a block that forms a pair on some PE
    belongs to window ``⌊values sent before it / fifo_values⌋``."""
    n_images, _, n_pes, _ = s_vec.shape
    nt_n, ct_n, _, n_cls, _ = t_vec.shape
    out = np.zeros((n_images, len(which)))
    for n in range(n_images):
        nt = n if nt_n > 1 else 0
        picked = t_vec[nt][:, which].transpose(1, 0, 2, 3)  # (groups, Ct, classes, sets)
        block = np.zeros((len(which), ct_n, n_cls, n_pes), np.float32)  # whole counts < 2^24: exact
        for a, b in groups:  # s_vec's channel axis is C (channel matched) or 1 (wgrad): broadcast either way
            block[:, :, b, :] += picked[:, :, b, :][..., set_of_pe] * s_vec[n, :, :, a]  # (groups, Ct, PEs)
        rows = block.reshape(len(which) * ct_n * n_cls, n_pes)
        working = rows.max(axis=1) > 0
        sent = unfiltered[nt][:, which, :].transpose(1, 0, 2).reshape(len(which), ct_n * n_cls)
        values = np.where(working.reshape(sent.shape), sent, 0.0)
        window = ((np.cumsum(values, axis=1) - values) // max(1, fifo_values)).astype(np.int64)
        span = int(window.max(initial=0)) + 1
        # A block that forms no pair sends nothing counted and adds zeros: it may join its neighbours' window
        # (its own key is the next working block's), so the segments are taken over every block.
        key = (np.arange(len(which))[:, None] * span + window).ravel()
        if working.any():
            first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
            np.add.at(out[n], key[first] // span, np.add.reduceat(rows, first, axis=0).max(axis=1))
    return out


def sampled_lockstep(s_vec: np.ndarray, t_vec: np.ndarray, unfiltered: np.ndarray, set_of_pe: np.ndarray,
                     groups: tuple[tuple[int, int], ...], fifo_values: int, pairs: np.ndarray) -> np.ndarray:
    """Per chunk ``(n, g)``, the lock-step bound: counted for up to ``LOCKSTEP_GROUPS`` evenly spaced groups
    (all of them when there are no more — exact), the busiest PE's pairs × the counted groups' mean
    ratio elsewhere [estimate]. ``pairs``: candidate pairs ``(N, G, n_pes)``."""
    n_groups = pairs.shape[1]
    which = np.unique(np.linspace(0, n_groups - 1, min(n_groups, LOCKSTEP_GROUPS)).round().astype(np.int64))
    counted = lockstep_pairs(s_vec, t_vec, unfiltered, set_of_pe, groups, fifo_values, which)
    if len(which) == n_groups:
        return counted.ravel()
    busiest = pairs.max(axis=2)
    base = busiest[:, which]
    ratio = float(counted[base > 0].sum() / base[base > 0].sum()) if (base > 0).any() else 1.0
    out = busiest * ratio
    out[:, which] = counted
    return out.ravel()


def count_phase(arch: ArchSpec, ops: PhaseOperands) -> PhaseCounts:
    """The per (chunk, PE) counts of ``PhaseCounts`` for ``arch`` (chunks ordered image, then group)."""
    problem, pe = ops.problem, arch.pe_array
    tiling = _tiling(arch, problem)
    classes = shared_classes(ops, arch.mapping.stride_phases)
    s_cls, t_cls = _classes_of(ops, classes)
    s_cnt = stationary_fiber_counts(problem, tiling, classes, ops.stationary, s_cls)
    # The mapping's own rule for when the fetch filter applies (anticipating designs, wgrad's tiled dY, …).
    fetch_filter = MappingOptions.from_arch(arch, "fast", problem.phase).fetch_filter
    sets = shared_fetch_sets(ops, tiling, fetch_filter)
    set_of_pe = sets.set_of_pe
    streamed = streamed_fiber_counts(ops, tiling, classes, t_cls, sets)
    t_cnt = streamed.per_set
    s_vec, t_vec = np.ceil(s_cnt / pe.I), np.ceil(t_cnt / pe.F)
    pairs = np.zeros((tiling.n_images, tiling.n_groups, tiling.n_pes))
    products = reads = 0.0
    pes_per_set = _pes_per_set(s_cnt, set_of_pe, t_cnt.shape[-1])
    for a, b in classes.groups:
        pairs += _pair_sum(s_vec[..., a], t_vec[..., b, :], set_of_pe)
        # Totals need no per-PE resolution: sum the stationary side over each fetch set's PEs first.
        products += _total(pes_per_set[..., a, :], t_cnt[..., b, :])
        reads += _total(pes_per_set[..., a, :], t_vec[..., b, :])
    resident = s_cnt.sum(axis=(1, 3))  # (N, n_pes)
    active = resident.max(axis=0) > 0
    # Every PE of the grid gets its fetch set's values (an empty tile's PE too), per chunk.
    per_set = t_cnt.sum(axis=(0, 1, 2, 3))
    delivered = float(per_set @ np.bincount(set_of_pe, minlength=len(per_set))) * (
        tiling.n_images if problem.streamed_shape[0] == 1 else 1)
    # [estimate] the weights are read once per phase: one batch tile (exact at batch 1, the sweeps' batch);
    # the mapper re-reads them per batch tile when the input buffer cannot hold the whole batch.
    fetched_per_group = streamed.fetched.sum(axis=(0, 1))
    lockstep = (sampled_lockstep(s_vec, t_vec, streamed.unfiltered, set_of_pe, classes.groups,
                                 arch.buffers.weight_fifo_entries * pe.F, pairs)
                if arch.mapping.pe_sync == "fifo" else np.zeros(tiling.n_chunks))
    return PhaseCounts(pairs.reshape(tiling.n_chunks, -1), float(products), float(reads),
                       resident.max(axis=0), delivered, float(fetched_per_group.sum()), int(active.sum()),
                       lockstep, fetched_per_group)


@dataclass(frozen=True)
class PhaseEstimate:
    """One (layer, phase)'s estimated time (``cycles`` at the clock; ``compute_cycles``: the multipliers'
    lower bound, Σ over chunks of max(busiest PE's issued pairs, lock-step)), passes and action counts."""

    time_s: float
    cycles: float
    compute_cycles: float
    passes: int
    actions: dict[str, dict[str, float]]


def issue_fraction(arch: ArchSpec, ops: PhaseOperands, products: float) -> float:
    """Fraction of candidate pairs issued: 1 without anticipation; with ``ant`` the chance that a pair of
    ``F·I`` products holds a valid one, products independent at the phase's valid fraction [estimate]."""
    if arch.anticipation.policy == "none" or not arch.sparsity_support or products <= 0:
        return 1.0
    rho = min(1.0, ops.valid_products / products)
    return 1.0 - (1.0 - rho) ** (arch.pe_array.F * arch.pe_array.I)


def expected_max_load(products: float, banks: int) -> float:
    """Expected busiest-bank load when a pair's ``products`` (a mean, need not be whole) scatter to ``banks``
    accumulator banks: each bank's load Poisson with mean ``products / banks``, independent, so
    ``E[max] = Σ_k (1 − P(load ≤ k)^banks)`` — [estimate] of the cycles a pair takes with bank conflicts
    (the full model hashes every product, or a sample of them, to its bank)."""
    if products <= 0:
        return 0.0
    lam, total, cdf, pmf, k = products / banks, 0.0, 0.0, math.exp(-products / banks), 0
    while True:
        cdf += pmf
        tail = 1.0 - cdf ** banks
        if tail < 1e-9 or k > 10 * products + 10:
            return total
        total += tail
        k += 1
        pmf *= lam / k


# The reduction tree's input per PE and cycle: SimParams().reduction_values_per_cycle (antsim.sim.params:
# [assumption] 2, one 48-bit link per PE).
REDUCTION_VALUES_PER_CYCLE = 2.0


def reduction_cycles(ops: PhaseOperands, counts: PhaseCounts) -> np.ndarray:
    """wgrad: per chunk, the cross-PE reduction of the busiest PE's partial dW sums,
    ``⌈partials / 2⌉ + ⌈log2 PEs⌉`` (``antsim.sim.schedule``), partials [estimate] the distinct entries of
    the chunk's ``Kc·C·R·S`` its valid products touch, the chunk's valid products shared among PEs as its
    candidate pairs are. Zero for plane outputs (their halo exchange is not modelled)."""
    pairs = counts.candidate_pairs
    n_pes = pairs.shape[1]
    if ops.problem.output_is_plane or n_pes <= 1 or pairs.sum() <= 0:
        return np.zeros(pairs.shape[0])
    n_chunks = pairs.shape[0]
    n_groups = n_chunks / ops.problem.stationary_shape[0]
    entries = float(np.prod(ops.problem.output_shape)) / n_groups  # Kc·C·R·S: one group's dW
    valid = ops.valid_products * pairs / pairs.sum()
    worst = (entries * -np.expm1(-valid / entries)).max(axis=1)
    return np.where(worst > 0, np.ceil(worst / REDUCTION_VALUES_PER_CYCLE) + math.ceil(math.log2(n_pes)), 0.0)


def touched(entries: float, products: float) -> float:
    """Expected distinct entries of ``entries`` that ``products`` valid products land on, products spread
    uniformly (Poisson coverage ``entries · (1 − e^(−products/entries))``) — [estimate] of the outputs a
    phase writes back (the full model counts the outputs that received a product)."""
    return entries * -math.expm1(-products / entries) if entries > 0 else 0.0


def chunk_cycles(arch: ArchSpec, ops: PhaseOperands, counts: PhaseCounts, q: float) -> tuple[np.ndarray, np.ndarray]:
    """Per chunk: the cycles it takes (multipliers with conflicts, the anticipation unit, the FIFO drift
    bound, the drain it overlaps) and the multipliers' own lower bound ``max(busiest PE's issued pairs,
    lock-step)`` (``antsim.sim.array``: a PE's step is ``max(issued + conflicts, lockstep)``)."""
    issued = counts.candidate_pairs * q
    issued_total = float(issued.sum())
    lockstep = counts.lockstep * q
    own = issued
    if arch.sparsity_support and issued_total > 0:  # a dense design has no scatter crossbar: no conflicts
        routed = ops.valid_products if arch.accumulators.drop_invalid == "before_crossbar" else counts.products * q
        own = issued * max(1.0, expected_max_load(routed / issued_total, arch.accumulators.banks))
    if arch.screens_pairs:
        own = np.maximum(own, counts.candidate_pairs / arch.anticipation.pairs_per_cycle)
    # Double-buffered accumulators: a chunk's drain overlaps the next chunk's multiplies, so per chunk the
    # slower of the two counts.
    cycles = np.maximum(np.maximum(own.max(axis=1), lockstep), reduction_cycles(ops, counts))
    return cycles, np.maximum(issued.max(axis=1), lockstep)


def estimate_phase(arch: ArchSpec, ops: PhaseOperands) -> PhaseEstimate:
    """Time, passes and actions of one (layer, phase) from its counts (see the module docstring)."""
    counts = count_phase(arch, ops)
    comp, q = arch.compression, issue_fraction(arch, ops, counts.products)
    cycles, multiplier_cycles = chunk_cycles(arch, ops, counts, q)
    passes = max(1, math.ceil(float(counts.resident.max(initial=0)) * bits_per_value(comp, ops.stationary_density)
                              / (arch.buffers.input_kb * 8192.0) - 1e-9))
    outputs = touched(float(np.prod(ops.problem.output_shape)), ops.valid_products)
    stationary_bits = encoded_bits(float(counts.resident.sum()), ops.stationary_density, comp)
    streamed_bits = passes * np.array([encoded_bits(float(v), ops.streamed_density, comp)
                                       for v in counts.fetched_per_group])
    write_bits = encoded_bits(outputs * ops.output_density, ops.output_density, comp)
    # Chunk k = (image, group): its group's streamed values and its share of the write-back move while it
    # computes (double-buffered staging); the stationary tiles load before the first chunk.
    n_images = ops.problem.stationary_shape[0]
    per_image = 1.0 if ops.problem.streamed_shape[0] > 1 else 1.0 / n_images  # weights: once per phase
    dram_bits = np.tile(streamed_bits * per_image, n_images) + write_bits / len(cycles)
    byte_s = 1.0 / (arch.dram.bandwidth_gbps * 1e9)
    clock_hz = arch.technology.clock_ghz * 1e9
    time_s = stationary_bits / 8.0 * byte_s + float(np.maximum(cycles / clock_hz, dram_bits / 8.0 * byte_s).sum())
    read_bits = stationary_bits + float(streamed_bits.sum())
    actions = _actions(arch, ops, counts, q, outputs, read_bits, write_bits)
    return PhaseEstimate(time_s, time_s * clock_hz, float(multiplier_cycles.sum()), passes, actions)


def _actions(arch: ArchSpec, ops: PhaseOperands, counts: PhaseCounts, q: float, outputs: float,
             read_bits: float, write_bits: float) -> dict[str, dict[str, float]]:
    """Action counts named as ``antsim.sim.counts.action_counts`` makes them, from the estimated counts."""
    issued_products = counts.products * q
    valid = float(min(ops.valid_products, issued_products))
    routed = valid if arch.accumulators.drop_invalid == "before_crossbar" else issued_products
    wgrad = not ops.problem.output_is_plane
    # [estimate] a plane output is drained once; wgrad's dW once per active PE that touched it (each holds
    # partial sums of its own tile's products).
    size = float(np.prod(ops.problem.output_shape))
    partials = counts.active_pes * touched(size, valid / max(counts.active_pes, 1)) if wgrad else outputs
    sparse = arch.sparsity_support
    return {
        "multiplier": {"multiply": issued_products},
        "coordinate": {"compute": issued_products if sparse else 0.0},
        "crossbar": {"route": routed if sparse else 0.0},
        "accumulator": {"update": valid, "drain": partials},
        "input_buffer": {"read": counts.stationary_reads * q, "write": float(counts.resident.sum())},
        "weight_fifo": {"read": counts.streamed_delivered, "write": counts.streamed_delivered},
        "output_buffer": {"read": outputs, "write": partials},
        "anticipation": {"screen": float(counts.candidate_pairs.sum())
                         if arch.screens_pairs else 0.0},
        "halo": {"transfer": 0.0},
        "reduction": {"add": max(0.0, partials - outputs) if wgrad else 0.0},
        "dram": {"read_bits": float(round(read_bits)), "write_bits": float(round(write_bits))},
    }


_OPERANDS: dict[tuple[Any, ...], PhaseOperands] = {}


def workload_operands(workload: Workload, seed: int, dense: bool) -> list[PhaseOperands]:
    """Every (layer, phase)'s ``PhaseOperands``, made once per worker process (the operands are the ones
    the full evaluation uses: ``antsim.dse.evaluators`` generates or loads them)."""
    tensors = workload_tensors(workload, seed)
    out = []
    for position, layer in enumerate(workload.layers):
        if isinstance(layer, Gemm):
            raise SpecError(workload.name, "multi_fidelity.screen", "analytic screens conv layers only; got the"
                            f" GEMM layer {layer.name!r}", "analytic")
        for phase in workload.phases:
            key = operands_key(workload, seed, position, phase, dense)
            if key not in _OPERANDS:
                _OPERANDS[key] = phase_operands(layer, phase, tensors[layer.name], dense)
            out.append(_OPERANDS[key])
    return out


def operands_key(workload: Workload, seed: int, position: int, phase: Phase, dense: bool) -> tuple[Any, ...]:
    """The cache key of ``workload.layers[position]``'s ``PhaseOperands`` of ``phase``."""
    return (workload.name, workload.tensors_path, workload.sparsity, tuple(sorted(workload.densities.items())), seed,
            workload.indices[position], workload.layers[position].name, phase, dense)


@dataclass(frozen=True)
class DesignPrices:
    """``antsim.energy.price``'s two design-dependent parts, made once per design instead of once per phase:
    joules per action (component → action → J) and the chip's static power (W)."""

    per_action: dict[str, dict[str, float]]
    leakage_w: float


def design_prices(arch: ArchSpec) -> DesignPrices:
    """The ``DesignPrices`` of ``arch`` (its energy table loaded once)."""
    table = load_table(arch.technology.energy_table)
    return DesignPrices(energy_per_action(arch, table), sum(leakage_power(arch, table).values()))


def priced(actions: dict[str, dict[str, float]], prices: DesignPrices, time_s: float) -> dict[str, float]:
    """``antsim.energy.price(actions, arch, time_s)`` with the design's prices made beforehand: the same sums
    in the same order (equal to the last bit, tests/dse/test_screen.py)."""
    joules = {component: float(sum(count * prices.per_action[component][action] for action, count in counts.items()))
              for component, counts in actions.items()}
    joules["leakage"] = prices.leakage_w * time_s
    return joules


def analytic_screen(arch: ArchSpec, workload: Workload, fidelity: Fidelity = "fast", seed: int = 0
                    ) -> dict[str, float]:
    """The screen's metrics of ``arch`` on the whole ``workload`` (an evaluator's signature and keys):
    ``time_s``, ``energy_j``, ``area_mm2`` (exact), ``cycles``, ``stationary_passes``."""
    del fidelity  # the screen has one fidelity
    time_s, cycles, energy, passes = 0.0, 0.0, 0.0, 1
    prices = design_prices(arch)
    for ops in workload_operands(workload, seed, not arch.sparsity_support):
        est = estimate_phase(arch, ops)
        time_s += est.time_s
        cycles += est.cycles
        passes = max(passes, est.passes)
        energy += math.fsum(priced(est.actions, prices, est.time_s).values())
    return {"time_s": time_s, "energy_j": energy, "area_mm2": design_area_mm2(arch), "cycles": cycles,
            "stationary_passes": float(passes)}


def screener_of(spec: SweepSpec) -> Evaluator | None:
    """``analytic_screen`` when the sweep's multi-fidelity screen is ``analytic`` (and enabled), else None."""
    mf = spec.multi_fidelity
    return analytic_screen if mf is not None and mf.enabled and mf.screen == "analytic" else None
