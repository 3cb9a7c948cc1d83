"""ONNX import: graphs built here with onnx.helper, checked against ONNX's own reference evaluator.

The reference (``onnx.reference.ReferenceEvaluator``) runs each Conv as the ONNX operator defines it; the
imported ``Layer`` is checked by running the same convolution with a numpy conv of PyTorch semantics
(symmetric pad), so the attribute handling (strides, pads, auto_pad) is checked on values, not only on
output sizes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from antsim.cli import main
from antsim.errors import MissingExtraError, WorkloadError
from antsim.workloads.layers import Layer, read_layers_csv

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from antsim.workloads.onnx_import import NOT_MODELLED, SkippedNode, read_onnx  # noqa: E402

RNG = np.random.default_rng(7)


def _weight(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
    return numpy_helper.from_array(RNG.standard_normal(shape).astype(np.float32), name)


def _model(nodes: list, x_shape: list, inits: list, out: str, path: Path, more_inputs: dict | None = None) -> Path:
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
              for name, shape in {"x": x_shape, **(more_inputs or {})}.items()]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
                              inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _conv_model(path: Path, x_shape: list, w_shape: tuple[int, ...], **attrs: object) -> Path:
    return _model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", **attrs)], x_shape,
                  [_weight("w", w_shape)], "y", path)


def _conv_numpy(x: np.ndarray, w: np.ndarray, layer: Layer) -> np.ndarray:
    """Cross-correlation with symmetric zero padding, PyTorch conv2d semantics (the Layer's)."""
    xp = np.pad(x, ((0, 0), (0, 0), (layer.pad_h,) * 2, (layer.pad_w,) * 2))
    out = np.zeros((x.shape[0], layer.K, layer.P, layer.Q))
    for p in range(layer.P):
        for q in range(layer.Q):
            h, v = p * layer.stride_h, q * layer.stride_w
            out[:, :, p, q] = np.einsum("ncrs,kcrs->nk", xp[:, :, h:h + layer.R, v:v + layer.S], w)
    return out


def _check_against_reference(path: Path, layer: Layer) -> None:
    model = onnx.load(str(path))
    x = RNG.standard_normal((layer.N, layer.C, layer.H, layer.W)).astype(np.float32)
    expected = ReferenceEvaluator(model).run(None, {"x": x})[0]
    w = numpy_helper.to_array(model.graph.initializer[0])
    np.testing.assert_allclose(_conv_numpy(x.astype(np.float64), w.astype(np.float64), layer), expected,
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("attrs", [
    {},
    {"pads": [1, 1, 1, 1]},
    {"strides": [2, 2], "pads": [1, 2, 1, 2]},
    {"strides": [2, 1], "pads": [0, 1, 0, 1]},
    {"strides": [2, 2], "pads": [1, 1, 2, 2]},      # asymmetric, the trailing pad row is never read: kept
    {"strides": [3, 3], "pads": [0, 2, 1, 1]},      # end < begin on W, end > begin on H, both unread
    {"auto_pad": "SAME_UPPER"},
    {"auto_pad": "SAME_LOWER"},
    {"auto_pad": "VALID", "strides": [2, 2]},
])
def test_conv_attributes_compute_what_onnx_computes(tmp_path: Path, attrs: dict) -> None:
    path = _conv_model(tmp_path / "m.onnx", [2, 3, 9, 9], (4, 3, 3, 3), **attrs)
    network = read_onnx(path)
    assert network.skipped == () and network.batch_fixed
    (layer,) = network.layers
    assert (layer.name, layer.N, layer.C, layer.K, layer.H, layer.W, layer.R, layer.S) == ("conv", 2, 3, 4, 9, 9, 3, 3)
    _check_against_reference(path, layer)


@pytest.mark.parametrize(("attrs", "w_shape", "x_shape", "reason"), [
    ({"group": 2}, (4, 2, 3, 3), [1, 4, 8, 8], "group=2"),
    ({"dilations": [2, 2]}, (4, 3, 3, 3), [1, 3, 8, 8], "dilations=[2, 2]"),
    ({"strides": [2, 2], "pads": [0, 0, 1, 1]}, (4, 3, 3, 3), [1, 3, 8, 8], "asymmetric pads 0,1 on axis H"),
    ({}, (4, 3, 3), [1, 3, 8], "1-D convolution"),
    ({}, (4, 3, 3, 3), [1, 3, "h", 8], "shape not static"),
])
def test_unsupported_convs_are_listed_with_the_reason(tmp_path: Path, attrs: dict, w_shape: tuple, x_shape: list,
                                                      reason: str) -> None:
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="odd", **attrs),
             helper.make_node("Conv", ["x2", "w_ok"], ["z"], name="ok", pads=[1, 1, 1, 1])]
    inits = [_weight("w", w_shape), _weight("w_ok", (5, 3, 3, 3))]
    network = read_onnx(_model(nodes, x_shape, inits, "z", tmp_path / "m.onnx", {"x2": [1, 3, 8, 8]}))
    assert [layer.name for layer in network.layers] == ["ok"]
    (odd,) = network.skipped
    assert (odd.name, odd.op_type) == ("odd", "Conv") and reason in odd.reason, odd


