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
from antsim.workloads.gemm import Gemm
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
    listing = capsys.readouterr().out.splitlines()
    assert "3 ONNX node(s) not imported:" in listing
    assert "Relu x2 (no conv/GEMM work modelled): relu1, relu2" in listing
    assert "GlobalAveragePool x1 (no conv/GEMM work modelled): gap" in listing
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


# ---------------------------------------------------------------- Gemm / MatMul
def _run(path: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    return ReferenceEvaluator(onnx.load(str(path))).run(None, feeds)[0].astype(np.float64)


def _init_array(path: Path, name: str) -> np.ndarray:
    model = onnx.load(str(path))
    return numpy_helper.to_array(next(i for i in model.graph.initializer if i.name == name)).astype(np.float64)


def test_fc_gemm_is_stored_with_the_weight_on_the_left(tmp_path: Path) -> None:
    """torch's Linear exports as Gemm(X, W, bias, transB=1): Y = X·Wᵀ; antsim's Gemm holds Yᵀ = W·Xᵀ."""
    nodes = [helper.make_node("Gemm", ["x", "w", "bias"], ["y"], name="fc", transB=1)]
    path = _model(nodes, [3, 20], [_weight("w", (7, 20)), _weight("bias", (7,))], "y", tmp_path / "m.onnx")
    (fc,) = read_onnx(path).layers
    assert fc == Gemm(name="fc", M=7, N=3, K=20, count=1, a="weights", batch=3, batch_dim="N")
    x = RNG.standard_normal((3, 20)).astype(np.float32)
    expected = _run(path, {"x": x}) - _init_array(path, "bias")
    np.testing.assert_allclose(_init_array(path, "w") @ x.T.astype(np.float64), expected.T, rtol=1e-4, atol=1e-4)


def test_matmul_over_tokens_flattens_the_leading_dims_into_n(tmp_path: Path) -> None:
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")]
    path = _model(nodes, [2, 5, 12], [_weight("w", (12, 9))], "y", tmp_path / "m.onnx")
    (proj,) = read_onnx(path).layers
    assert proj == Gemm(name="proj", M=9, N=10, K=12, count=1, a="weights", batch=2, batch_dim="N")
    x = RNG.standard_normal((2, 5, 12)).astype(np.float32)
    expected = _run(path, {"x": x}).reshape(10, 9)          # rows: (batch, token)
    w = _init_array(path, "w")
    np.testing.assert_allclose(w.T @ x.reshape(10, 12).T.astype(np.float64), expected.T, rtol=1e-4, atol=1e-4)


def test_weight_on_the_left_keeps_its_orientation(tmp_path: Path) -> None:
    nodes = [helper.make_node("MatMul", ["w", "x"], ["y"], name="mix")]
    path = _model(nodes, [4, 6, 3], [_weight("w", (8, 6))], "y", tmp_path / "m.onnx")
    (mix,) = read_onnx(path).layers
    assert (mix.M, mix.N, mix.K, mix.count, mix.a, mix.batch, mix.batch_dim) == (8, 12, 6, 1, "weights", 4, "N")


def test_attention_products_are_activation_products_counted_per_head(tmp_path: Path) -> None:
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["x", "kt"], ["s"], name="scores"),
             helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "k"], ["y"], name="context")]
    path = _model(nodes, [2, 3, 5, 4], [], "y", tmp_path / "m.onnx", {"k": [2, 3, 5, 4]})
    network = read_onnx(path)
    scores, context = network.layers
    assert scores == Gemm(name="scores", M=5, N=5, K=4, count=6, a="activations", batch=2, batch_dim="count")
    assert context == Gemm(name="context", M=5, N=4, K=5, count=6, a="activations", batch=2, batch_dim="count")
    assert [(s.name, s.op_type) for s in network.skipped] == [("kt", "Transpose"), ("softmax", "Softmax")]


def test_a_transposed_constant_is_still_a_weight(tmp_path: Path) -> None:
    nodes = [helper.make_node("Transpose", ["w"], ["wt"], name="t", perm=[1, 0]),
             helper.make_node("MatMul", ["x", "wt"], ["y"], name="fc")]
    path = _model(nodes, [3, 10], [_weight("w", (6, 10))], "y", tmp_path / "m.onnx")
    assert read_onnx(path).layers == (Gemm(name="fc", M=6, N=3, K=10, a="weights", batch=3),)


