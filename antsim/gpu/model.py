"""Time of one implicit GEMM on one GPU: tiles, waves, split-K, L2/DRAM traffic (DeLTA style).

For every candidate (CTA tile, split-K factor) a ``Plan`` predicts

* compute: each SM runs ``ceil(CTAs / SMs)`` tiles (its resident CTAs share its pipes), each
  ``m·n·k_slice`` MACs — tile quantization (padded M, N, K) and wave quantization (the last,
  partial wave costs a full tile). The SM's rate is ``efficiency × peak / SMs``, lowered when its
  resident warps are too few to hide latency, and, for SIMT kernels, by the integer instructions
  that gather each implicit-GEMM operand element (they share issue slots with the FMAs) and by the
  SM's shared-memory bandwidth (128 B/clock) feeding the register fragments;
* L2: every CTA streams its A (m×k_slice) and B (k_slice×n) panels from L2;
* DRAM: the unique bytes of A and B, plus re-reads of an operand that does not fit in L2 and is
  swept once per column group of the grid (DeLTA, Lym et al. ISPASS 2019);
* store: the output (or fp32 split-K partials, or col2im atomics: one L2 read-modify-write of a
  32-B sector each) written after the main loop;
* reduce: the split-K reduction kernel (reads the partials, writes the output);

and ``time = max(compute, L2, DRAM) + store + reduce + kernels × launch_overhead``. The main
loop overlaps arithmetic with operand loads; the epilogue does not overlap it because the CTAs of
a wave run in lock-step (1–2 resident CTAs per SM in these kernels). The fastest plan wins, as
cuDNN/cuBLAS heuristics roughly pick the best kernel.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from antsim.gpu.gemm import Gemm, SideKernel
from antsim.gpu.spec import PRECISIONS, GpuSpec
from antsim.gpu.tiles import (
    FFT_TILES,
    HALF2_TILES,
    HALF2_WGRAD_TILES,
    WINOGRAD_FUSED_TILES,
    Tile,
    ctas_per_sm,
    hgemm_tiles,
    sgemm_tiles,
    simt_tile_set,
    tensor_tiles,
)
from antsim.vocabulary import Precision


@dataclass(frozen=True)
class Calibration:
    """The model's calibration constants, each a physical quantity (not a per-layer fit).

    Attributes:
        simt_efficiency: Fraction of the datasheet SIMT (FP32 / half2) peak an SGEMM main loop
            sustains before index arithmetic. Lin et al.'s FP32 micro-benchmarks reach 0.88 (P100),
            0.89 (TITAN Xp) and 0.98 (V100) of it (docs/gpu_specs.md §4.2); 0.8 fits DeepBench's large layers.
        tensor_efficiency: Fraction of the dense tensor-core peak a large GEMM main loop sustains
            [assumption: cuBLAS/CUTLASS reach ~70–80 % of V100/A100/H100 dense peak on large GEMMs;
            no tensor-core measurement was available to calibrate it].
        launch_overhead_s: Launch + idle time per kernel (s): Lin et al. use 5 µs
            (owensgroup/ml_perf_model ``analysis/utils.py``).
        kernels_per_call: Kernels one convolution call launches before any split-K reduction:
            cuDNN's IMPLICIT_PRECOMP_GEMM runs an index-precompute kernel, then the GEMM.
        index_ops: Integer instructions per gathered operand element of an implicit GEMM with a
            precomputed offset table (load offset, add, bounds predicate, …) [assumption].
        wgrad_index_ops: The same for wgrad, whose reduction axis is N·P·Q: every element's
            (n, p, q) → (n, h, w) needs two division/modulo pairs by runtime values (÷P·Q, ÷Q: a
            mul.hi, shift, multiply and subtract each on GPUs without an integer divider) plus the
            address and bounds predicate, which no table can precompute [assumption: ~20
            instructions; leave-one-GPU-out fits 16–18 on P100 alone, 24 on TITAN Xp alone]. The R·S
            taps (``Gemm.gather_reuse``) divide the dY operand's decode term, not the im2col one's: a fitted
            placement (``_gather_ops_per_mac``).
        warps_per_scheduler: Resident warps each warp scheduler (one per 32 FP32 lanes) needs to
            hide pipeline and shared-memory latency in an ILP-rich GEMM loop [assumption: 2].
        l2_residency: Fraction of L2 an operand may occupy and still be re-read from L2 instead of
            DRAM [assumption: half; the rest holds the other operand, outputs and conflicts].
        max_split_k: Largest split-K factor considered (library kernels use a few to a few tens).
        atomic_sectors: 32-B L2 sectors of L2 bandwidth one scattered atomic add (col2im dgrad)
            occupies: an L2 atomic is a read-modify-write of its sector, moved in and written back, so 2
            [I: NVIDIA L2 lines are four 32-B sectors]. Leave-one-GPU-out over {1, 1.5, 2, 3} picks
            1.5 on either GPU alone, within 0.5 point of 2 on the other (BENCHMARKS.md, section gpu).
        winograd_efficiency: Fraction of the GEMM main-loop rate the element-wise (batched) products
            of a Winograd kernel sustain. Their GEMMs are short (K = C per point) and, fused, hold α²
            accumulator sets per output tile, so they run smaller register tiles than an implicit
            GEMM [assumption, fitted: ``scripts/validate_gpu.py`` refits it per leave-one-GPU-out fold;
            Winograd-forward rows of DeepBench and NeuSight run 0.55–0.9× the speed the full rate gives]. Since
            session 12 the non-fused kernels' only (the fused kernel has its own, below); 0.7 since session 13,
            when the products pad the batch to 16-image blocks (``menus.nonfused_winograd_blocks``): the
            all-GPU fit picks 0.75 over 0.7 by 0.02 points of mean error (a tie), and at 0.75 two figures
            cross 20 % (T4 fp32 dgrad 20.4, P100 half dgrad 20.0; docs/gpu_model.md §5, Session 13 (lead)).
        winograd_fused_efficiency: The same for the fused kernel (``scudnn_winograd_128x128_*``: F(2×2, 3×3), all
            16 points of a 32-tile × 32-channel block in one CTA, the transforms in registers) [assumption, fitted:
            ``scripts/validate_gpu.py`` refits it per leave-one-GPU-out fold over {0.8, 0.9, 1.0}; on the rows
            DeepBench and NeuSight record as fused WINOGRAD, with the generation's CTA blocks
            (``winograd.LEGACY_FUSED_BLOCKS``) the fused plan at 0.9 has bias 1.00–1.07 on TITAN X Maxwell, M40,
            GTX 1080 Ti and P100 (0.75 on the power-capped T4, whose 3×3 rows run below their boost clock), where
            the non-fused kernels' 0.65 gave 1.40–1.56].
        wgrad_run_overhead_bytes: DRAM cost of opening one short run, in bytes of streaming transfer,
            paid by wgrad's operand reads on NCHW tensors (``wgrad_stream_efficiency``). An implicit-GEMM
            wgrad walks both operands along its reduction axis (n, p, q), the contiguous axis of an NCHW
            plane, so each main-loop step reads only ``tile.k`` consecutive elements (32 B on the fp32
            SIMT tiles, 64 B on the 32-deep fp16 tensor-core tiles) from each of ``tile.m + tile.n``
            rows a channel plane apart, and the next run of a row comes one step later: the DRAM serves
            short scattered runs, not streams [assumption, fitted: ``scripts/validate_gpu.py`` refits it
            per leave-one-GPU-out fold; on every DeepBench sheet, the 1×1 wgrads of 4 K–16 K weights
            on 56²–112² planes move their compulsory bytes at 0.14–0.30 of datasheet DRAM bandwidth on
            HBM2, GDDR5, GDDR5X and GDDR6 alike, where the fprop of the same layer reaches 0.3–0.7
            (docs/gpu_scale.md §6)].
        wgrad_min_split_k: Smallest split-K factor of a single-precision SIMT implicit-GEMM wgrad kernel.
            cuDNN's ``scudnn`` backward-filter kernels are split-K kernels by construction: every one in
            public profiles carries it in its name, on every generation
            (``maxwell_scudnn_128x128_stridedB_splitK_interior_nn``,
            ``volta_scudnn_128x64_stridedB_splitK_small_nn_v1``, ``turing_scudnn_128x32_stridedB_splitK_small_nn_v1``,
            ``ampere_scudnn_128x64_stridedB_splitK_small_nn_v1``),
            and BWD_FILTER_ALGO_1 is deterministic, so its slices go through an fp32 workspace and a
            reduction kernel even when the output tiles alone fill the SMs [assumption, fitted:
            ``scripts/validate_gpu.py`` refits it per leave-one-GPU-out fold over {2, 4, 8}; on every
            DeepBench fp32 sheet the 1×1 wgrads of 1 M weights (C·K = 512·2048) over 7×7 planes take
            2·t(N = 8) − t(N = 16) = 59–94 B per weight at datasheet DRAM bandwidth, a cost that does not
            scale with the reduction, as a workspace of ~7–11 fp32 slices written and read back would;
            without the floor the model ran them unsplit at 0.5–0.8× the measured time (docs/gpu_model.md
            §5)]. Cut short at the largest split the reduction allows (``split_candidates``). Tensor-core
            wgrad kernels come with and without a split (``…_128x128_ldg8_splitK_…`` beside unsplit ones)
            and keep every split, as do half-storage SIMT wgrads (not ``scudnn`` kernels; DeepBench's P100
            half rows of those layers show 20–24 B per weight where its fp32 rows show 93–94 B).
    """

    simt_efficiency: float = 0.8
    tensor_efficiency: float = 0.75
    launch_overhead_s: float = 5e-6
    kernels_per_call: int = 2
    index_ops: float = 4.0
    wgrad_index_ops: float = 20.0
    warps_per_scheduler: float = 2.0
    l2_residency: float = 0.5
    max_split_k: int = 32
    atomic_sectors: float = 2.0
    winograd_efficiency: float = 0.7
    winograd_fused_efficiency: float = 0.9
    wgrad_run_overhead_bytes: float = 112.0
    wgrad_min_split_k: int = 4

    def to_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


CALIBRATION = Calibration()

# Shared-memory bandwidth per SM: 32 banks × 4 B per clock (docs/gpu_specs.md §4.1 [I] identity).
SMEM_BYTES_PER_CLOCK = 128
_ACC_BYTES = 4  # split-K partials and accumulators are fp32 at every precision
# L2 sector (bytes): the granularity of an L2 access (NVIDIA L2 lines are 128 B in four 32-B sectors).
_SECTOR_BYTES = 32
# 2:4 structured sparsity on sparse tensor cores: the MMA skips the zero half of B, so math runs at
# twice the dense rate (docs/gpu_specs.md: A100 [C3] and H100 [C4] list sparse peaks = 2 × dense).
STRUCTURED_MATH_SPEEDUP = 2.0
# Compressed 2:4 B: half the values plus a 2-bit position per kept value (NVIDIA's 2:4 metadata format
# [U: Ampere sparse MMA stores 2-bit indices per non-zero]).
_STRUCTURED_INDEX_BITS = 2


def structured_b_bytes(operand_bytes: int) -> float:
    """Bytes per dense B element once 2:4-compressed: ``0.5 × (value bytes + a 2-bit index)``."""
    return 0.5 * (operand_bytes + _STRUCTURED_INDEX_BITS / 8)


@dataclass(frozen=True)
class Plan:
    """One (tile, split-K) way of running a GEMM, with its predicted times (s) and traffic (bytes)."""

    tile: Tile
    split_k: int
    precision: Precision
    ctas: int
    ctas_per_sm: int
    waves: float
    compute_s: float
    l2_s: float
    dram_s: float
    store_s: float
    reduce_s: float
    launches: int
    time_s: float
    l2_bytes: float
    dram_bytes: float
    executed_macs: int
    side_s: float = 0.0

    @property
    def tensor_cores(self) -> bool:
        """True when the main loop ran on tensor-core MMA tiles (``tile.fragment == 0``)."""
        return self.tile.fragment == 0

    @property
    def bound(self) -> str:
        """What dominates: ``compute``, ``l2`` or ``dram`` (main loop) or ``store`` (epilogue)."""
        times = {"compute": self.compute_s, "l2": self.l2_s, "dram": self.dram_s,
                 "store": self.store_s + self.reduce_s}
        return max(times, key=times.__getitem__)


@dataclass(frozen=True)
class _Traffic:
    """Bytes of one plan: main-loop operand loads (L2, DRAM) and the output path."""

    l2_load: float
    dram_load: float
    store_l2: float
    store_dram: float
    reduce_l2: float = 0.0
    reduce_dram: float = 0.0


def _operand_reloads(unique_bytes: float, passes: int, concurrent: int, l2_bytes: float) -> int:
    """DRAM passes over an operand: 1 if it stays in L2, else one per group of concurrent passes."""
    if unique_bytes <= l2_bytes or passes <= 1:
        return 1
    return math.ceil(passes / max(1, concurrent))


def _traffic(gpu: GpuSpec, g: Gemm, tile: Tile, split: int, k_slice: int, ob: int, wave: int,
             cal: Calibration, structured: bool) -> _Traffic:
    """Operand and output traffic of one plan (DeLTA-style reuse: L2 serves what fits in it)."""
    tm, tn = g.m_tiles(tile.m), g.n_tiles(tile.n)
    l2_room = cal.l2_residency * gpu.l2.size_mb * 2**20
    b_bytes = structured_b_bytes(ob) if structured else ob
    cols_in_flight = max(1, wave // max(1, tm * split))
    # Batched GEMMs (Winograd points, FFT frequencies) have their own operands: reuse is per GEMM.
    a_reloads = _operand_reloads(g.a_unique / g.batch * ob / split, tn, cols_in_flight, l2_room)
    b_panel = (g.K / split) * tile.n * b_bytes * cols_in_flight
    b_reloads = _operand_reloads(b_panel, math.ceil(tm / min(tm, wave)), 1, l2_room)
    l2_load = g.batch * tm * tn * split * (tile.m * ob + tile.n * b_bytes) * k_slice
    dram_load = g.a_unique * ob * a_reloads + g.b_unique * b_bytes * b_reloads
    output = g.c_unique * ob  # = batch·M·N, except a fused Winograd kernel stores finished outputs
    if g.scatter:  # col2im: every column element is an atomic add into dX (an L2 read-modify-write)
        # The atomics find dX in L2 only when the zeroed dX fits in its share; otherwise each line comes back
        # from DRAM before its first add, and goes out again once finished.
        passes = 1 if output <= l2_room else 2
        return _Traffic(l2_load, dram_load, g.M * g.N * cal.atomic_sectors * _SECTOR_BYTES * split, passes * output)
    if split == 1 and not g.fp32_workspace:
        return _Traffic(l2_load, dram_load, output, output)
    # fp32 workspace: written by the GEMM, read by the reduction (or, unsplit, by the conversion to the output type)
    partials = split * g.batch * g.M * g.N * _ACC_BYTES
    spilled = partials if partials > l2_room else 0.0
    return _Traffic(l2_load, dram_load, partials, spilled, partials + output, spilled + output)


def _sm_macs_per_s(gpu: GpuSpec, g: Gemm, precision: Precision, tile: Tile, together: int,
                   cal: Calibration) -> float:
    """Dense-equivalent MACs/s one SM sustains on this tile with ``together`` CTAs resident."""
    tensor = gpu.uses_tensor_cores(precision)
    efficiency = cal.tensor_efficiency if tensor else cal.simt_efficiency
    rate = gpu.sustained_peak(precision) / 2 / gpu.sms * efficiency
    if _structured(gpu, g, precision):
        rate *= STRUCTURED_MATH_SPEEDUP
    # Latency hiding scales with the FP32 lanes to keep busy: ``warps_per_scheduler`` warps per 32 lanes
    # (one Pascal scheduler's worth; a Volta+ scheduler feeds 16 lanes, so an FFMA holds it two cycles
    # and half as many warps hide the same latency).
    rate *= min(1.0, together * tile.threads / 32 / (cal.warps_per_scheduler * gpu.fp32_lanes_per_sm / 32))
    if g.algorithm == "winograd_fused":
        rate *= cal.winograd_fused_efficiency
    elif g.algorithm.startswith("winograd"):
        rate *= cal.winograd_efficiency
    gather = _gather_ops_per_mac(g, tile, cal)
    if not tensor:  # gather arithmetic shares the SIMT issue slots: ops × (m + n)·k per m·n·k MACs
        return rate / (1 + gather)
    # Tensor cores: the MMAs and the gather's integer instructions run on separate pipes and overlap;
    # the INT32 lanes bound the main loop when a tile gathers more operand addresses than they issue
    # (per element on cuDNN 7's NCHW kernels: DeepBench's T4 fp16 wgrads run 1.3–3× slower than the
    # fprop of the same GEMM; per 16-byte vector on cuDNN 8's NHWC kernels, ``Gemm.gather_width``).
    int_ops_per_s = INT32_LANES_PER_SM * gpu.sm_clock_hz * g.gather_width
    return min(rate, int_ops_per_s / gather) if gather > 0 else rate


# INT32 lanes per SM on the tensor-core generations: 16 per SM sub-partition, 4 sub-partitions (NVIDIA's
# Volta V100, Turing TU102, Ampere GA100 and Hopper GH100 architecture whitepapers: "16 INT32 units" per
# processing block; Volta first split them from the FP32 lanes).
INT32_LANES_PER_SM = 64




def _gather_ops_per_mac(g: Gemm, tile: Tile, cal: Calibration) -> float:
    """Integer instructions per MAC spent gathering the operands of one tile.

    Per main-loop step a tile loads m·k elements of A and n·k of B for m·n·k MACs, so A's decodes cost
    ``ops / n`` per MAC and B's ``ops / m``. In wgrad (A = dY, B = im2col(X)) the code divides A's term by
    ``gather_reuse`` (the filter's R·S taps, at most the tile's n) and charges B's in full:
    ``wgrad_index_ops · (1/m + 1/(n · reuse))`` [assumption, fitted: physically the taps share the decodes
    of B, the im2col operand (``Gemm.gather_reuse``), i.e. ``1/(m · reuse) + 1/n``; that placement, refitted
    over ``wgrad_index_ops`` 12–32, leaves a DeepBench wgrad sheet above 20 % at every value (T4 fp32 22.2 %
    at 20), and a cheaper dY decode is worse on every sheet (docs/gpu_model.md §5, Session 13 (mwgrad)).
    What the fitted placement stands for is open: it penalises tiles narrow along M (K ≤ 64 output
    channels), which the T4 and GP102 sheets want and the Maxwell and P100 sheets do not].
    """
    transform = g.transform_ops[0] / tile.n + g.transform_ops[1] / tile.m + g.output_ops / g.K
    if not g.gathered:  # explicit GEMM on transformed tensors: plain strided loads
        return transform
    if g.phase != "wgrad":
        return transform + cal.index_ops * (1 / tile.m + 1 / tile.n)
    return transform + cal.wgrad_index_ops * (1 / tile.m + 1 / (tile.n * min(g.gather_reuse, tile.n)))


def _structured(gpu: GpuSpec, g: Gemm, precision: Precision) -> bool:
    """True when the GEMM's 2:4 B runs on sparse tensor cores (otherwise its zeros are multiplied)."""
    return g.structured and gpu.sparse_tensor_cores and gpu.uses_tensor_cores(precision)


def run_precision(gpu: GpuSpec, g: Gemm, precision: Precision) -> Precision:
    """The precision the GEMM's kernel computes at: a tensor-core precision falls back to the SIMT
    kernel of the same storage (``fp16_pseudo``: fp16 data, fp32 math; tf32 → fp32) when the
    formulation cannot use tensor cores (``Gemm.simt_only``). A true-half (``GpuSpec.true_half``) wgrad runs
    at the half2 rate like fprop and dgrad; what makes its implicit GEMM slower than the fp32 one is a kernel
    launch per output row (``menus.true_half_wgrad``), not fp32 accumulation."""
    if g.simt_only and gpu.uses_tensor_cores(precision):
        return "fp32" if PRECISIONS[precision][0] == 4 else "fp16_pseudo"
    return precision


def side_kernel_s(gpu: GpuSpec, k: SideKernel, operand_bytes: int, cal: Calibration = CALIBRATION) -> float:
    """One transform kernel: DRAM-bound or SIMT-bound, whichever is slower, plus its launch."""
    simt_flops_per_s = gpu.sustained_peak("fp32") * cal.simt_efficiency
    return max(k.elements * operand_bytes / gpu.dram_bytes_per_s, k.flops / simt_flops_per_s) + cal.launch_overhead_s


def plan_gemm(gpu: GpuSpec, g: Gemm, precision: Precision, tile: Tile, split: int,
              cal: Calibration = CALIBRATION) -> Plan | None:
    """Predict one (tile, split-K) plan; None when the tile does not fit on an SM.

    ``precision`` is the caller's; the kernel runs at ``run_precision`` (``Plan.precision``). A GEMM issued as
    ``Gemm.passes`` kernels pays ``passes − 1`` launches more.
    """
    precision = run_precision(gpu, g, precision)
    ob = PRECISIONS[precision][0]
    resident = ctas_per_sm(gpu, tile, ob)
    if resident == 0:
        return None
    k_slice = math.ceil(math.ceil(g.k_padded(tile.k) / split) / tile.k) * tile.k
    ctas = g.m_tiles(tile.m) * g.n_tiles(tile.n) * split * g.batch
    per_sm = math.ceil(ctas / gpu.sms)
    rate = _sm_macs_per_s(gpu, g, precision, tile, min(resident, per_sm), cal)
    smem_rate = SMEM_BYTES_PER_CLOCK * gpu.sm_clock_hz / max(1e-30, tile.smem_bytes_per_mac(ob))
    compute = per_sm * tile.m * tile.n * k_slice / min(rate, smem_rate)
    structured = _structured(gpu, g, precision)
    t = _traffic(gpu, g, tile, split, k_slice, ob, gpu.sms * resident, cal, structured)
    l2_bw, dram_bw = gpu.l2.bandwidth_gbs * 1e9, gpu.dram_bytes_per_s
    l2_s, dram_s = t.l2_load / l2_bw, t.dram_load / (dram_bw * wgrad_stream_efficiency(g, tile, ob, cal))
    store = max(t.store_l2 / l2_bw, t.store_dram / dram_bw)
    reduce = max(t.reduce_l2 / l2_bw, t.reduce_dram / dram_bw)
    launches = cal.kernels_per_call + (1 if (split > 1 or g.fp32_workspace) and not g.scatter else 0) + g.passes - 1
    side = sum(side_kernel_s(gpu, k, ob, cal) for k in g.side)
    time = max(compute, l2_s, dram_s) + store + reduce + launches * cal.launch_overhead_s + side
    return Plan(tile, split, precision, ctas, resident, ctas / (gpu.sms * resident), compute, l2_s, dram_s, store,
                reduce, launches + len(g.side), time, t.l2_load + t.store_l2 + t.reduce_l2,
                t.dram_load + t.store_dram + t.reduce_dram + sum(k.elements for k in g.side) * ob,
                ctas * tile.m * tile.n * k_slice // (2 if structured else 1), side)


def wgrad_stream_efficiency(g: Gemm, tile: Tile, operand_bytes: int, cal: Calibration = CALIBRATION) -> float:
    """Fraction of DRAM bandwidth a plan's main-loop operand reads reach: ``run / (run + overhead)`` for an
    implicit-GEMM wgrad on NCHW tensors, whose reads are runs of ``tile.k`` elements along the reduction
    (``Calibration.wgrad_run_overhead_bytes``); 1 otherwise. cuDNN 8's NHWC kernels (``gather_width`` > 1)
    read channel vectors, the tile's long side, and keep the full rate. cuDNN 7's tensor-core kernels read NHWC
    too (``menus.nhwc_wgrad_reduction``), so their ``tile.k``-element runs are not the layout's: the rate stays as a
    fitted stand-in for what slows DeepBench's T4 fp16 wgrads [assumption, fitted: the full rate, or runs of the
    tile's channel span, take that sheet's wgrad 13.6 → 18.1 / 16.0 %; docs/gpu_model.md §5, Session 13 (nhwc)]."""
    if g.phase != "wgrad" or not g.gathered or g.gather_width > 1:
        return 1.0
    run = tile.k * operand_bytes
    return run / (run + cal.wgrad_run_overhead_bytes)


def split_candidates(g: Gemm, tile: Tile, sms: int, cal: Calibration = CALIBRATION,
                     operand_bytes: int = 4) -> list[int]:
    """Split-K factors worth trying: powers of two while each slice keeps ≥ 4 main-loop steps.

    wgrad (small output, N·P·Q-long reduction) always may split; a convolution's fprop and dgrad
    never: cuDNN's forward kernels run one CTA per output tile (grid z = 1 in every forward kernel
    NeuSight recorded with cuDNN 8.9, public dataset ``trsharm25/NeuSight``; its 5×5-plane rows with
    C ≈ 900 run at the speed of one unsplit wave on A100, P100 and P4 alike), and so do its
    backward-data kernels [assumption, inferred from DeepBench: the split-K dgrad plans the model kept
    when an output's tiles left half of the SMs idle — its smallest outputs, 7×7 and 14×14 planes at
    N = 8 — predicted 0.38–0.80× the measured time on every sheet that had them (11 rows on P100,
    TITAN Xp, T4 fp32 and fp16), the same plans unsplit 0.61–1.17× (nine of them 0.76–1.17×); without them dgrad
    P100 25.9 → 25.0 %, TITAN Xp 23.1 → 22.9 %, T4 fp16 24.6 → 20.6 %, no other sheet moves; cuDNN's
    wgrad kernels carry the split in their names (``*_stridedB_splitK_*``), its dgrad kernels in public
    profiles (``dgrad2d_alg1_1``, ``dgrad_1x1_stride_2x2``) do not]. The exception is col2im
    (``Gemm.scatter``: BWD_DATA_ALGO_0, whose partial products cuDNN sums "using the atomic add operation",
    cuDNN API reference, ``cudnnConvolutionBwdDataAlgo_t``): its atomics already add partial sums, so it
    splits a small output like a GEMM layer (no DeepBench row moves either way).
    A GEMM layer's cuBLAS GEMM (``algorithm == "gemm"``, any phase) and col2im split when their output
    tiles, counted over all batched products, leave more than half of the SMs idle (cuBLAS picks split-K
    kernels for small outputs). A GEMM the library runs with a split-K kernel (``Gemm.split_kernel``: cuDNN's
    implicit-GEMM wgrad) splits at least ``Calibration.wgrad_min_split_k`` ways on the single-precision SIMT
    kernels (``operand_bytes`` 4), or as far as its reduction allows when that is less.
    """
    layer_gemm = g.algorithm == "gemm"
    if (g.phase == "fprop" or (g.phase == "dgrad" and not g.scatter)) and not layer_gemm:
        return [1]
    output_tiles = g.m_tiles(tile.m) * g.n_tiles(tile.n) * (g.batch if layer_gemm else 1)
    if (g.phase != "wgrad" or layer_gemm) and 2 * output_tiles >= sms:
        return [1]
    splits, s = [1], 2
    while s <= cal.max_split_k and g.K / s >= 4 * tile.k:
        splits.append(s)
        s *= 2
    if g.split_kernel and tile.fragment and operand_bytes == 4:  # cuDNN's `scudnn_*_splitK` wgrad kernels
        return [x for x in splits if x >= cal.wgrad_min_split_k] or splits[-1:]
    return splits


# The plane-sweeping true-half dgrad kernel (``gemm.dgrad_plane``, ``menus.true_half_plane``): a CTA per (image,
# channel) dX plane whose pixels follow one another, each costing a fixed latency plus its reduction as dependent
# FMA chains — one FMA per lane of one warp per FMA latency, 6 clocks on Pascal (Jia et al., "Dissecting the NVIDIA
# Volta GPU Architecture via Microbenchmarking", 2018, FFMA latency table) — and two such CTAs resident per SM
# [assumption: the per-pixel latency (≈ 53 ns at the P100's 1480 MHz) and the two CTAs per SM are read off
# DeepBench's P100 half dgrads of C = 1–32 (``menus.true_half_plane``)].
PLANE_PIXEL_CLOCKS = 80.0
PLANE_MACS_PER_CLOCK = 32 / 6
PLANE_CTAS_PER_SM = 2
PLANE_TILE = Tile(1, 1, 1, 32, 1, 1)


def plane_plan(gpu: GpuSpec, g: Gemm, precision: Precision, cal: Calibration = CALIBRATION) -> Plan:
    """The plan of a plane-sweeping dgrad (``g.M`` planes of ``g.N`` pixels, ``g.K`` MACs each): waves of
    ``PLANE_CTAS_PER_SM`` CTAs per SM, each ``g.N × (PLANE_PIXEL_CLOCKS + g.K / rate)`` clocks, or the layer's
    tensors streamed once through DRAM when that is slower, plus the call's launches. ``rate`` is
    ``PLANE_MACS_PER_CLOCK``, or a CTA's share of the SM's datasheet FMA rate at the precision when that is lower
    (an sm_61 GPU's fp16 runs at 1/64 of its fp32 rate)."""
    precision = run_precision(gpu, g, precision)
    slots = gpu.sms * PLANE_CTAS_PER_SM
    sm_macs_per_clock = gpu.peak(precision) / (2 * gpu.sms * gpu.clock_mhz * 1e6)
    rate = min(PLANE_MACS_PER_CLOCK, sm_macs_per_clock / PLANE_CTAS_PER_SM)
    compute = math.ceil(g.M / slots) * g.N * (PLANE_PIXEL_CLOCKS + g.K / rate) / gpu.sm_clock_hz
    dram = (g.a_unique + g.b_unique + g.c_unique) * PRECISIONS[precision][0]
    dram_s = dram / gpu.dram_bytes_per_s
    launches = cal.kernels_per_call
    time = max(compute, dram_s) + launches * cal.launch_overhead_s
    return Plan(PLANE_TILE, 1, precision, g.M, PLANE_CTAS_PER_SM, g.M / slots, compute, 0.0, dram_s, 0.0, 0.0,
                launches, time, dram, dram, g.M * g.N * g.K)


def candidate_plans(gpu: GpuSpec, g: Gemm, precision: Precision, cal: Calibration = CALIBRATION) -> list[Plan]:
    """Every (tile, split-K) plan the model considers for ``g`` on ``gpu`` (those whose tile fits an SM).

    Raises:
        AntsimError: the GPU lacks ``precision``.
    """
    gpu.peak(precision)  # one-line error for a precision the GPU lacks
    if g.algorithm == "plane":
        return [plane_plan(gpu, g, precision, cal)]
    if gpu.uses_tensor_cores(run_precision(gpu, g, precision)):
        tiles = tensor_tiles(gpu, g.tensor_shapes)
    elif g.algorithm in ("fft", "fft_tiling"):
        tiles = FFT_TILES
    elif g.algorithm == "winograd_fused":
        tiles = WINOGRAD_FUSED_TILES
    elif g.algorithm == "gemm" or (g.batch > 1 and not g.gathered):  # cuBLAS SGEMM (non-fused Winograd, GEMM layers)
        true_half = gpu.true_half(run_precision(gpu, g, precision))  # HGEMM: cuBLAS's half2 kernels
        tiles = hgemm_tiles(gpu) if true_half else sgemm_tiles(gpu)
    elif gpu.true_half(run_precision(gpu, g, precision)):  # half2 kernels: two accumulators per register along M
        tiles = HALF2_WGRAD_TILES if g.phase == "wgrad" else HALF2_TILES
    else:
        tiles = simt_tile_set(g.phase, g.algorithm)
    operand_bytes = PRECISIONS[run_precision(gpu, g, precision)][0]
    plans = [plan_gemm(gpu, g, precision, tile, split, cal)
             for tile in tiles for split in split_candidates(g, tile, gpu.sms, cal, operand_bytes)]
    return [p for p in plans if p is not None]


def best_plan(gpu: GpuSpec, g: Gemm, precision: Precision, cal: Calibration = CALIBRATION,
              keep: Callable[[Plan], bool] | None = None) -> Plan:
    """The fastest of ``candidate_plans`` (ties: fewer splits, then the larger tile), of those ``keep``
    accepts when given (a library heuristic's own tile choice, ``antsim.gpu.menus.heuristic_tile``).

    Raises:
        AntsimError: the GPU lacks ``precision``.
    """
    fitting = [p for p in candidate_plans(gpu, g, precision, cal) if keep is None or keep(p)]
    if not fitting:  # pragma: no cover - every builtin GPU fits the smallest tile
        raise ValueError(f"no tile fits on {gpu.name}")
    return min(fitting, key=lambda p: (p.time_s, p.split_k, -p.tile.m * p.tile.n))
