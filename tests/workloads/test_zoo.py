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
                                        ("densenet121-cifar", 120), ("densenet121-imagenet", 120)])
def test_layer_counts_and_chaining(name: str, convs: int) -> None:
    layers = antsim.network(name)
    assert len(layers) == convs
    assert len({layer.name for layer in layers}) == convs
    assert all(layer.N == 1 for layer in layers)
    assert {32: "cifar", 224: "imagenet"}[layers[0].H] in name


def test_all_eight_networks_present() -> None:
    assert set(networks()) == {"resnet18-cifar", "vgg16-cifar", "wrn-16-8-cifar", "densenet121-cifar",
                               "resnet18-imagenet", "vgg16-imagenet", "resnet50-imagenet", "densenet121-imagenet"}


def test_unknown_network_lists_known_names() -> None:
    with pytest.raises(WorkloadError, match="unknown network 'resnet19'.*resnet18-cifar"):
        antsim.network("resnet19")


def test_zoo_cli(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    from antsim.cli import main

    assert main(["zoo"]) == 0
    assert "resnet50-imagenet" in capsys.readouterr().out
    csv_path = tmp_path / "r18.csv"
    assert main(["zoo", "resnet18-cifar", "--batch", "2", "--csv", str(csv_path)]) == 0
    out = capsys.readouterr().out
    assert f"{2 * _total('resnet18-cifar') / 1e9:.3f} GMACs per phase" in out
    assert [l.name for l in antsim.read_layers_csv(csv_path)] == [l.name for l in antsim.network("resnet18-cifar")]
    assert main(["zoo", "nope"]) == 2
    assert "unknown network 'nope'" in capsys.readouterr().err
