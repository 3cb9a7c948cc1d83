"""``antsim.dse.workload``: the multi-fidelity proxy workload picks one layer per output plane, its cheapest 3×3."""

from __future__ import annotations

from pathlib import Path

from sweep_helpers import write_spec

from antsim.dse.spec import load_sweep
from antsim.dse.workload import proxy_layer_names, proxy_workload, resolve_workload


def test_proxy_layers_spread_over_network_and_keep_seed_indices(tmp_path: Path) -> None:
    spec = load_sweep(write_spec(tmp_path, multi_fidelity={"proxy_layers": 2, "proxy_phases": ["wgrad"]}))
    full = resolve_workload(spec)
    # Planes: a 8×8; b and c 4×4 (b has the common 3×3 kernel, c is a cheaper 1×1).
    assert proxy_layer_names(full, 2) == ("a", "b") and proxy_layer_names(full, 1) == ("b",)
    assert proxy_layer_names(full, 5) == ("a", "b")
    proxy = proxy_workload(spec, full)
    assert proxy is not None and [la.name for la in proxy.layers] == ["a", "b"]
    assert proxy.indices == (0, 1) and proxy.phases == ("wgrad",)


def test_proxy_layers_of_resnet18_one_per_plane_cheapest_3x3() -> None:
    from antsim.dse.workload import Workload
    from antsim.workloads.zoo import network

    picks = proxy_layer_names(Workload(tuple(network("resnet18-cifar"))), 3)
    assert picks == ("conv1", "layer3.0.conv1", "layer4.0.conv1")
