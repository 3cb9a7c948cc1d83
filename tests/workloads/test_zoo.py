"""The zoo against independent MAC counts: published totals and closed forms written separately here."""

from __future__ import annotations

import pytest

import antsim
from antsim.errors import WorkloadError
from antsim.workloads.zoo import networks

# torchvision's published GFLOPS (= multiply-accumulates, 2 decimals) include the final FC layer,
# which the zoo (convs only) leaves out: FC MACs = in_features × 1000.
PUBLISHED_IMAGENET_GMACS = {
    "resnet18-imagenet": (1.81, 512 * 1000),
    "resnet50-imagenet": (4.09, 2048 * 1000),
    "vgg16-imagenet": (15.47, 25088 * 4096 + 4096 * 4096 + 4096 * 1000),
    "densenet121-imagenet": (2.83, 1024 * 1000),
    # GoogLeNet_Weights.IMAGENET1K_V1: GFLOPS 1.50, num_params 6624904 (aux heads dropped), per
    # https://pytorch.org/vision/stable/models/generated/torchvision.models.googlenet.html
    "googlenet-imagenet": (1.50, 1024 * 1000),
}


def _total(name: str) -> int:
    return sum(layer.macs for layer in antsim.network(name))


@pytest.mark.parametrize("name", sorted(PUBLISHED_IMAGENET_GMACS))
def test_imagenet_macs_match_published_totals(name: str) -> None:
    published, fc = PUBLISHED_IMAGENET_GMACS[name]
    assert round((_total(name) + fc) / 1e9, 2) == pytest.approx(published)


def _basic_resnet_closed_form(stem: int, widths: list[int], planes: list[int], blocks: int, stem_out: int) -> int:
    """Σ over stages of basic blocks: 2·blocks 3×3 convs, the first one changing width, plus a 1×1 projection."""
    total, cin = stem, stem_out
    for width, plane in zip(widths, planes, strict=True):
        total += cin * width * 9 * plane**2 + (2 * blocks - 1) * width * width * 9 * plane**2
        total += cin * width * plane**2 if cin != width else 0
        cin = width
    return total


def test_resnet18_cifar_closed_form() -> None:
    expected = _basic_resnet_closed_form(3 * 64 * 9 * 32**2, [64, 128, 256, 512], [32, 16, 8, 4], 2, 64)
    assert _total("resnet18-cifar") == expected
    assert round(expected / 1e6, 1) == 555.4  # the well-known ~0.56 GMACs of CIFAR ResNet-18


def test_wrn_16_8_closed_form() -> None:
    expected = _basic_resnet_closed_form(3 * 16 * 9 * 32**2, [128, 256, 512], [32, 16, 8], 2, 16)
    assert _total("wrn-16-8-cifar") == expected


def test_vgg16_cifar_closed_form() -> None:
    plan = [(3, 64, 32), (64, 64, 32), (64, 128, 16), (128, 128, 16), (128, 256, 8), (256, 256, 8),
            (256, 256, 8), (256, 512, 4), (512, 512, 4), (512, 512, 4), (512, 512, 2), (512, 512, 2), (512, 512, 2)]
    assert _total("vgg16-cifar") == sum(c * k * 9 * s * s for c, k, s in plan)


