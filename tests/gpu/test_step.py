"""A whole training step on a GPU (``antsim gpu --step``): step kernels, network structure, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from antsim.cli import main
from antsim.errors import AntsimError
from antsim.gpu import estimate_gpu, gpu_from_dict
from antsim.gpu.elementwise import KERNEL_OVERHEAD_S
from antsim.gpu.step import estimate_step, layer_roles, result_scope, role_kernels
from antsim.report.compare import compare_results
from antsim.workloads.zoo import network

SPECS = Path(__file__).resolve().parents[2] / "antsim" / "gpu" / "specs"


def _layers(name: str, batch: int) -> list:
    return [layer.with_batch(batch) for layer in network(name)]


@pytest.mark.parametrize(("gpu", "net", "precision"), [
    ("v100", "resnet50-imagenet", "fp16"), ("p100", "resnet18-cifar", "fp32"), ("h100", "densenet121-cifar", "bf16"),
    ("a100", "vgg16-cifar", "tf32"), ("titanxp", "wrn-16-8-cifar", "fp16_pseudo"),
])
def test_step_is_never_faster_than_the_convolutions_alone(gpu: str, net: str, precision: str) -> None:
    layers = _layers(net, 4)
    conv = estimate_gpu(gpu, layers, precision=precision)
    step = estimate_step(gpu, layers, precision=precision, network=net)
    assert step.keys() == conv.keys()  # same (layer, phase) records: compare joins them with any design
    for c, s in zip(conv.records, step.records, strict=True):
        assert s.details["conv_time_s"] == c.time_s
        assert s.time_s == pytest.approx(c.time_s + s.details["step_time_s"], rel=1e-12)
        assert s.details["step_time_s"] >= KERNEL_OVERHEAD_S  # every record carries at least one kernel
        assert s.energy_j > c.energy_j
    assert step.totals["time_s"] > conv.totals["time_s"]
    assert result_scope(step) == "step" and result_scope(conv) == "conv"
    assert step.design == f"{conv.design}-step"


def _with_bandwidth(gbs: float) -> object:
    data = yaml.safe_load((SPECS / "v100.yaml").read_text())
    data["dram"]["achievable_gbs"] = gbs
    return gpu_from_dict(data)


def test_step_kernels_are_monotone_in_dram_bandwidth() -> None:
    layers = _layers("resnet18-cifar", 8)
    totals = []
    for gbs in (200.0, 400.0, 800.0, 1600.0):
        step = estimate_step(_with_bandwidth(gbs), layers, network="resnet18-cifar")
        totals.append([r.details["step_time_s"] for r in step.records])
    for slower, faster in zip(totals, totals[1:], strict=False):
        assert all(f < s for s, f in zip(slower, faster, strict=True))
    # Memory-bound kernels: t(bw) = bytes / bw + launches x overhead, so each doubling saves half the last saving.
    t = [math.fsum(times) for times in totals]
    assert t[0] - t[1] == pytest.approx(2 * (t[1] - t[2]), rel=1e-9)
    assert t[1] - t[2] == pytest.approx(2 * (t[2] - t[3]), rel=1e-9)


def test_resnet50_structure_is_derived_from_names_and_shapes() -> None:
    roles = layer_roles(network("resnet50-imagenet"), "resnet50-imagenet")
    assert sum(r.residual_add for r in roles) == 16  # 3 + 4 + 6 + 3 bottleneck blocks
    assert sum(r.shortcut_fork for r in roles) == 16
    assert [r.layer.name for r in roles if not r.relu] == [f"layer{i}.0.downsample" for i in range(1, 5)]
    pools = [(r.layer.name, r.pool) for r in roles if r.pool is not None]
    assert [(name, p.kind, p.out_h) for name, p in pools] == [("conv1", "max", 56), ("layer4.2.conv3", "global", 1)]
    assert not any(r.pre_activation for r in roles)


def test_other_networks_structure() -> None:
    dense = layer_roles(network("densenet121-imagenet"), "densenet121-imagenet")
    assert not any(r.residual_add for r in dense)  # DenseNet concatenates, it does not add
    assert all(r.pre_activation for r in dense)
    assert [(r.layer.name, r.pool.kind) for r in dense if r.pool] == [
        ("conv0", "avg"), ("trans1.conv", "avg"), ("trans2.conv", "avg"), ("trans3.conv", "avg"),
        ("dense4.15.conv2", "global")]
    vgg = layer_roles(network("vgg16-imagenet"), "vgg16-imagenet")
    assert [r.layer.name for r in vgg if r.pool] == ["features.2", "features.7", "features.14", "features.21",
                                                    "features.28"]
    assert sum(r.residual_add for r in layer_roles(network("resnet18-cifar"))) == 8


def test_bottleneck_kernel_bytes_match_the_closed_forms() -> None:
    layers = _layers("resnet50-imagenet", 2)
    roles = {r.layer.name: r for r in layer_roles(layers, "resnet50-imagenet")}
    out = 2 * 256 * 56 * 56  # layer1.0.conv3 output elements at batch 2
    kernels = {k.name: k for k in role_kernels(roles["layer1.0.conv3"], "fp16")}
    assert kernels["bn_forward"].bytes == 3 * out * 2
    assert kernels["bn_backward"].bytes == 5 * out * 2
    assert kernels["relu_forward"].bytes == 2 * out * 2
    assert kernels["relu_backward"].bytes == 3 * out * 2
    assert kernels["residual_add"].bytes == 3 * out * 2
    params = 256 * 64 + 2 * 256
    assert kernels["sgd_momentum"].bytes == 5 * 4 * params  # read w, g, v; write w, v (fp32)
    assert kernels["weight_cast"].bytes == 6 * params and kernels["grad_unscale"].bytes == 8 * params
    fork = {k.name: k for k in role_kernels(roles["layer1.0.conv1"], "fp32")}
    assert fork["residual_grad_add"].bytes == 3 * (2 * 64 * 56 * 56) * 4  # sized by the block input
    assert "weight_cast" not in fork and "grad_unscale" not in fork
    stem = {k.name: k for k in role_kernels(roles["conv1"], "fp32")}
    assert stem["maxpool_forward"].bytes == 2 * 64 * (112 * 112 * 4 + 56 * 56 * (4 + 8))  # int64 argmax


def test_resnet50_optimizer_touches_every_trainable_parameter_but_the_classifier() -> None:
    # torchvision resnet50: 25,557,032 parameters, of which the FC layer holds 2048 x 1000 + 1000.
    roles = layer_roles(network("resnet50-imagenet"), "resnet50-imagenet")
    updated = sum(k.bytes for r in roles for k in role_kernels(r, "fp32") if k.name == "sgd_momentum") / 20
    assert updated == 25_557_032 - 2048 * 1000 - 1000


def test_phases_left_out_drop_their_kernels() -> None:
    layers = _layers("resnet18-cifar", 2)
    step = estimate_step("v100", layers, phases=("fprop",), network="resnet18-cifar")
    names = {k["name"] for r in step.records for k in r.details["step_kernels"]}
    assert names and not names & {"bn_backward", "relu_backward", "sgd_momentum"}


def test_compare_reads_a_step_next_to_the_conv_only_figure() -> None:
    layers = _layers("resnet18-cifar", 2)
    conv = estimate_gpu("v100", layers, precision="fp16")
    step = estimate_step("v100", layers, precision="fp16", network="resnet18-cifar")
    comparison = compare_results([conv, step])
    assert comparison.summary("v100-fp16-step").speedup == pytest.approx(conv.totals["time_s"] / step.totals["time_s"])
    assert comparison.summary("v100-fp16-step").speedup < 1


def test_cli_step_writes_a_step_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "step.json"
    assert main(["gpu", "--gpu", "a100", "--network", "resnet18-cifar", "--batch", "2", "--precision", "fp16",
                 "--step", "--out", str(out), "--no-progress"]) == 0
    data = json.loads(out.read_text())
    assert data["design"] == "a100-fp16-step" and data["meta"]["scope"] == "step"
    assert "memory-bound step kernels" in capsys.readouterr().out


def test_cli_rejects_step_with_check_and_gpu_step_without_gpu(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpu", "--gpu", "v100", "--step", "--check", str(tmp_path / "m.csv")]) == 2
    assert "--step goes without --check" in capsys.readouterr().err
    scnn = Path(__file__).resolve().parents[2] / "arch_configs" / "scnn.yaml"
    assert main(["compare", "--arch", str(scnn), "--gpu-step", "--network", "resnet18-cifar"]) == 2  # before simulating
    err = capsys.readouterr().err  # the message lists every --gpu-* option that needs --gpu
    assert "--gpu-step" in err and "need --gpu" in err


@pytest.mark.parametrize("overhead", [-1e-6, float("nan")])
def test_a_bad_kernel_overhead_is_refused_in_one_line(overhead: float) -> None:
    with pytest.raises(AntsimError, match="overhead_s: must be a finite number >= 0") as info:
        estimate_step("v100", _layers("resnet18-cifar", 1), overhead_s=overhead)
    assert "\n" not in str(info.value)


# ---- the framework's tensor layout: cuDNN's NCHW <-> NHWC transposes around tensor-core convolutions ----

def test_layout_transposes_move_each_phase_tensors_once_each_way() -> None:
    from antsim.gpu.step import layout_kernels
    from antsim.workloads.layers import Layer

    layer = Layer("c", N=8, C=64, K=128, H=28, W=28, R=3, S=3, stride=1, pad=1)
    x, y, w = 8 * 64 * 28 * 28, 8 * 128 * 28 * 28, 128 * 64 * 3 * 3
    moved = {"fprop": x + w, "dgrad": y + w + x, "wgrad": x + y + w}  # fprop writes NCHW in its epilogue
    for phase, elements in moved.items():
        for precision, e in (("fp16", 2), ("tf32", 4)):
            (k,) = layout_kernels(layer, phase, precision, True, "nchw")
            assert k.bytes == 2 * e * elements and k.flops == 0 and k.phase == phase  # read + write each tensor
            assert k.launches == (2 if phase == "fprop" else 3)
        assert layout_kernels(layer, phase, "fp16", True, "nhwc") == []
        assert layout_kernels(layer, phase, "fp32", False, "nchw") == []  # SIMT kernels read NCHW


def test_nchw_step_adds_bytes_over_bandwidth_plus_launches_on_tensor_core_records_only() -> None:
    from antsim.gpu import load_gpu

    v100 = load_gpu("v100")
    layers = _layers("resnet18-cifar", 8)
    nhwc = estimate_step(v100, layers, precision="fp16", network="resnet18-cifar")
    nchw = estimate_step(v100, layers, precision="fp16", network="resnet18-cifar", layout="nchw")
    assert nhwc.meta["step"]["layout"] == "nhwc" and nchw.meta["step"]["layout"] == "nchw"
    by_name = {layer.name: layer for layer in layers}
    e = 2
    for a, b in zip(nhwc.records, nchw.records, strict=True):
        layer = by_name[a.layer]
        x, y, w = (layer.N * layer.C * layer.H * layer.W, layer.N * layer.K * layer.P * layer.Q,
                   layer.K * layer.C * layer.R * layer.S)
        tensors = {"fprop": (x, w), "dgrad": (y, w, x), "wgrad": (x, y, w)}[a.phase]
        expected = (2 * e * sum(tensors) / v100.dram_bytes_per_s + len(tensors) * KERNEL_OVERHEAD_S
                    if a.details["tensor_cores"] else 0.0)
        assert b.time_s - a.time_s == pytest.approx(expected, rel=1e-9, abs=1e-15)
    assert any(r.details["tensor_cores"] for r in nchw.records)


@pytest.mark.parametrize(("gpu", "precision"), [("v100", "fp32"), ("p100", "fp16"), ("titanxp", "fp16_pseudo")])
def test_simt_convolutions_pay_no_transposes(gpu: str, precision: str) -> None:
    layers = _layers("resnet18-cifar", 4)
    nhwc = estimate_step(gpu, layers, precision=precision, network="resnet18-cifar", layout="nhwc")
    nchw = estimate_step(gpu, layers, precision=precision, network="resnet18-cifar", layout="nchw")
    assert not any(r.details["tensor_cores"] for r in nchw.records)
    assert [r.time_s for r in nchw.records] == [r.time_s for r in nhwc.records]


def test_unknown_layout_is_refused() -> None:
    with pytest.raises(AntsimError, match="tensor layout: unknown 'chwn'; known: nchw, nhwc"):
        estimate_step("v100", _layers("resnet18-cifar", 1), layout="chwn")  # type: ignore[arg-type]


def test_xla_fusion_folds_relu_and_residual_add_into_batchnorm_closed_forms() -> None:
    layers = _layers("resnet50-imagenet", 2)
    roles = {r.layer.name: r for r in layer_roles(layers, "resnet50-imagenet")}
    out = 2 * 256 * 56 * 56  # layer1.0.conv3 output elements at batch 2 (ReLU after the residual add)
    fused = {k.name: k for k in role_kernels(roles["layer1.0.conv3"], "fp16", "xla")}
    assert "relu_forward" not in fused and "relu_backward" not in fused and "residual_add" not in fused
    assert fused["bn_forward"].bytes == (3 + 1) * out * 2  # stats read, normalise read + shortcut read, write
    assert fused["bn_backward"].bytes == (5 + 2) * out * 2  # + the ReLU mask read in both reading passes
    assert fused["bn_forward"].launches == fused["bn_backward"].launches == 1
    shortcut = {k.name: k for k in role_kernels(roles["layer1.0.downsample"], "fp16", "xla")}
    assert shortcut["bn_backward"].bytes == 5 * out * 2  # no ReLU on a projection shortcut: nothing to fold
    eager = role_kernels(roles["layer1.0.conv3"], "fp16")
    saved = sum(k.bytes for k in eager) - sum(k.bytes for k in fused.values())
    assert saved == (2 + 3 + 3 - 1 - 2) * out * 2  # ReLU fwd 2, bwd 3, add 3 passes; minus the fused reads
    assert sum(k.launches for k in eager) - sum(k.launches for k in fused.values()) == 3


def test_xla_step_is_eager_minus_the_saved_bytes_and_launches() -> None:
    layers = _layers("resnet50-imagenet", 4)
    eager = estimate_step("v100", layers, precision="fp16", network="resnet50-imagenet")
    xla = estimate_step("v100", layers, precision="fp16", network="resnet50-imagenet", fusion="xla")
    assert xla.meta["step"]["fusion"] == "xla" and eager.meta["step"]["fusion"] == "eager"
    roles = layer_roles(layers, "resnet50-imagenet")
    saved_bytes = sum(k.bytes for r in roles for k in role_kernels(r, "fp16")) - \
        sum(k.bytes for r in roles for k in role_kernels(r, "fp16", "xla"))
    saved_launches = sum(k.launches for r in roles for k in role_kernels(r, "fp16")) - \
        sum(k.launches for r in roles for k in role_kernels(r, "fp16", "xla"))
    bw = estimate_gpu("v100", layers[:1]).spec["dram"]["achievable_gbs"] * 1e9
    expected = saved_bytes / bw + saved_launches * KERNEL_OVERHEAD_S
    assert eager.totals["time_s"] - xla.totals["time_s"] == pytest.approx(expected, rel=1e-6)
    assert [r.details["conv_time_s"] for r in xla.records] == [r.details["conv_time_s"] for r in eager.records]


def test_unknown_fusion_is_refused() -> None:
    with pytest.raises(AntsimError, match="step fusion: unknown 'jit'; known: eager, xla"):
        estimate_step("v100", _layers("resnet18-cifar", 1), fusion="jit")  # type: ignore[arg-type]
