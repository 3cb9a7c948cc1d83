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
(``OnnxNetwork.model_batch`` is None); ``antsim zoo --onnx FILE --batch N`` sets another batch by
re-running shape inference with dim 0 of the data inputs at N. Which dimension of a GEMM holds the batch
(its ``N`` columns or its ``count`` of products) is found the same way: shapes are inferred a second time
at twice the batch and the dimension that doubles is the batch's.

``onnx`` is an optional dependency (``pip install 'antsim[onnx]'``); it is imported here only, inside
the functions that use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from antsim.errors import MissingExtraError, WorkloadError
from antsim.workloads.gemm import Gemm
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
    """The layers read from one ONNX file at ``batch``, the nodes left out, and the batch the model itself
    fixes (None when its batch dimension is symbolic)."""

    path: str
    layers: tuple[Layer | Gemm, ...]
    skipped: tuple[SkippedNode, ...]
    batch: int
    model_batch: int | None

    @property
    def batch_fixed(self) -> bool:
        return self.model_batch is not None


def _onnx() -> Any:
    try:
        import onnx
    except ModuleNotFoundError:
        raise MissingExtraError("reading an ONNX model needs the onnx package (pip install 'antsim[onnx]')",
                                subject="onnx") from None
    return onnx


def read_onnx(path: str | Path, batch: int | None = None) -> OnnxNetwork:
    """The Conv/Gemm/MatMul layers of the ONNX model at ``path``, in graph order.

    ``batch`` sets the batch dimension (dim 0 of the data inputs): a symbolic one (default 1), or one the
    model fixes (default: the model's), re-inferring every shape at that batch.

    Raises:
        MissingExtraError: the ``onnx`` package is not installed.
        WorkloadError: a missing or unreadable file, a model shape inference rejects, or a model with no
            importable layer (the message names the file and what was found instead).
    """
    path = Path(path)
    model = _load(path)
    fixed_batch = _fixed_batch(model)
    at = batch or fixed_batch or 1
    try:
        graph = _inferred(path, _at_batch(model, at)).graph
    except WorkloadError as exc:
        if fixed_batch is None or at == fixed_batch:
            raise
        raise WorkloadError(f"{path}: the model fixes batch {fixed_batch} and does not infer at batch {at}"
                            f" ({exc}); export it with a dynamic batch axis") from None
    shapes, probe = _shapes(graph), _probe_shapes(path, model, 2 * at)
    constants = _constant_tensors(model.graph)
    layers: list[Layer | Gemm] = []
    skipped: list[SkippedNode] = []
    for index, node in enumerate(model.graph.node):  # the original nodes: folding removed shape arithmetic
        name = node.name or (node.output[0] if node.output else f"{node.op_type}_{index}")
        outcome = _import_node(node, name, _Context(shapes, probe, constants, at))
        (skipped if isinstance(outcome, SkippedNode) else layers).append(outcome)  # type: ignore[arg-type]
    if not layers:
        kinds = sorted({s.op_type for s in skipped})
        reasons = sorted({f"{s.op_type}: {s.reason}" for s in skipped if s.reason != NOT_MODELLED})
        raise WorkloadError(f"{path}: no importable Conv/Gemm/MatMul node (ops: {', '.join(kinds) or 'none'}"
                            + (f"; {'; '.join(reasons)}" if reasons else "") + ")")
    return OnnxNetwork(str(path), tuple(_unique_names(layers)), tuple(skipped), at, fixed_batch)


@dataclass(frozen=True)
class _Context:
    """What a node's import reads: shapes at the import batch and at twice it (None: the probe failed),
    the names of constant tensors (weights), and the import batch."""

    shapes: dict[str, tuple[Dim, ...]]
    probe: dict[str, tuple[Dim, ...]] | None
    constants: frozenset[str]
    batch: int


def _load(path: Path) -> Any:
    onnx = _onnx()
    if not path.is_file():
        raise WorkloadError(f"{path}: ONNX file not found")
    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError and friends: the bytes are not a ModelProto
        raise WorkloadError(f"{path}: not a readable ONNX model ({type(exc).__name__}: {exc})"
                            .replace("\n", " ")) from None