def test_densenet121_cifar_closed_form() -> None:
    total, channels, plane = 3 * 64 * 9 * 32**2, 64, 32
    for block, layers in enumerate([6, 12, 24, 16]):
        for i in range(layers):
            total += (channels + 32 * i) * 128 * plane**2 + 128 * 32 * 9 * plane**2
        channels += 32 * layers
        if block < 3:
            total += channels * (channels // 2) * plane**2
            channels, plane = channels // 2, plane // 2
    assert _total("densenet121-cifar") == total


@pytest.mark.parametrize("name,convs", [("resnet18-cifar", 20), ("resnet18-imagenet", 20), ("resnet50-imagenet", 53),
                                        ("vgg16-cifar", 13), ("vgg16-imagenet", 13), ("wrn-16-8-cifar", 16),
                                        ("densenet121-cifar", 120), ("densenet121-imagenet", 120),
                                        ("googlenet-imagenet", 57)])
def test_layer_counts_and_chaining(name: str, convs: int) -> None:
    layers = antsim.network(name)
    assert len(layers) == convs
    assert len({layer.name for layer in layers}) == convs
    assert all(layer.N == 1 for layer in layers)
    assert {32: "cifar", 224: "imagenet"}[layers[0].H] in name


def test_all_nine_networks_present() -> None:
    cnns = {"resnet18-cifar", "vgg16-cifar", "wrn-16-8-cifar", "densenet121-cifar", "resnet18-imagenet",
            "vgg16-imagenet", "resnet50-imagenet", "densenet121-imagenet", "googlenet-imagenet"}
    # each CNN also with its FC layers (NAME-full), and the GEMM networks (tests/workloads/test_transformers.py)
    assert set(networks()) == cnns | {f"{c}-full" for c in cnns} | {"bert-base", "vit-lite-7-4-cifar", "lstm-lm-medium"}


# --- GoogLeNet: torchvision's published parameter count, a closed form per module, shapes by hand ---

GOOGLENET_PUBLISHED_PARAMS = 6_624_904  # torchvision GoogLeNet_Weights.IMAGENET1K_V1 num_params (URL above)


def test_googlenet_parameter_count_matches_torchvision() -> None:
    # torchvision's convs have no bias; each is followed by a BatchNorm with γ and β per output channel;
    # the classifier is Linear(1024, 1000) with bias. Auxiliary heads are not in the published count.
    layers = antsim.network("googlenet-imagenet")
    conv = sum(l.C * l.K * l.R * l.S for l in layers)
    batchnorm = sum(2 * l.K for l in layers)
    assert conv + batchnorm + 1024 * 1000 + 1000 == GOOGLENET_PUBLISHED_PARAMS


def test_googlenet_macs_closed_form() -> None:
    # Stem 7x7/2 at 112² out, 1x1 and 3x3 at 56²; an Inception module at plane p with input c:
    # p²·[c·(1x1 + 3x3red + 5x5red + proj) + 9·(3x3red·3x3 + 5x5red·5x5)] (torchvision's "5x5" is 3x3).
    table = [(28, 192, 64, 96, 128, 16, 32, 32), (28, 256, 128, 128, 192, 32, 96, 64),
             (14, 480, 192, 96, 208, 16, 48, 64), (14, 512, 160, 112, 224, 24, 64, 64),
             (14, 512, 128, 128, 256, 24, 64, 64), (14, 512, 112, 144, 288, 32, 64, 64),
             (14, 528, 256, 160, 320, 32, 128, 128), (7, 832, 256, 160, 320, 32, 128, 128),
             (7, 832, 384, 192, 384, 48, 128, 128)]
    expected = 3 * 64 * 49 * 112**2 + 64 * 64 * 56**2 + 64 * 192 * 9 * 56**2
    expected += sum(p * p * (c * (a + r3 + r5 + q) + 9 * (r3 * b + r5 * d)) for p, c, a, r3, b, r5, d, q in table)
    assert _total("googlenet-imagenet") == expected


def test_googlenet_modules_chain_by_concatenation() -> None:
    # Each module's input channels = the previous module's concatenated output (branch1 + branch2.1 +
    # branch3.1 + branch4.1); the last one feeds the 1024-wide classifier.
    layers = {l.name: l for l in antsim.network("googlenet-imagenet")}
    modules = ["3a", "3b", "4a", "4b", "4c", "4d", "4e", "5a", "5b"]
    widths = {m: sum(layers[f"inception{m}.{b}.conv"].K for b in ("branch1", "branch2.1", "branch3.1", "branch4.1"))
              for m in modules}
    assert layers["inception3a.branch1.conv"].C == layers["conv3.conv"].K == 192
    for prev, nxt in zip(modules, modules[1:], strict=False):
        assert layers[f"inception{nxt}.branch1.conv"].C == widths[prev]
    assert widths["5b"] == 1024
    for m in modules:  # every branch of a module reads the same input plane and keeps it
        branch = [l for name, l in layers.items() if name.startswith(f"inception{m}.")]
        assert len(branch) == 6 and len({(l.H, l.P) for l in branch}) == 1 and branch[0].H == branch[0].P


def test_googlenet_shapes_by_hand() -> None:
    layers = {l.name: l for l in antsim.network("googlenet-imagenet")}
    c1 = layers["conv1.conv"]
    assert (c1.C, c1.K, c1.H, c1.R, c1.stride_h, c1.pad_h, c1.P) == (3, 64, 224, 7, 2, 3, 112)
    c3 = layers["conv3.conv"]
    assert (c3.C, c3.K, c3.H, c3.R, c3.P, c3.macs) == (64, 192, 56, 3, 56, 64 * 192 * 9 * 56 * 56)
    b = layers["inception4e.branch2.1.conv"]
    assert (b.C, b.K, b.H, b.R, b.pad_h, b.P) == (160, 320, 14, 3, 1, 14)
    p = layers["inception5b.branch4.1.conv"]
    assert (p.C, p.K, p.H, p.R, p.macs) == (832, 128, 7, 1, 832 * 128 * 49)
    assert list(layers)[:4] == ["conv1.conv", "conv2.conv", "conv3.conv", "inception3a.branch1.conv"]


def test_unknown_network_lists_known_names() -> None:
    with pytest.raises(WorkloadError, match="unknown network 'resnet19'.*resnet18-cifar"):
        antsim.network("resnet19")