def test_gemm_trans_a_on_the_activation(tmp_path: Path) -> None:
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], name="t", perm=[1, 0]),   # K×batch
             helper.make_node("Gemm", ["xt", "w"], ["y"], name="fc", transA=1)]
    path = _model(nodes, [3, 10], [_weight("w", (10, 6))], "y", tmp_path / "m.onnx")
    assert read_onnx(path).layers == (Gemm(name="fc", M=6, N=3, K=10, a="weights", batch=3),)
    x = RNG.standard_normal((3, 10)).astype(np.float32)
    np.testing.assert_allclose(_init_array(path, "w").T @ x.T.astype(np.float64), _run(path, {"x": x}).T,
                               rtol=1e-4, atol=1e-4)


def test_constant_only_products_and_per_product_weights_are_listed(tmp_path: Path) -> None:
    nodes = [helper.make_node("MatMul", ["w1", "w2"], ["c"], name="folded"),
             helper.make_node("MatMul", ["h", "w3"], ["y"], name="per_head"),
             helper.make_node("MatMul", ["x", "w4"], ["z"], name="ok")]
    inits = [_weight("w1", (4, 4)), _weight("w2", (4, 4)), _weight("w3", (3, 4, 4)), _weight("w4", (4, 3))]
    network = read_onnx(_model(nodes, [2, 5, 4], inits, "z", tmp_path / "m.onnx", {"h": [3, 5, 4]}))
    assert [l.name for l in network.layers] == ["ok"]
    reasons = {s.name: s.reason for s in network.skipped}
    assert "both operands are constants" in reasons["folded"]
    assert "one weight matrix per product" in reasons["per_head"]


def _cnn_with_head(path: Path, batch: int | str) -> Path:
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu"),
             helper.make_node("Flatten", ["r1"], ["f"], name="flatten", axis=1),
             helper.make_node("Gemm", ["f", "wfc", "bfc"], ["y"], name="fc", transB=1)]
    inits = [_weight("w1", (4, 3, 3, 3)), _weight("wfc", (10, 4 * 6 * 6)), _weight("bfc", (10,))]
    return _model(nodes, [batch, 3, 6, 6], inits, "y", path)


@pytest.mark.parametrize("batch", [None, 5])
def test_symbolic_batch_reaches_the_head_through_flatten(tmp_path: Path, batch: int | None) -> None:
    network = read_onnx(_cnn_with_head(tmp_path / "m.onnx", "n"), batch=batch)
    b = batch or 1
    assert network.model_batch is None and network.batch == b
    conv, fc = network.layers
    assert conv.N == b and fc == Gemm(name="fc", M=10, N=b, K=144, a="weights", batch=b)


def test_fixed_batch_models_reinfer_at_another_batch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _cnn_with_head(tmp_path / "m.onnx", 2)
    assert [l.N for l in read_onnx(path).layers] == [2, 2]
    out = tmp_path / "m.csv"
    assert main(["zoo", "--onnx", str(path), "--batch", "8", "--csv", str(out)]) == 0
    assert "--batch 8 replaces batch 2" in capsys.readouterr().err
    conv, fc = read_layers_csv(out)
    assert (conv.N, fc.N, fc.batch, fc.K) == (8, 8, 8, 144)


def test_a_fixed_reshape_leaves_the_head_out_and_says_why(tmp_path: Path) -> None:
    shape = numpy_helper.from_array(np.array([2, 144], dtype=np.int64), "shape")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Reshape", ["c1", "shape"], ["f"], name="view"),
             helper.make_node("Gemm", ["f", "wfc"], ["y"], name="fc", transB=1)]
    path = _model(nodes, [2, 3, 6, 6], [_weight("w1", (4, 3, 3, 3)), _weight("wfc", (10, 144)), shape], "y",
                  tmp_path / "m.onnx")
    network = read_onnx(path)
    assert [l.name for l in network.layers] == ["conv"]
    assert "no one dimension holds the batch" in {s.name: s.reason for s in network.skipped}["fc"]
    assert [l.name for l in read_onnx(path, batch=4).layers] == ["conv"]  # a batch the Reshape would break


def test_mixed_csv_round_trips(tmp_path: Path) -> None:
    path = _cnn_with_head(tmp_path / "m.onnx", 3)
    out = tmp_path / "m.csv"
    assert main(["zoo", "--onnx", str(path), "--csv", str(out)]) == 0
    assert tuple(read_layers_csv(out)) == read_onnx(path).layers


