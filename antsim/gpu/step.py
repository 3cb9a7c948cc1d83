"""A whole training step on a GPU: the convolutions plus the memory-bound kernels around them.

``estimate_step`` runs the conv model (``antsim.gpu.estimate.estimate_gpu``) and adds, per conv
layer, the kernels a PyTorch-style training step launches next to it, each timed by
``antsim.gpu.elementwise.kernel_time`` (bytes / achievable DRAM bandwidth, or FLOPs / FP32 peak,
plus a per-launch overhead):

* forward (charged to the layer's ``fprop`` record): BatchNorm forward, ReLU, the residual add at
  the end of a residual block, a pooling layer on the layer's output, and for 16-bit precisions the
  cast of the fp32 master weights;
* backward (charged to ``dgrad``): ReLU backward, BatchNorm backward, the sum of the two gradients
  that reach a residual block's input, pooling backward;
* update (charged to ``wgrad``): SGD with momentum over the layer's weights and its BatchNorm's
  scale and shift, and for fp16 the loss-scaler's gradient unscale.

Why inside the conv records rather than as records of their own: ``antsim compare`` joins designs
per (layer, phase) and requires every design to hold the same keys, so a GPU result with extra
phases could not be compared with an accelerator result at all. Charging each kernel to the pass it
belongs to keeps every comparison scope meaningful (``phase`` = forward pass, backward-data pass,
backward-weights pass + update; ``network`` = one training step). What each record holds is spelled
out in its ``details`` (``conv_time_s``, ``step_time_s``, ``step_kernels``); the result says which
figure it is in ``meta["scope"]`` (``"step"``; results without the key are conv-only) and in its
design name (``v100-fp16-step``).

The zoo's layer lists hold convolutions only, so the network around them is derived from names and
shapes (``layer_roles``). Assumptions, each stated where it is used:

* every convolution is followed by BatchNorm (torchvision ResNet, DenseNet, GoogLeNet; VGG as
  ``vgg16_bn``), and by a ReLU unless it is a projection shortcut (``*.downsample``);
* pre-activation networks (DenseNet-BC, WRN: BN-ReLU-conv) normalise the conv's *input* instead;
* a residual block is the group of ``PREFIX.convN`` / ``PREFIX.downsample`` layers; it has a residual
  add when its last conv's output has the shape of its shortcut (the downsample's output, else the
  first conv's input);
* a pooling layer sits between consecutive convs when the next one reads this one's channels at a
  smaller plane; a global average pool follows the last conv (classification networks). Pools
  inside a branching module (GoogLeNet's inception pools) are not seen;
* the FC classifier and the loss are not in the layer lists and are not modelled (ResNet-50's FC is
  under 0.1 % of its training FLOPs); neither are zero-grad (PyTorch 2 sets grads to None) nor DenseNet's
  feature concatenation copies.

The framework's tensor layout (``layout``, ``antsim gpu --step --layout``): cuDNN's tensor-core convolution
kernels read NHWC activations and KRSC filters. On NCHW tensors (PyTorch's default memory format; TensorFlow's
choice for fp32/TF32 convolutions) cuDNN transposes around each such call (``layout_kernels``); on NHWC
tensors (PyTorch ``channels_last``, TensorFlow's fp16 layout on Volta and later) it runs none. The default,
``nhwc``, is the layout NVIDIA's tensor-core training recipes use (DeepLearningExamples' AMP configs) and the
one the conv-only model and its DeepBench tensor-core rows already assume; SIMT kernels (fp32, and any
precision on a GPU without tensor cores) run on NCHW and pay nothing in either layout (a transpose for a SIMT
kernel on NHWC tensors is not modelled: no source seen).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from antsim.errors import AntsimError
from antsim.gpu.elementwise import KERNEL_OVERHEAD_S, Kernel, KernelTime, kernel_time
from antsim.gpu.energy import energy_breakdown
from antsim.gpu.estimate import estimate_gpu
from antsim.gpu.spec import PRECISIONS, GpuSpec, load_gpu
from antsim.results import GpuLayerDetails, LayerResult, NetworkResult
from antsim.vocabulary import LAYOUTS, STEP_FUSIONS, Phase, Precision, StepFusion, TensorLayout, parse_word
from antsim.workloads.gemm import Gemm as GemmLayer
from antsim.workloads.layers import PHASES, Layer

STEP_MODEL = ("antsim.gpu.step: conv model + memory-bound kernels (BatchNorm, ReLU, residual add, pooling, "
              "SGD-momentum update) at bytes / achievable DRAM bandwidth + per-kernel overhead (Lin et al.)")

# Networks whose blocks are pre-activation (BN-ReLU-conv): DenseNet-BC (Huang et al., CVPR 2017, "BN-ReLU-
# Conv(1x1)-BN-ReLU-Conv(3x3)") and wide ResNets (Zagoruyko & Komodakis, BMVC 2016, pre-activation blocks).
PRE_ACTIVATION_NETWORKS = ("densenet", "wrn")
# Networks whose inner pools are averages (DenseNet's transition 2x2 average pool); others use max pools
# (ResNet's stem, VGG, GoogLeNet).
AVG_POOL_NETWORKS = ("densenet",)

# FLOPs per element, counted [I] from the arithmetic each kernel does (all on the FP32 lanes):
# BN forward: mean and sum of squares (add + FMA = 3), normalise and affine (two FMA = 4);
# BN backward: two reductions (Σdy, Σdy·x̂: 3), recompute x̂ (2), dx = (dy − mean_dy − x̂·mean_dyx̂)·γ/σ (4);
# ReLU / add / max-pool compare: 1; SGD momentum with weight decay: g += λw, v = μv + g, w −= η·v (three FMA = 6).
FLOPS_BN_FORWARD = 7
FLOPS_BN_BACKWARD = 9
FLOPS_ELEMENTWISE = 1
FLOPS_SGD_MOMENTUM = 6

# Bytes per element of what these kernels touch besides activations (at the precision's storage size):
MASTER_BYTES = 4  # fp32 weights, gradients and momentum (PyTorch keeps parameters fp32 under AMP)
INDEX_BYTES = 8   # max-pool argmax indices: int64 (PyTorch max_pool2d_with_indices)
# Passes over the data (each pass = the element count × element bytes), [assumption] as PyTorch/cuDNN run them:
BN_FORWARD_PASSES = 3    # read x for the batch statistics, read x again to normalise, write y
BN_BACKWARD_PASSES = 5   # read dy and x for the reductions, read them again for dx, write dx
RELU_FORWARD_PASSES = 2  # read x, write y (in place or not, both move)
RELU_BACKWARD_PASSES = 3  # read dy and the output y (the mask), write dx
ADD_PASSES = 3           # read two operands, write the sum
SGD_PASSES = 5           # read w, g, v; write w, v
CAST_BYTES = MASTER_BYTES + 2  # fp32 master weight read, 16-bit copy written (AMP autocast)
UNSCALE_BYTES = 2 * MASTER_BYTES  # GradScaler.unscale_: read and write each fp32 gradient

# cuDNN's transposes around a tensor-core convolution on NCHW tensors, per phase: which tensors move (each
# read once and written once in the other layout). Kernel names in public profiles: the input side
# ``nchwToNhwcKernel`` (GitHub ``apache/mxnet`` issues 9774, Volta, and 17665, Turing, fp16); cuDNN 8's TF32
# forward kernels read NHWC/KRSC and write NCHW in their epilogue
# (``sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_…``; cuDNN 7's ``…_nhwc2nchw_tn_v1``
# likewise), while the backward kernels write NHWC (``sm80_xmma_dgrad_implicit_gemm_…_nhwckrsc_nhwc_…``,
# ``…wgrad…_nhwc_align4``) and are followed by ``nhwcToNchwKernel`` (the same A100 PyTorch profiles; also
# ``apache/mxnet`` issue 14684). So fprop moves its two inputs, dgrad and wgrad their two inputs and their output.
# [assumption: every such call transposes afresh (separate cuDNN calls share no NHWC copy); the filter is moved
# like an activation.]
TRANSPOSE_PASSES = 2  # read the tensor, write it in the other layout
TRANSPOSED: dict[Phase, tuple[str, ...]] = {"fprop": ("x", "w"), "dgrad": ("dy", "w", "dx"),
                                            "wgrad": ("x", "dy", "dw")}
DEFAULT_LAYOUT: TensorLayout = "nhwc"

# How the framework runs the memory-bound kernels (``fusion``): ``eager`` launches each op on its own (PyTorch
# eager mode: cuDNN/ATen BatchNorm, a separate in-place ReLU, ``out += identity``); ``xla`` compiles them with XLA
# (TensorFlow + XLA, as NVIDIA's TF ResNet-50 rows ran). XLA's GPU compiler expands BatchNorm training and its
# gradient into reductions and elementwise HLOs (``BatchNormExpander``; cuDNN BatchNorm is off by default,
# flag ``xla_gpu_use_cudnn_batchnorm``, tensorflow/tensorflow ``debug_options_flags.cc`` and
# ``nvptx_compiler.cc``), and its instruction fusion merges elementwise consumers into them. Counted per element:
# the ReLU forward runs inside the normalising pass (no pass, no launch of its own); a residual add there too,
# reading the shortcut once (``FUSED_ADD_PASSES``, counted in ``bn_forward``); the ReLU backward's mask is read
# inside both BatchNorm backward passes (``FUSED_RELU_BACKWARD_PASSES``, no launch). [assumption: the BatchNorm
# statistics and the normalise stay two passes as in eager mode; the gradient sum at a block's input and the
# pools stay separate kernels; not checked against an XLA HLO dump of ResNet-50.]
DEFAULT_FUSION: StepFusion = "eager"
FUSED_ADD_PASSES = 1            # read the shortcut inside BN's normalise (+ ReLU) pass
FUSED_RELU_BACKWARD_PASSES = 2  # the forward output (the ReLU mask) read in BN backward's two reading passes

_BLOCK_MEMBER = re.compile(r"^(?P<prefix>.+)\.(?P<member>conv(?P<index>\d+)|downsample)$")

PoolKind = Literal["max", "avg", "global"]


@dataclass(frozen=True)
class Pool:
    """A pooling layer on a conv's output: ``kind`` and the pooled plane (``out_h`` × ``out_w``)."""

    kind: PoolKind
    out_h: int
    out_w: int


