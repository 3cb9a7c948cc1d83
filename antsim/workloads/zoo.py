"""The network zoo: conv layers of common sparse-training benchmarks, in network order, batch 1.

Shapes follow the reference implementations the sparse-training literature trains: torchvision for the
ImageNet models (ResNet v1.5 with the stride on the 3×3 conv; DenseNet-BC with growth 32, bottleneck 4·k,
compression 0.5; GoogLeNet / Inception v1 as torchvision's ``googlenet``, SCNN's study network), and the
widely used CIFAR variants (3×3 stem, no max-pool: ResNet-18 and DenseNet-121 as in kuangliu/pytorch-cifar,
VGG-16 with 13 convs, WRN-16-8 of Zagoruyko & Komodakis with 1×1 projection shortcuts). These CNN entries
list only their convolutions; ``NAME-full`` adds the CNN's fully-connected layers as ``Gemm`` layers.
Networks with GEMM layers (``antsim.workloads.transformers``): ``bert-base`` (sequence length 128;
``bert-base-seqN`` for another length N), ``vit-lite-7-4-cifar`` and ``lstm-lm-medium``. Layer names
follow the PyTorch module names, so captured tensors can be matched by name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from antsim.errors import WorkloadError
from antsim.workloads import transformers
from antsim.workloads.layers import Layer

_NETWORKS: dict[str, Callable[[], list[Any]]] = {}
_BERT_SEQ = re.compile(r"bert-base-seq([0-9]+)")


def _register(name: str) -> Callable[[Callable[[], list[Any]]], Callable[[], list[Any]]]:
    def wrap(builder: Callable[[], list[Any]]) -> Callable[[], list[Any]]:
        _NETWORKS[name] = builder
        return builder

    return wrap


def networks() -> list[str]:
    """Names of the networks in the zoo."""
    return sorted(_NETWORKS)


def network(name: str) -> list[Any]:
    """The layers of ``name`` in network order, at batch 1: conv ``Layer``s and, for networks with GEMM
    layers, ``Gemm``s.

    Raises:
        WorkloadError: unknown name (the message lists the known ones).
    """
    seq = _BERT_SEQ.fullmatch(name)
    if seq:
        return list(transformers.bert_base(int(seq.group(1))))
    if name not in _NETWORKS:
        raise WorkloadError(f"unknown network {name!r}; known: {', '.join(networks())}")
    return _NETWORKS[name]()


def _conv(name: str, cin: int, cout: int, size: int, k: int, stride: int = 1, pad: int | None = None) -> Layer:
    padding = k // 2 if pad is None else pad
    return Layer(name=name, N=1, C=cin, K=cout, H=size, W=size, R=k, S=k, stride=(stride, stride),
                 pad=(padding, padding))


def _out(size: int, k: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - k) // stride + 1


# --- ResNets -------------------------------------------------------------------------------------

def _basic_stage(layers: list[Layer], prefix: str, cin: int, cout: int, size: int, stride: int, blocks: int) -> int:
    for b in range(blocks):
        s = stride if b == 0 else 1
        block_in = cin if b == 0 else cout
        layers.append(_conv(f"{prefix}.{b}.conv1", block_in, cout, size, 3, s))
        out = _out(size, 3, s, 1)
        layers.append(_conv(f"{prefix}.{b}.conv2", cout, cout, out, 3))
        if s != 1 or block_in != cout:
            layers.append(_conv(f"{prefix}.{b}.downsample", block_in, cout, size, 1, s, 0))
        size = out
    return size


def _resnet18(stem: list[Layer], size: int) -> list[Layer]:
    layers = list(stem)
    cin = 64
    for i, (cout, stride) in enumerate([(64, 1), (128, 2), (256, 2), (512, 2)], start=1):
        size = _basic_stage(layers, f"layer{i}", cin, cout, size, stride, 2)
        cin = cout
    return layers


@_register("resnet18-cifar")
def _resnet18_cifar() -> list[Layer]:
    return _resnet18([_conv("conv1", 3, 64, 32, 3)], 32)


@_register("resnet18-imagenet")
def _resnet18_imagenet() -> list[Layer]:
    # 7x7/2 stem 224 -> 112, then 3x3/2 max-pool -> 56
    return _resnet18([_conv("conv1", 3, 64, 224, 7, 2, 3)], 56)


@_register("resnet50-imagenet")
def _resnet50_imagenet() -> list[Layer]:
    layers = [_conv("conv1", 3, 64, 224, 7, 2, 3)]
    size, cin = 56, 64
    for i, (width, stride, blocks) in enumerate([(64, 1, 3), (128, 2, 4), (256, 2, 6), (512, 2, 3)], start=1):
        for b in range(blocks):
            s = stride if b == 0 else 1
            p = f"layer{i}.{b}"
            layers.append(_conv(f"{p}.conv1", cin, width, size, 1, 1, 0))
            layers.append(_conv(f"{p}.conv2", width, width, size, 3, s))  # v1.5: stride on the 3x3
            out = _out(size, 3, s, 1)
            layers.append(_conv(f"{p}.conv3", width, 4 * width, out, 1, 1, 0))
            if b == 0:
                layers.append(_conv(f"{p}.downsample", cin, 4 * width, size, 1, s, 0))
            cin, size = 4 * width, out
    return layers


@_register("wrn-16-8-cifar")
def _wrn_16_8_cifar() -> list[Layer]:
    depth, widen = 16, 8
    blocks = (depth - 4) // 6
    layers = [_conv("conv1", 3, 16, 32, 3)]
    size, cin = 32, 16
    for g, (width, stride) in enumerate([(16 * widen, 1), (32 * widen, 2), (64 * widen, 2)], start=1):
        size = _basic_stage(layers, f"block{g}", cin, width, size, stride, blocks)
        cin = width
    return layers


# --- VGG ---------------------------------------------------------------------------------------

_VGG16: list[int | str] = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


def _vgg16(size: int) -> list[Layer]:
    layers: list[Layer] = []
    cin, index = 3, 0
    for item in _VGG16:
        if item == "M":
            size //= 2
        else:
            layers.append(_conv(f"features.{index}", cin, int(item), size, 3))
            cin = int(item)
        index += 1 if item == "M" else 2  # PyTorch numbering: conv, ReLU, …, MaxPool
    return layers


@_register("vgg16-cifar")
def _vgg16_cifar() -> list[Layer]:
    return _vgg16(32)


@_register("vgg16-imagenet")
def _vgg16_imagenet() -> list[Layer]:
    return _vgg16(224)


# --- DenseNet-121 (DenseNet-BC, growth 32) --------------------------------------------------------

def _densenet121(stem: list[Layer], cin: int, size: int) -> list[Layer]:
    growth, bottleneck = 32, 4 * 32
    layers = list(stem)
    for b, n_layers in enumerate([6, 12, 24, 16], start=1):
        for i in range(n_layers):
            p = f"dense{b}.{i}"
            layers.append(_conv(f"{p}.conv1", cin + i * growth, bottleneck, size, 1, 1, 0))
            layers.append(_conv(f"{p}.conv2", bottleneck, growth, size, 3))
        cin += n_layers * growth
        if b < 4:
            layers.append(_conv(f"trans{b}.conv", cin, cin // 2, size, 1, 1, 0))
            cin, size = cin // 2, size // 2  # 2x2 average pool
    return layers


@_register("densenet121-cifar")
def _densenet121_cifar() -> list[Layer]:
    return _densenet121([_conv("conv1", 3, 64, 32, 3)], 64, 32)


@_register("densenet121-imagenet")
def _densenet121_imagenet() -> list[Layer]:
    return _densenet121([_conv("conv0", 3, 64, 224, 7, 2, 3)], 64, 56)


# --- GoogLeNet (Inception v1, torchvision's ``googlenet``) ----------------------------------------

# Per Inception module: (name, plane, in, 1x1, 3x3 reduce, 3x3, "5x5" reduce, "5x5", pool proj), the
# channel table of Szegedy et al. (CVPR 2015, Table 1) as torchvision builds it. Planes follow the 3x3/2
# ceil-mode max-pools (56 -> 28 -> 14) and the 2x2/2 pool before inception5a (14 -> 7).
_INCEPTION_V1 = [
    ("inception3a", 28, 192, 64, 96, 128, 16, 32, 32),
    ("inception3b", 28, 256, 128, 128, 192, 32, 96, 64),
    ("inception4a", 14, 480, 192, 96, 208, 16, 48, 64),
    ("inception4b", 14, 512, 160, 112, 224, 24, 64, 64),
    ("inception4c", 14, 512, 128, 128, 256, 24, 64, 64),
    ("inception4d", 14, 512, 112, 144, 288, 32, 64, 64),
    ("inception4e", 14, 528, 256, 160, 320, 32, 128, 128),
    ("inception5a", 7, 832, 256, 160, 320, 32, 128, 128),
    ("inception5b", 7, 832, 384, 192, 384, 48, 128, 128),
]
# torchvision's branch3 uses a 3x3 kernel where the paper has 5x5 (a known, kept quirk: its pretrained
# weights are 3x3, pytorch/vision issue 906). The zoo follows torchvision so that captured tensors match.
_BRANCH3_KERNEL = 3


@_register("googlenet-imagenet")
def _googlenet_imagenet() -> list[Layer]:
    # Stem: 7x7/2 conv 224 -> 112, 3x3/2 max-pool -> 56, 1x1 conv, 3x3 conv, max-pool -> 28. Names are
    # torchvision's Conv2d module paths (each conv sits in a BasicConv2d as ``.conv``).
    layers = [_conv("conv1.conv", 3, 64, 224, 7, 2, 3), _conv("conv2.conv", 64, 64, 56, 1, 1, 0),
              _conv("conv3.conv", 64, 192, 56, 3)]
    for name, size, cin, c1, r3, c3, r5, c5, proj in _INCEPTION_V1:
        layers += [_conv(f"{name}.branch1.conv", cin, c1, size, 1),
                   _conv(f"{name}.branch2.0.conv", cin, r3, size, 1),
                   _conv(f"{name}.branch2.1.conv", r3, c3, size, 3),
                   _conv(f"{name}.branch3.0.conv", cin, r5, size, 1),
                   _conv(f"{name}.branch3.1.conv", r5, c5, size, _BRANCH3_KERNEL),
                   _conv(f"{name}.branch4.1.conv", cin, proj, size, 1)]  # after a 3x3/1 max-pool
    return layers


# --- Networks with GEMM layers (antsim.workloads.transformers) -----------------------------------

@_register("bert-base")
def _bert_base() -> list[Any]:
    return list(transformers.bert_base())


@_register("vit-lite-7-4-cifar")
def _vit_lite() -> list[Any]:
    return list(transformers.vit_lite_7_4())


@_register("lstm-lm-medium")
def _lstm() -> list[Any]:
    return list(transformers.lstm_lm_medium())


def _with_head(cnn: str) -> Callable[[], list[Any]]:
    return lambda: [*_NETWORKS[cnn](), *transformers.cnn_head(cnn)]


for _cnn in sorted(transformers.CNN_HEADS):
    _NETWORKS[f"{_cnn}-full"] = _with_head(_cnn)
