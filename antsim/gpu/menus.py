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
from antsim.gpu.gemm import Gemm, phase_gemms, phased_for_any_c
from antsim.gpu.spec import PRECISIONS, GpuSpec
from antsim.gpu.tiles import CUDNN7_TENSOR_SHAPES, HALF2_TILES, SIMT_TILES, Tile
from antsim.vocabulary import LIBRARIES as LIBRARIES  # re-exported: the library generations this menu knows
from antsim.vocabulary import SELECTIONS as SELECTIONS  # re-exported
from antsim.vocabulary import Library, Phase, Precision, Selection
from antsim.workloads.layers import Layer

DEFAULT_LIBRARY: Library = "cudnn8"
DEFAULT_SELECTION: Selection = "timed"
FAMILIES = ("gemm", "winograd", "fft")
# Formulation (``Gemm.algorithm``) → algorithm family.
FAMILY = {"implicit": "gemm", "phased": "gemm", "row_phased": "gemm", "col2im": "gemm", "winograd_fused": "winograd",
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


def _generation(library: str) -> int:
    if library not in LIBRARIES:
        raise AntsimError(f"library: unknown {library!r}; known: {', '.join(LIBRARIES)}")
    return int(library.removeprefix("cudnn"))


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
    also need the padding inside the filter (``backward_padding_ok``).
    """
    if not gpu.uses_tensor_cores(precision) or _generation(library) < 7:
        return False
    if phase != "fprop" and not backward_padding_ok(layer):
        return False
    multiple = TENSOR_CHANNEL_MULTIPLE.get(precision, 8)
    return layer.C % multiple == 0 and layer.K % multiple == 0


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
        gemms = [g for g in gemms if g.algorithm not in NOT_TRUE_HALF] or gemms
    if gpu.true_half(precision) and generation <= TRUE_HALF_LAUNCH_GENERATION:
        per_position = true_half_wgrad if phase == "wgrad" else true_half_dgrad if phase == "dgrad" else None
        gemms = [per_position(g, layer) for g in gemms] if per_position else gemms
    if not tensor_core_eligible(gpu, layer, precision, library, phase):
        return [replace(g, simt_only=True) for g in gemms]
    gemms[1:1] = [replace(g, algo=_GEMM_ALGO[phase, g.algorithm]) for g in phased_for_any_c(layer, phase)]
    gemms = [g if g.algorithm in TENSOR_CORE_FORMULATIONS else replace(g, simt_only=True) for g in gemms]
    if generation >= NHWC_VECTOR_GENERATION:
        width = VECTOR_BYTES // PRECISIONS[precision][0]
        return [replace(g, gather_width=width) if g.gathered else g for g in gemms]
    return [_cudnn7_tensor_kernel(g, layer) if g.gathered and not g.simt_only else g for g in gemms]


# Formulations cuDNN has no TRUE_HALF_CONFIG kernel for (fp16 tensors and an fp16 compute type on a GPU
# without tensor cores, ``GpuSpec.true_half``): fused WINOGRAD, FFT and FFT_TILING support only
# PSEUDO_HALF_CONFIG and FLOAT_CONFIG, IMPLICIT_PRECOMP_GEMM and WINOGRAD_NONFUSED (3×3) every config (cuDNN
# 5.1 User Guide, cudnnConvolutionForward's "Data Type Config Support", as encoded in Theano's cuDNN checks,
# GitHub `Theano/Theano`, its cuDNN conv checks), and BWD_DATA_ALGO_0 (col2im, a scatter-add into dX) none
# [assumption, inferred from DeepBench's P100 half sheet (cuDNN 7): with it on the menu the model runs 10 of
# its 94 dgrads with it at 0.03–0.37× the measured time; a scatter-add of single fp16 elements needs the scalar
# __half atomicAdd, which CUDA offers from compute capability 7.x (CUDA C++ Programming Guide, atomicAdd)]; nor
# the zero-skipping strided dgrads (per stride phase, per reached row): NVIDIA's cuDNN engineers said that
# true-half convolutions of strides other than 1 lacked the fast kernels (GitHub ``soumith/cudnn.torch``
# issue 225, 2016) [assumption, inferred from DeepBench's P100 half sheet (cuDNN 7): its 32 strided dgrads take
# 3.6–80× their fp32 rows' time, where its stride-1 dgrads take 0.76× (half2); without the zero-skipping plans
# dgrad 121.0 → 111.6 %, the Speaker-ID 5×5 stride-2 rows 0.21–0.76× → 0.57–2.1× of the measured time].
NOT_TRUE_HALF = ("winograd_fused", "fft", "fft_tiling", "col2im", "phased", "row_phased")


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


def true_half_dgrad(g: Gemm, layer: Layer) -> Gemm:
    """A true-half dgrad as cuDNN 7 runs it: when the filter is smaller than the stride (a 1×1 stride-2 layer,
    whose dX rows and columns between the strided ones receive no tap) the zero-inserted implicit GEMM issues
    one kernel per dX pixel (``Gemm.passes = H·W``); any other formulation runs as one call.

    [assumption, inferred from DeepBench's P100 half sheet (cuDNN 7): 13 of its sixteen 1×1 stride-2 pad-0 dgrads
    take 2.7–6.2 µs per dX pixel whatever C (64–1024), K (128–1024) and N (8, 16) — 3.60 / 3.62 / 4.01 ms at
    28×28, N = 8, for C, K = 128, 512 / 512, 256 / 512, 1024; 0.84–0.89 ms at 14×14 — and the three with the most
    work per pixel (C = 1024 at 14×14) 7.0–13.6 µs; 3.6–79× their fp32 rows' time (cuDNN has a dedicated kernel
    for the case, ``dgrad_1x1_stride_2x2``, in the cuDNN kernel list of GitHub ``NVIDIA/apex``'s pyprof); one 5 µs
    launch (Lin et al.) per pixel plus the half2 work predicts 0.72–1.87× of them. The same reading (a kernel per
    output position) as ``true_half_wgrad``'s per row; true-half convolutions of strides other than 1 had no fast
    kernels (NVIDIA in GitHub ``soumith/cudnn.torch`` issue 225, 2016). Dgrad P100 half 111.6 → 39.8 %; no other sheet
    moves. Strided layers whose filter reaches every stride phase (5×5, 3×3 and 7×7 at stride 2) do not follow
    it (it would predict 563 ms for the 5×20 stride-2 DeepSpeech layer, measured 16.8 ms) and stay unmodelled
    (docs/gpu_precision.md §6).]
    """
    if g.algorithm == "implicit" and (layer.R < layer.stride_h or layer.S < layer.stride_w):
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
    """
    taps = layer.R * layer.S if g.algorithm == "implicit" else g.K // layer.K if g.algorithm == "phased" else 1
    if g.phase == "wgrad":
        return replace(g, tensor_shapes=CUDNN7_TENSOR_SHAPES, n_slabs=taps)
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


def heuristic_formulations(gemms: list[Gemm], layer: Layer, phase: Phase, forward_algo: str = "",
                           library: Library = DEFAULT_LIBRARY) -> list[Gemm]:
    """The formulations of ``gemms`` the library's heuristics choose among: those of ``heuristic_family``
    (all of them when the family is not on the menu), of a Winograd family only the variant the recorded forward
    algorithm names (``winograd_variant``; fprop and dgrad, ``FOLLOW_VARIANT_PHASES``), without the row-phased
    dgrad unless K ≥ ``ROW_PHASED_MIN_K`` (``row_phased_by_heuristic``)."""
    family = heuristic_family(layer, phase, forward_algo, library)
    kept = [g for g in gemms if FAMILY[g.algorithm] == family] or gemms
    variant = winograd_variant(forward_algo) if phase in FOLLOW_VARIANT_PHASES else None
    if family == "winograd" and variant is not None:
        kept = [g for g in kept if g.algorithm == variant] or kept
    return [g for g in kept if g.algorithm != "row_phased" or row_phased_by_heuristic(layer)]


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
    tile_set = HALF2_TILES if tile.packed > 1 else SIMT_TILES
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


def row_phased_by_heuristic(layer: Layer) -> bool:
    """True when the heuristics run a strided dgrad whose filter misses stride phases (1×1 stride 2) with the
    row-phased kernel (``gemm.dgrad_row_phased``): when the zero-inserted GEMM's reduction, the layer's K, is at
    least ``ROW_PHASED_MIN_K``; ``timed`` selection keeps the fastest of both."""
    return layer.K >= ROW_PHASED_MIN_K


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