@dataclass(frozen=True)
class LayerRole:
    """How one conv sits in its network, as ``layer_roles`` derives it.

    Attributes:
        layer: The convolution.
        relu: A ReLU follows its BatchNorm (False for a projection shortcut).
        pre_activation: BN and ReLU act on the conv's input (BN-ReLU-conv) instead of its output.
        residual_add: Its output is summed with the block's shortcut (last conv of a residual block).
        shortcut_fork: Its input also feeds the block's shortcut, so the two gradients reaching that
            input are summed (first conv of a residual block).
        pool: A pooling layer on its output, or None.
    """

    layer: Layer
    relu: bool
    pre_activation: bool
    residual_add: bool
    shortcut_fork: bool
    pool: Pool | None


def layer_roles(layers: Sequence[Layer], network: str | None = None) -> list[LayerRole]:
    """Derive each conv's surroundings from the layer names and shapes (see the module docstring).

    Args:
        layers: The conv layers in network order.
        network: The zoo network name, when known (selects pre-activation and pool kinds).
    """
    name = (network or "").lower()
    pre = name.startswith(PRE_ACTIVATION_NETWORKS)
    residual_last, residual_first = _residual_blocks(layers)
    roles = []
    for i, layer in enumerate(layers):
        member = _BLOCK_MEMBER.match(layer.name)
        roles.append(LayerRole(
            layer=layer, relu=not (member and member["member"] == "downsample"), pre_activation=pre,
            residual_add=layer.name in residual_last, shortcut_fork=layer.name in residual_first,
            pool=_pool_after(layers, i, "avg" if name.startswith(AVG_POOL_NETWORKS) else "max")))
    return roles