def _inferred(path: Path, model: Any) -> Any:
    """``model`` with every shape inferred: ONNX shape inference with data propagation, alternating with
    folding the shape computations (``_fold_shapes``) that exporters emit for dynamic axes
    (Shape → Gather → Div → Concat → Reshape), until nothing more folds."""
    current = model
    for _ in range(_FOLD_ROUNDS):
        inferred = _infer_once(path, current)
        folded = _fold_shapes(inferred)
        if folded is None:
            return inferred
        current = folded
    return _infer_once(path, current)


def _infer_once(path: Path, model: Any) -> Any:
    onnx = _onnx()
    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except Exception as exc:  # onnx.shape_inference.InferenceError, onnx.checker errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise WorkloadError(f"{path}: ONNX shape inference failed: {first}") from None


_FOLD_ROUNDS = 16  # a Reshape target is a few ops deep; each round folds at least one more level
#: Only tensors this small are evaluated (shape vectors, scalars): folding never computes on weights.
_FOLD_MAX_ELEMENTS = 4096
_NOT_FOLDED = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                         "Bernoulli", "Dropout"})


def _fold_shapes(model: Any) -> Any | None:
    """A copy of ``model`` whose small all-constant nodes (and ``Shape``/``Size`` of static tensors) are
    initializers, evaluated with ONNX's reference evaluator; None when there is nothing to fold. Used for
    shapes only: the layers are read from the original graph."""
    from onnx import numpy_helper

    graph = model.graph
    shapes = _shapes(graph)
    opsets = {o.domain or "": int(o.version) for o in model.opset_import}
    outputs = {value.name for value in graph.output}
    values = {init.name: numpy_helper.to_array(init) for init in graph.initializer
              if _prod([int(d) for d in init.dims]) <= _FOLD_MAX_ELEMENTS}
    folded: dict[str, Any] = {}
    kept = []
    for node in graph.node:
        result = None if outputs.intersection(node.output) else _fold_node(node, values, shapes, opsets)
        if result is None:
            kept.append(node)
            continue
        values.update(result)
        folded.update(result)
    if not folded:
        return None
    copy = type(model)()
    copy.CopyFrom(model)
    del copy.graph.node[:]
    copy.graph.node.extend(kept)
    copy.graph.initializer.extend(numpy_helper.from_array(np.asarray(v), name) for name, v in folded.items())
    infos = [v for v in copy.graph.value_info if v.name not in folded]
    del copy.graph.value_info[:]
    copy.graph.value_info.extend(infos)
    return copy


def _fold_node(node: Any, values: dict[str, Any], shapes: dict[str, tuple[Dim, ...]],
               opsets: dict[str, int]) -> dict[str, Any] | None:
    """The node's outputs when it computes on known small values only (or reads a static shape)."""
    if node.domain not in ("", "ai.onnx") or node.op_type in _NOT_FOLDED:
        return None
    if node.op_type in ("Shape", "Size"):
        shape = _static(shapes.get(node.input[0], (None,)))
        if shape is None:
            return None
        if node.op_type == "Size":
            return {node.output[0]: np.array(_prod(shape), dtype=np.int64)}
        attrs = _attributes(node)
        start, end = int(attrs.get("start", 0)), attrs.get("end")
        return {node.output[0]: np.array(shape[start:None if end is None else int(end)], dtype=np.int64)}
    inputs = [name for name in node.input if name]
    if (not inputs and node.op_type != "Constant") or not all(name in values for name in inputs) \
            or len(inputs) != len(node.input):
        return None
    if sum(np.asarray(values[name]).size for name in inputs) > _FOLD_MAX_ELEMENTS:
        return None
    from onnx.reference import ReferenceEvaluator

    try:
        results = ReferenceEvaluator(node, opsets=opsets).run(None, {name: values[name] for name in inputs})
    except Exception:  # noqa: BLE001 - an op the reference cannot run here stays a node
        return None
    if any(np.asarray(r).size > _FOLD_MAX_ELEMENTS for r in results):
        return None
    return {name: np.asarray(r) for name, r in zip(node.output, results, strict=True)}


