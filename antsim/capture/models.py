"""Hand-written CIFAR-size networks whose convolutions train with SWAT-style top-k sparsity.

Import this module only after ``antsim.capture.require_torch()`` (it imports torch at the top).

SWAT (Raihan & Aamodt, NeurIPS 2020), as modelled here for every conv layer:

* forward: ``Y = conv(A, topk(W))`` — the top-k of |W| at ``density_w``; A is the full forward input;
* saved for backward: ``topk(A)`` at ``density_a`` (instead of A) and ``topk(W)``;
* backward: ``dY`` is the gradient reaching the conv output, top-k'ed at ``density_g`` when it is < 1;
  ``dA = conv2d_input(topk(W), dY)`` (dgrad) and ``dW = conv2d_weight(topk(A), dY)`` (wgrad), the latter
  applied to the dense weight (straight-through, as SWAT updates all weights).

Top-k keeps exactly ``round(density·numel)`` elements of the whole tensor (ties broken by ``torch.topk``),
so when the tensor has at least that many non-zeros the kept density is exact.

Layer names (``SwatConv2d.layer_name``) and their order follow ``antsim.workloads.zoo.network(name)``:
``conv1``, ``layerI.B.conv1``, ``layerI.B.conv2``, ``layerI.B.downsample`` (ResNet-18), ``features.I``
(VGG-16, PyTorch's numbering of the BN-free VGG), ``blockG.B.conv1|conv2|downsample`` (WRN-16-8).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
import torch.nn.grad  # a submodule torch.nn does not re-export
from torch import nn

from antsim.errors import WorkloadError

CAPTURE_NETWORKS = ("resnet18-cifar", "vgg16-cifar", "wrn-16-8-cifar")


def topk(x: torch.Tensor, density: float) -> torch.Tensor:
    """``x`` with all but its ``round(density·numel)`` largest magnitudes set to zero (a new tensor).

    Ties at the threshold are broken by position (lowest flat index kept first), so the result does not
    depend on how ``torch.topk`` orders equal values (images replicated over channels have many ties).
    """
    keep = int(round(density * x.numel()))
    if keep >= x.numel():
        return x.clone()
    flat = x.reshape(-1)
    if keep == 0:
        return torch.zeros_like(x)
    magnitude = flat.abs()
    threshold = torch.topk(magnitude, keep, sorted=True).values[-1]
    mask = magnitude > threshold
    ties = torch.nonzero(magnitude == threshold).flatten()[: keep - int(mask.sum())]
    mask[ties] = True
    return torch.where(mask, flat, torch.zeros_like(flat)).view_as(x)


@dataclass
class SwatState:
    """Densities shared by every SWAT conv of one model, and what they record at the captured step."""

    density_w: float = 0.1
    density_a: float = 0.1
    density_g: float = 1.0
    recording: bool = False
    records: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)

    def record(self, layer_name: str, **tensors: torch.Tensor) -> None:
        if self.recording:
            slot = self.records.setdefault(layer_name, {})
            slot.update({k: v.detach().clone() for k, v in tensors.items()})


class _SwatConvFunction(torch.autograd.Function):
    """conv2d with SWAT semantics: exact forward/dgrad/wgrad operands (see the module doc)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, conv: SwatConv2d) -> torch.Tensor:
        state = conv.state
        w_sparse = topk(weight.detach(), state.density_w)
        a_saved = topk(x.detach(), state.density_a)
        ctx.save_for_backward(a_saved, w_sparse)
        ctx.conv, ctx.input_shape = conv, x.shape
        state.record(conv.layer_name, activations=x, weights=w_sparse, saved_activations=a_saved)
        return F.conv2d(x, w_sparse, None, conv.stride, conv.padding)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, None]:
        a_saved, w_sparse = ctx.saved_tensors
        conv: SwatConv2d = ctx.conv
        dy = grad_output if conv.state.density_g >= 1.0 else topk(grad_output, conv.state.density_g)
        conv.state.record(conv.layer_name, grad_output=dy)
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = torch.nn.grad.conv2d_input(ctx.input_shape, w_sparse, dy, conv.stride, conv.padding)
        if ctx.needs_input_grad[1]:
            grad_w = torch.nn.grad.conv2d_weight(a_saved, w_sparse.shape, dy, conv.stride, conv.padding)
        return grad_x, grad_w, None