def _residual_blocks(layers: Sequence[Layer]) -> tuple[set[str], set[str]]:
    """Names of the last and of the first conv of every residual block."""
    groups: dict[str, list[tuple[str, Layer]]] = {}
    for layer in layers:
        member = _BLOCK_MEMBER.match(layer.name)
        if member:
            groups.setdefault(member["prefix"], []).append((member["member"], layer))
    last, first = set(), set()
    for members in groups.values():
        convs = sorted((int(m[4:]), layer) for m, layer in members if m != "downsample")
        if len(convs) < 2:
            continue
        head, tail = convs[0][1], convs[-1][1]
        shortcut = next((layer for m, layer in members if m == "downsample"), None)
        into = (shortcut.K, shortcut.P, shortcut.Q) if shortcut else (head.C, head.H, head.W)
        if (tail.K, tail.P, tail.Q) == into:
            last.add(tail.name)
            first.add(head.name)
    return last, first


def _pool_after(layers: Sequence[Layer], i: int, kind: PoolKind) -> Pool | None:
    """The pool on layer ``i``'s output: inferred from the next conv, or global after the last one."""
    layer = layers[i]
    if i == len(layers) - 1:
        return Pool("global", 1, 1)
    nxt = layers[i + 1]
    if nxt.C == layer.K and (nxt.H, nxt.W) != (layer.P, layer.Q) and nxt.H <= layer.P and nxt.W <= layer.Q:
        return Pool(kind, nxt.H, nxt.W)
    return None


