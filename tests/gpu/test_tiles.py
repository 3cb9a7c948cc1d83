"""CTA tiles (``antsim.gpu.tiles``): the generation of each GPU, its tensor-core tiles; occupancy by hand."""

from __future__ import annotations

from antsim.gpu import load_gpu
from antsim.gpu.tiles import SIMT_TILES, TENSOR_TILES_BY_ARCH, architecture, ctas_per_sm, tensor_tiles


def test_tensor_core_tiles_per_generation() -> None:
    assert [architecture(load_gpu(g)) for g in ("p100", "v100", "t4", "a100", "h100")] == [
        "pascal", "volta", "turing", "ampere", "hopper"]
    assert {t.stages for t in tensor_tiles(load_gpu("v100"))} == {2}
    assert {t.stages for t in tensor_tiles(load_gpu("a100"))} == {3}
    assert set(TENSOR_TILES_BY_ARCH["ampere"]) < set(tensor_tiles(load_gpu("h100")))  # Hopper runs sm80 kernels
    assert max(t.k for t in tensor_tiles(load_gpu("h100"))) == 64


def test_a_simt_tile_by_hand() -> None:
    tile = SIMT_TILES[0]  # 128×128, 8 deep, 8×8 accumulators a thread, double-buffered
    assert (tile.m, tile.n, tile.k, tile.threads, tile.stages, tile.fragment) == (128, 128, 8, 256, 2, 8)
    assert tile.smem_bytes(4) == 2 * (128 + 128) * 8 * 4  # two stages of A and B
    assert tile.registers() == 256 * (64 + 16 + 40)  # accumulators + 2·8 operand registers + 40 for addresses
    assert tile.smem_bytes_per_mac(4) == 1.0  # 16 operands of 4 B for 64 MACs a k step


def test_v100_holds_two_128x128_simt_ctas_per_sm_by_registers() -> None:
    # CUDA programming guide, cc 7.0: 65536 registers, 2048 threads and 32 CTAs per SM; 96 KB of shared memory.
    v100 = load_gpu("v100")
    tile = SIMT_TILES[0]
    limits = (96 * 1024 // tile.smem_bytes(4), 65536 // tile.registers(), 2048 // tile.threads, 32)
    assert limits == (6, 2, 8, 32) and ctas_per_sm(v100, tile, 4) == min(limits) == 2
