"""Networks from ONNX: the Conv, Gemm and MatMul nodes of a model as antsim layers.

``read_onnx(path)`` loads the model, runs ONNX shape inference (``onnx.shape_inference.infer_shapes``,
https://onnx.ai/onnx/api/shape_inference.html) and turns each node into a layer or into a ``SkippedNode``
that says why it was not imported — nothing is dropped silently:

- ``Conv`` (https://onnx.ai/onnx/operators/onnx__Conv.html) with a 2-D kernel becomes a
  ``antsim.workloads.layers.Layer``: ``X`` is ``N×C×H×W``, the weight ``K×C×R×S``; ``strides``, ``pads``
  and ``auto_pad`` (``VALID``, ``SAME_UPPER``, ``SAME_LOWER``, ``NOTSET``) are honoured. ``Layer`` pads both
  sides of an axis alike; pads ``(begin, end)`` with ``end != begin`` are imported as ``(begin, begin)``
  only where that gives the same output size (the trailing pad rows are then never read, so every window
  is the same), and refused otherwise. ``group > 1`` (grouped / depthwise) and ``dilations > 1`` are
  refused: the outer-product dataflow models neither.
- ``Gemm`` and ``MatMul`` become GEMM layers (see ``_gemm_node``).
- Every other node (activations, pooling, normalisation, reshapes, …) does no multiply-accumulate work
  that antsim models; it is listed with the reason ``no conv/GEMM work modelled``.

A model whose batch dimension is symbolic (``dim_param``) is imported at batch 1 and says so
(``OnnxNetwork.batch_fixed``); ``antsim zoo --onnx FILE --batch N`` sets another batch.

``onnx`` is an optional dependency (``pip install 'antsim[onnx]'``); it is imported here only, inside
the functions that use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from antsim.errors import MissingExtraError, WorkloadError
from antsim.workloads.layers import Layer

Dim = int | str | None
"""One tensor dimension after shape inference: an int, a symbolic name (``dim_param``) or unknown."""

NOT_MODELLED = "no conv/GEMM work modelled"


@dataclass(frozen=True)
class SkippedNode:
    """An ONNX node that was not imported, with the reason."""

    name: str
    op_type: str
    reason: str


@dataclass(frozen=True)
class OnnxNetwork:
    """The layers read from one ONNX file, the nodes left out, and whether the model fixes its batch."""

    path: str
    layers: tuple[Layer, ...]
    skipped: tuple[SkippedNode, ...]
    batch_fixed: bool


def _onnx() -> Any:
    try:
        import onnx
    except ModuleNotFoundError:
        raise MissingExtraError("--onnx: needs the onnx package (pip install 'antsim[onnx]')") from None
    return onnx


def read_onnx(path: str | Path) -> OnnxNetwork:
    """The Conv/Gemm/MatMul layers of the ONNX model at ``path``, in graph order.

    Raises:
        MissingExtraError: the ``onnx`` package is not installed.
        WorkloadError: a missing or unreadable file, a model shape inference rejects, or a model with no
            importable layer (the message names the file and what was found instead).
    """
    path = Path(path)
    graph = _inferred_graph(path)
    shapes = _shapes(graph)
    layers: list[Layer] = []
    skipped: list[SkippedNode] = []
    fixed: list[bool] = []
    for index, node in enumerate(graph.node):
        name = node.name or (node.output[0] if node.output else f"{node.op_type}_{index}")
        outcome = _import_node(node, name, shapes)
        if isinstance(outcome, SkippedNode):
            skipped.append(outcome)
        else:
            layer, batch_fixed = outcome
            layers.append(layer)
            fixed.append(batch_fixed)
    if not layers:
        kinds = sorted({s.op_type for s in skipped})
        reasons = sorted({f"{s.op_type}: {s.reason}" for s in skipped if s.reason != NOT_MODELLED})
        raise WorkloadError(f"{path}: no importable Conv/Gemm/MatMul node (ops: {', '.join(kinds) or 'none'}"
                            + (f"; {'; '.join(reasons)}" if reasons else "") + ")")
    return OnnxNetwork(str(path), tuple(_unique_names(layers)), tuple(skipped), all(fixed))


def _inferred_graph(path: Path) -> Any:
    onnx = _onnx()
    if not path.is_file():
        raise WorkloadError(f"{path}: ONNX file not found")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError and friends: the bytes are not a ModelProto
        raise WorkloadError(f"{path}: not a readable ONNX model ({type(exc).__name__}: {exc})"
                            .replace("\n", " ")) from None
    try:
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    except Exception as exc:  # onnx.shape_inference.InferenceError, onnx.checker errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise WorkloadError(f"{path}: ONNX shape inference failed: {first}") from None
    return model.graph


def _shapes(graph: Any) -> dict[str, tuple[Dim, ...]]:
    """Tensor name → shape, from the graph's inputs, inferred values, outputs and initializers."""
    shapes: dict[str, tuple[Dim, ...]] = {}
    for value in (*graph.input, *graph.value_info, *graph.output):
        tensor_type = value.type.tensor_type
        if tensor_type.HasField("shape"):
            shapes[value.name] = tuple(_dim(d) for d in tensor_type.shape.dim)
    for init in graph.initializer:
        shapes[init.name] = tuple(int(d) for d in init.dims)
    return shapes


