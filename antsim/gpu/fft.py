"""FFT convolutions as batched complex GEMMs: full-image FFT and FFT-tiling (cuDNN ``FFT``, ``FFT_TILING``).

By the convolution theorem a stride-1 convolution is, per frequency f of an Hf×Wf transform, a
product of spectra summed over input channels: Y_f[n, k] = Σ_c X_f[n, c] · W_f[k, c] — one complex
GEMM of (N × C) · (C × K) per frequency (Vasilache et al., ICLR 2015, "Fast convolutional nets with
fbfft"). A real input has Hf·(Wf/2 + 1) distinct frequencies. A complex multiply-add is four real
ones, so the model runs each as the real GEMM of the 2×2 real embedding [[a, −b], [b, a]]:
(M, 2·N, 2·K) per complex (M, N, K). Forward FFTs of the inputs and filters and the inverse FFT of
the outputs are memory-bound ``SideKernel``s of 2.5·n·log₂n real flops per real n-point 2-D
transform (half of the complex 5·n·log₂n).

* **FFT** transforms whole planes: Hf ≥ H + 2·pad (circular correlation of the padded plane wraps
  only into discarded outputs), rounded up to a power of two (``_fft_size``).
  cuDNN accepts it for padded planes up to 256 (``FFT_MAX_PLANE``).
* **FFT_TILING** cuts the output into tiles of ``TILE − R + 1`` and transforms 32×32 input tiles,
  so the GEMM's M is the tile count and the transforms stay small.

dgrad is the stride-1 convolution of dY with the flipped filter (Ci = K, Co = C); wgrad multiplies
the spectra of X and dY and reduces over images (or tiles): GEMMs (K × reduction) · (reduction × C).
"""

from __future__ import annotations

import math

from antsim.gpu.gemm import Gemm, SideKernel
from antsim.vocabulary import Phase
from antsim.workloads.layers import Layer

# Largest padded plane cuDNN's full-image FFT convolution accepts (cuDNN API reference,
# cudnnConvolutionFwdAlgo_t CUDNN_CONVOLUTION_FWD_ALGO_FFT: "xDesc's feature map height + 2 *
# convDesc's zero-padding height must equal 256 or less", likewise the width).
FFT_MAX_PLANE = 256
# Input tile of FFT_TILING [U: cuDNN API reference describes 32×32 tiles for FFT_TILING].
TILE = 32
# cuDNN requires the padding to be smaller than the filter for both FFT algorithms (API reference).
# DRAM passes of one 2-D FFT kernel over its tensor: the row-column algorithm transforms one axis,
# writes, and transforms the other (each pass reads and writes the whole tensor) [assumption: planes
# too large for one CTA's shared memory; fbfft (Vasilache et al. 2015) fuses both axes only ≤ 32×32].
FFT_PASSES = 2


def _fft_size(n: int) -> int:
    """Smallest power of two ≥ n: the transform sizes of cuDNN's FFT kernels (``fft2d_r2c_16x16``,
    ``fft2d_r2c_32x32``, … in the kernel names NeuSight recorded with cuDNN 8.9, public dataset
    ``trsharm25/NeuSight``; an 11×11 plane padded to 13 runs the 16×16 kernels)."""
    return 1 << max(0, (n - 1).bit_length())


def eligible(layer: Layer, tiled: bool) -> bool:
    """Stride 1, padding below the filter size; full FFT: padded plane ≤ 256; tiling: filter < tile."""
    if layer.stride_h != 1 or layer.stride_w != 1 or layer.pad_h >= layer.R or layer.pad_w >= layer.S:
        return False
    if tiled:
        return layer.R < TILE and layer.S < TILE
    return layer.H + 2 * layer.pad_h <= FFT_MAX_PLANE and layer.W + 2 * layer.pad_w <= FFT_MAX_PLANE


def _fft_flops(rows: int, cols: int) -> float:
    """Real flops of one real 2-D FFT of rows×cols points: 2.5·n·log₂ n."""
    n = rows * cols
    return 2.5 * n * math.log2(n) if n > 1 else 0.0


def fft_gemm(layer: Layer, phase: Phase, tiled: bool) -> Gemm:
    """The batched complex GEMM (with its FFT kernels) of one FFT formulation of ``phase``."""
    rows, cols = (layer.H, layer.W) if phase == "dgrad" else (layer.P, layer.Q)  # output plane
    if tiled:
        hf = wf = TILE
        per_image = math.ceil(rows / (TILE - layer.R + 1)) * math.ceil(cols / (TILE - layer.S + 1))
    else:
        hf, wf = _fft_size(layer.H + 2 * layer.pad_h), _fft_size(layer.W + 2 * layer.pad_w)
        per_image = 1
    freqs = hf * (wf // 2 + 1)
    spatial = layer.N * per_image  # images (full FFT) or image tiles (tiling)
    x = layer.N * layer.C * layer.H * layer.W
    y = layer.N * layer.K * layer.P * layer.Q
    w = layer.K * layer.C * layer.R * layer.S
    cplx = 2 * freqs  # real elements of one spectrum
    fft = _fft_flops(hf, wf)
    side: tuple[SideKernel, ...]
    if phase == "wgrad":
        big_m, big_n, big_k = layer.K, 2 * layer.C, 2 * spatial
        a_el, b_el, c_el = cplx * spatial * layer.K, cplx * spatial * layer.C, cplx * layer.K * layer.C
        side = (SideKernel("input FFT", x + b_el, fft * spatial * layer.C),
                SideKernel("dY FFT", y + a_el, fft * spatial * layer.K),
                SideKernel("filter inverse FFT", c_el + w, fft * layer.K * layer.C))
    else:
        ci, co = (layer.C, layer.K) if phase == "fprop" else (layer.K, layer.C)
        raw_in, raw_out = (x, y) if phase == "fprop" else (y, x)
        big_m, big_n, big_k = spatial, 2 * co, 2 * ci
        a_el, b_el, c_el = cplx * spatial * ci, cplx * ci * co, cplx * spatial * co
        side = (SideKernel("input FFT", raw_in + a_el, fft * spatial * ci),
                SideKernel("filter FFT", w + b_el, fft * ci * co),
                SideKernel("output inverse FFT", c_el + raw_out, fft * spatial * co))
    name = "fft_tiling" if tiled else "fft"
    if not tiled:
        side = tuple(SideKernel(k.name, k.elements * FFT_PASSES, k.flops) for k in side)
    return Gemm(big_m, big_n, big_k, a_el, b_el, c_el, layer.macs, name, phase, batch=freqs, side=side,
                workspace=a_el + b_el + c_el, algo=name.upper())