def test_every_other_node_is_listed_and_graph_order_kept(tmp_path: Path) -> None:
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="stem", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="act"),
             helper.make_node("MaxPool", ["r1"], ["p1"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1]),  # unnamed: its output names it
             helper.make_node("Add", ["c2", "c2"], ["y"], name="stem")]            # a clashing name, not a layer
    path = _model(nodes, [4, 3, 16, 16], [_weight("w1", (8, 3, 3, 3)), _weight("w2", (16, 8, 3, 3))], "y",
                  tmp_path / "m.onnx")
    network = read_onnx(path)
    assert [(l.name, l.C, l.K, l.H, l.P) for l in network.layers] == [("stem", 3, 8, 16, 16), ("c2", 8, 16, 8, 8)]
    assert network.skipped == (SkippedNode("act", "Relu", NOT_MODELLED), SkippedNode("pool", "MaxPool", NOT_MODELLED),
                               SkippedNode("stem", "Add", NOT_MODELLED))


def test_duplicate_node_names_get_unique_layer_names(tmp_path: Path) -> None:
    nodes = [helper.make_node("Conv", ["x", "w"], ["a"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["a", "w"], ["b"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["b", "w"], ["c"], name="conv_1", pads=[1, 1, 1, 1])]
    path = _model(nodes, [1, 4, 6, 6], [_weight("w", (4, 4, 3, 3))], "c", tmp_path / "m.onnx")
    assert [l.name for l in read_onnx(path).layers] == ["conv", "conv_2", "conv_1"]


def test_symbolic_batch_imports_at_one_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _conv_model(tmp_path / "m.onnx", ["batch", 3, 8, 8], (4, 3, 3, 3), pads=[1, 1, 1, 1])
    network = read_onnx(path)
    assert not network.batch_fixed and network.layers[0].N == 1
    assert main(["zoo", "--onnx", str(path), "--csv", str(tmp_path / "a.csv")]) == 0
    assert "batch dimension is symbolic" in capsys.readouterr().err
    assert main(["zoo", "--onnx", str(path), "--batch", "4", "--out", str(tmp_path / "b.csv")]) == 0
    assert [l.N for l in read_layers_csv(tmp_path / "a.csv")] == [1]
    assert [l.N for l in read_layers_csv(tmp_path / "b.csv")] == [4]


@pytest.mark.parametrize(("content", "message"), [
    (None, "ONNX file not found"),
    (b"\x00\xffnot a protobuf at all\x12", "not a readable ONNX model"),
])
def test_unreadable_files_are_one_line_errors(tmp_path: Path, content: bytes | None, message: str) -> None:
    path = tmp_path / "m.onnx"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(WorkloadError, match=message) as info:
        read_onnx(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_a_model_without_layers_is_refused_naming_what_it_holds(tmp_path: Path) -> None:
    path = _model([helper.make_node("Relu", ["x"], ["y"], name="r")], [1, 3, 4, 4], [], "y", tmp_path / "m.onnx")
    with pytest.raises(WorkloadError, match=r"no importable Conv/Gemm/MatMul node \(ops: Relu\)"):
        read_onnx(path)


def test_a_weight_of_other_channels_is_listed(tmp_path: Path) -> None:
    path = _model([helper.make_node("Conv", ["x", "w"], ["y"], name="bad"),
                   helper.make_node("Conv", ["x", "w_ok"], ["z"], name="ok")], [1, 3, 8, 8],
                  [_weight("w", (4, 5, 3, 3)), _weight("w_ok", (4, 3, 3, 3))], "z", tmp_path / "m.onnx")
    assert read_onnx(path).skipped == (SkippedNode("bad", "Conv", "weight has 5 input channels, X has 3"),)


def test_shapes_inference_rejects_are_a_one_line_error(tmp_path: Path) -> None:
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv"),
             helper.make_node("Add", ["y", "b"], ["z"], name="add")]  # 4x6x6 + 5: no broadcast exists
    path = _model(nodes, [1, 3, 8, 8], [_weight("w", (4, 3, 3, 3)), _weight("b", (5,))], "z", tmp_path / "m.onnx")
    with pytest.raises(WorkloadError, match="shape inference failed") as info:
        read_onnx(path)
    assert "\n" not in str(info.value)


def test_without_onnx_installed_the_error_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = _conv_model(tmp_path / "m.onnx", [1, 3, 8, 8], (4, 3, 3, 3))
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` now raises ModuleNotFoundError
    with pytest.raises(MissingExtraError, match=r"antsim\[onnx\]"):
        read_onnx(path)
    assert main(["zoo", "--onnx", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'antsim[onnx]'" in err


def test_cli_refuses_a_name_and_onnx_together(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["zoo", "resnet18-cifar", "--onnx", str(tmp_path / "m.onnx")]) == 2
    assert "not both" in capsys.readouterr().err


def _not_in_zoo_network(path: Path) -> Path:
    """A small network of its own (no zoo entry has these shapes): stem, strided conv, 1x1, pooling between."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="stem", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], name="reduce", strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("Conv", ["r2", "w3"], ["c3"], name="expand"),
             helper.make_node("GlobalAveragePool", ["c3"], ["y"], name="gap")]
    inits = [_weight("w1", (8, 3, 3, 3)), _weight("w2", (8, 8, 3, 3)), _weight("w3", (16, 8, 1, 1))]
    return _model(nodes, [2, 3, 8, 8], inits, "y", path)


def test_a_network_not_in_the_zoo_runs_through_simulate_gpu_and_compare(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _not_in_zoo_network(tmp_path / "mynet.onnx")
    layers_csv = tmp_path / "mynet.csv"
    assert main(["zoo", "--onnx", str(model), "--csv", str(layers_csv)]) == 0
    listing = capsys.readouterr().out
    for name, op in (("relu1", "Relu"), ("relu2", "Relu"), ("gap", "GlobalAveragePool")):
        assert any(line.split()[:2] == [name, op] for line in listing.splitlines()), listing
    assert [(l.name, l.N, l.C, l.K, l.H, l.R, l.stride_h, l.P) for l in read_layers_csv(layers_csv)] == [
        ("stem", 2, 3, 8, 8, 3, 1, 8), ("reduce", 2, 8, 8, 8, 3, 2, 4), ("expand", 2, 8, 16, 4, 1, 1, 4)]
    root = Path(__file__).resolve().parents[2]
    workload = ["--layers-csv", str(layers_csv), "--no-progress"]
    for design in ("ant", "scnn"):
        assert main(["simulate", "--arch", str(root / "arch_configs" / f"{design}.yaml"), *workload,
                     "--out", str(tmp_path / f"{design}.json")]) == 0
    assert main(["gpu", "--gpu", "v100", *workload, "--out", str(tmp_path / "v100.json")]) == 0
    assert main(["compare", str(tmp_path / "scnn.json"), str(tmp_path / "ant.json"), str(tmp_path / "v100.json"),
                 "--baseline", "scnn", "--out", str(tmp_path / "cmp.json")]) == 0
    for result in ("ant", "scnn", "v100"):
        data = json.loads((tmp_path / f"{result}.json").read_text())
        assert data["workload"]["batch"] == 2 and data["workload"]["network"] == "mynet"
        assert [l["name"] for l in data["workload"]["layers"]] == ["stem", "reduce", "expand"]
    assert (tmp_path / "cmp.json").is_file()
