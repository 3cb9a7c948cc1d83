"""Kernel menus per library generation, tensor-core eligibility, and how a plan is selected.

A convolution call offers the library a menu of algorithms (cuDNN ``cudnnConvolution*Algo_t``);
which of them exist, and which run on tensor cores, depends on the library generation and the
precision. How one is picked depends on the caller:

* ``timed`` — every algorithm is timed and the fastest kept (``cudnn.benchmark = True`` in PyTorch,
  ``cudnnFind*``; NeuSight's data, ``antsim measure --device cuda``, what PyTorch users train
  with): the model keeps the fastest plan of the whole menu. The default.
* ``heuristic`` — the library's heuristics pick an algorithm family without timing
  (``cudnnGet*``; DeepBench): where the measurement records the forward algorithm the model keeps
  its family, otherwise the modelled rule ``heuristic_family``; within the family the fastest plan.

Menus (cuDNN API reference, ``cudnnConvolutionFwdAlgo_t`` / ``BwdDataAlgo_t`` / ``BwdFilterAlgo_t``):
cuDNN 5 introduced WINOGRAD (fused, 3×3) and 5.1 WINOGRAD_NONFUSED; FFT and FFT_TILING exist for
forward and backward-data since cuDNN 4, FFT for backward-filter since 4 and FFT_TILING for it
from cuDNN 7 [U]. Tensor-core kernels arrive with cuDNN 7 (Volta), TF32 with cuDNN 8 (Ampere).
The model's GEMM formulations map to the GEMM algorithms: fprop ``IMPLICIT_PRECOMP_GEMM``, dgrad
``ALGO_1`` (zero-inserted or per stride phase) and ``ALGO_0`` (col2im), wgrad
``ALGO_1``.
"""

from __future__ import annotations

from dataclasses import replace

from antsim.errors import AntsimError
from antsim.gpu import fft, winograd
from antsim.gpu.gemm import Gemm, dgrad_plane, narrow_strided_dgrad, phase_gemms, phased_for_any_c
from antsim.gpu.spec import PRECISIONS, GpuSpec
from antsim.gpu.tiles import CUDNN7_TENSOR_SHAPES, HALF2_TILES, Tile, simt_tile_set
from antsim.vocabulary import LIBRARIES as LIBRARIES  # re-exported: the library generations this menu knows
from antsim.vocabulary import SELECTIONS as SELECTIONS  # re-exported
from antsim.vocabulary import Library, Phase, Precision, Selection
from antsim.workloads.layers import Layer

DEFAULT_LIBRARY: Library = "cudnn8"
DEFAULT_SELECTION: Selection = "timed"
FAMILIES = ("gemm", "winograd", "fft")
# Formulation (``Gemm.algorithm``) → algorithm family.
FAMILY = {"implicit": "gemm", "phased": "gemm", "row_phased": "gemm", "col2im": "gemm", "plane": "gemm",
          "winograd_fused": "winograd",
          "winograd_nonfused": "winograd", "fft": "fft", "fft_tiling": "fft", "gemm": "gemm"}
# cuDNN's names of the GEMM formulations, per phase.
_GEMM_ALGO = {("fprop", "implicit"): "IMPLICIT_PRECOMP_GEMM", ("dgrad", "implicit"): "BWD_DATA_ALGO_1",
              ("dgrad", "phased"): "BWD_DATA_ALGO_1", ("dgrad", "row_phased"): "BWD_DATA_ALGO_1",
              ("dgrad", "col2im"): "BWD_DATA_ALGO_0",
              ("wgrad", "implicit"): "BWD_FILTER_ALGO_1"}
# Channel multiple a tensor-core kernel needs on the GEMM's C and K: 8 fp16/bf16 elements (16 B, one
# MMA row), 4 for TF32 (NVIDIA, "Programming Tensor Cores in CUDA 9" and the Deep Learning
# Performance guide's "Tensor Core Requirements": C and K multiples of 8 for FP16, of 4 for TF32).
TENSOR_CHANNEL_MULTIPLE = {"fp16": 8, "bf16": 8, "tf32": 4}


# The formulations whose cuDNN algorithms have tensor-core kernels: IMPLICIT_PRECOMP_GEMM (fprop),
# BWD_DATA_ALGO_1 (dgrad, zero-inserted or per stride phase), BWD_FILTER_ALGO_1 (wgrad) and the
# WINOGRAD_NONFUSED of each (cuDNN Developer Guide, "Tensor Core Operations", supported algorithms;
# DeepBench's conv_bench.cu: "Tensor Op math only supports IMPLICIT_PRECOMP_GEMM algorithm"). FFT,
# FFT_TILING, fused WINOGRAD and BWD_DATA_ALGO_0 (col2im) run their SIMT kernels at any precision.
TENSOR_CORE_FORMULATIONS = ("implicit", "phased", "winograd_nonfused")


# cuDNN 8's tensor-core convolution kernels run on NHWC tensors (NCHW input is transposed first) and
# gather one 16-byte vector of consecutive channels per address (NVIDIA Deep Learning Performance
# guide, "Convolutional Layers User's Guide": tensor cores need NHWC; CUTLASS implicit-GEMM iterators
# load 128-bit accesses); cuDNN 7's NCHW tensor-core kernels gather element by element [assumption].
NHWC_VECTOR_GENERATION = 8
VECTOR_BYTES = 16


def _release(library: str) -> tuple[int, int]:
    """(major, minor) of a library label: ``cudnn7`` → (7, 0), ``cudnn7.6`` → (7, 6)."""
    if library not in LIBRARIES:
        raise AntsimError(f"library: unknown {library!r}; known: {', '.join(LIBRARIES)}")
    major, _, minor = library.removeprefix("cudnn").partition(".")
    return int(major), int(minor or 0)


def _generation(library: str) -> int:
    return _release(library)[0]