def _dim(dim: Any) -> Dim:
    if dim.HasField("dim_value"):
        return int(dim.dim_value)
    if dim.HasField("dim_param"):
        return str(dim.dim_param)
    return None


def _static(dims: Sequence[Dim]) -> tuple[int, ...] | None:
    """``dims`` as ints, or None when one is symbolic or unknown."""
    return tuple(d for d in dims if isinstance(d, int)) if all(isinstance(d, int) for d in dims) else None


def _attributes(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}


def _import_node(node: Any, name: str, shapes: dict[str, tuple[Dim, ...]]) -> tuple[Layer, bool] | SkippedNode:
    if node.op_type == "Conv" and node.domain in ("", "ai.onnx"):
        return _conv_node(node, name, shapes)
    return SkippedNode(name, node.op_type, NOT_MODELLED)


def _conv_node(node: Any, name: str, shapes: dict[str, tuple[Dim, ...]]) -> tuple[Layer, bool] | SkippedNode:
    def skip(reason: str) -> SkippedNode:
        return SkippedNode(name, "Conv", reason)

    x_shape, w_shape = shapes.get(node.input[0]), shapes.get(node.input[1])
    if x_shape is None or w_shape is None:
        return skip("input or weight shape unknown after shape inference")
    if len(x_shape) != 4 or len(w_shape) != 4:
        return skip(f"{len(x_shape) - 2}-D convolution (only 2-D is modelled)")
    attrs = _attributes(node)
    if int(attrs.get("group", 1)) != 1:
        return skip(f"group={attrs['group']} (grouped/depthwise convolution is not modelled)")
    if any(int(d) != 1 for d in attrs.get("dilations", (1, 1))):
        return skip(f"dilations={list(attrs['dilations'])} (dilated convolution is not modelled)")
    batch, static_x, static_w = x_shape[0], _static(x_shape[1:]), _static(w_shape)
    if static_x is None or static_w is None:
        return skip(f"shape not static: X {list(x_shape)}, W {list(w_shape)}")
    (channels, height, width), (K, C_w, R, S) = static_x, static_w
    if C_w != channels:
        return skip(f"weight has {C_w} input channels, X has {channels}")
    strides = tuple(int(s) for s in attrs.get("strides", (1, 1)))
    pads = _conv_pads(attrs, (height, width), (R, S), strides)
    if isinstance(pads, str):
        return skip(pads)
    layer = Layer(name=name, N=batch if isinstance(batch, int) else 1, C=channels, K=K, H=height, W=width,
                  R=R, S=S, stride=(strides[0], strides[1]), pad=pads)
    out_shape = shapes.get(node.output[0])
    if out_shape is not None and len(out_shape) == 4 and out_shape[2:] != (layer.P, layer.Q) \
            and all(isinstance(d, int) for d in out_shape[2:]):
        return skip(f"output {list(out_shape[2:])} differs from {layer.P}x{layer.Q} computed from the attributes")
    return layer, isinstance(batch, int)


def _conv_pads(attrs: dict[str, Any], size: tuple[int, int], kernel: tuple[int, int],
               strides: Sequence[int]) -> tuple[int, int] | str:
    """Symmetric (pad_h, pad_w) equivalent to the node's padding, or the reason there is none."""
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    if auto_pad == "VALID":
        begins, ends = [0, 0], [0, 0]
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begins, ends = [], []
        for extent, k, s in zip(size, kernel, strides, strict=True):
            total = max((-(-extent // s) - 1) * s + k - extent, 0)  # output ceil(extent/s), as the operator defines
            small, large = total // 2, total - total // 2
            begins.append(small if auto_pad == "SAME_UPPER" else large)
            ends.append(large if auto_pad == "SAME_UPPER" else small)
    elif auto_pad == "NOTSET":
        pads = [int(p) for p in attrs.get("pads", (0, 0, 0, 0))]
        begins, ends = pads[:2], pads[2:]
    else:
        return f"auto_pad={auto_pad!r} unknown"
    result = []
    for axis, (extent, k, s, begin, end) in enumerate(zip(size, kernel, strides, begins, ends, strict=True)):
        if begin == end:
            result.append(begin)
            continue
        # Padding (begin, begin) reads the same windows iff it yields the same output count: each window's
        # start is set by `begin` alone, so only the count can differ.
        if (extent + begin + end - k) // s != (extent + 2 * begin - k) // s:
            return (f"asymmetric pads {begin},{end} on axis {'HW'[axis]} change the output size"
                    f" (pads={begins + ends}); antsim pads both sides alike")
        result.append(begin)
    return result[0], result[1]


def _unique_names(layers: list[Layer]) -> list[Layer]:
    """Node names are optional and need not be unique in ONNX; a layers CSV needs unique names."""
    taken = {layer.name for layer in layers}  # each node's own name stays its own
    seen: set[str] = set()
    unique = []
    for layer in layers:
        name, count = layer.name, 0
        while name in seen or (count and name in taken):
            count += 1
            name = f"{layer.name}_{count}"
        seen.add(name)
        unique.append(layer if name == layer.name else replace(layer, name=name))
    return unique