def role_kernels(role: LayerRole, precision: Precision, fusion: StepFusion = DEFAULT_FUSION) -> list[Kernel]:
    """The memory-bound kernels of one conv layer's training step (bytes, FLOPs, launches); ``fusion`` as
    ``STEP_FUSIONS`` (``xla``: ReLU and the residual add run inside BatchNorm's kernels, see ``DEFAULT_FUSION``)."""
    fused = parse_word("step fusion", fusion, STEP_FUSIONS) == "xla"
    e = PRECISIONS[precision][0]  # activation storage bytes
    layer = role.layer
    out = layer.N * layer.K * layer.P * layer.Q
    inp = layer.N * layer.C * layer.H * layer.W
    norm = inp if role.pre_activation else out  # elements BN and ReLU act on
    params = layer.K * layer.C * layer.R * layer.S + 2 * layer.K  # conv weights + BN scale and shift
    bn_backward = BN_BACKWARD_PASSES + (FUSED_RELU_BACKWARD_PASSES if fused and role.relu else 0)
    shortcut = FUSED_ADD_PASSES * out * e if fused and role.residual_add else 0  # read in BN's normalise pass
    ks = [Kernel("bn_forward", "fprop", BN_FORWARD_PASSES * norm * e + shortcut, FLOPS_BN_FORWARD * norm),
          Kernel("bn_backward", "dgrad", bn_backward * norm * e, FLOPS_BN_BACKWARD * norm)]
    if role.relu and not fused:
        ks += [Kernel("relu_forward", "fprop", RELU_FORWARD_PASSES * norm * e, FLOPS_ELEMENTWISE * norm),
               Kernel("relu_backward", "dgrad", RELU_BACKWARD_PASSES * norm * e, FLOPS_ELEMENTWISE * norm)]
    if role.residual_add and not fused:
        ks.append(Kernel("residual_add", "fprop", ADD_PASSES * out * e, FLOPS_ELEMENTWISE * out))
    if role.shortcut_fork:
        ks.append(Kernel("residual_grad_add", "dgrad", ADD_PASSES * inp * e, FLOPS_ELEMENTWISE * inp))
    if role.pool is not None:
        ks += _pool_kernels(role.pool, layer, out, e)
    ks.append(Kernel("sgd_momentum", "wgrad", SGD_PASSES * params * MASTER_BYTES, FLOPS_SGD_MOMENTUM * params))
    if e < MASTER_BYTES:  # 16-bit storage: AMP casts the fp32 master weights each forward pass
        ks.append(Kernel("weight_cast", "fprop", CAST_BYTES * params, FLOPS_ELEMENTWISE * params))
    if precision in ("fp16", "fp16_pseudo"):  # fp16 trains with a loss scaler (bf16 needs none)
        ks.append(Kernel("grad_unscale", "wgrad", UNSCALE_BYTES * params, FLOPS_ELEMENTWISE * params))
    return ks