# First cuDNN release whose strided backward-data kernels skip the inserted zeros whatever the channel count and
# the reduction: cuDNN 7.4.1 enhanced "the strided convolution in cudnnConvolutionBackwardData()" for FLOAT_CONFIG
# and the half configs, "further enhanced" for strides below the filter (cuDNN 7.4.1 release notes,
# https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn_765/cudnn-release-notes/rel_741.html; the note names
# NHWC filters). ``cudnn7`` stands for the releases before it (7.0–7.4.0), ``cudnn7.6`` for 7.4.1–7.6.x. From it
# on the SIMT (NCHW) menu has the stride-phase dgrad below ``gemm.PHASED_MIN_C`` too (``phased_for_any_c``) and the
# heuristics run the row-phased dgrad of a filter smaller than its stride at any K (``row_phased_by_heuristic``)
# [assumption, inferred from DeepBench's T4 fp32 sheet (cuDNN 7.6.2, NCHW tensors and filters,
# baidu-research/DeepBench code/nvidia/conv_bench.cu): its DeepSpeech 5×10 stride-2 C = 32 dgrad takes 1.15× its
# fprop at N = 32, where the cuDNN 5–7.0 sheets take 4.1–5.1× (the zero-inserted GEMM's 4×), and its 1×1
# stride-2 dgrads with K ≤ 256 run 1.2–1.7× faster than the zero-inserted GEMM predicts — the C = 64 → 256 pair
# 1.54–1.67×, beyond the cuDNN 5–7.0 sheets' 1.03–1.46×; the C ≥ 256 ones 1.20–1.27×, inside their 0.88–1.32×
# (``ROW_PHASED_MIN_K``), so the row-phased half rests on one layer. T4 fp32 dgrad 25.9 → 23.4 % (24.0 % with the
# stride-phase half alone); no other sheet is cuDNN ≥ 7.4.1, none moves].
STRIDED_DGRAD_RELEASE = (7, 4)


def skips_strided_zeros(library: str) -> bool:
    """True when the library's strided dgrad kernels skip inserted zeros at any C and K (``STRIDED_DGRAD_RELEASE``)."""
    return _release(library) >= STRIDED_DGRAD_RELEASE


def check_library(gpu: GpuSpec, precision: Precision, library: Library) -> None:
    """One-line error for an unknown library or a precision the library lacks on this GPU.

    Raises:
        AntsimError: unknown library; tf32 before cuDNN 8; bf16 before cuDNN 8 (both arrived with Ampere).
    """
    generation = _generation(library)
    if precision in ("tf32", "bf16") and generation < 8 and gpu.uses_tensor_cores(precision):
        raise AntsimError(f"library {library}: precision {precision!r} needs cudnn8 (TF32/BF16 arrived with cuDNN 8)")


def check_selection(selection: str) -> None:
    """Raises AntsimError for an unknown selection mode."""
    if selection not in SELECTIONS:
        raise AntsimError(f"selection: unknown {selection!r}; known: {', '.join(SELECTIONS)}")


def tensor_core_eligible(gpu: GpuSpec, layer: Layer, precision: Precision, library: Library,
                         phase: Phase = "fprop") -> bool:
    """True when the library runs this convolution's GEMMs (of ``phase``) on tensor cores.

    Needs a tensor-core precision on a tensor-core GPU, cuDNN ≥ 7, and C and K multiples of
    ``TENSOR_CHANNEL_MULTIPLE`` (an input layer with C = 3 runs the SIMT kernel); dgrad and wgrad
    also need the padding inside the filter (``backward_padding_ok``); cuDNN 7's kernels need a filter of at
    most ``CUDNN7_TENSOR_MAX_TAPS`` taps (``cudnn7_tensor_filter_ok``).
    """
    if not gpu.uses_tensor_cores(precision) or _generation(library) < 7:
        return False
    if phase != "fprop" and not backward_padding_ok(layer):
        return False
    if _generation(library) < NHWC_VECTOR_GENERATION and not cudnn7_tensor_filter_ok(layer):
        return False
    multiple = TENSOR_CHANNEL_MULTIPLE.get(precision, 8)
    return layer.C % multiple == 0 and layer.K % multiple == 0


# Most filter taps (R·S) cuDNN 7's tensor-core convolution kernels run; a larger filter runs the SIMT kernel of the
# same storage in every phase [assumption, inferred from DeepBench's T4 fp16 sheet (cuDNN 7.6), whose one such layer,
# DeepSpeech's 5×20 stride-2 input layer (100 taps, C = 1 padded to 8, K = 32), runs fprop at 0.74–0.99× and wgrad at
# 0.82–0.90× of the SIMT plans' time, where the tensor-core plans (one-tap slabs, ``_cudnn7_tensor_kernel``) predict
# 1.35–1.80× and 3.6–3.9×, while its 49-tap (7×7 stride 2, C = 8) and 50-tap (5×10 stride 2, C = 32) layers run at the
# tensor-core plans' speed (wgrad 0.97–1.03×); NVIDIA's OpenSeq2Seq DeepSpeech2 fp16 profile on a V100 with cuDNN 7
# (GitHub ``NVIDIA/OpenSeq2Seq`` issue 270), whose 11×21 and 11×41 filters have 231 and 451 taps, runs their dgrad with
# the SIMT kernel ``cudnn::detail::dgrad2d_alg1_1<__half, …>``. The sheets' filters have 1, 9, 25, 49, 50 or 100 taps,
# so any bound in [50, 100) reads the same.]
CUDNN7_TENSOR_MAX_TAPS = 64


def cudnn7_tensor_filter_ok(layer: Layer) -> bool:
    """True when cuDNN 7's tensor-core kernels run a filter of this size (at most ``CUDNN7_TENSOR_MAX_TAPS`` taps)."""
    return layer.R * layer.S <= CUDNN7_TENSOR_MAX_TAPS


def backward_padding_ok(layer: Layer) -> bool:
    """True when the padding is smaller than the filter along both axes (pad < R and pad < S).

    Backward data is the forward convolution of dY with the flipped filter at padding R − 1 − pad
    (and wgrad correlates X with dY over the same window), which is negative when pad ≥ R: a
    forward-style tensor-core kernel has no such window, so the layer runs the SIMT kernel
    [assumption, inferred from DeepBench's T4 fp16 sheet (cuDNN 7.6): its 1×1 stride-2 pad-3 layer
    (C = 2048, K = 512, 7×7) runs fprop on tensor cores (56–65 µs) but dgrad and wgrad at the fp32
    kernels' speed on the same card (429 vs 373 µs and 256 vs 231 µs at N = 8)].
    """
    return layer.pad_h < layer.R and layer.pad_w < layer.S


def _split_kernel(layer: Layer, phase: Phase, g: Gemm) -> bool:
    """True when the library runs the GEMM with a split-K kernel (``Gemm.split_kernel``): cuDNN's implicit-GEMM
    wgrad, whose single-precision SIMT kernels all carry ``splitK`` in their names
    (``maxwell_scudnn_128x128_stridedB_splitK_interior_nn``, ``turing_scudnn_128x32_stridedB_splitK_small_nn_v1``,
    ``ampere_scudnn_128x64_stridedB_splitK_small_nn_v1`` in public TensorFlow profiles), unless the padding
    reaches the filter (``backward_padding_ok``): that window has no implicit GEMM, and DeepBench's one such
    layer (1×1 stride 2 pad 3, C = 2048, K = 512, 7×7) shows no split workspace — 2·t(N = 8) − t(N = 16) is
    5–25 B per weight at datasheet DRAM bandwidth on every sheet, against 59–94 B for the pad-0 1×1 layers of
    the same C·K and N·P·Q [assumption, read off DeepBench]."""
    return phase == "wgrad" and g.algorithm == "implicit" and backward_padding_ok(layer)


