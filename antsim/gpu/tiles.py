"""CTA tiles the model chooses among, and how many of them an SM holds.

SIMT (FP32 / half2) tiles: cuDNN 7's implicit-precomp fprop/dgrad kernels tile the pixel dimension
(GEMM M) by 128 — 128×128, 128×64, 128×32 (DeLTA-style models of cuDNN 7 SGEMM-like kernels,
docs/gpu_specs.md §4.4 [U]); wgrad, whose M and N are both channel dimensions, may
use either orientation (adds 64×128 and 32×128). fprop/dgrad SIMT threads hold 8×8 accumulators;
wgrad tiles come with 8×8 and 4×4 per-thread fragments.
Tensor-core tiles are the typical cuBLAS/CUTLASS set (docs/gpu_specs.md §4.3: 256×128 … 64×64 [U]),
with a 32-deep K step.
"""

from __future__ import annotations

from dataclasses import dataclass

from antsim.gpu.spec import GpuSpec


@dataclass(frozen=True)
class Tile:
    """One CTA tile.

    Attributes:
        m, n, k: Tile extents (GEMM elements); ``k`` is the main-loop step.
        threads: Threads per CTA.
        stages: Shared-memory pipeline stages (2 = double buffering).
        fragment: Accumulators per thread along each of M and N (register blocking) for SIMT tiles:
            per k step a thread reads 2 × fragment operands from shared memory for fragment² MACs.
            0 for tensor-core tiles (MMA operands come through shared memory at a rate the
            tensor-core peak already reflects).
        packed: Accumulators per 32-bit register: 2 for a half2 kernel (fp16 accumulators, two per
            register, ``HALF2_TILES``), whose fragment then spans ``packed × fragment`` rows of M.
    """

    m: int
    n: int
    k: int
    threads: int
    stages: int
    fragment: int = 0
    packed: int = 1

    def smem_bytes_per_mac(self, operand_bytes: int) -> float:
        """Shared-memory bytes read per MAC by the main loop (0 for tensor-core tiles): per k step a thread
        reads ``packed × fragment`` A and ``fragment`` B operands for their product of MACs."""
        if not self.fragment:
            return 0.0
        return operand_bytes * (1 / (self.packed * self.fragment) + 1 / self.fragment)

    @property
    def name(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    def smem_bytes(self, operand_bytes: int) -> int:
        """Shared memory of the A and B staging buffers (bytes)."""
        return self.stages * (self.m + self.n) * self.k * operand_bytes

    def registers(self) -> int:
        """32-bit registers of the CTA: fp32 accumulators + operand fragments + ~40 for addressing.

        [assumption] 40 registers per thread of indices/pointers, typical of CUTLASS kernels.
        """
        accumulators = self.m * self.n // self.threads // self.packed
        fragments = 2 * int(accumulators**0.5)
        return self.threads * (accumulators + fragments + 40)


def _simt(m: int, n: int, fragment: int = 8) -> Tile:
    return Tile(m, n, 8, m * n // fragment**2, 2, fragment)


def _mma(m: int, n: int) -> Tile:
    return Tile(m, n, 32, 256 if m * n >= 128 * 128 else 128, 3)


WGRAD_FRAGMENT = 4
SIMT_TILES: tuple[Tile, ...] = tuple(_simt(m, n) for m, n in ((128, 128), (128, 64), (128, 32)))
_WGRAD_SHAPES = ((128, 128), (128, 64), (64, 128), (128, 32), (32, 128))
# wgrad: both 8×8-fragment tiles (1 B of shared memory per fp32 MAC) and 4×4-fragment tiles (2 B/MAC,
# 4× the threads, hence more warps to hide latency on a small output). DeepBench's 5×5 wgrads reach
# 96–100 MACs per SM-clock on TITAN Xp, above the 64/clock a 4×4 fragment's shared-memory feed
# (128 B/clock) allows, so cuDNN 7 has fully register-blocked wgrad kernels too.
SIMT_WGRAD_TILES: tuple[Tile, ...] = tuple(_simt(m, n) for m, n in _WGRAD_SHAPES) + tuple(
    _simt(m, n, WGRAD_FRAGMENT) for m, n in _WGRAD_SHAPES)
# Strided dgrad per stride phase (gemm.dgrad_phased): [assumption] cuDNN 7's zero-skipping strided
# dgrad kernels tile C (GEMM N) by 64 or 128, not 32 — DeepBench's DeepSpeech C = 32, 5×10 stride-2
# dgrad runs at the zero-inserted GEMM's speed, while its C ≥ 64 Speaker-ID 5×5 stride-2 layers run
# ~3× faster than that (BENCHMARKS.md, section gpu).
SIMT_PHASED_TILES: tuple[Tile, ...] = tuple(t for t in SIMT_TILES if t.n >= 64)
# col2im dgrad (BWD_DATA_ALGO_0, gemm.dgrad_col2im): its kernel is ``dgrad_engine`` (an Nsight log of an ALGO_0 call
# runs ``scalePackedTensor_kernel`` then ``dgrad_engine<float, 512, 6, 5, …>``; docs/gpu_model.md §5), and
# ``dgrad_engine<float, 128, 6, 7, 3, 3, 5, true>`` in the nvprof output of GitHub ``pytorch/pytorch`` issue 13412
# (V100, cuDNN 7) reads as 128 threads over a 2⁶ × 2⁷ = 64 × 128 tile with 8×8 fragments, as cuDNN's
# ``implicit_convolve_sgemm<float, float, 128, 6, 7, …>`` does: that tile besides the SGEMM-like ones.
SIMT_COL2IM_TILES: tuple[Tile, ...] = SIMT_TILES + (_simt(64, 128),)
# Half2 fprop/dgrad kernels (cuDNN's TRUE_HALF_CONFIG on a GPU without tensor cores, e.g. P100): a 32-bit
# register holds two fp16 accumulators, so the fp32 kernels' threads and registers (8×8 fragments) cover
# twice the pixels — 256×128 and 256×64 CTA tiles at HFMA2's two MACs per lane. [assumption, inferred from
# DeepBench's P100 half rows (cuDNN 7): the fprops whose output fills under one wave of 128-wide tiles
# (7×7 and 14×14 planes, C = 512–2048) take the time of one 256×128 CTA walking the whole reduction at the
# half2 rate (0.46–0.48 ms at C = 2048, N = 8 and 16 alike), and the K = 32 DeepSpeech layers the time of
# 256×64 tiles (a 256×32 tile would run them 1.8× faster than measured).]
def half2(tile: Tile) -> Tile:
    """The half2 kernel of a SIMT tile: the same threads and registers, two fp16 accumulators per register
    along M."""
    return Tile(2 * tile.m, tile.n, tile.k, tile.threads, tile.stages, tile.fragment, 2)


HALF2_TILES: tuple[Tile, ...] = tuple(half2(t) for t in SIMT_PHASED_TILES)


def simt_tile_set(phase: str, algorithm: str) -> tuple[Tile, ...]:
    """The fp32 SIMT CTA tiles of a convolution formulation's kernels (``Gemm.phase``, ``Gemm.algorithm``): wgrad's
    own, the stride-phase kernels' (``phased``, ``row_phased``), col2im's ``dgrad_engine`` set, else the implicit
    GEMM's."""
    if phase == "wgrad":
        return SIMT_WGRAD_TILES
    if algorithm in ("phased", "row_phased"):
        return SIMT_PHASED_TILES
    return SIMT_COL2IM_TILES if algorithm == "col2im" else SIMT_TILES
# Half2 wgrad kernels: the fp32 wgrad kernels' threads and registers packed the same way, two fp16 accumulators
# per register along M (the output channels K of dW[K, C·R·S]), so a CTA covers twice the output channels and a
# layer with K below the packed tile's height leaves half2 lanes idle. [assumption, inferred from DeepBench's
# P100 half rows (cuDNN 7): with the unpacked tiles at the half2 rate its 12 wgrads of K = 16–48 (DeepSpeech,
# OCR, the 5×5 Vision layers) run at 0.41–0.63× the measured time while those of K ≥ 128 run near it (0.65–1.49×);
# the narrow ones take 1.6–3.0× their fp32 rows' time, most K ≥ 128 rows 0.55–1.1×. wgrad 22.3 → 17.2 %.]
HALF2_WGRAD_TILES: tuple[Tile, ...] = tuple(half2(t) for t in SIMT_WGRAD_TILES)
# cuBLAS-style SGEMM kernels (non-fused Winograd's batched α² products, GEMM layers on the SIMT lanes):
# 128×128, 128×64, 64×64 (8×8 fragments) and 32×128 (4×4 fragments, 256 threads). Which of them the
# library runs depends on the generation, per the kernel names NeuSight recorded with cuDNN 8.9 (public
# dataset ``trsharm25/NeuSight``, ``scripts/asplos/data/dataset/train/collect/conv/p2.1.0/*.csv``, column
# ``Kernels``): every non-fused Winograd row ran ``maxwell_sgemm_64x64_nn`` or ``maxwell_sgemm_32x128_nn``
# on P100 and P4 (Pascal), ``ampere_sgemm_128x128_nn`` on A100 — never another tile. Volta, Turing and
# Hopper have no record: they get every tile [assumption].
SIMT_BATCHED_TILES: tuple[Tile, ...] = (_simt(128, 128), _simt(128, 64), _simt(64, 64),
                                        _simt(32, 128, WGRAD_FRAGMENT))
SGEMM_TILES_BY_ARCH: dict[str, tuple[Tile, ...]] = {
    "maxwell": (_simt(64, 64), _simt(32, 128, WGRAD_FRAGMENT)),
    "pascal": (_simt(64, 64), _simt(32, 128, WGRAD_FRAGMENT)),
    "ampere": (_simt(128, 128),),
}


def sgemm_tiles(gpu: GpuSpec) -> tuple[Tile, ...]:
    """The SGEMM tiles the GPU's generation runs (``SGEMM_TILES_BY_ARCH``, else all of them)."""
    return SGEMM_TILES_BY_ARCH.get(architecture(gpu), SIMT_BATCHED_TILES)


# cuBLAS's half2 HGEMM kernels (true half: non-fused Winograd's batched products, GEMM layers): on Pascal
# ``maxwell_hgemm_256x128_*``, ``maxwell_hgemm_128x64_*`` and ``maxwell_hgemm_128x32_*`` (the names public nvprof
# profiles of ``cublasGemmEx`` with a 16-bit compute type report on P100), the half2 forms of the 128×128, 64×64 and
# 64×32 SGEMM tiles — not of the 4×4-fragment 32×128 SGEMM that Pascal's single-precision products run [assumption:
# the 64×32 tile's 8×8 fragments, like the others']. P100 half fprop 16.7 → 15.1 %, dgrad 21.2 → 19.6 % (the 7×7
# C = K = 512 Winograd rows 0.61–0.65 → 0.92–0.97×, their M = 64 tiles padding a 128-row tile); wgrad 17.2 %
# unchanged. Other generations: the SGEMM tiles packed (``half2``).
HGEMM_TILES_BY_ARCH: dict[str, tuple[Tile, ...]] = {
    arch: (half2(_simt(128, 128)), half2(_simt(64, 64)), half2(_simt(64, 32))) for arch in ("maxwell", "pascal")}


def hgemm_tiles(gpu: GpuSpec) -> tuple[Tile, ...]:
    """The half2 HGEMM tiles the GPU's generation runs (``HGEMM_TILES_BY_ARCH``, else its SGEMM tiles packed)."""
    return HGEMM_TILES_BY_ARCH.get(architecture(gpu)) or tuple(half2(t) for t in sgemm_tiles(gpu))


# Fused Winograd: cuDNN's ``scudnn_winograd_128x128_ldg1_ldg4_*`` kernels (the only fused forward Winograd
# kernels in the same records), 256 threads holding 16 points × 32 tiles × 32 output channels: on the
# folded GEMM of ``antsim.gpu.winograd`` a 32×32 tile whose threads each keep 64 accumulators (8×8-like
# register blocking: 1 B of shared memory per fp32 MAC).
WINOGRAD_FUSED_TILES: tuple[Tile, ...] = (Tile(32, 32, 8, 256, 2, 8),)
# FFT: the frequency-domain products run as complex GEMMs, ``gcgemm_64x64``, ``gcgemm_64x32`` and
# ``gcgemm_32x32`` (same records). In the model's real 2×2 embedding (``antsim.gpu.fft``) a 64×64 complex
# tile is 64 rows × 128 real columns; a complex 4×4 register block reads 8 complex operands per 16
# complex MACs, as an 8×8 real fragment does per 64 real MACs.
FFT_TILES: tuple[Tile, ...] = (_simt(64, 128), _simt(64, 64), _simt(32, 64, WGRAD_FRAGMENT))
_MMA_SHAPES = ((256, 128), (128, 256), (128, 128), (256, 64), (64, 256), (128, 64), (64, 128), (64, 64))
TENSOR_TILES: tuple[Tile, ...] = tuple(_mma(m, n) for m, n in _MMA_SHAPES)
ARCHITECTURES = ("maxwell", "pascal", "volta", "turing", "ampere", "hopper")


def _mma_tiles(k: int, stages: int) -> tuple[Tile, ...]:
    return tuple(Tile(m, n, k, 256 if m * n >= 128 * 128 else 128, stages) for m, n in _MMA_SHAPES)


# Tensor-core CTA tiles per generation (CUTLASS's default kernels for each): Volta (mma.sync 8×8×4)
# and Turing (16×8×8) stage operands through registers with double buffering (2 stages, 32-deep K);
# Ampere's cp.async multistage kernels keep 3 stages in flight; Hopper's TMA/wgmma kernels use
# 64-deep K steps with 4 stages [U: CUTLASS default_gemm_configuration / sm90 collective builders].
TENSOR_TILES_BY_ARCH: dict[str, tuple[Tile, ...]] = {
    "volta": _mma_tiles(32, 2), "turing": _mma_tiles(32, 2), "ampere": _mma_tiles(32, 3)}
# Hopper also runs the Ampere kernels (cuDNN and cuBLAS ship sm80 kernels that run on sm90), so its menu
# is both sets: a Hopper GPU is never slower than the same resources with Ampere's menu.
TENSOR_TILES_BY_ARCH["hopper"] = _mma_tiles(64, 4) + TENSOR_TILES_BY_ARCH["ampere"]


def architecture(gpu: GpuSpec) -> str:
    """The GPU generation: ``GpuSpec.architecture`` when given, else inferred from the spec.

    Without tensor cores: Pascal (Maxwell and Pascal share the SIMT tile menu). With them: no TF32
    → Volta, or Turing when an SM holds 1024 threads (cc 7.5); TF32 → Ampere, or Hopper when an SM
    has more than Ampere's 164 KB of shared memory (CUDA programming guide, cc 8.0 / 9.0).
    """
    if gpu.architecture is not None:
        return gpu.architecture
    if not gpu.tensor_cores:
        return "pascal"
    if gpu.peak_tflops.tf32 is None:
        return "turing" if gpu.max_threads_per_sm <= 1024 else "volta"
    return "hopper" if gpu.smem_per_sm_kb > 164 else "ampere"


# cuDNN 7's tensor-core implicit-GEMM convolution kernels (``s884cudnn`` on Volta, ``s1688cudnn`` on
# Turing) come in two CTA tiles, 256×128 and 128×128 (the second also as a split-K kernel): every such
# kernel name in public profiles carries one of them — ``volta_fp16_s884cudnn_fp16_256x128_ldg8_relu_f2f_
# exp_small_nhwc2nchw_tn_v1``, ``volta_fp16_s884cudnn_fp16_128x128_ldg8_splitK_relu_f2f_exp_small_nhwc_tn_v1``,
# ``turing_fp16_s1688cudnn_fp16_128x128_ldg8_relu_f2f_exp_{small,medium,interior}_nhwc_gelu_tn_v1``
# (TensorFlow, ``tensorflow/compiler/tf2tensorrt/convert/algorithm_selector.cc``) — while cuBLAS's GEMM
# kernels of the same generations also come in 256×64, 128×64 and 64×64 (``turing_fp16_s1688gemm_fp16_
# 128x64_sliced1x2_ldg8_f2f_tn``, ``turing_fp16_s884gemm_fp16_64x64_ldg8_f2f_nn``). A small convolution
# therefore pays the big tile's padding (M or N below 128) on cuDNN 7 and not on a cuBLAS GEMM.
CUDNN7_TENSOR_SHAPES: tuple[tuple[int, int], ...] = ((256, 128), (128, 128))


def tensor_tiles(gpu: GpuSpec, shapes: tuple[tuple[int, int], ...] = ()) -> tuple[Tile, ...]:
    """The tensor-core CTA tiles of the GPU's generation (Volta's for a pre-Volta spec with tensor cores),
    only those of ``shapes`` (m, n) when given (a library's own kernel set, ``Gemm.tensor_shapes``)."""
    tiles = TENSOR_TILES_BY_ARCH.get(architecture(gpu), TENSOR_TILES_BY_ARCH["volta"])
    return tuple(t for t in tiles if (t.m, t.n) in shapes) if shapes else tiles


def ctas_per_sm(gpu: GpuSpec, tile: Tile, operand_bytes: int) -> int:
    """Resident CTAs per SM, limited by shared memory, registers, threads (2048/SM) and the CTA cap.

    Returns 0 when one CTA does not fit.
    """
    by_smem = int(gpu.smem_per_sm_kb * 1024 // tile.smem_bytes(operand_bytes))
    by_regs = gpu.regs_per_sm // tile.registers()
    by_threads = gpu.max_threads_per_sm // tile.threads
    return max(0, min(by_smem, by_regs, by_threads, gpu.max_ctas_per_sm))