def layout_kernels(layer: Layer, phase: Phase, precision: Precision, tensor_cores: bool,
                   layout: TensorLayout) -> list[Kernel]:
    """cuDNN's layout transposes around one conv call (see ``TRANSPOSED``): one kernel per moved tensor, each
    ``TRANSPOSE_PASSES`` × its bytes at the precision's storage size, when a tensor-core kernel runs on NCHW
    tensors; none for NHWC tensors or a SIMT kernel."""
    if parse_word("tensor layout", layout, LAYOUTS) == "nhwc" or not tensor_cores:
        return []
    e = PRECISIONS[precision][0]
    size = {"x": layer.N * layer.C * layer.H * layer.W, "dx": layer.N * layer.C * layer.H * layer.W,
            "dy": layer.N * layer.K * layer.P * layer.Q, "w": layer.K * layer.C * layer.R * layer.S,
            "dw": layer.K * layer.C * layer.R * layer.S}
    moved = TRANSPOSED[phase]
    return [Kernel("layout_transpose", phase, TRANSPOSE_PASSES * e * sum(size[t] for t in moved), 0.0,
                   launches=len(moved))]


def gemm_step_kernels(layer: GemmLayer, precision: Precision) -> list[Kernel]:
    """The memory-bound kernels of one GEMM layer's training step: its weight's update (SGD with
    momentum, AMP's cast and unscale as for a conv) when A is a weight; none for an activation ×
    activation product. The kernels around a transformer's GEMMs (LayerNorm, GELU, softmax, dropout,
    residual adds) are not modelled."""
    if not layer.weight_shared:
        return []
    params = layer.parameters
    ks = [Kernel("sgd_momentum", "wgrad", SGD_PASSES * params * MASTER_BYTES, FLOPS_SGD_MOMENTUM * params)]
    if PRECISIONS[precision][0] < MASTER_BYTES:
        ks.append(Kernel("weight_cast", "fprop", CAST_BYTES * params, FLOPS_ELEMENTWISE * params))
    if precision in ("fp16", "fp16_pseudo"):
        ks.append(Kernel("grad_unscale", "wgrad", UNSCALE_BYTES * params, FLOPS_ELEMENTWISE * params))
    return ks


def _pool_kernels(pool: Pool, layer: Layer, out: int, e: int) -> list[Kernel]:
    pooled = layer.N * layer.K * pool.out_h * pool.out_w
    index = INDEX_BYTES if pool.kind == "max" else 0
    return [Kernel(f"{pool.kind}pool_forward", "fprop", out * e + pooled * (e + index), FLOPS_ELEMENTWISE * out),
            Kernel(f"{pool.kind}pool_backward", "dgrad", pooled * (e + index) + out * e, FLOPS_ELEMENTWISE * out)]


