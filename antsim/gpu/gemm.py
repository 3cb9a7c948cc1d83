"""The three training convolutions as implicit GEMMs (CUTLASS ``implicit_gemm_problem_size``).

=======  ==========  ======  ======
phase    M           N       K
=======  ==========  ======  ======
fprop    N·P·Q       K       C·R·S
dgrad    N·H·W       C       K·R·S
wgrad    K           C·R·S   N·P·Q
=======  ==========  ======  ======

Besides the shape, a ``Gemm`` holds the *unique* bytes behind each operand (what DRAM must deliver
at least once): the implicit-GEMM A matrix of fprop is an im2col view whose R·S-fold duplication
is served by the caches, so its DRAM footprint is the activation tensor, not M·K.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from antsim.errors import WorkloadError
from antsim.vocabulary import Phase
from antsim.workloads.layers import PHASES, Layer

# Formulations whose GEMM reads dense, already transformed tensors (no per-element address decode).
EXPLICIT_FORMULATIONS = ("winograd_nonfused", "fft", "fft_tiling", "gemm")  # "gemm": a GEMM layer's cuBLAS GEMM


@dataclass(frozen=True)
class SideKernel:
    """A memory-bound kernel a formulation runs besides its GEMM (a Winograd or FFT transform).

    Attributes:
        name: What it does (``input transform``, ``filter FFT``, …).
        elements: Tensor elements it reads plus those it writes (each streamed once through DRAM).
        flops: Arithmetic it does (FP32 SIMT pipes).
    """

    name: str
    elements: float
    flops: float


@dataclass(frozen=True)
class Gemm:
    """One implicit GEMM C[M,N] = A[M,K] · B[K,N].

    Attributes:
        M, N, K: GEMM extents (elements).
        a_unique, b_unique, c_unique: Distinct tensor elements behind A, B and C (elements).
        useful_macs: Multiply-accumulates of the convolution itself (dgrad at stride > 1 runs
            M·N·K MACs of which only these are non-zero; the GEMM still executes all of them).
        algorithm: ``implicit`` (the CUTLASS shape above), ``phased`` (strided dgrad run per stride
            phase, see ``dgrad_phased``) or ``col2im`` (dgrad as dY·W → columns scatter-added into
            dX, cuDNN's BWD_DATA_ALGO_0 family: no structural zeros, but every column element is an
            atomic read-modify-write in L2).
        phase: The training phase the GEMM computes.
        gather_reuse: The filter's R·S taps in wgrad (1 otherwise): wgrad's B is im2col(X), whose R·S tap
            columns of one channel are shifted windows of the same input pixels, which a kernel that
            stages an input tile could address once for R·S columns. ``model._gather_ops_per_mac``
            divides the other operand's (A = dY) decode term by it, a fitted placement (see there).
        structured: B (the weights, in fprop and dgrad) is 2:4 structured-sparse along K: two of
            every four consecutive reduction elements are zero, which sparse tensor cores skip.
        batch: Independent GEMMs of this shape one kernel runs (Winograd's α² transform points,
            FFT frequencies): CTAs, MACs and operand bytes are ``batch`` × those of one GEMM.
        simt_only: The kernel runs on the SIMT lanes even where the precision has tensor cores
            (channels not a multiple of the MMA width; fused Winograd).
        transform_ops: FP instructions per staged A element and per staged B element that the
            main loop spends transforming operands on the fly (fused Winograd).
        output_ops: FP instructions per accumulator the kernel spends after its reduction on the SIMT
            lanes (fused Winograd's output transform), i.e. ``output_ops / K`` per MAC.
        side: Memory-bound kernels the formulation runs besides the GEMM (transforms).
        workspace: Device workspace the formulation needs (elements: transformed tensors).
        algo: The library's name for it (cuDNN ``IMPLICIT_PRECOMP_GEMM``, ``WINOGRAD_NONFUSED``, …).
        gather_width: Operand elements that share one gather address computation on tensor cores:
            1 when each element is gathered alone (cuDNN 7's tensor-core kernels on NCHW tensors),
            8 fp16 / 4 tf32 channels of one 16-byte vector load on cuDNN 8's NHWC kernels.
        tensor_shapes: The (m, n) CTA tiles the library's tensor-core kernels for this formulation come
            in; empty: the GPU generation's whole menu (``antsim.gpu.tiles.tensor_tiles``). cuDNN 7's
            implicit-GEMM convolutions run only ``tiles.CUDNN7_TENSOR_SHAPES``.
        n_slabs: N is this many equal slabs that a CTA tile never straddles, each tiled on its own (so
            each pads to the tile width): 1 for one contiguous N; R·S for cuDNN 7's tensor-core wgrad,
            whose N = (r, s, c) tiles hold the channels of one filter tap (``menus.formulations``).
        k_slabs: The same along the reduction K: its main-loop steps never straddle two slabs, so each
            slab pads to the tile's k step (cuDNN 7's tensor-core fprop and dgrad: one slab per filter tap;
            an NCHW (SIMT) wgrad: one slab of P·Q pixels per image, ``implicit_gemm``; a tensor-core wgrad, on NHWC
            tensors, one flat slab, ``menus.nhwc_wgrad_reduction``).
        passes: Kernels the library issues for this GEMM's main loop, one after another, each over a share
            of the work (a true-half implicit wgrad: one per output row, ``menus.true_half_wgrad``; a true-half
            dgrad of a filter smaller than its stride: one per dX pixel, ``menus.true_half_dgrad``): the call
            pays ``passes − 1`` launches more; the work and traffic are the one GEMM's. 1: one kernel.
        split_kernel: The library runs it with a split-K kernel on the SIMT lanes, which splits at least
            ``Calibration.wgrad_min_split_k`` ways (cuDNN's implicit-GEMM wgrad, ``menus.formulations``).
        m_slabs: The same along M: a CTA tile never straddles two slabs, so each pads to the tile height
            (col2im: one slab of P·Q dY pixels per image, ``dgrad_col2im``). 1: one contiguous M.
        fp32_workspace: The kernel writes its fp32 accumulators to a workspace that a second kernel reads and stores
            as the output even when it does not split K (cuDNN 7's tensor-core wgrad, ``menus._cudnn7_tensor_kernel``):
            the plan pays that pass and its launch at split 1 as a split plan does.
    """

    M: int
    N: int
    K: int
    a_unique: int
    b_unique: int
    c_unique: int
    useful_macs: int
    algorithm: str = "implicit"
    phase: Phase = "fprop"
    gather_reuse: int = 1
    structured: bool = False
    batch: int = 1
    simt_only: bool = False
    transform_ops: tuple[float, float] = (0.0, 0.0)
    output_ops: float = 0.0
    side: tuple[SideKernel, ...] = ()
    workspace: float = 0.0
    algo: str = ""
    gather_width: int = 1
    tensor_shapes: tuple[tuple[int, int], ...] = ()
    n_slabs: int = 1
    k_slabs: int = 1
    passes: int = 1
    split_kernel: bool = False
    m_slabs: int = 1
    fp32_workspace: bool = False

    @property
    def gathered(self) -> bool:
        """True when the main loop gathers an implicit-GEMM operand (im2col addressing); False for an
        explicit GEMM on transformed tensors (non-fused Winograd, FFT, a GEMM layer) and for fused
        Winograd, whose tile offsets a pre-pass computes (cuDNN's ``generatewinogradtileskernel`` runs
        before every fused Winograd kernel in NeuSight's records): its main loop steps channels by a
        fixed stride."""
        return self.algorithm not in EXPLICIT_FORMULATIONS and self.algorithm != "winograd_fused"

    @property
    def scatter(self) -> bool:
        """True when the output is scatter-added (col2im) rather than stored once."""
        return self.algorithm == "col2im"

    def m_tiles(self, tile_m: int) -> int:
        """CTA tiles along M: each of the ``m_slabs`` slabs padded to the tile height on its own."""
        return self.m_slabs * math.ceil(self.M / self.m_slabs / tile_m)

    def n_tiles(self, tile_n: int) -> int:
        """CTA tiles along N: each of the ``n_slabs`` slabs padded to the tile width on its own."""
        return self.n_slabs * math.ceil(self.N / self.n_slabs / tile_n)

    def k_padded(self, tile_k: int) -> int:
        """The reduction the main loop runs: each of the ``k_slabs`` slabs padded to the k step on its own."""
        return self.k_slabs * math.ceil(self.K / self.k_slabs / tile_k) * tile_k

    @property
    def macs(self) -> int:
        """MACs the dense GEMM executes (structural zeros included), over every batched GEMM."""
        return self.batch * self.M * self.N * self.K


def _touched_input(layer: Layer) -> int:
    """Activation elements fprop/wgrad actually read: a 1×1 kernel at stride 2 skips every other row.

    Columns skipped inside a row still cost full 32-byte DRAM sectors, so only rows are discounted.
    """
    row_fraction = min(1.0, layer.R / layer.stride_h)
    return max(1, round(layer.N * layer.C * layer.H * layer.W * row_fraction))


def implicit_gemm(layer: Layer, phase: Phase) -> Gemm:
    """The implicit GEMM of ``phase`` of ``layer``.

    Raises:
        WorkloadError: unknown phase.
    """
    x = layer.N * layer.C * layer.H * layer.W
    w = layer.K * layer.C * layer.R * layer.S
    y = layer.N * layer.K * layer.P * layer.Q
    npq, crs = layer.N * layer.P * layer.Q, layer.C * layer.R * layer.S
    if phase == "fprop":
        return Gemm(npq, layer.K, crs, _touched_input(layer), w, y, layer.macs, "implicit", phase)
    if phase == "dgrad":
        return Gemm(layer.N * layer.H * layer.W, layer.C, layer.K * layer.R * layer.S, y, w, x, layer.macs, "implicit",
                    phase)
    # wgrad walks its N·P·Q reduction image by image: a main-loop step never straddles two images, so each
    # image's P·Q pixels pad to the k step (``Gemm.k_slabs = N``) [assumption, inferred from DeepBench: in
    # NCHW an image's plane is the contiguous run of the reduction axis, the next image is C·H·W elements
    # away; with it every wgrad sheet's error falls — P100 24.7 -> 23.0 %, TITAN Xp 23.1 -> 21.6 %, M40
    # 40.9 -> 37.1 %, T4 fp16 (NHWC) 33.2 -> 29.2 % — most on the 7 × 7 planes, whose 49 pixels pad to 56 (SIMT,
    # 8-deep k step) or 64 (tensor cores, 32-deep), where the flat reduction predicted 0.5–0.7× the
    # measured time on every sheet]. The tensor-core kernels read NHWC and reduce over the flat pixel axis instead
    # (``menus.nhwc_wgrad_reduction``, session 13).
    if phase == "wgrad":
        return Gemm(layer.K, crs, npq, y, _touched_input(layer), w, layer.macs, "implicit", phase,
                    layer.R * layer.S, k_slabs=layer.N)
    raise WorkloadError(f"phase: unknown {phase!r}; known: {', '.join(PHASES)}")


def dgrad_col2im(layer: Layer) -> Gemm:
    """dgrad as (N·P·Q, C·R·S, K): dY · W gives one column per (input channel, tap), added into dX.

    The products are atomic adds into dX, so dX is first set to zero by a kernel of its own (``side``): cuDNN
    sums ALGO_0's matrix products "using the atomic add operation" (API reference,
    ``cudnnConvolutionBwdDataAlgo_t``), and a BWD_DATA_ALGO_0 call runs ``scalePackedTensor_kernel`` (dX ← β·dX,
    β = 0) before its ``dgrad_engine`` kernel (docs/gpu_model.md §5).

    Its M = (n, p, q) is tiled image by image (``Gemm.m_slabs = N``): a CTA's dY rows are pixels of one image, so
    each image's P·Q pixels pad to the tile height [assumption, inferred from DeepBench: in NCHW an image's plane
    is the contiguous run of dY along M and the next image is K·P·Q elements away, as along wgrad's reduction
    (``implicit_gemm``); the one col2im layer with a small plane (1×1 stride 2 pad 3, C = 2048, K = 512, 7×7)
    takes 1.8–2.1× longer at N = 16 than at N = 8 on all seven sheets, where the unslabbed plan (392 / 784 rows
    of 128-row tiles) predicts 1.1–1.7×; with the slabs and ``dgrad_engine``'s 64 × 128 tile
    (``tiles.SIMT_COL2IM_TILES``) its rows go from 0.54–1.23× to 0.63–1.00× of the measured time, N = 8 and 16
    within 0.13 of each other on every sheet; neither alone helps].
    """
    x = layer.N * layer.C * layer.H * layer.W
    w = layer.K * layer.C * layer.R * layer.S
    y = layer.N * layer.K * layer.P * layer.Q
    return Gemm(layer.N * layer.P * layer.Q, layer.C * layer.R * layer.S, layer.K, y, w, x, layer.macs, "col2im",
                "dgrad", side=(SideKernel("dX zero fill", x, 0.0),), m_slabs=layer.N)


def dgrad_phased(layer: Layer) -> Gemm:
    """Strided dgrad split into stride phases: no structural zero is executed (except padding taps).

    dX[h] receives dY[p]·W[r] only when h + pad − r = stride·p, so the dX pixels of one stride phase
    (h mod stride_h, w mod stride_w) are reached by one fixed subset of the taps. Run per phase, dgrad
    is an fprop-like implicit GEMM over that phase's pixels and taps. One kernel runs every phase
    (its CTAs are cut per phase), so its reduction runs over the most taps any phase has:
    (M, N, K) = (N·H·W, C, K·⌈R/st_h⌉·⌈S/st_w⌉) against the zero-inserted K·R·S. The model offers
    it only when every phase is reached (R ≥ st_h and S ≥ st_w; see ``phase_gemms``).
    """
    rows = _axis_phases(layer.H, layer.R, layer.stride_h, layer.pad_h)
    cols = _axis_phases(layer.W, layer.S, layer.stride_w, layer.pad_w)
    taps = max(t for _, t in rows) * max(t for _, t in cols)
    x = layer.N * layer.C * layer.H * layer.W
    w = layer.K * layer.C * layer.R * layer.S
    y = layer.N * layer.K * layer.P * layer.Q
    return Gemm(layer.N * layer.H * layer.W, layer.C, layer.K * taps, y, w, x, layer.macs, "phased", "dgrad")


def dgrad_row_phased(layer: Layer) -> Gemm:
    """Strided dgrad of a filter that misses some stride phases, run over the dX rows a tap reaches.

    When R < stride (a 1×1 filter at stride 2) whole dX rows receive no gradient: the kernel runs its
    implicit GEMM over the rows of the reached row phases only, and along each row over every column
    (the zero-inserted dY along W: a CTA's M tile is a contiguous run of a row's pixels in NCHW), so
    (M, N, K) = (N·rows·W, C, K·taps_r·S) with taps_r the most row taps a reached phase has. The
    epilogue still writes all of dX (``c_unique``): the unreached rows are stored as zeros. An NCHW SIMT
    kernel (``simt_only``): on tensor cores the row-contiguous M tile does not exist (NHWC).
    """
    rows = [(n, t) for n, t in _axis_phases(layer.H, layer.R, layer.stride_h, layer.pad_h) if t]
    x = layer.N * layer.C * layer.H * layer.W
    w = layer.K * layer.C * layer.R * layer.S
    y = layer.N * layer.K * layer.P * layer.Q
    reached = sum(n for n, _ in rows)
    taps = max(t for _, t in rows)
    return Gemm(layer.N * reached * layer.W, layer.C, layer.K * taps * layer.S, y, w, x, layer.macs,
                "row_phased", "dgrad", simt_only=True)


def dgrad_plane(layer: Layer) -> Gemm:
    """Strided dgrad as one CTA per (image, input channel) dX plane that sweeps the plane's pixels one after
    another, each reduced over the dY channels and the taps that reach it (no structural zero): (M, N, K) =
    (N·C planes, H·W pixels, K × the mean reached taps per pixel), so M·N·K are the useful MACs (padding taps
    included). ``model.plane_plan`` times it; ``menus.true_half_plane`` says where the library runs it."""
    rows = _axis_phases(layer.H, layer.R, layer.stride_h, layer.pad_h)
    cols = _axis_phases(layer.W, layer.S, layer.stride_w, layer.pad_w)
    reached = sum(n * t for n, t in rows) * sum(n * t for n, t in cols)  # (pixel, tap) pairs of one plane
    x = layer.N * layer.C * layer.H * layer.W
    w = layer.K * layer.C * layer.R * layer.S
    y = layer.N * layer.K * layer.P * layer.Q
    return Gemm(layer.N * layer.C, layer.H * layer.W, max(1, round(layer.K * reached / (layer.H * layer.W))), y, w,
                x, layer.macs, "plane", "dgrad", simt_only=True, algo="BWD_DATA_ALGO_1")


def _rows_skippable(layer: Layer) -> bool:
    """True when some dX row phase receives no tap while the padding stays inside the filter."""
    rows = _axis_phases(layer.H, layer.R, layer.stride_h, layer.pad_h)
    return any(t == 0 for _, t in rows) and any(t for _, t in rows) and layer.pad_h < layer.R \
        and layer.pad_w < layer.S


def _axis_phases(extent: int, taps: int, stride: int, pad: int) -> list[tuple[int, int]]:
    """Per stride phase of one dX axis: (positions in the phase, filter taps that reach them)."""
    return [(len(range(ph, extent, stride)), sum(1 for r in range(taps) if (ph + pad - r) % stride == 0))
            for ph in range(stride)]


def _every_phase_reached(layer: Layer) -> bool:
    """True when the filter reaches every stride phase of dX along both axes."""
    rows = _axis_phases(layer.H, layer.R, layer.stride_h, layer.pad_h)
    cols = _axis_phases(layer.W, layer.S, layer.stride_w, layer.pad_w)
    return all(t for _, t in rows) and all(t for _, t in cols)


NARROW_C = 32  # narrower than the narrowest SIMT tile (n = 32): the implicit GEMM would waste most of it
# Narrowest C (GEMM N) cuDNN 7's zero-skipping strided-dgrad kernels are run at: their CTA tiles
# span 64 or 128 input channels (tiles.SIMT_PHASED_TILES) [assumption, from DeepBench]. Below it
# the library runs the zero-inserted GEMM: DeepBench's DeepSpeech 5×10 stride-2 dgrad (C = 32) runs
# at the zero-inserted speed on both P100 and TITAN Xp (a half-empty 64-wide phased tile would be
# 1.6–2× faster), while its C ≥ 64 Speaker-ID 5×5 stride-2 layers run ~3× faster than that.
PHASED_MIN_C = 64


# cuDNN 7.4.1 made the strided backward-data convolution faster "when the filter is in NHWC format ...
# For strides u,v < r,s the performance is further enhanced" (cuDNN 7.4.1 release notes,
# https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn_765/cudnn-release-notes/rel_741.html). cuDNN's
# tensor-core kernels run on NHWC tensors (DeepBench times its tensor-core rows in NHWC,
# baidu-research/DeepBench code/nvidia/conv_bench.cu), and their stride-phase dgrad runs any C: DeepBench's
# T4 fp16 DeepSpeech 5×10 stride-2 dgrad (C = 32) takes 1.2× its fprop, where the zero-inserted GEMM
# would take 4× (it does on the NCHW fp32 sheets of cuDNN 5–7.0: 4.0–5.0×). ``menus.formulations``
# offers it there (``phased_for_any_c``).


def _dgrad_window_negative(layer: Layer) -> bool:
    """True when dgrad, as a forward convolution of dY with the flipped filter, would need the negative
    padding R − 1 − pad (pad ≥ R or pad ≥ S): BWD_DATA_ALGO_1, an implicit GEMM over that window, has none,
    so the library runs BWD_DATA_ALGO_0 (col2im: dY·W scattered into dX, which any padding allows).

    [assumption, inferred from DeepBench: its one such layer (1×1 stride 2 pad 3, C = 2048, K = 512, 7×7,
    N = 8 and 16) runs dgrad 1.3–2.2× slower than the zero-inserted implicit GEMM predicts on all seven
    sheets (cuDNN 5–7.6, fp32 and fp16); col2im takes those 14 rows from 0.45–0.75× of the measured time
    to 0.52–0.89×, and every sheet's dgrad error falls (P100 25.0 → 24.6 %, TITAN Xp 22.9 → 22.4 %,
    GTX 1080 Ti 21.2 → 20.5 %, TITAN X Maxwell 24.4 → 23.8 %, M40 24.3 → 23.8 %, T4 fp32 27.8 → 27.4 %,
    T4 fp16 20.6 → 20.2 %). The same reason keeps such layers off cuDNN 7's backward tensor-core kernels
    (``antsim.gpu.menus.backward_padding_ok``).]
    """
    return layer.pad_h >= layer.R or layer.pad_w >= layer.S


def phased_for_any_c(layer: Layer, phase: Phase) -> list[Gemm]:
    """The stride-phase dgrad of a strided layer narrower than ``PHASED_MIN_C`` whose filter reaches every
    phase (the NHWC kernels' enhanced strided dgrad); empty otherwise (wider layers have it already)."""
    return [dgrad_phased(layer)] if phase == "dgrad" and narrow_strided_dgrad(layer) else []


def narrow_strided_dgrad(layer: Layer) -> bool:
    """True for a strided layer narrower than ``PHASED_MIN_C`` whose filter reaches every stride phase: the dgrads
    ``phased_for_any_c`` offers a stride-phase kernel for (and ``menus.true_half_plane`` a plane kernel)."""
    strided = layer.stride_h > 1 or layer.stride_w > 1
    return strided and layer.C < PHASED_MIN_C and _every_phase_reached(layer)


def phase_gemms(layer: Layer, phase: Phase) -> list[Gemm]:
    """The GEMM formulations a library may run for ``phase`` (the model keeps the fastest).

    dgrad: the zero-inserted implicit GEMM always; the stride-phase GEMM when strided, every phase
    is reached (a 1×1 filter at stride 2 reaches 1 pixel in 4: DeepBench's ResNet/Face 1×1 stride-2
    dgrad rows run at the zero-inserted GEMM's speed for small K, so cuDNN 7 is not modelled as
    skipping those zeros) and C fills the phased kernel's tile (``PHASED_MIN_C``); when the filter misses
    a phase instead (R < stride), the row-phased GEMM over the reached rows (``dgrad_row_phased``: at 1×1
    stride 2 it runs 2× the useful work, the zero-inserted GEMM 4×) [assumption, inferred from DeepBench:
    its 1×1 stride-2 dgrads with K ≥ 512 run 1.5–2.7× faster than the zero-inserted GEMM, those with
    K ≤ 256 at its speed — between the two, which the fastest-plan rule picks]; col2im for narrow C, and
    col2im alone when the padding reaches the filter (``_dgrad_window_negative``).
    """
    if phase == "dgrad" and _dgrad_window_negative(layer):
        return [dgrad_col2im(layer)]
    gemms = [implicit_gemm(layer, phase)]
    strided = layer.stride_h > 1 or layer.stride_w > 1
    if phase == "dgrad" and strided and layer.C >= PHASED_MIN_C and _every_phase_reached(layer):
        gemms.append(dgrad_phased(layer))
    if phase == "dgrad" and strided and layer.C >= PHASED_MIN_C and _rows_skippable(layer):
        gemms.append(dgrad_row_phased(layer))
    if phase == "dgrad" and layer.C < NARROW_C:
        gemms.append(dgrad_col2im(layer))
    return gemms