def _data_inputs(model: Any) -> list[Any]:
    """The graph inputs that are data (not initializers listed as inputs, as older exporters do)."""
    initializers = {init.name for init in model.graph.initializer}
    return [value for value in model.graph.input
            if value.name not in initializers and value.type.tensor_type.HasField("shape")
            and len(value.type.tensor_type.shape.dim) > 0]


def _fixed_batch(model: Any) -> int | None:
    """The batch the model fixes (dim 0 of its first data input), or None when it is symbolic."""
    inputs = _data_inputs(model)
    if not inputs:
        return None
    first = _dim(inputs[0].type.tensor_type.shape.dim[0])
    return first if isinstance(first, int) else None


def _at_batch(model: Any, batch: int) -> Any:
    """A copy of ``model`` whose data inputs have dim 0 = ``batch`` (symbolic ones, or all when probing)."""
    copy = type(model)()
    copy.CopyFrom(model)
    fixed = _fixed_batch(model)
    for value in _data_inputs(copy):
        dim = value.type.tensor_type.shape.dim[0]
        if not dim.HasField("dim_value") or (fixed is not None and dim.dim_value == fixed):
            dim.dim_value = batch
    return copy


def _probe_shapes(path: Path, model: Any, batch: int) -> dict[str, tuple[Dim, ...]] | None:
    """Shapes at another batch, to see which GEMM dimension scales with it; None when the model does not
    infer at that batch (a Reshape to a fixed shape, say)."""
    try:
        return _shapes(_inferred(path, _at_batch(model, batch)).graph)
    except WorkloadError:
        return None


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


def _constant_tensors(graph: Any) -> frozenset[str]:
    """Initializers, Constant outputs, and outputs of nodes fed by constants only (a transposed or cast
    weight): the operands that are weights, not activations."""
    data = {value.name for value in graph.input} - {init.name for init in graph.initializer}
    constants = {init.name for init in graph.initializer}
    for node in graph.node:
        inputs = [name for name in node.input if name]
        if node.op_type == "Constant" or (inputs and all(name in constants for name in inputs)):
            constants.update(name for name in node.output if name not in data)
    return frozenset(constants)


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


def _import_node(node: Any, name: str, ctx: _Context) -> Layer | Gemm | SkippedNode:
    if node.domain not in ("", "ai.onnx"):
        return SkippedNode(name, f"{node.domain}.{node.op_type}", NOT_MODELLED)
    if node.op_type == "Conv":
        return _conv_node(node, name, ctx.shapes, ctx.probe)
    if node.op_type in ("Gemm", "MatMul"):
        return _gemm_node(node, name, ctx)
    return SkippedNode(name, node.op_type, NOT_MODELLED)


def _conv_node(node: Any, name: str, shapes: dict[str, tuple[Dim, ...]],
               probe: dict[str, tuple[Dim, ...]] | None) -> Layer | SkippedNode:
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
    doubled = probe.get(node.input[0]) if probe is not None else None
    if doubled is not None and isinstance(batch, int) and doubled[0] != 2 * batch:
        return skip(f"X's dim 0 is {batch}, and {doubled[0]} at twice the batch: not the batch (a Reshape to a"
                    " fixed shape?); export it with a dynamic batch axis")
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
    return layer


@dataclass(frozen=True)
class _Product:
    """An ONNX Gemm/MatMul as antsim's ``Gemm`` fields: ``count`` products ``(M×K)·(K×N)``, weight left."""

    M: int
    N: int
    K: int
    count: int
    a: str