# First library generation whose fused Winograd kernels come in the 4-tile-wide CTA blocks (``tile244``,
# ``tile424``) besides the 8-wide ones: NeuSight's cuDNN 8.9 records (``winograd.FUSED_BLOCKS``); cuDNN 5–7 run the
# 8-wide blocks only (``winograd.LEGACY_FUSED_BLOCKS``) [assumption, inferred from DeepBench's cuDNN 5–7.6 sheets].
FUSED_BLOCKS_GENERATION = 8


def formulations(gpu: GpuSpec, layer: Layer, phase: Phase, precision: Precision,
                 library: Library = DEFAULT_LIBRARY) -> list[Gemm]:
    """Every formulation of the library's menu for this (layer, phase), with its cuDNN name.

    GEMM formulations always (``gemm.phase_gemms``, on every generation); Winograd fused (3×3, stride 1)
    and non-fused (3×3; 5×5 from cuDNN 7); FFT and FFT_TILING (stride 1; FFT_TILING wgrad from
    cuDNN 7). A formulation that cannot use tensor cores here is marked ``simt_only``.
    """
    generation = _generation(library)
    # The stride-phase dgrad is not a cuDNN 7 addition: DeepBench's cuDNN 5 (TITAN X Maxwell, M40) and
    # cuDNN 6 (GTX 1080 Ti) sheets run the Speaker-ID 5×5 stride-2 dgrads (C = 64–256) 1.7–3.4× faster
    # than the zero-inserted GEMM allows, at the stride-phase GEMM's speed (0.6–1.2× of it).
    gemms = list(phase_gemms(layer, phase))
    if skips_strided_zeros(library):  # cuDNN ≥ 7.4.1: the stride-phase dgrad at any C on every kernel family
        gemms[1:1] = phased_for_any_c(layer, phase)
    gemms = [replace(g, algo=_GEMM_ALGO[phase, g.algorithm], split_kernel=_split_kernel(layer, phase, g))
             for g in gemms]
    if winograd.eligible(layer, fused=True) and phase != "wgrad":  # BWD_FILTER_ALGO_WINOGRAD: not supported [U]
        blocks = winograd.FUSED_BLOCKS if generation >= FUSED_BLOCKS_GENERATION else winograd.LEGACY_FUSED_BLOCKS
        gemms.append(winograd.winograd_gemm(layer, phase, fused=True, blocks=blocks))
    if winograd.eligible(layer, fused=False) and (layer.R == 3 or generation >= 7):
        gemms.append(winograd.winograd_gemm(layer, phase, fused=False))
    if fft.eligible(layer, tiled=False):
        gemms.append(fft.fft_gemm(layer, phase, tiled=False))
    if fft.eligible(layer, tiled=True) and (phase != "wgrad" or generation >= 7):
        gemms.append(fft.fft_gemm(layer, phase, tiled=True))
    if gpu.true_half(precision):  # (a layer whose only formulation lacks a true-half kernel keeps it)
        narrow = layer.R != 3 or min(layer.C, layer.K) < TRUE_HALF_WINOGRAD_MIN_CHANNELS  # its 5×5: no TRUE_HALF
        gemms = [g for g in gemms if g.algorithm not in NOT_TRUE_HALF
                 and not (g.algorithm == "winograd_nonfused" and narrow)] or gemms
    if gpu.true_half(precision) and generation <= TRUE_HALF_LAUNCH_GENERATION:
        per_position = true_half_wgrad if phase == "wgrad" else true_half_dgrad if phase == "dgrad" else None
        gemms = [per_position(g, layer) for g in gemms] if per_position else gemms
        if phase == "dgrad" and true_half_plane(layer):
            gemms = [dgrad_plane(layer)]
    gemms = [nonfused_winograd_blocks(g, layer) for g in gemms]
    if not tensor_core_eligible(gpu, layer, precision, library, phase):
        return [replace(g, simt_only=True) for g in gemms]
    if not skips_strided_zeros(library):  # (already on the menu from 7.4.1 on)
        gemms[1:1] = [replace(g, algo=_GEMM_ALGO[phase, g.algorithm]) for g in phased_for_any_c(layer, phase)]
    gemms = [g if g.algorithm in TENSOR_CORE_FORMULATIONS else replace(g, simt_only=True) for g in gemms]
    if generation >= NHWC_VECTOR_GENERATION:
        width = VECTOR_BYTES // PRECISIONS[precision][0]
        gemms = [replace(g, gather_width=width) if g.gathered else g for g in gemms]
        return [nhwc_wgrad_reduction(g) for g in gemms]
    return [nhwc_wgrad_reduction(_cudnn7_tensor_kernel(g, layer)) if g.gathered and not g.simt_only else g
            for g in gemms]


def nhwc_wgrad_reduction(g: Gemm) -> Gemm:
    """A tensor-core implicit-GEMM wgrad as the NHWC kernels run it: its N·P·Q reduction is one flat axis of pixels
    (``Gemm.k_slabs`` = 1), not one slab per image.

    cuDNN's tensor-core convolution kernels read NHWC tensors, cuDNN 7's as well as cuDNN 8's. The cuDNN 7-style
    tensor-core kernel names in public profiles carry ``nhwc`` and 8-element (16-byte) loads, ``ldg8``: e.g. the wgrad
    kernel ``turing_s1688cudnn_fp16_128x128_ldg8_wgrad_idx_exp_interior_nhwc_nt_v1`` in an MXNet fp16 profile on a
    Turing GPU (GitHub ``apache/mxnet`` issue 17665, 2020; its cuDNN release is not stated), which runs after
    ``nchwToNhwcKernel`` has transposed the framework's NCHW tensors (also ``apache/mxnet`` issue 9774, Volta).
    DeepBench's tensor-core rows are NHWC tensors and filters (``conv_bench.cu``: ``CUDNN_TENSOR_NHWC`` for half
    data with tensor-op math). In NHWC consecutive pixels of the reduction are C elements apart within an image and
    across image boundaries alike, so the reason for ``gemm.implicit_gemm``'s per-image slabs (in NCHW an image's
    plane is the contiguous run and the next image is C·H·W elements away) does not hold, and a main-loop step may
    straddle two images. CUTLASS's NHWC wgrad does so: its dY iterator advances one flat GEMM-K index over N·P·Q by
    whole CTA-K tiles and splits it into (n, p, q) per access (GitHub ``NVIDIA/cutlass``, ``include/cutlass/conv/
    threadblock/conv2d_wgrad_output_gradient_tile_access_iterator_analytic.h``). [DeepBench's T4 fp16 sheet
    (cuDNN 7.6): wgrad 14.4 → 13.6 %, floor 10.2 → 8.8 %; its unsplit 1×1 wgrads of 7×7 outputs, whose 49 pixels
    per image padded to 64, 1.09–1.34× → 1.00–1.16× of the measured time; docs/gpu_model.md §5, Session 13 (nhwc).]
    The SIMT (NCHW) kernels keep the slabs. No constant."""
    if g.phase != "wgrad" or not g.gathered or g.simt_only:
        return g
    return replace(g, k_slabs=1)