def test_a_model_that_breaks_at_another_batch_is_refused_at_it(tmp_path: Path) -> None:
    shape = numpy_helper.from_array(np.array([2, -1], dtype=np.int64), "shape")  # 2 rows, whatever the batch
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Reshape", ["c1", "shape"], ["f"], name="view"),
             helper.make_node("Gemm", ["f", "wfc"], ["y"], name="fc", transB=1)]
    path = _model(nodes, [2, 3, 6, 6], [_weight("w1", (4, 3, 3, 3)), _weight("wfc", (10, 144)), shape], "y",
                  tmp_path / "m.onnx")
    network = read_onnx(path)   # at its own batch it infers; at twice it the Gemm's K no longer fits
    assert [l.name for l in network.layers] == ["conv"]
    assert "the dimension that scales with the batch is unknown" in network.skipped[-1].reason
    with pytest.raises(WorkloadError, match="fixes batch 2 and does not infer at batch 4"):
        read_onnx(path, batch=4)


def test_a_network_with_a_classifier_head_runs_through_simulate_gpu_and_compare(tmp_path: Path) -> None:
    """Convs, then the FC head as a GEMM layer (kind column), at the model's symbolic batch set to 4."""
    model = _cnn_with_head(tmp_path / "headnet.onnx", "n")
    layers_csv = tmp_path / "headnet.csv"
    assert main(["zoo", "--onnx", str(model), "--batch", "4", "--csv", str(layers_csv)]) == 0
    conv, fc = read_layers_csv(layers_csv)
    assert (conv.N, fc) == (4, Gemm(name="fc", M=10, N=4, K=144, a="weights", batch=4))
    root = Path(__file__).resolve().parents[2]
    workload = ["--layers-csv", str(layers_csv), "--no-progress"]
    for design in ("ant", "scnn"):
        assert main(["simulate", "--arch", str(root / "arch_configs" / f"{design}.yaml"), *workload,
                     "--out", str(tmp_path / f"{design}.json")]) == 0
    assert main(["gpu", "--gpu", "v100", *workload, "--out", str(tmp_path / "v100.json")]) == 0
    assert main(["compare", *(str(tmp_path / f"{n}.json") for n in ("scnn", "ant", "v100")), "--baseline", "scnn",
                 "--out", str(tmp_path / "cmp.json")]) == 0
    for result in ("ant", "scnn", "v100"):
        data = json.loads((tmp_path / f"{result}.json").read_text())
        assert data["workload"]["batch"] == 4
        phases = {(r["layer"], r["phase"]) for r in data["records"]}
        assert phases == {(layer, phase) for layer in ("conv", "fc") for phase in ("fprop", "dgrad", "wgrad")}
        assert {r.get("kind") for r in data["records"] if r["layer"] == "fc"} == {"gemm"}


def _dynamic_attention(path: Path, heads: int, dim: int) -> Path:
    """Self-attention over tokens with the head split computed from Shape at run time, as exporters write it
    for dynamic axes: Shape -> Gather -> Div -> Concat -> Reshape, then Q·Kᵀ and P·V per head."""
    const = {name: numpy_helper.from_array(np.array(v, dtype=np.int64), name) for name, v in
             {"i0": 0, "i1": 1, "i2": 2, "heads": heads, "neg": [-1]}.items()}
    u = lambda name, out: helper.make_node("Unsqueeze", [name, "axes0"], [out], name=f"u_{out}")  # noqa: E731
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"], name="q_proj"),
             helper.make_node("Shape", ["q"], ["shape"], name="shape"),
             helper.make_node("Gather", ["shape", "i0"], ["b"], name="g_b", axis=0),
             helper.make_node("Gather", ["shape", "i1"], ["t"], name="g_t", axis=0),
             helper.make_node("Gather", ["shape", "i2"], ["e"], name="g_e", axis=0),
             helper.make_node("Div", ["e", "heads"], ["d"], name="head_dim"),
             u("b", "b1"), u("t", "t1"), u("heads", "h1"), u("d", "d1"),
             helper.make_node("Concat", ["b1", "t1", "h1", "d1"], ["split"], name="split_shape", axis=0),
             helper.make_node("Reshape", ["q", "split"], ["q4"], name="split_heads"),
             helper.make_node("Transpose", ["q4"], ["qh"], name="to_heads", perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["q4"], ["kt"], name="to_keys", perm=[0, 2, 3, 1]),
             helper.make_node("MatMul", ["qh", "kt"], ["s"], name="scores"),
             helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "qh"], ["ctx"], name="context")]
    inits = [_weight("wq", (dim, dim)), numpy_helper.from_array(np.array([0], dtype=np.int64), "axes0"),
             *const.values()]
    return _model(nodes, ["batch", 10, dim], inits, "ctx", path)


