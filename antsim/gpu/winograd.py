"""Winograd convolutions F(m×m, r×r) as GEMMs: fused F(2×2, 3×3) and non-fused F(4×4, 3×3) / F(2×2, 5×5).

Winograd's minimal filtering (Lavin & Gray, CVPR 2016) computes an m×m output tile of an r×r
stride-1 convolution from an α×α input tile, α = m + r − 1, with α² element-wise products per
(input channel, output channel) instead of m²·r²: per output element α²/m² multiplies instead of r²
(F(2×2,3×3): 16/4 = 4 vs 9, 2.25× fewer; F(4×4,3×3): 36/16 = 2.25 vs 9, 4× fewer). Summed over input
channels, the products at each of the α² transform points form a GEMM, so one layer is α²
independent GEMMs of (tiles × Ci) · (Ci × Co) — a ``Gemm`` with ``batch = α²``.

* **Non-fused** (cuDNN ``WINOGRAD_NONFUSED``): separate kernels transform the input and the filter
  into a workspace, a batched GEMM multiplies them, a last kernel transforms the products back.
  The transforms are memory-bound ``SideKernel``s; the workspace holds the three transformed tensors.
* **Fused** (cuDNN ``WINOGRAD``): one kernel reads raw input tiles and filters, transforms them in
  registers and accumulates; no workspace, but the transforms' adds share the SIMT issue slots
  with the multiplies (``Gemm.transform_ops``); SIMT lanes only.

Phases (stride 1 only — a strided convolution has no Winograd form): fprop transforms X and W and
produces Y; dgrad is the stride-1 fprop of dY with the flipped filter (Ci = K, Co = C, output plane
H×W); wgrad correlates X tiles with dY tiles: α² GEMMs of (K × tiles) · (tiles × C), reduced over
the tiles, then an output transform to the r×r filter.
"""

from __future__ import annotations

import math

from antsim.gpu.gemm import Gemm, SideKernel
from antsim.vocabulary import Phase
from antsim.workloads.layers import Layer

# FP instructions per element of a 2-D Winograd transform (adds, plus the few constant multiplies),
# counted from the transform matrices of Lavin & Gray 2016: F(2×2,3×3)'s input transform Bᵀ d B is 8
# one-dimensional 4-point transforms of 4 adds each = 32 ops per 16 elements (2 per element); its
# filter transform G g Gᵀ is 7 one-dimensional 3→4 transforms of ~6 ops = 42 per 16 (≈ 2.6). The
# α = 6 transforms (F(4×4,3×3), F(2×2,5×5)) have denser matrices: ~12 ops per 6-point 1-D
# transform, 12 of them per 36 elements = 4 per element.
FUSED_INPUT_OPS = 2.0
FUSED_FILTER_OPS = 2.6
# Its output transform Aᵀ m A (α² = 16 accumulators → 2×2 outputs per tile and output channel): 6
# one-dimensional 4→2 transforms of 4 adds = 24 ops per (tile, output channel), run in-kernel.
FUSED_OUTPUT_OPS = 24.0
# The fused kernel's CTA: 32 output channels × 32 output tiles, all α² = 16 points, looping over the input
# channels, its 32 tiles a block of (images, tile rows, tile columns) in one of these shapes. Read off the
# kernel names and grids NeuSight recorded with cuDNN 8.9 (public dataset ``trsharm25/NeuSight``, column
# ``Kernels``, grid x/y/z): ``scudnn_winograd_128x128_…_tile148t`` runs grid (N·⌈K/32⌉, ⌈tiles_h/4⌉,
# ⌈tiles_w/8⌉), ``tile244n`` (N/2·⌈K/32⌉, ⌈tiles_h/4⌉, ⌈tiles_w/4⌉), ``tile424n`` and ``tile418n`` likewise
# with 4 images of 2×4 and 1×8 tiles. "128×128" is its 16 × 32 × 32 accumulators.
FUSED_BLOCKS = ((1, 4, 8), (2, 4, 4), (4, 2, 4), (4, 1, 8))
# The blocks of the cuDNN 5–7 fused kernels (``menus.FUSED_BLOCKS_GENERATION``): 8 tile columns wide only. Public
# profiles of those generations' kernels name ``maxwell_scudnn_winograd_128x128_ldg1_ldg4_tile148n_nt``,
# ``…_tile418n_nt`` and ``…_tile228n_nt`` (nvprof logs in GitHub ``kblomdahl/dream-go`` issue 25 and PaddlePaddle
# benchmark logs; (2, 2, 8): 2 images of 2×8 tiles) [assumption, inferred from DeepBench's cuDNN 5–7.6 sheets:
# their rows recorded as fused WINOGRAD fit the 8-wide blocks (fused-plan error 6–12 % on TITAN X Maxwell, M40,
# P100, GTX 1080 Ti) and not the 4-wide ``tile244``/``tile424`` of cuDNN 8.9 (18–23 %): a 7×7 plane's 4 tile
# columns pad to 8, so its N = 8 and N = 16 fprops take the time of 14×14 planes at N = 4 and 8 — TITAN X Maxwell
# 706 / 1193 µs against 1094 µs at 14×14, N = 8].
LEGACY_FUSED_BLOCKS = ((1, 4, 8), (4, 1, 8), (2, 2, 8))
NONFUSED_TRANSFORM_OPS = 4.0
# Input channels' worth of main loop each fused CTA spends outside its pipelined loop: the prologue that loads
# and transforms the first 8-channel slab of input tiles and filters (the fused tile's k step) before the
# double-buffered loop overlaps loads with products [assumption: one k step; with a fused efficiency of 0.9, 0 / 4 /
# 16 channels score within a point of 8 on every sheet; NeuSight's timed selection wants it (A100 17.0 → 15.9 %,
# P4 15.9 → 14.5 %): without it the fused plan undercuts the GEMM plans cuDNN 8.9 timed faster on small-C rows].
FUSED_PROLOGUE_CHANNELS = 8
FUSED_TILE = 2  # output tile m of the fused kernel: F(2×2, 3×3)
NONFUSED_ALPHA = 6  # α of the non-fused kernels: F(4×4, 3×3) and F(2×2, 5×5)