# Formulations cuDNN has no TRUE_HALF_CONFIG kernel for (fp16 tensors and an fp16 compute type on a GPU
# without tensor cores, ``GpuSpec.true_half``): fused WINOGRAD, FFT and FFT_TILING support only
# PSEUDO_HALF_CONFIG and FLOAT_CONFIG, IMPLICIT_PRECOMP_GEMM and WINOGRAD_NONFUSED (3×3) every config (cuDNN
# 5.1 User Guide, cudnnConvolutionForward's "Data Type Config Support", as encoded in Theano's cuDNN checks,
# GitHub `Theano/Theano`, its cuDNN conv checks; its ``theano/gpuarray/cudnn_defs.py`` records for the forward,
# backward-data and backward-filter WINOGRAD_NONFUSED alike that a 5×5 filter has no TRUE_HALF_CONFIG, so
# ``formulations`` drops the non-fused 5×5 plans there), and BWD_DATA_ALGO_0 (col2im, a scatter-add into dX) none
# [assumption, inferred from DeepBench's P100 half sheet (cuDNN 7): with it on the menu the model runs 10 of
# its 94 dgrads with it at 0.03–0.37× the measured time; a scatter-add of single fp16 elements needs the scalar
# __half atomicAdd, which CUDA offers from compute capability 7.x (CUDA C++ Programming Guide, atomicAdd)]; nor
# the zero-skipping strided dgrads (per stride phase, per reached row): NVIDIA's cuDNN engineers said that
# true-half convolutions of strides other than 1 lacked the fast kernels (GitHub ``soumith/cudnn.torch``
# issue 225, 2016) [assumption, inferred from DeepBench's P100 half sheet (cuDNN 7): its 32 strided dgrads take
# 3.6–80× their fp32 rows' time, where its stride-1 dgrads take 0.76× (half2); without the zero-skipping plans
# dgrad 121.0 → 111.6 %, the Speaker-ID 5×5 stride-2 rows 0.21–0.76× → 0.57–2.1× of the measured time].
NOT_TRUE_HALF = ("winograd_fused", "fft", "fft_tiling", "col2im", "phased", "row_phased")
# Fewest channels (min(C, K)) with which a true-half (TRUE_HALF_CONFIG) convolution runs the non-fused 3×3 Winograd
# in any phase, the threshold ``WINOGRAD_WGRAD_MIN_CHANNELS`` sets for every precision's wgrad: below it each of the
# α² K × C products is under one 128-wide CTA tile [assumption, inferred from DeepBench's P100 half sheet (cuDNN 7):
# its C = 64 layers recorded ``WINOGRAD`` (a label with no TRUE_HALF kernel of its own, see above) run at the GEMM
# plan's time — fprop 0.86–1.31×, dgrad 0.84–1.08× on OCR, Face, Vision and Speaker-ID (the non-fused plan
# 0.57–1.00×) — while its C ≥ 128 ones run at the non-fused plan's (0.70–1.13×; the GEMM plan 1.3–5.2×); its
# GEMM-recorded C = 1–32 dgrads take 1.35–2.7× their fp32 rows' time, where the non-fused plan predicts 0.34–0.48×.
# The sheet has no layer between 64 and 128 channels, so any threshold in (64, 128] reads the same. On the fp32
# sheets the same threshold in fprop and dgrad costs T4 17.1 → 18.6 / 19.8 → 21.0 %, A100 15.5 → 16.0 %, P100 PCIe
# 12.2 → 13.0 %: their C = 64 layers run fused Winograd or the non-fused plan fits them (docs/gpu_model.md §5,
# Session 13 (halfwino))].
TRUE_HALF_WINOGRAD_MIN_CHANNELS = 128


# Last library generation whose true-half kernels issue a kernel per output position (``true_half_wgrad``,
# ``true_half_dgrad``): the rules are read off DeepBench's P100 half sheet, measured with cuDNN 7
# (docs/gpu_precision.md §2–3); no true-half measurement of cuDNN 8 exists to extend them to [assumption].
TRUE_HALF_LAUNCH_GENERATION = 7


def true_half_wgrad(g: Gemm, layer: Layer) -> Gemm:
    """A true-half (TRUE_HALF_CONFIG on a GPU without tensor cores) wgrad as cuDNN 7 runs it: the implicit GEMM
    (BWD_FILTER_ALGO_1) issues one kernel per output row (``Gemm.passes = P``), each reducing that row of every
    image at the half2 rate; the non-fused Winograd and the other formulations run as one call.

    [assumption, inferred from DeepBench's P100 half sheet (cuDNN 7): its 1×1 wgrads measured at both N = 8
    and 16 take a + b·N, b at the half2 rate, and an intercept a independent of C, K and the MACs: 5.4–9.4 µs
    per output row on all 11 stride-1 layers (C and K 64–2048; 0.75 ms at P = 112, 0.40 ms at 56, 0.21 ms at
    28, 0.11 ms at 14) and 5.4–10 µs on 7 of the 8 stride-2 ones — about one launch (5 µs, Lin et al.) per
    row — where the fp32 rows of the same layers have 0.2–1.1 µs per row at P ≥ 56. Before this rule the model
    read the slowness as fp32 accumulation (1×1 wgrads 1.1× the fp32 time) and ran every true-half wgrad at
    the fp32 rate, which made the 1×1 C or K = 64 rows 2× too fast and the C, K ≥ 128 3×3 and 5×5 ones (which
    run near the half2 rate) 1.7–2.2× too slow. NVIDIA's cuDNN engineers described true-half convolutions on
    Pascal as supported only "for some combinations of sizes", the others taking fallback paths (GitHub
    ``soumith/cudnn.torch`` issues 206 and 225, 2016). Wgrad P100 half 49.9 → 27.4 %, implicit rows 47.4 →
    22.7 %, plan-space floor 22.2 → 6.4 %; no other sheet or phase moves.]
    """
    return replace(g, passes=layer.P) if g.algorithm == "implicit" else g


