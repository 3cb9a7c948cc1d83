"""Strided dgrad from cuDNN 7.4.1 on (``--library cudnn7.6``, ``menus.STRIDED_DGRAD_RELEASE``): the stride-phase
dgrad at any C on the SIMT (NCHW) menu and the row-phased 1×1 stride-2 dgrad under the heuristics at any K; the
releases before it (``cudnn7`` = 7.0–7.4.0, cudnn5, cudnn6) keep ``gemm.PHASED_MIN_C`` and ``ROW_PHASED_MIN_K``."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from antsim.gpu import estimate_layer, load_gpu
from antsim.gpu.gemm import PHASED_MIN_C, dgrad_phased
from antsim.gpu.menus import (
    ROW_PHASED_MIN_K,
    formulations,
    heuristic_formulations,
    heuristic_tile,
    row_phased_by_heuristic,
    skips_strided_zeros,
)
from antsim.gpu.tiles import SIMT_PHASED_TILES, SIMT_TILES
from antsim.measure.deepbench import read_deepbench_csv
from antsim.workloads.layers import Layer

# DeepBench's DeepSpeech 5×10 stride-2 layer (C = 32 < PHASED_MIN_C) and a ResNet 1×1 stride-2 shortcut with K = 256.
DS = Layer("ds", N=32, C=32, K=32, H=79, W=341, R=5, S=10, stride=2, pad=0)
SHORTCUT = Layer("sc", N=8, C=64, K=256, H=56, W=56, R=1, S=1, stride=2, pad=0)


def test_the_release_split_is_at_7_4_1() -> None:
    assert [skips_strided_zeros(lib) for lib in ("cudnn5", "cudnn6", "cudnn7", "cudnn7.6", "cudnn8")] == \
        [False, False, False, True, True]


def test_cudnn7_6_offers_the_stride_phase_dgrad_below_phased_min_c_on_the_simt_lanes() -> None:
    t4 = load_gpu("t4")
    assert DS.C < PHASED_MIN_C
    old = {g.algorithm for g in formulations(t4, DS, "dgrad", "fp32", "cudnn7")}
    new = [g for g in formulations(t4, DS, "dgrad", "fp32", "cudnn7.6") if g.algorithm == "phased"]
    assert "phased" not in old
    assert len(new) == 1 and new[0].simt_only and new[0].algo == "BWD_DATA_ALGO_1"
    assert (new[0].M, new[0].N, new[0].K) == (dgrad_phased(DS).M, dgrad_phased(DS).N, dgrad_phased(DS).K)
    # fprop and wgrad menus do not change
    for phase in ("fprop", "wgrad"):
        assert [g.algorithm for g in formulations(t4, DS, phase, "fp32", "cudnn7")] == \
            [g.algorithm for g in formulations(t4, DS, phase, "fp32", "cudnn7.6")]


def test_the_tensor_core_menu_keeps_one_stride_phase_dgrad() -> None:
    t4 = load_gpu("t4")
    for lib in ("cudnn7", "cudnn7.6"):
        assert [g.algorithm for g in formulations(t4, DS, "dgrad", "fp16", lib)].count("phased") == 1


def test_true_half_drops_it_as_every_zero_skipping_plan() -> None:
    p100 = load_gpu("p100")
    assert "phased" not in {g.algorithm for g in formulations(p100, DS, "dgrad", "fp16", "cudnn7.6")}


def test_the_heuristic_tile_of_a_narrow_phased_dgrad_is_its_own_narrowest_tile() -> None:
    g = next(g for g in formulations(load_gpu("t4"), DS, "dgrad", "fp32", "cudnn7.6") if g.algorithm == "phased")
    # C = 32 would ask for the 32-wide SIMT tile, which the phased kernels do not have: the narrowest of theirs
    assert g.N in {t.n for t in SIMT_TILES} - {t.n for t in SIMT_PHASED_TILES}
    assert [t.n for t in SIMT_PHASED_TILES if heuristic_tile(g, t)] == [64]


def test_the_row_phased_heuristic_takes_any_k_from_7_4_1() -> None:
    assert SHORTCUT.K < ROW_PHASED_MIN_K
    assert not row_phased_by_heuristic(SHORTCUT, "cudnn7") and row_phased_by_heuristic(SHORTCUT, "cudnn7.6")
    t4 = load_gpu("t4")
    for lib, want in (("cudnn7", False), ("cudnn7.6", True)):
        kept = heuristic_formulations(formulations(t4, SHORTCUT, "dgrad", "fp32", lib), SHORTCUT, "dgrad",
                                      "IMPLICIT_PRECOMP_GEMM", lib)
        assert ("row_phased" in {g.algorithm for g in kept}) is want


@pytest.mark.parametrize("n", [4, 8, 16, 32])
def test_the_deepspeech_dgrad_on_t4_fp32_no_longer_runs_the_zero_inserted_gemm(n: int) -> None:
    layer = Layer("ds", N=n, C=32, K=32, H=79, W=341, R=5, S=10, stride=2, pad=0)
    old = estimate_layer("t4", layer, "dgrad", "fp32", selection="heuristic", library="cudnn7")
    new = estimate_layer("t4", layer, "dgrad", "fp32", selection="heuristic", library="cudnn7.6")
    assert old.details["algorithm"] == "implicit" and new.details["algorithm"] == "phased"
    assert 0.5 < new.time_s / old.time_s < 0.65  # a 64-wide CTA over 32 channels: 15 of 50 taps, half its width


def test_the_t4_sheet_rows_of_the_family_move_towards_the_measurements() -> None:
    # cuDNN 7.6.2 on T4 fp32: 1.81 / 2.60 / 3.59 / 5.78 ms at N = 4 / 8 / 16 / 32 (about 1.4 ms + 0.14 ms per image:
    # the fixed part has no kernel in the model, so the small batches come out fast and the large ones slow).
    sheet = Path(__file__).resolve().parents[1] / "data" / "deepbench" / "deepbench_conv_T4.csv"
    rows = [m for m in read_deepbench_csv(sheet, "fp32") if m.layer.C == 32 and m.layer.R == 5 and "dgrad" in m.times_s]
    assert len(rows) == 4
    logs = {}
    for lib in ("cudnn7", "cudnn7.6"):
        ratios = [estimate_layer("t4", m.layer, "dgrad", "fp32", selection="heuristic", library=lib,
                                 forward_algo=m.algo).time_s / m.times_s["dgrad"] for m in rows]
        logs[lib] = sum(abs(math.log(r)) for r in ratios)
        if lib == "cudnn7.6":
            assert all(0.6 < r < 1.7 for r in ratios), ratios
    assert logs["cudnn7.6"] < 0.6 * logs["cudnn7"]
