"""GEMM layers on the GPU model: shapes per phase, 1×1-conv equivalence, tensor cores, 2:4, step, CLI."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

import pytest

from antsim.cli import main
from antsim.errors import AntsimError
from antsim.gpu import estimate_gpu, estimate_layer, load_gpu
from antsim.gpu.check import Observation, check_measured, gemm_observations, observations
from antsim.gpu.gemm import implicit_gemm
from antsim.gpu.gemm_layer import gemm_formulation
from antsim.gpu.model import CALIBRATION, _gather_ops_per_mac, plan_gemm
from antsim.gpu.step import estimate_step
from antsim.gpu.tiles import SIMT_BATCHED_TILES, tensor_tiles
from antsim.measure.deepbench import read_deepbench_csv
from antsim.workloads.gemm import Gemm
from antsim.workloads.layers import PHASES, Layer

FC = Gemm("fc", M=3072, N=128 * 8, K=768, batch=8)  # a BERT FFN projection over 8 sequences of 128 tokens
QK = Gemm("qk", M=128, N=128, K=64, count=12 * 8, a="activations", batch=8, batch_dim="count")
REPO = Path(__file__).resolve().parents[2]


def test_weight_gemm_phases_are_one_gemm_over_every_column() -> None:
    gpu = load_gpu("a100")
    shared = dataclasses.replace(FC, count=3, N=128, batch=1)  # three products sharing the weight
    f, d, w = (gemm_formulation(gpu, shared, p, "bf16", "cudnn8") for p in PHASES)
    # fprop Yᵀ = Xᵀ·Wᵀ, dgrad dXᵀ = dYᵀ·W: rows are all 3·128 columns, the weight is B (M·K elements, once)
    assert (f.M, f.N, f.K, f.batch, f.b_unique) == (3 * 128, 3072, 768, 1, 3072 * 768)
    assert (d.M, d.N, d.K, d.batch, d.b_unique) == (3 * 128, 768, 3072, 1, 3072 * 768)
    # wgrad: dW (3072 × 768) summed over the products: one reduction over 3·128 columns
    assert (w.M, w.N, w.K, w.batch, w.c_unique) == (3072, 768, 3 * 128, 1, 3072 * 768)
    for g in (f, d, w):
        assert g.macs == g.useful_macs == shared.macs and not g.gathered and g.algo == "GEMM"


def test_attention_gemm_is_a_strided_batched_gemm() -> None:
    gpu = load_gpu("v100")
    for phase in PHASES:
        g = gemm_formulation(gpu, QK, phase, "fp16", "cudnn8")
        assert g.batch == QK.count and g.algo == "GEMM_STRIDED_BATCHED" and g.macs == QK.macs
        assert g.a_unique == QK.count * g.M * g.K and g.b_unique == QK.count * g.K * g.N
    two = dataclasses.replace(QK, count=2 * QK.count, batch=2 * QK.batch)
    for phase in PHASES:  # twice the independent products: never faster, at most twice the time (+ launches)
        one, both = estimate_layer(gpu, QK, phase, "fp16"), estimate_layer(gpu, two, phase, "fp16")
        assert one.time_s <= both.time_s <= 2 * one.time_s


def test_a_1x1_conv_and_its_gemm_run_the_same_plan_on_tensor_cores() -> None:
    """A 1×1 stride-1 conv is the GEMM (M=K, N=N·H·W, K=C): with cuDNN 8's vectorised gather (not
    binding at bf16), every (tile, split-K = 1) plan of the conv's implicit GEMM equals the GEMM layer's —
    except that the conv's wgrad walks its N·H·W reduction image by image, each image's 196 pixels padded
    to the k step (``Gemm.k_slabs``), which the GEMM layer's flat reduction does not."""
    gpu = load_gpu("a100")
    conv = Layer("c", N=16, C=256, K=512, H=14, W=14, R=1, S=1)
    gemm = Gemm("c", M=512, N=16 * 14 * 14, K=256, batch=16)
    for phase in PHASES:
        layer_gemm = gemm_formulation(gpu, gemm, phase, "bf16", "cudnn8")
        conv_gemm = dataclasses.replace(implicit_gemm(conv, phase), gather_width=8)
        assert sorted((layer_gemm.M, layer_gemm.N)) == sorted((conv_gemm.M, conv_gemm.N))
        assert layer_gemm.K == conv_gemm.K and layer_gemm.macs == conv_gemm.macs
        for tile in tensor_tiles(gpu):
            a = plan_gemm(gpu, conv_gemm, "bf16", tile, 1)
            # same orientation as the conv's GEMM (the GEMM layer's fprop/dgrad put the weight in B)
            b = plan_gemm(gpu, dataclasses.replace(layer_gemm, M=conv_gemm.M, N=conv_gemm.N,
                                                   a_unique=conv_gemm.a_unique, b_unique=conv_gemm.b_unique),
                          "bf16", tile, 1)
            assert a is not None and b is not None
            padding = conv_gemm.k_padded(tile.k) / layer_gemm.k_padded(tile.k)  # 1 except the conv's wgrad
            assert padding == (16 * 224 / 3136 if phase == "wgrad" else 1), (phase, tile.name)
            assert a.compute_s == pytest.approx(b.compute_s * padding, rel=1e-12), (phase, tile.name)
            if phase != "wgrad":
                assert b.time_s == pytest.approx(a.time_s, rel=1e-12), (phase, tile.name)
            assert a.time_s >= b.time_s * (1 - 1e-12), (phase, tile.name)