def estimate_step(gpu: GpuSpec | str | Path, layers: Sequence[Layer | GemmLayer], phases: Iterable[Phase] = PHASES,
                  precision: Precision = "fp32", workload: Mapping[str, Any] | None = None, *,
                  network: str | None = None, overhead_s: float = KERNEL_OVERHEAD_S,
                  layout: TensorLayout = DEFAULT_LAYOUT, fusion: StepFusion = DEFAULT_FUSION,
                  **conv_options: Any) -> NetworkResult:
    """Predict a whole training step: ``estimate_gpu``'s conv records, each plus its step kernels.

    Args:
        gpu: A ``GpuSpec``, a builtin GPU name or a GPU YAML path.
        layers: The conv and GEMM layers (at the batch size to model), in network order; GEMM layers
            get ``gemm_step_kernels`` and are left out of the conv roles.
        phases: Which of ``fprop``, ``dgrad``, ``wgrad``; the step kernels of a phase left out are
            left out too.
        precision: See ``antsim.gpu.estimate.estimate_layer``.
        workload: The workload echo; its ``network`` selects pre-activation and pool kinds.
        network: Overrides ``workload["network"]``.
        overhead_s: Launch + idle time per memory-bound kernel (default Lin et al.'s 5 µs).
        layout: The framework's tensor layout, ``nchw`` | ``nhwc`` (default): on ``nchw`` every conv record
            that ran on tensor cores also holds cuDNN's transposes (``layout_kernels``).
        fusion: ``eager`` (default: one kernel per op, PyTorch eager) | ``xla`` (ReLU and residual adds fused
            into BatchNorm's kernels, see ``DEFAULT_FUSION``).
        conv_options: Passed on to ``estimate_gpu`` (``calibration``, ``progress``, ``structured``, …).

    Returns:
        A ``NetworkResult`` with the conv result's records (same keys), each ``time_s`` and energy
        raised by its kernels; ``details`` gains ``conv_time_s``, ``step_time_s``, ``step_kernels``
        (name, bytes, flops, launches, active_s, overhead_s, time_s each) and ``step_NAME_s``;
        ``meta["scope"] = "step"``; design ``gpu_design_name(...) + "-step"``.

    Raises:
        AntsimError: a negative or non-finite ``overhead_s``; an unknown ``layout`` or ``fusion``; see ``estimate_gpu``.
    """
    if not (math.isfinite(overhead_s) and overhead_s >= 0):
        raise AntsimError(f"step kernel overhead_s: must be a finite number >= 0 (s); got {overhead_s!r}")
    layout = parse_word("tensor layout", layout, LAYOUTS)
    fusion = parse_word("step fusion", fusion, STEP_FUSIONS)
    spec = gpu if isinstance(gpu, GpuSpec) else load_gpu(gpu)
    conv = estimate_gpu(spec, layers, phases, precision, workload=workload, **conv_options)
    net = network if network is not None else (workload or {}).get("network")
    convs = [layer for layer in layers if not isinstance(layer, GemmLayer)]
    roles = layer_roles(convs, net)
    kernels = {role.layer.name: role_kernels(role, precision, fusion) for role in roles}
    kernels |= {g.name: gemm_step_kernels(g, precision) for g in layers if isinstance(g, GemmLayer)}
    by_name = {layer.name: layer for layer in convs}
    records = tuple(_with_kernels(spec, record, [kernel_time(spec, k, overhead_s) for k in
                                                 [*kernels[record.layer], *_record_layout_kernels(
                                                     record, by_name, precision, layout)]
                                                 if k.phase == record.phase])
                    for record in conv.records)
    meta = {**conv.meta, "scope": "step", "step_model": STEP_MODEL,
            "step": {"network": net, "pre_activation": bool(roles and roles[0].pre_activation),
                     "kernel_overhead_s": overhead_s, "layout": layout, "fusion": fusion}}
    return NetworkResult(design=f"{conv.design}-step", backend=conv.backend, records=records, spec=conv.spec,
                         workload=conv.workload, area_mm2=conv.area_mm2, meta=meta)


def _record_layout_kernels(record: LayerResult, convs: Mapping[str, Layer], precision: Precision,
                           layout: TensorLayout) -> list[Kernel]:
    layer = convs.get(record.layer)
    if layer is None:  # a GEMM layer: its operands have no NCHW/NHWC layout
        return []
    return layout_kernels(layer, record.phase, precision, bool(GpuLayerDetails.of(record).tensor_cores), layout)


def _with_kernels(gpu: GpuSpec, record: LayerResult, times: Sequence[KernelTime]) -> LayerResult:
    """``record`` with its step kernels' time and energy added and listed in ``details``."""
    extra = math.fsum(t.time_s for t in times)
    energy = energy_breakdown(gpu, "fp32", extra, sum(t.kernel.flops for t in times),
                              sum(t.kernel.bytes for t in times))
    breakdown = {k: record.energy_breakdown_j.get(k, 0.0) + energy.get(k, 0.0)
                 for k in dict.fromkeys([*record.energy_breakdown_j, *energy])}
    details = replace(GpuLayerDetails.of(record), conv_time_s=record.time_s, step_time_s=extra,
                      step_kernels=tuple(t.to_dict() for t in times),
                      step_times_s={t.kernel.name: t.time_s for t in times})
    return LayerResult(layer=record.layer, phase=record.phase, time_s=record.time_s + extra,
                       energy_j=None if record.energy_j is None else record.energy_j + sum(energy.values()),
                       energy_breakdown_j=breakdown, details=details, kind=record.kind)


def result_scope(result: NetworkResult) -> str:
    """``"step"`` for a whole-training-step GPU result, ``"conv"`` otherwise (convolutions only)."""
    return str(result.meta.get("scope", "conv"))


__all__ = ["DEFAULT_FUSION", "DEFAULT_LAYOUT", "LayerRole", "Pool", "estimate_step", "gemm_step_kernels", "layer_roles",
           "layout_kernels", "result_scope", "role_kernels"]
