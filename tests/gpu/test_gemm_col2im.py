"""col2im dgrad (BWD_DATA_ALGO_0, ``gemm.dgrad_col2im``): its M is tiled image by image (``Gemm.m_slabs``) and its
kernel, ``dgrad_engine``, has a 64 × 128 tile besides the SGEMM-like ones (``tiles.SIMT_COL2IM_TILES``)."""

from __future__ import annotations

from dataclasses import replace

from antsim.gpu import estimate_layer, load_gpu
from antsim.gpu.gemm import dgrad_col2im, phase_gemms
from antsim.gpu.menus import formulations, heuristic_tile
from antsim.gpu.model import candidate_plans
from antsim.gpu.tiles import SIMT_COL2IM_TILES, SIMT_TILES
from antsim.workloads.layers import Layer

# DeepBench's one col2im layer with a small plane: ResNet's 1×1 stride-2 pad-3 shortcut (pad ≥ filter: col2im only)
PAD3 = Layer("pad3", N=8, C=2048, K=512, H=7, W=7, R=1, S=1, stride=2, pad=3)
INPUT = Layer("rgb", N=8, C=3, K=64, H=224, W=224, R=3, S=3, stride=1, pad=1)  # C < 32: col2im on the menu


def test_col2im_tiles_m_image_by_image() -> None:
    g = dgrad_col2im(PAD3)
    assert g.m_slabs == PAD3.N and g.M == PAD3.N * PAD3.P * PAD3.Q == 8 * 49
    assert g.m_tiles(128) == g.m_tiles(64) == 8  # 49 pixels pad to one tile per image
    assert replace(g, m_slabs=1).m_tiles(128) == 4 and replace(g, m_slabs=1).m_tiles(64) == 7
    assert [x.m_slabs for x in phase_gemms(PAD3, "dgrad")] == [PAD3.N]
    # the implicit GEMMs keep one contiguous M (their precomputed index buffers address any pixel)
    assert all(x.m_slabs == 1 for x in phase_gemms(INPUT, "fprop") + phase_gemms(INPUT, "wgrad"))


def test_col2im_runs_dgrad_engine_s_64x128_tile_besides_the_sgemm_ones() -> None:
    assert set(SIMT_COL2IM_TILES) - set(SIMT_TILES) == {next(t for t in SIMT_COL2IM_TILES if (t.m, t.n) == (64, 128))}
    p100 = load_gpu("p100")
    col2im = next(g for g in formulations(p100, PAD3, "dgrad", "fp32", "cudnn7") if g.algorithm == "col2im")
    assert {(p.tile.m, p.tile.n) for p in candidate_plans(p100, col2im, "fp32")} == \
        {(t.m, t.n) for t in SIMT_COL2IM_TILES}
    implicit = next(g for g in formulations(p100, INPUT, "dgrad", "fp32", "cudnn7") if g.algorithm == "implicit")
    assert {(p.tile.m, p.tile.n) for p in candidate_plans(p100, implicit, "fp32")} == {(t.m, t.n) for t in SIMT_TILES}


def test_the_heuristic_width_rule_reads_col2im_s_own_tiles() -> None:
    wide = dgrad_col2im(PAD3)  # N = C·R·S = 2048: the 128-wide tiles, both heights
    assert {(t.m, t.n) for t in SIMT_COL2IM_TILES if heuristic_tile(wide, t)} == {(128, 128), (64, 128)}
    narrow = dgrad_col2im(INPUT)  # N = 27: the 32-wide tile only
    assert {(t.m, t.n) for t in SIMT_COL2IM_TILES if heuristic_tile(narrow, t)} == {(128, 32)}


def test_the_pad3_dgrad_grows_with_the_batch_as_measured() -> None:
    # DeepBench: 1.8-2.1x from N = 8 to 16 on every sheet (P100 fp32 0.235 -> 0.442 ms)
    for gpu in ("p100", "titanxp", "t4", "m40"):
        t8, t16 = (estimate_layer(gpu, replace(PAD3, N=n), "dgrad", "fp32", selection="heuristic",
                                  library="cudnn7").time_s for n in (8, 16))
        assert 1.6 < t16 / t8 < 2.2, (gpu, t16 / t8)
