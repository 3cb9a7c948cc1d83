"""``rcp_fraction`` is measured on the mapped design: the RCPs it multiplies over what it multiplies."""

from __future__ import annotations

import pytest

from antsim.dse.evaluators import network_metrics
from antsim.simulate import simulate_network
from antsim.spec.arch import load_arch
from antsim.workloads.layers import Layer

LAYERS = [Layer("l", N=1, C=8, K=16, H=10, W=10, R=3, S=3, stride=1, pad=1)]


def _fraction(config: str) -> tuple[float, float]:
    arch = load_arch(f"arch_configs/{config}.yaml")
    result = simulate_network(arch, LAYERS, densities={"w": 0.3, "a": 0.3, "g": 0.3})
    multiplied = sum(r.products.total - r.products.skipped for r in result.records)
    wasted = sum(r.products.total - r.products.skipped - r.products.valid for r in result.records)
    return network_metrics(result)["rcp_fraction"], wasted / multiplied


def test_scnn_multiplies_every_rcp_and_ant_fewer():
    scnn, scnn_direct = _fraction("scnn")
    ant, ant_direct = _fraction("ant")
    oracle, _ = _fraction("ant_oracle")
    assert scnn == pytest.approx(scnn_direct) and ant == pytest.approx(ant_direct)
    assert scnn > ant > 0.0 and oracle == pytest.approx(0.0)