def test_on_simt_lanes_the_gemm_saves_exactly_the_convs_gather_instructions() -> None:
    gpu = load_gpu("p100")
    conv = Layer("c", N=32, C=512, K=512, H=14, W=14, R=1, S=1)
    gemm = Gemm("c", M=512, N=32 * 14 * 14, K=512, batch=32)
    tile = SIMT_BATCHED_TILES[0]  # 128×128, shared by both menus
    for phase in ("fprop", "dgrad"):
        conv_gemm = implicit_gemm(conv, phase)
        layer_gemm = gemm_formulation(gpu, gemm, phase, "fp32", "cudnn8")
        a = plan_gemm(gpu, conv_gemm, "fp32", tile, 1)
        b = plan_gemm(gpu, dataclasses.replace(layer_gemm, M=conv_gemm.M, N=conv_gemm.N), "fp32", tile, 1)
        assert a is not None and b is not None and a.bound == b.bound == "compute"
        assert a.compute_s / b.compute_s == pytest.approx(1 + _gather_ops_per_mac(conv_gemm, tile, CALIBRATION))


def test_tensor_core_rule_for_gemms_follows_the_library_generation() -> None:
    gpu = load_gpu("v100")
    odd = Gemm("odd", M=1000, N=30, K=770)
    assert estimate_layer(gpu, odd, "fprop", "fp16", library="cudnn8").details["tensor_cores"]
    assert not estimate_layer(gpu, odd, "fprop", "fp16", library="cudnn7").details["tensor_cores"]
    assert estimate_layer(gpu, dataclasses.replace(odd, N=32, K=768), "fprop", "fp16",
                          library="cudnn7").details["tensor_cores"]
    assert not estimate_layer(gpu, FC, "fprop", "fp32").details["tensor_cores"]  # fp32 runs the SIMT lanes
    assert estimate_layer("a100", FC, "fprop", "tf32").details["tensor_cores"]


def test_two_four_speeds_weight_gemms_at_most_twofold_and_leaves_the_rest() -> None:
    for name in ("a100", "h100"):
        gpu = load_gpu(name)
        big = dataclasses.replace(FC, N=128 * 64, batch=64)
        for phase in PHASES:
            dense = estimate_layer(gpu, big, phase, "bf16")
            sparse = estimate_layer(gpu, big, phase, "bf16", structured="2:4")
            if phase == "wgrad":  # dY and X are not structured
                assert sparse.time_s == dense.time_s and sparse.details["structured"] is None
            else:
                assert sparse.details["structured"] == "2:4"
                assert 1 <= dense.time_s / sparse.time_s <= 2 + 1e-12, (name, phase)
                assert name != "a100" or dense.time_s / sparse.time_s > 1.3, phase  # compute-bound there
            att = estimate_layer(gpu, QK, phase, "bf16", structured="2:4")  # no weight: dense
            assert att.time_s == estimate_layer(gpu, QK, phase, "bf16").time_s and att.details["structured"] is None
    with pytest.raises(AntsimError, match="needs sparse tensor cores"):
        estimate_layer("v100", FC, "fprop", "fp16", structured="2:4")