def test_shape_arithmetic_of_dynamic_axes_is_folded_and_still_listed(tmp_path: Path) -> None:
    path = _dynamic_attention(tmp_path / "attn.onnx", heads=4, dim=24)
    network = read_onnx(path, batch=3)
    assert network.layers == (
        Gemm(name="q_proj", M=24, N=30, K=24, a="weights", batch=3),             # 3 x 10 tokens
        Gemm(name="scores", M=10, N=10, K=6, count=12, a="activations", batch=3, batch_dim="count"),
        Gemm(name="context", M=10, N=6, K=10, count=12, a="activations", batch=3, batch_dim="count"))
    listed = {s.name: s.op_type for s in network.skipped}
    assert {"shape": "Shape", "g_b": "Gather", "head_dim": "Div", "split_shape": "Concat",
            "split_heads": "Reshape", "softmax": "Softmax"}.items() <= listed.items()
    # the shapes folding found are the ones ONNX's own evaluator produces at batch 3
    x = RNG.standard_normal((3, 10, 24)).astype(np.float32)
    assert _run(path, {"x": x}).shape == (3, 4, 10, 6)


@pytest.mark.torch
@pytest.mark.filterwarnings("ignore:Converting a tensor", "ignore::DeprecationWarning", "ignore::UserWarning")
def test_a_torch_export_with_attention_and_a_depthwise_conv(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 32, 3, stride=2, padding=1)
            self.dw = torch.nn.Conv2d(32, 32, 3, padding=1, groups=32)
            self.attn = torch.nn.MultiheadAttention(32, 4, batch_first=True)
            self.fc = torch.nn.Linear(32, 10)

        def forward(self, x):  # type: ignore[no-untyped-def]
            t = self.dw(torch.relu(self.conv(x))).flatten(2).transpose(1, 2)   # (B, 64 tokens, 32)
            t, _ = self.attn(t, t, t)
            return self.fc(t.mean(1))

    path = tmp_path / "net.onnx"
    kwargs = {"input_names": ["x"], "output_names": ["y"], "dynamic_axes": {"x": {0: "batch"}}, "opset_version": 17}
    try:
        torch.onnx.export(Net().eval(), torch.randn(2, 3, 16, 16), str(path), dynamo=False, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the legacy exporter may be gone from a later torch
        pytest.skip(f"torch.onnx.export (TorchScript exporter) unavailable: {exc}")
    network = read_onnx(path, batch=8)
    kinds = [(l.name, l.M, l.N, l.K, l.count) if isinstance(l, Gemm) else (l.name, l.C, l.K, l.P)
             for l in network.layers]
    tokens, heads = 8 * 64, 4
    assert kinds == [("/conv/Conv", 3, 32, 8),
                     ("/attn/MatMul", 96, tokens, 32, 1),                 # the packed Q, K, V projection
                     ("/attn/MatMul_1", 64, 64, 32 // heads, 8 * heads),  # Q·Kᵀ per head
                     ("/attn/MatMul_2", 64, 32 // heads, 64, 8 * heads),  # P·V per head
                     ("/attn/Gemm", 32, tokens, 32, 1),                   # output projection
                     ("/fc/Gemm", 10, 8, 32, 1)]
    assert [s.reason[:8] for s in network.skipped if s.name == "/dw/Conv"] == ["group=32"]


def test_an_attention_network_runs_at_its_batch(tmp_path: Path) -> None:
    """GEMM rows whose N is tokens (30) or whose batch is in count: the CSV's batch is still 3 for every command."""
    model = _dynamic_attention(tmp_path / "attn.onnx", heads=4, dim=24)
    layers_csv = tmp_path / "attn.csv"
    assert main(["zoo", "--onnx", str(model), "--batch", "3", "--csv", str(layers_csv)]) == 0
    root = Path(__file__).resolve().parents[2]
    workload = ["--layers-csv", str(layers_csv), "--no-progress"]
    assert main(["simulate", "--arch", str(root / "arch_configs" / "ant.yaml"), *workload,
                 "--out", str(tmp_path / "ant.json")]) == 0
    assert main(["gpu", "--gpu", "a100", *workload, "--out", str(tmp_path / "a100.json")]) == 0
    assert main(["compare", str(tmp_path / "ant.json"), str(tmp_path / "a100.json"), "--out",
                 str(tmp_path / "cmp.json")]) == 0
    for result in ("ant", "a100"):
        data = json.loads((tmp_path / f"{result}.json").read_text())
        assert data["workload"]["batch"] == 3 and {r["layer"] for r in data["records"]} == {"q_proj", "scores",
                                                                                            "context"}
