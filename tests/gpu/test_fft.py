"""FFT formulations (``antsim.gpu.fft``): work and workspace against closed forms; eligibility."""

from __future__ import annotations

import math

import pytest

from antsim.gpu import fft
from antsim.workloads.layers import Layer

L = Layer("c", N=8, C=64, K=128, H=56, W=56, R=3, S=3, stride=1, pad=1)  # P = Q = 56


def test_full_fft_is_a_batched_complex_gemm_per_frequency() -> None:
    g = fft.fft_gemm(L, "fprop", tiled=False)
    # 56 + 2·1 = 58 → cuDNN's next power-of-two transform, 64
    assert fft._fft_size(58) == 64 and fft._fft_size(64) == 64 and fft._fft_size(13) == 16 and fft._fft_size(1) == 1
    hf = wf = 64
    freqs = hf * (wf // 2 + 1)
    assert (g.batch, g.M, g.N, g.K) == (freqs, L.N, 2 * L.K, 2 * L.C)
    assert g.macs == 4 * freqs * L.N * L.C * L.K  # one complex MAC = four real ones
    fft_flops = 2.5 * hf * wf * math.log2(hf * wf)
    assert [k.flops for k in g.side] == pytest.approx([fft_flops * L.N * L.C, fft_flops * L.C * L.K,
                                                       fft_flops * L.N * L.K])
    assert g.workspace == 2 * freqs * (L.N * L.C + L.C * L.K + L.N * L.K)


def test_fft_tiling_and_eligibility() -> None:
    big = Layer("k9", N=4, C=16, K=16, H=300, W=300, R=9, S=9, stride=1, pad=4)
    assert not fft.eligible(big, tiled=False) and fft.eligible(big, tiled=True)  # 308 > 256 for the full FFT
    g = fft.fft_gemm(big, "fprop", tiled=True)
    per_axis = math.ceil(300 / (32 - 9 + 1))
    assert (g.batch, g.M) == (32 * 17, 4 * per_axis * per_axis)
    assert not fft.eligible(Layer("s2", N=1, C=8, K=8, H=32, W=32, R=5, S=5, stride=2, pad=2), tiled=True)
    wg = fft.fft_gemm(L, "wgrad", tiled=False)
    assert (wg.M, wg.N, wg.K) == (L.K, 2 * L.C, 2 * L.N)