def test_more_bandwidth_or_compute_is_never_slower() -> None:
    gpu = load_gpu("a100")
    faster = gpu.model_copy(update={"dram": gpu.dram.model_copy(update={"bandwidth_gbs": 2 * gpu.dram.bandwidth_gbs}),
                                    "peak_tflops": gpu.peak_tflops.model_copy(update={"bf16": 624.0})})
    for layer in (FC, QK, Gemm("gate", M=4096, N=20, K=2048, count=35, batch=20)):
        for phase in PHASES:
            assert estimate_layer(faster, layer, phase, "bf16").time_s <= estimate_layer(gpu, layer, phase,
                                                                                           "bf16").time_s


def test_deepbench_1x1_rows_through_the_gemm_path() -> None:
    """DeepBench's 1×1 stride-1 convolutions restated as GEMM layers: within the error the conv path
    reaches on them for fprop and dgrad (cuBLAS-style GEMMs vs cuDNN's kernels, BENCHMARKS/docs)."""
    measured = observations(read_deepbench_csv(REPO / "tests" / "data" / "deepbench" / "deepbench_conv_TitanXp.csv",
                                               "fp32"))
    gemms = gemm_observations(measured)
    assert len(gemms) == 3 * 27 and all(isinstance(o.layer, Gemm) for o in gemms)
    first = next(o for o in measured if o.layer.R == 1 and o.layer.stride_h == 1)
    g = next(o.layer for o in gemms if o.layer.name == first.layer.name)
    assert isinstance(g, Gemm) and (g.M, g.N, g.K) == (first.layer.K, first.layer.N * first.layer.H * first.layer.W,
                                                       first.layer.C)
    rows = check_measured(load_gpu("titanxp"), gemms, "fp32", selection="heuristic", library="cudnn7")
    for phase, bound in (("fprop", 0.15), ("dgrad", 0.15)):  # reached: 12.7 %, 10.0 %
        logs = [abs(math.log(r.ratio)) for r in rows if r.phase == phase]
        assert math.exp(sum(logs) / len(logs)) - 1 <= bound, phase


def test_gemm_step_adds_only_the_weight_update(tmp_path: Path) -> None:
    layers = [FC, QK]
    conv = estimate_gpu("a100", layers, precision="bf16")
    step = estimate_step("a100", layers, precision="bf16")
    by = {(r.layer, r.phase): r for r in step.records}
    for r in conv.records:
        kernels = {k["name"] for k in by[r.layer, r.phase].details["step_kernels"]}
        if r.layer == "qk":
            assert kernels == set() and by[r.layer, r.phase].time_s == r.time_s
        else:
            assert kernels == {"fprop": {"weight_cast"}, "dgrad": set(), "wgrad": {"sgd_momentum"}}[r.phase]
            assert by[r.layer, r.phase].time_s >= r.time_s


def test_cli_gpu_runs_a_network_with_gemm_layers(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    csv = tmp_path / "layers.csv"
    csv.write_text("name,kind,N,C,K,H,W,R,S,stride,pad,M,count,a,batch,batch_dim\n"
                   "conv1,conv,4,3,64,32,32,3,3,1,1,,,,,\n"
                   "fc,gemm,4,,512,,,,,,,10,1,weights,4,N\n"
                   "qk,gemm,4,,64,,,,,,,64,8,activations,4,count\n")  # every row's N = 4: the CLI's batch check
    out = tmp_path / "r.json"
    assert main(["gpu", "--gpu", "a100", "--precision", "bf16", "--layers-csv", str(csv), "--step",
                 "--no-progress", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert {(r["layer"], r["phase"]) for r in result["records"]} == {
        (name, phase) for name in ("conv1", "fc", "qk") for phase in PHASES}
    algos = {r["layer"]: r["details"]["algo"] for r in result["records"]}
    assert algos["fc"] == "GEMM" and algos["qk"] == "GEMM_STRIDED_BATCHED"
    assert {r["layer"]: r.get("kind", "conv") for r in result["records"]} == {"conv1": "conv", "fc": "gemm",
                                                                               "qk": "gemm"}
    assert result["workload"]["layers"][1]["kind"] == "gemm"
    assert "a100-bf16-step" in capsys.readouterr().out


def test_a_gemm_observation_is_checked_like_a_conv() -> None:
    rows = check_measured(load_gpu("v100"), [Observation(FC, "fprop", 1e-4)], "fp16")
    assert rows[0].M * rows[0].N * rows[0].K == FC.macs and rows[0].model_algo == "GEMM"
    assert rows[0].tensor_cores and sys.float_info.epsilon < rows[0].predicted_s