def _gemm_node(node: Any, name: str, ctx: _Context) -> Gemm | SkippedNode:
    product = _product(node, ctx.shapes, ctx.constants)
    if isinstance(product, str):
        return SkippedNode(name, node.op_type, product)
    doubled = _product(node, ctx.probe, ctx.constants) if ctx.probe is not None else "probe failed"
    if isinstance(doubled, str) or (doubled.M, doubled.K) != (product.M, product.K):
        return SkippedNode(name, node.op_type, "the dimension that scales with the batch is unknown (the model"
                                               " does not infer at another batch); export it with a dynamic batch axis")
    if doubled.N == 2 * product.N and doubled.count == product.count:
        batch_dim = "N"
    elif doubled.count == 2 * product.count and doubled.N == product.N:
        batch_dim = "count"
    else:  # a training GEMM's activations carry the batch; one that does not scale was cut off from it
        return SkippedNode(name, node.op_type, f"N {product.N}->{doubled.N}, count {product.count}->{doubled.count}"
                                               " at twice the batch: no one dimension holds the batch (a Reshape"
                                               " to a fixed shape?); export it with a dynamic batch axis")
    batch = ctx.batch
    return Gemm(name=name, M=product.M, N=product.N, K=product.K, count=product.count, a=product.a,
                batch=batch, batch_dim=batch_dim)


def _product(node: Any, shapes: dict[str, tuple[Dim, ...]], constants: frozenset[str]) -> _Product | str:
    """The node's product in antsim's orientation (weight on the left), or the reason there is none."""
    left, right = shapes.get(node.input[0]), shapes.get(node.input[1])
    if left is None or right is None:
        return "operand shape unknown after shape inference"
    if _static(left) is None or _static(right) is None:
        return f"shape not static: A {list(left)}, B {list(right)}"
    lhs, rhs = [int(d) for d in left], [int(d) for d in right]  # type: ignore[arg-type]
    if node.op_type == "Gemm":
        attrs = _attributes(node)
        lhs = lhs[::-1] if int(attrs.get("transA", 0)) else lhs
        rhs = rhs[::-1] if int(attrs.get("transB", 0)) else rhs
    lhs = [1, *lhs] if len(lhs) == 1 else lhs   # numpy matmul: a 1-D operand is a row / column vector
    rhs = [*rhs, 1] if len(rhs) == 1 else rhs
    (rows, k_left), (k_right, cols) = lhs[-2:], rhs[-2:]
    if k_left != k_right:
        return f"reduction lengths differ: A {list(left)}, B {list(right)}"
    lead_l, lead_r = lhs[:-2], rhs[:-2]
    const_l, const_r = node.input[0] in constants, node.input[1] in constants
    if const_l and const_r:
        return "both operands are constants (no activation: a constant-folding leftover)"
    if (const_l and _prod(lead_l) > 1) or (const_r and _prod(lead_r) > 1):
        return "a constant operand with batch dimensions (one weight matrix per product) is not modelled"
    if const_l:    # Y = W·X per leading index: one weight, the products side by side along N
        return _Product(rows, cols * _prod(lead_r), k_left, 1, "weights")
    if const_r:    # Y = X·W stored transposed, Yᵀ = Wᵀ·Xᵀ (antsim keeps the weight on the left)
        return _Product(cols, rows * _prod(lead_l), k_left, 1, "weights")
    lead = _broadcast(lead_l, lead_r)
    if lead is None:
        return f"batch dimensions do not broadcast: A {list(left)}, B {list(right)}"
    return _Product(rows, cols, k_left, _prod(lead), "activations")


def _prod(dims: Sequence[int]) -> int:
    result = 1
    for d in dims:
        result *= d
    return result


def _broadcast(a: Sequence[int], b: Sequence[int]) -> list[int] | None:
    """numpy broadcasting of two batch shapes, or None when they do not broadcast."""
    width = max(len(a), len(b))
    a, b = [1] * (width - len(a)) + list(a), [1] * (width - len(b)) + list(b)
    if any(x != y and 1 not in (x, y) for x, y in zip(a, b, strict=True)):
        return None
    return [max(x, y) for x, y in zip(a, b, strict=True)]


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


def _unique_names(layers: list[Layer | Gemm]) -> list[Layer | Gemm]:
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