def eligible(layer: Layer, fused: bool) -> bool:
    """Winograd needs stride 1 and a square filter: 3×3 (fused, non-fused) or 5×5 (non-fused)."""
    if layer.stride_h != 1 or layer.stride_w != 1 or layer.R != layer.S:
        return False
    return layer.R == 3 if fused else layer.R in (3, 5) and layer.pad_h < layer.R and layer.pad_w < layer.R


def tiles(layer: Layer, phase: Phase, m: int) -> int:
    """m×m tiles covering the output plane of the phase (dgrad: dX's H×W; else Y's P×Q), all images."""
    rows, cols = (layer.H, layer.W) if phase == "dgrad" else (layer.P, layer.Q)
    return layer.N * math.ceil(rows / m) * math.ceil(cols / m)


def fused_tile_slots(layer: Layer, phase: Phase, blocks: tuple[tuple[int, int, int], ...] = FUSED_BLOCKS) -> int:
    """Output-tile slots the fused kernel computes: the tiles padded to whole CTA blocks, in the shape of
    ``blocks`` (the generation's, ``FUSED_BLOCKS`` or ``LEGACY_FUSED_BLOCKS``) that pads least (a plane edge or a
    batch not a multiple of the block wastes slots)."""
    rows, cols = (layer.H, layer.W) if phase == "dgrad" else (layer.P, layer.Q)
    tile_rows, tile_cols = math.ceil(rows / FUSED_TILE), math.ceil(cols / FUSED_TILE)
    return min(math.ceil(layer.N / n) * n * math.ceil(tile_rows / r) * r * math.ceil(tile_cols / c) * c
               for n, r, c in blocks)


def winograd_gemm(layer: Layer, phase: Phase, fused: bool,
                  blocks: tuple[tuple[int, int, int], ...] = FUSED_BLOCKS) -> Gemm:
    """The batched GEMM (with its transforms) of one Winograd formulation of ``phase``.

    Operand/element counts (``ob`` bytes each in the model): T = ``tiles``, α² GEMMs.
    Non-fused fprop/dgrad: α² GEMMs of M = T, N = Co, K = Ci; wgrad: M = K, N = C, K = T.
    Fused (fprop/dgrad): one GEMM of M = ``fused_tile_slots`` (in ``blocks``), N = Co, K = α²·(Ci +
    ``FUSED_PROLOGUE_CHANNELS``) — each CTA holds all α² points of its tiles, so its work is that of a 32×32 tile
    over an α²·Ci reduction plus its prologue.
    """
    r = layer.R
    m = FUSED_TILE if fused else NONFUSED_ALPHA - r + 1
    alpha2 = (m + r - 1) ** 2
    t = tiles(layer, phase, m)
    x = layer.N * layer.C * layer.H * layer.W
    y = layer.N * layer.K * layer.P * layer.Q
    w = layer.K * layer.C * r * r
    if phase == "wgrad":
        shape = (layer.K, layer.C, t)
        inputs = (("input transform", x, alpha2 * t * layer.C), ("dY transform", y, alpha2 * t * layer.K))
        output = ("filter output transform", alpha2 * layer.K * layer.C, w)
    else:
        ci, co = (layer.C, layer.K) if phase == "fprop" else (layer.K, layer.C)
        raw_in, raw_out = (x, y) if phase == "fprop" else (y, x)
        shape = (t, co, ci)
        inputs = (("input transform", raw_in, alpha2 * t * ci), ("filter transform", w, alpha2 * ci * co))
        output = ("output transform", alpha2 * t * co, raw_out)
    big_m, big_n, big_k = shape
    if fused:  # raw tiles and filters in, finished outputs out: only the layer's own tensors move
        a_raw, b_raw = inputs[0][1], inputs[1][1]
        return Gemm(fused_tile_slots(layer, phase, blocks), big_n, alpha2 * (big_k + FUSED_PROLOGUE_CHANNELS), a_raw,
                    b_raw, output[2], layer.macs, "winograd_fused", phase, simt_only=True,
                    transform_ops=(FUSED_INPUT_OPS, FUSED_FILTER_OPS), output_ops=FUSED_OUTPUT_OPS, algo="WINOGRAD")
    side = tuple(SideKernel(name, read + written, NONFUSED_TRANSFORM_OPS * written) for name, read, written in inputs)
    side += (SideKernel(output[0], output[1] + output[2], NONFUSED_TRANSFORM_OPS * output[1]),)
    return Gemm(big_m, big_n, big_k, inputs[0][2], inputs[1][2], output[1], layer.macs, "winograd_nonfused",
                phase, batch=alpha2, side=side, workspace=inputs[0][2] + inputs[1][2] + output[1],
                algo="WINOGRAD_NONFUSED")