# Images per block of cuDNN's non-fused Winograd products in fprop and dgrad, at every precision and generation
# (``nonfused_winograd_blocks``; a kernel grid read in a public profile and DeepBench's P100 half and T4 fp32 sheets).
WINOGRAD_BLOCK_IMAGES = 16


def nonfused_winograd_blocks(g: Gemm, layer: Layer) -> Gemm:
    """A non-fused Winograd fprop or dgrad as cuDNN runs it: its α² batched GEMMs cover the batch in blocks of
    ``WINOGRAD_BLOCK_IMAGES`` images, so their M (the tiles of all images) pads to whole blocks; the transform
    kernels handle the real images. Any other GEMM, and wgrad (whose reduction runs over the tiles), unchanged.

    Source: an Nsight Compute profile of cuDNN's NCHW fp32 non-fused Winograd on an RTX 2070 Super (sm_75, N = 10,
    56 × 56 tiles per image of a 224² plane, C = K = 128; kernyan.com, "Conv2D GPU Baselines: cuDNN and CUTLASS
    Performance and Analysis (Part 2)", 2025, appendix) launches ``volta_sgemm_128x64_nn`` on a (392, 2, 36) grid:
    36 = α² of F(4×4, 3×3), 2 × 64 = K, and 392 × 128 = 16 × 3136 rows, i.e. sixteen images' tiles for a
    ten-image call. [assumption, inferred from DeepBench, that cuDNN 7 blocks the same way: on the P100 half sheet
    (true half) the 3×3 Winograd-forward layers with C ≥ 128 take t16 / t8 = 1.006–1.035 in fprop and dgrad; on
    the T4 fp32 sheet (cuDNN 7.6) its six 3×3 WINOGRAD_NONFUSED layers (C ≥ 128) take t16 / t8 = 1.11–1.32 in
    fprop and 0.96–1.27 in dgrad, where the unpadded plan predicted 1.50–1.96 and the blocks predict 1.06–1.27
    (their N = 8 rows 0.55–0.84× → 0.90–1.25× the measured time; T4 fp32 fprop 20.1 → 17.5 %, dgrad 23.6 →
    19.2 %); the C = 64 layers, whose transforms (real images) outweigh their products, grow 1.5–2.1×. Applied on
    every generation with ``Calibration.winograd_efficiency`` 0.7 (fitted; see there): NeuSight's cuDNN 8.9 rows
    then read A100 15.5, P100 PCIe 12.2, P4 14.0 % (gated at cuDNN ≤ 7 with 0.65: 15.9 / 12.0 / 14.5 %);
    docs/gpu_model.md §5, Session 13 (lead).]
    """
    if g.algorithm != "winograd_nonfused" or g.phase == "wgrad":
        return g
    blocks = -(-layer.N // WINOGRAD_BLOCK_IMAGES)
    return replace(g, M=g.M // layer.N * blocks * WINOGRAD_BLOCK_IMAGES)


def true_half_plane(layer: Layer) -> bool:
    """True when cuDNN 7 runs a true-half dgrad as one CTA per (image, input channel) dX plane
    (``gemm.dgrad_plane``, timed by ``model.plane_plan``): a strided layer whose filter reaches every stride phase
    and whose C is below the stride-phase kernels' ``PHASED_MIN_C`` (the DeepSpeech, Speaker-ID and strided input
    layers of C = 1–32).

    [assumption, inferred from DeepBench's P100 half sheet (cuDNN 7): the 5×20 stride-2 C = 1 DeepSpeech dgrad takes
    16.73 / 16.79 / 16.87 / 16.90 ms at N = 4 / 8 / 16 / 32 — flat, as long as N·C planes fit on the 56 SMs — where
    the zero-inserted GEMM the model ran before grows 8× (0.71–5.57× of the measured time); the other C ≤ 3 layers
    (3×3 and 7×7 stride 2, C = 3; 5×5 stride 2, C = 1: N·C = 16–48 < 56) take H·W × (≈ 53 ns + K × reached taps ×
    0.127 ns) at any N, i.e. one plane per CTA swept pixel by pixel, and the C = 32 DeepSpeech 5×10 stride-2 dgrad
    (N·C = 128–1024 planes) grows with the waves of two such CTAs per SM (0.98–1.28×); its C ≥ 64 Speaker-ID
    layers do not follow it (2–3.5× too slow), the stride-phase regime of ``PHASED_MIN_C``. True-half convolutions
    of strides other than 1 lacked the fast kernels (NVIDIA in GitHub ``soumith/cudnn.torch`` issue 225, 2016).]
    """
    return narrow_strided_dgrad(layer)


def true_half_dgrad(g: Gemm, layer: Layer) -> Gemm:
    """A true-half dgrad as cuDNN 7 runs it: when the filter is smaller than the stride (a 1×1 stride-2 layer,
    whose dX rows and columns between the strided ones receive no tap) the zero-inserted implicit GEMM issues
    one kernel per dX pixel (``Gemm.passes = H·W``), and so does col2im where it is the layer's only GEMM (the
    padding reaches the filter, ``gemm.phase_gemms``); any other formulation runs as one call.

    [assumption, inferred from DeepBench's P100 half sheet (cuDNN 7): 13 of its sixteen 1×1 stride-2 pad-0 dgrads
    take 2.7–6.2 µs per dX pixel whatever C (64–1024), K (128–1024) and N (8, 16) — 3.60 / 3.62 / 4.01 ms at
    28×28, N = 8, for C, K = 128, 512 / 512, 256 / 512, 1024; 0.84–0.89 ms at 14×14 — and the three with the most
    work per pixel (C = 1024 at 14×14) 7.0–13.6 µs; 3.6–79× their fp32 rows' time (cuDNN has a dedicated kernel
    for the case, ``dgrad_1x1_stride_2x2``, in the cuDNN kernel list of GitHub ``NVIDIA/apex``'s pyprof); one 5 µs
    launch (Lin et al.) per pixel plus the half2 work predicts 0.72–1.87× of them. The same reading (a kernel per
    output position) as ``true_half_wgrad``'s per row; true-half convolutions of strides other than 1 had no fast
    kernels (NVIDIA in GitHub ``soumith/cudnn.torch`` issue 225, 2016). Dgrad P100 half 111.6 → 39.8 %; no other sheet
    moves. Session 12: the 1×1 stride-2 pad-3 layer (C = 2048, K = 512, 7×7), whose negative window leaves col2im
    as its only GEMM, is the same filter-below-stride shape: one kernel per dX pixel takes its two rows from 0.15 /
    0.18× to 0.36 / 0.32× of the measured 1.14 / 1.74 ms (23–35 µs per pixel, above the pad-0 layers' 2.7–13.6:
    not all explained); dgrad P100 half 39.7 → 37.6 % (docs/gpu_precision.md §7). Strided layers whose
    filter reaches every stride phase (5×5, 3×3 and 7×7 at stride 2) do not follow it (it would predict 563 ms
    for the 5×20 stride-2 DeepSpeech layer, measured 16.8 ms): those of C < 64 run ``true_half_plane``'s kernel,
    the others stay unmodelled (docs/gpu_precision.md §6–7).]
    """
    if g.algorithm in ("implicit", "col2im") and (layer.R < layer.stride_h or layer.S < layer.stride_w):
        return replace(g, passes=layer.H * layer.W)
    return g


def _cudnn7_tensor_kernel(g: Gemm, layer: Layer) -> Gemm:
    """A gathered GEMM as cuDNN 7's tensor-core kernels run it: the two big tiles only
    (``tiles.CUDNN7_TENSOR_SHAPES``) and the (r, s, channel) dimension tiled one filter tap at a time —
    wgrad's N = (r, s, c) in slabs of C columns, the reduction (r, s, c) of fprop and (r, s, k) of dgrad
    in slabs of C or K — so the channel count pads per tap to the tile's extent along that dimension
    (128 columns, a 32-deep k step).

    The tap slabs are an [assumption, inferred from DeepBench's T4 fp16 rows (NHWC tensors,
    baidu-research/DeepBench code/nvidia/conv_bench.cu)]: below C = 128 their wgrad time does not fall
    with C — before this rule the 3×3 rows of C = 64, 32, 16 ran 0.55, 0.31, 0.27× the speed of dense
    128-wide tiles, those of C = 128–512 0.75–0.85× — and their padded C = 8 input layers' fprop ran
    0.44–0.74× the dense speed. No free constant: a slab pads to the tile's own extent; 1×1 layers (one
    tap) and channel counts that fill the tile are unaffected.

    Its wgrad keeps dW's fp32 accumulators in a workspace that a second kernel converts into the fp16 filter
    gradient, split or not (``Gemm.fp32_workspace``) [assumption, inferred from DeepBench's T4 fp16 sheet (cuDNN
    7.6): on the layers measured at N = 8 and 16 whose plan does not split K, 2·t(N = 8) − t(N = 16) — the time
    that does not scale with the work — is 44–149 µs for 0.6–2.4 M weights (3×3 C = 256–512, 1×1 C·K = 1–2 M),
    where the unsplit plan has 14–26 µs and one fp32 write and read of dW, an fp16 store and a launch give
    35–97 µs; those 3×3 and 5×5 C ≥ 256 wgrads ran 0.53–0.92× of the measured time, 0.80–1.09× with the pass.
    The same deterministic-workspace reading as the SIMT ``splitK`` kernels' floor (``Calibration.wgrad_min_split_k``),
    with one slice.]
    """
    taps = layer.R * layer.S if g.algorithm == "implicit" else g.K // layer.K if g.algorithm == "phased" else 1
    if g.phase == "wgrad":
        return replace(g, tensor_shapes=CUDNN7_TENSOR_SHAPES, n_slabs=taps, fp32_workspace=True)
    return replace(g, tensor_shapes=CUDNN7_TENSOR_SHAPES, k_slabs=taps)


def family_of(algo: str) -> str | None:
    """The family of a recorded cuDNN algorithm label (``IMPLICIT_PRECOMP_GEMM`` → gemm); None if unknown."""
    label = algo.upper()
    if "WINOGRAD" in label:
        return "winograd"
    if "FFT" in label:
        return "fft"
    if "GEMM" in label or "ALGO" in label:
        return "gemm"
    return None


# Smallest channel count for which the modelled cuDNN heuristic prefers Winograd on a 3×3 stride-1
# layer: every DeepBench 3×3 stride-1 layer with C and K ≥ 32 ran a Winograd forward kernel on the
# cuDNN 5–7.6 sheets except where FFT was chosen (deepbench/README.md data) [assumption: a threshold
# read off those sheets, not a published rule].
WINOGRAD_MIN_CHANNELS = 32


# First library generation whose heuristics run a Winograd-forward layer's weight gradient with
# WINOGRAD_NONFUSED too [assumption, from DeepBench: on the cuDNN 6–7.6 sheets (GTX 1080 Ti, P100,
# TITAN Xp, T4) such wgrads run faster than any GEMM plan — T4's 3×3 fp32 wgrads reach 10.5 TFLOP/s of
# direct-convolution work on an 8.1 TFLOP/s GPU — while on the cuDNN 5 sheets (TITAN X Maxwell, M40)
# they run at GEMM speed; cuDNN 5.1 introduced the non-fused backward-filter Winograd].
WINOGRAD_WGRAD_GENERATION = 6
# Smallest channel count (min(C, K)) for which those heuristics run a Winograd-forward layer's weight gradient
# with WINOGRAD_NONFUSED rather than the GEMM algorithm [assumption, read off DeepBench's cuDNN 6–7.6 sheets (P100,
# TITAN Xp, GTX 1080 Ti, T4): on their 30 Winograd-forward wgrads of C or K = 32–64 the non-fused Winograd plan
# predicts 0.39–0.91× the measured time and the GEMM plan 0.78–1.3× (1.7–2.0× on three rows: TITAN Xp's C = 64,
# K = 128 112×112 pair, T4's 5×5 K = 48), while those of C, K ≥ 128 run at the Winograd plan's time (bias
# 1.0–1.2); below 128 channels each of the α² K × C products is under one 128-wide CTA tile, so the transforms
# cost as much as the products; the sheets have no layer between 64 and 128 channels, so any threshold in
# (64, 128] reads the same].
WINOGRAD_WGRAD_MIN_CHANNELS = 128


# First library generation whose heuristics run an FFT-forward layer's weight gradient with FFT too: cuDNN 7
# added BWD_FILTER_ALGO_FFT_TILING (the menu above) [assumption, from DeepBench: on the cuDNN 7 sheets the
# FFT-forward wgrads (3×3 C = 128 on P100 and TITAN Xp, 5×5 C = 192 on T4) run 1.8–2.7× faster than the GEMM
# plan predicts, and the FFT plans predict 0.77–1.5× their time; on the cuDNN 5 and 6 sheets (TITAN X Maxwell,
# M40, GTX 1080 Ti) the FFT plans predict 1.3–5.2× the measured time, the GEMM plan 0.9–2.4×].
FFT_WGRAD_GENERATION = 7


# Phases whose heuristic Winograd plan is the variant (fused or non-fused) the record names. DeepBench records the
# forward algorithm cuDNN's heuristics chose, ``WINOGRAD`` or ``WINOGRAD_NONFUSED``; dgrad, the flipped stride-1
# convolution, follows it as it follows the family (its Winograd-forward dgrads take the fprop's time) [assumption,
# inferred from DeepBench: following the variant in dgrad too takes dgrad TITAN X Maxwell 17.3 → 14.0 %, M40 17.6 →
# 14.7 %, P100 21.0 → 20.3 %, T4 fp32 28.2 → 26.4 %; before session 12 the model ran the faster of both, which kept
# the non-fused plan on most rows recorded fused]. wgrad has no fused kernel.
FOLLOW_VARIANT_PHASES = ("fprop", "dgrad")


def winograd_variant(algo: str) -> str | None:
    """The Winograd formulation a recorded cuDNN algorithm label names (``WINOGRAD`` → fused,
    ``WINOGRAD_NONFUSED`` → non-fused); None for any other label."""
    label = algo.upper()
    if "WINOGRAD_NONFUSED" in label:
        return "winograd_nonfused"
    return "winograd_fused" if "WINOGRAD" in label else None


def dgrad_found(gemms: list[Gemm], phase: Phase, forward_algo: str = "") -> bool:
    """True when a recorded run's dgrad algorithm is its own search's, not the GEMM family: DeepBench's
    ``conv_bench.cu`` (GitHub ``baidu-research/DeepBench``, ``code/nvidia/conv_bench.cu``, ``USE_GET`` 0) picks each
    phase's algorithm with ``cudnnFind*Algorithm`` (the fastest of the algorithms it times;
    ``cudnnFindConvolutionBackwardDataAlgorithm`` for dgrad, which the record does not name), so a dgrad with any
    recorded forward runs dgrad's fastest family, each algorithm at its own kernel choice (``heuristic_tile``: the
    search picks among algorithms, not among an algorithm's kernels). dgrad's Winograd and FFT plans are the forward
    plans of the flipped stride-1 convolution. A Winograd forward keeps its named variant (``winograd_variant``).
    Not searched: runs without a record (cuDNN's heuristics) and tensor-op math (a GEMM formulation on tensor cores:
    ``conv_bench.cu`` sets BWD_DATA_ALGO_1 after the search, "Tensor Op math only supports this algorithm"). TRUE_HALF
    is searched like every other precision (session 13, halfwino): its menu's only transform, the non-fused 3×3
    Winograd, needs ``TRUE_HALF_WINOGRAD_MIN_CHANNELS`` there (``formulations``), which keeps the small-C layers
    whose true-half dgrads take 1.35–2.7× their fp32 rows on their GEMM.

    [assumption, inferred from DeepBench's fp32 sheets (cuDNN 5–7.6): GoogLeNet's 5×5 C = 192 → 32 28² dgrad takes
    0.57–0.72× its own GEMM-recorded fprop of the same 1.9 GMAC (P100: 10.4 TFLOP/s, 98 % of its peak), where the
    GEMM plan predicts 1.56–2.06× and the FFT_TILING plan 0.68–0.90×; the GEMM-recorded OCR 3×3 C = 16, 32 dgrads
    run at the fused-Winograd plan's time (0.84–1.01×; the GEMM plan 1.27–1.57×). dgrad, all rows: P100 19.8 → 18.7,
    TITAN Xp 19.2 → 17.2, GTX 1080 Ti 15.8 → 14.5, TITAN X Maxwell 13.8 → 12.1, M40 14.5 → 12.8, T4 fp32 23.6 →
    24.0 % (its one moved row, OCR C = 16, 1.07 → 0.71× on the fused Winograd plan, which runs too fast on the
    power-capped T4 as its Winograd fprops do).]
    """
    return phase == "dgrad" and bool(forward_algo) \
        and not any(g.algorithm == "implicit" and not g.simt_only for g in gemms)


def heuristic_formulations(gemms: list[Gemm], layer: Layer, phase: Phase, forward_algo: str = "",
                           library: Library = DEFAULT_LIBRARY) -> list[Gemm]:
    """The formulations of ``gemms`` the library's heuristics choose among: those of ``heuristic_family``
    (all of them when the family is not on the menu, or when a recorded run searched dgrad's algorithm itself,
    ``dgrad_found``), of a Winograd family only the variant the recorded
    forward algorithm names (``winograd_variant``; fprop and dgrad, ``FOLLOW_VARIANT_PHASES``), without the
    row-phased dgrad unless K ≥ ``ROW_PHASED_MIN_K`` or the library is cuDNN ≥ 7.4.1 (``row_phased_by_heuristic``)."""
    family = heuristic_family(layer, phase, forward_algo, library)
    kept = gemms if dgrad_found(gemms, phase, forward_algo) else \
        [g for g in gemms if FAMILY[g.algorithm] == family] or gemms
    variant = winograd_variant(forward_algo) if phase in FOLLOW_VARIANT_PHASES else None
    if family == "winograd" and variant is not None:
        kept = [g for g in kept if g.algorithm == variant] or kept
    return [g for g in kept if g.algorithm != "row_phased" or row_phased_by_heuristic(layer, library)]


# cuDNN's forward algorithm without the precomputed index buffer (``CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM``,
# API reference ``cudnnConvolutionFwdAlgo_t``): a kernel family of its own, whose tile choice the
# ``heuristic_tile`` rule (read off IMPLICIT_PRECOMP_GEMM rows) does not describe.
IMPLICIT_GEMM_ALGO = "IMPLICIT_GEMM"


def heuristic_tile(g: Gemm, tile: Tile, forward_algo: str = "") -> bool:
    """True when the library's heuristics would run ``tile`` for ``g``: for a SIMT implicit-GEMM fprop or dgrad
    (NCHW kernels, fp32 or half2), the narrowest tile of its tile set whose width covers the GEMM's N (fprop's
    output channels, dgrad's input channels; the widest tile when N is wider), whether or not its CTAs fill the
    SMs; any tile otherwise (wgrad, tensor-core, Winograd, FFT and cuBLAS kernels keep the fastest).

    [assumption, inferred from DeepBench (cuDNN 5–7): on P100 the 1×1 fprops of 7×7 planes with C = 2048,
    K = 512 take 0.46–0.49 ms whether N = 8 or 16 — the time of the 128×128 grid on half the SMs, twice what
    the 128×64 tiles filling all SMs would take — and on the P100 half sheet that of the 256×128 half2 tiles.
    fprop, all rows: P100 fp32 20.0 → 16.1 %, TITAN X Maxwell 20.4 → 16.3 %, M40 19.7 → 15.7 %, T4 fp32
    21.1 → 21.6 %, GTX 1080 Ti 15.7 → 15.8 %, TITAN Xp 17.6 → 19.1 %. dgrad's implicit GEMM is the same kernel
    family and its heuristic the same rule (session 10): dgrad, all rows, TITAN X Maxwell and M40 23.8 → 19.8 %,
    P100 24.6 → 23.3 %, T4 fp32 27.4 → 25.9 %, P100 half 145.9 → 121.0 %, T4 fp16 20.2 → 20.1 %, GTX 1080 Ti
    20.5 → 20.8 %, TITAN Xp 22.4 → 23.6 % (its implicit rows 19.3 → 20.8 %). ``timed`` keeps the fastest tile.]

    A forward the record names ``IMPLICIT_GEMM`` (``forward_algo``: cuDNN's ALGO_0, no precomputed index
    buffer) keeps any tile [assumption, inferred from DeepBench's T4 fp32 sheet (cuDNN 7.6), which records it
    on 37 fprops: its 1×1 layers of 7×7 and 14×14 planes take 1.6–1.9× longer at N = 16 than at N = 8
    (C = 512–2048, K = 512) where the rule's 128×128 grid leaves SMs idle at both batches and predicts the same
    time (ratios 1.5–1.9 at N = 8); the sheet's IMPLICIT_PRECOMP_GEMM rows fit the rule (14.9 %). T4 fp32's
    IMPLICIT_GEMM rows 24.6 → 19.5 %; fprop, all rows: T4 fp32 21.6 → 19.6 %, TITAN Xp 19.1 → 18.9 %, P100
    16.1 → 16.7 % (its two IMPLICIT_GEMM rows, K = 2048 at N = 8, 1.05 / 1.08 → 0.74 / 0.74), GTX 1080 Ti
    15.8 → 15.9 %, TITAN X Maxwell 16.3 → 16.4 %; the cuDNN 6–7 sheets record IMPLICIT_GEMM on 1–2 rows each].
    """
    tile_set = HALF2_TILES if tile.packed > 1 else simt_tile_set(g.phase, g.algorithm)
    if g.phase not in ("fprop", "dgrad") or not g.gathered or tile not in tile_set:
        return True
    if g.phase == "fprop" and forward_algo.upper() == IMPLICIT_GEMM_ALGO:
        return True
    widths = sorted({t.n for t in tile_set})
    return tile.n == min(n for n in widths if n >= min(g.N, widths[-1]))


# Shortest zero-inserted reduction (dY channels, K) for which cuDNN 5–7's heuristics run a 1×1 stride-2 dgrad with
# the row-phased kernel [assumption, read off DeepBench's six fp32 sheets (cuDNN 5–7.6), 12 rows per layer: with
# K ≥ 512 the zero-inserted GEMM predicts 1.35–2.8× the measured time of C = 512 → 1024 (28²), 1024 → 512 and
# 1024 → 2048 (14²), the row-phased one 0.80–1.43× (C = 128 → 512 and 256 → 1024 lie between the two); with
# K ≤ 256 the zero-inserted GEMM predicts 0.88–1.32× the measured time of C = 256 → 128 and 512 → 256, the
# row-phased one 0.58–0.80× (C = 64 → 256 lies between). The sheets' K take the values 128, 256, 512, 1024 and
# 2048, so any threshold in (256, 512] reads the same. It replaces the earlier K > C, which sent C = 1024 → 512
# (K = C/2) to the zero-inserted GEMM, 1.42–1.90× too slow on every sheet.]
ROW_PHASED_MIN_K = 512


def row_phased_by_heuristic(layer: Layer, library: Library = DEFAULT_LIBRARY) -> bool:
    """True when the heuristics run a strided dgrad whose filter misses stride phases (1×1 stride 2) with the
    row-phased kernel (``gemm.dgrad_row_phased``): when the zero-inserted GEMM's reduction, the layer's K, is at
    least ``ROW_PHASED_MIN_K``, and at any K from cuDNN 7.4.1 on (``STRIDED_DGRAD_RELEASE``); ``timed`` selection
    keeps the fastest of both."""
    return layer.K >= ROW_PHASED_MIN_K or skips_strided_zeros(library)


def heuristic_family(layer: Layer, phase: Phase, forward_algo: str = "", library: Library = DEFAULT_LIBRARY) -> str:
    """The algorithm family the library's heuristics pick (not timed).

    With the recorded forward algorithm (DeepBench's ``fwd_algo``): its family for fprop; dgrad,
    the same stride-1 convolution flipped, follows it when Winograd or FFT (DeepBench's Winograd-forward
    layers have dgrad ≈ fprop times; its FFT-forward 3×3 dgrads on P100 run at 13–19 TFLOP/s of direct
    work, above the GPU's 10.6 TFLOP/s peak), and wgrad follows a Winograd forward from
    ``WINOGRAD_WGRAD_GENERATION`` on when C, K ≥ ``WINOGRAD_WGRAD_MIN_CHANNELS`` and an FFT forward from
    ``FFT_WGRAD_GENERATION`` on; the rest run the GEMM algorithms. Without a record: Winograd for 3×3 stride-1
    layers with C, K ≥ ``WINOGRAD_MIN_CHANNELS`` in fprop and dgrad (and wgrad from that generation, with C, K ≥
    ``WINOGRAD_WGRAD_MIN_CHANNELS``), else GEMM.
    """
    wgrad_follows = _generation(library) >= WINOGRAD_WGRAD_GENERATION
    recorded = family_of(forward_algo) if forward_algo else None
    if recorded is not None:
        if phase == "fprop" or (phase == "dgrad" and recorded in ("winograd", "fft")) \
                or (phase == "wgrad" and recorded == "winograd" and wgrad_follows
                    and min(layer.C, layer.K) >= WINOGRAD_WGRAD_MIN_CHANNELS) \
                or (phase == "wgrad" and recorded == "fft" and _generation(library) >= FFT_WGRAD_GENERATION):
            return recorded
        return "gemm"
    wide = min(layer.C, layer.K) >= (WINOGRAD_WGRAD_MIN_CHANNELS if phase == "wgrad" else WINOGRAD_MIN_CHANNELS)
    if (phase != "wgrad" or wgrad_follows) and wide and winograd.eligible(layer, fused=True):
        return "winograd"
    return "gemm"