class SwatConv2d(nn.Module):
    """A bias-free conv layer trained with SWAT top-k sparsity (``_SwatConvFunction``)."""

    def __init__(self, layer_name: str, cin: int, cout: int, kernel: int, state: SwatState,
                 stride: int = 1, padding: int | None = None) -> None:
        super().__init__()
        self.layer_name, self.state = layer_name, state
        self.stride = (stride, stride)
        pad = kernel // 2 if padding is None else padding
        self.padding = (pad, pad)
        self.weight = nn.Parameter(torch.empty(cout, cin, kernel, kernel))
        nn.init.kaiming_normal_(self.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _SwatConvFunction.apply(x, self.weight, self)


def _width(channels: int, mult: float) -> int:
    return max(1, int(round(channels * mult)))


class _BasicBlock(nn.Module):
    """Post-activation ResNet basic block (kuangliu/pytorch-cifar) with a 1×1 projection shortcut."""

    def __init__(self, prefix: str, cin: int, cout: int, stride: int, state: SwatState) -> None:
        super().__init__()
        self.conv1 = SwatConv2d(f"{prefix}.conv1", cin, cout, 3, state, stride)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = SwatConv2d(f"{prefix}.conv2", cout, cout, 3, state)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = SwatConv2d(f"{prefix}.downsample", cin, cout, 1, state, stride, 0)
            self.downsample_bn = nn.BatchNorm2d(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        shortcut = x if self.downsample is None else self.downsample_bn(self.downsample(x))
        return F.relu(out + shortcut)


class ResNet18Cifar(nn.Module):
    """ResNet-18 for 32×32 inputs: 3×3 stem, four stages of two basic blocks, global average pool."""

    def __init__(self, state: SwatState, width_mult: float = 1.0, classes: int = 10) -> None:
        super().__init__()
        widths = [_width(c, width_mult) for c in (64, 128, 256, 512)]
        self.conv1 = SwatConv2d("conv1", 3, widths[0], 3, state)
        self.bn1 = nn.BatchNorm2d(widths[0])
        blocks, cin = [], widths[0]
        for i, (cout, stride) in enumerate(zip(widths, (1, 2, 2, 2), strict=True), start=1):
            stage = [_BasicBlock(f"layer{i}.{b}", cin if b == 0 else cout, cout, stride if b == 0 else 1, state)
                     for b in range(2)]
            blocks.append(nn.Sequential(*stage))
            cin = cout
        self.layer1, self.layer2, self.layer3, self.layer4 = blocks
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


_VGG16: list[int | str] = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


class Vgg16Cifar(nn.Module):
    """VGG-16 (13 convs) with BatchNorm after each conv, for 32×32 inputs, and one linear classifier."""

    def __init__(self, state: SwatState, width_mult: float = 1.0, classes: int = 10) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin, index = 3, 0
        for item in _VGG16:
            if item == "M":
                layers.append(nn.MaxPool2d(2))
                index += 1
                continue
            cout = _width(int(item), width_mult)
            # Zoo names use PyTorch's numbering of the BN-free VGG (conv, ReLU, …, MaxPool).
            layers += [SwatConv2d(f"features.{index}", cin, cout, 3, state), nn.BatchNorm2d(cout), nn.ReLU()]
            cin, index = cout, index + 2
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.features(x), 1))


class _WideBlock(nn.Module):
    """Pre-activation wide-ResNet block (Zagoruyko & Komodakis); 1×1 projection when the shape changes."""

    def __init__(self, prefix: str, cin: int, cout: int, stride: int, state: SwatState) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = SwatConv2d(f"{prefix}.conv1", cin, cout, 3, state, stride)
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv2 = SwatConv2d(f"{prefix}.conv2", cout, cout, 3, state)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = SwatConv2d(f"{prefix}.downsample", cin, cout, 1, state, stride, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre = F.relu(self.bn1(x))
        out = self.conv2(F.relu(self.bn2(self.conv1(pre))))
        # As in the reference code, the projection shortcut takes the pre-activated input.
        return out + (x if self.downsample is None else self.downsample(pre))


class Wrn16x8Cifar(nn.Module):
    """WRN-16-8: 3×3 stem to 16 channels, three groups of two wide blocks (128, 256, 512), BN-ReLU-pool."""

    def __init__(self, state: SwatState, width_mult: float = 1.0, classes: int = 10) -> None:
        super().__init__()
        stem = _width(16, width_mult)
        self.conv1 = SwatConv2d("conv1", 3, stem, 3, state)
        groups, cin = [], stem
        for g, (width, stride) in enumerate(((128, 1), (256, 2), (512, 2)), start=1):
            cout = _width(width, width_mult)
            groups.append(nn.Sequential(*[
                _WideBlock(f"block{g}.{b}", cin if b == 0 else cout, cout, stride if b == 0 else 1, state)
                for b in range(2)]))
            cin = cout
        self.block1, self.block2, self.block3 = groups
        self.bn = nn.BatchNorm2d(cin)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block3(self.block2(self.block1(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(F.relu(self.bn(x)), 1), 1))


_BUILDERS: dict[str, Callable[..., nn.Module]] = {
    "resnet18-cifar": ResNet18Cifar, "vgg16-cifar": Vgg16Cifar, "wrn-16-8-cifar": Wrn16x8Cifar,
}


def build_model(name: str, state: SwatState, width_mult: float = 1.0, classes: int = 10) -> nn.Module:
    """A freshly initialised network (uses torch's global RNG: seed it first).

    Raises:
        WorkloadError: a name outside ``CAPTURE_NETWORKS`` or a non-positive ``width_mult``.
    """
    if name not in _BUILDERS:
        raise WorkloadError(f"network {name!r}: capture supports {', '.join(CAPTURE_NETWORKS)}", subject="network")
    if not width_mult > 0:
        raise WorkloadError(f"width_mult must be > 0; got {width_mult!r}", subject="width_mult")
    return _BUILDERS[name](state, width_mult, classes)


def swat_convs(model: nn.Module) -> list[SwatConv2d]:
    """The model's SWAT conv layers in registration order (= the zoo's network order)."""
    return [m for m in model.modules() if isinstance(m, SwatConv2d)]
