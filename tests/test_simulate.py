"""End-to-end accelerator simulation: API, determinism, fidelities and SCNN/ANT sanity checks (its command:
tests/cli/test_simulate.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from antsim.energy import price
from antsim.errors import AntsimError, WorkloadError
from antsim.simulate import SharedWork, check_densities, layer_seed, simulate_layer, simulate_network
from antsim.sparsity.generators import make_tensors
from antsim.spec.arch import arch_from_dict, load_arch
from antsim.workloads.layers import Layer

ROOT = Path(__file__).resolve().parents[1]
ARCH = {name: ROOT / "arch_configs" / f"{name}.yaml" for name in ("scnn", "ant", "ant_oracle", "dense")}


def test_density_checks_name_the_key():
    assert check_densities(None) == {"w": 0.1, "a": 0.1, "g": 0.1}
    with pytest.raises(AntsimError, match="densities.g"):
        check_densities({"g": 2.0})
    with pytest.raises(AntsimError, match="'x'"):
        check_densities({"x": 0.5})


def test_layer_seeds_are_deterministic_and_distinct():
    seeds = [layer_seed(0, i) for i in range(20)]
    assert seeds == [layer_seed(0, i) for i in range(20)]
    assert len(set(seeds)) == 20 and layer_seed(1, 0) != seeds[0]


def test_network_tensors_mapping_must_cover_every_layer():
    layer = Layer(name="a", N=1, C=2, K=2, H=4, W=4, R=3, S=3, stride=1, pad=1)
    with pytest.raises(WorkloadError, match="'a'"):
        simulate_network(load_arch(ARCH["scnn"]), [layer], tensors={})


def test_arch_configs_differ_only_where_documented():
    scnn, ant, oracle, dense = (load_arch(ARCH[n]).to_dict() for n in ("scnn", "ant", "ant_oracle", "dense"))
    for other in (ant, oracle):
        assert {k: v for k, v in other.items() if k not in ("name", "description", "anticipation")} == \
            {k: v for k, v in scnn.items() if k not in ("name", "description", "anticipation")}
    assert oracle["anticipation"]["policy"] == "oracle" and ant["anticipation"]["policy"] == "ant"
    assert dense["sparsity_support"] is False and dense["compression"]["format"] == "dense"
    assert dense["pe_array"] == scnn["pe_array"]


# ---- end to end (dataflow + timing + energy) -------------------------------------------------------

LAYERS = {
    "s1": Layer(name="s1", N=1, C=16, K=16, H=16, W=16, R=3, S=3, stride=1, pad=1),
    "s2": Layer(name="s2", N=1, C=16, K=16, H=16, W=16, R=3, S=3, stride=2, pad=1),
}


@pytest.mark.parametrize("design", ["scnn", "ant", "ant_oracle"])
@pytest.mark.parametrize("layer", list(LAYERS))
def test_fast_and_exact_agree_within_5_percent(design, layer):
    from antsim.phases import reference
    from antsim.simulate import simulate_layer

    arch, spec = load_arch(ARCH[design]), LAYERS[layer]
    tensors = make_tensors(spec, 0.3, 0.3, 0.3, seed=11)
    for phase in ("fprop", "dgrad", "wgrad"):
        exact = simulate_layer(arch, spec, phase, tensors, fidelity="exact")
        fast = simulate_layer(arch, spec, phase, tensors, fidelity="fast")
        assert abs(fast.cycles - exact.cycles) <= 0.05 * exact.cycles, (phase, fast.cycles, exact.cycles)
        assert fast.products == exact.products
        np.testing.assert_allclose(exact.output, reference(spec, phase, tensors), rtol=1e-9, atol=1e-9)
        assert sum(exact.stalls.values()) == pytest.approx(exact.cycles, abs=1.0)
        assert exact.energy_j == pytest.approx(sum(exact.energy_breakdown_j.values()))


MID = Layer(name="mid", N=1, C=32, K=32, H=32, W=32, R=3, S=3, stride=1, pad=1)


def _cycles(design: str, phase: str, density: float) -> tuple[int, float]:
    from antsim.simulate import simulate_layer

    tensors = make_tensors(MID, density, density, density, seed=2)
    r = simulate_layer(load_arch(ARCH[design]), MID, phase, tensors, fidelity="fast")
    return r.cycles, r.stalls["busy"]


def test_scnn_is_slower_than_dense_at_full_density_and_far_faster_at_10_percent():
    # SCNN (ISCA 2017): at density 1.0/1.0 it runs at 79% of the dense design's speed. Our SCNN-like
    # design loses, at full density, the border RCPs (~4% at 32x32, 3x3, pad 1), vector fragmentation,
    # the halo exchange and bank conflicts; with the default channel-inner weight order an F-vector's
    # products never meet at one output, so dense fprop has almost no conflicts and we land at ~94%
    # (spatial-inner order: ~40%). The band asserts "slower", and not slower than the spatial-inner
    # worst case; BENCHMARKS.md records the gap to 79%.
    scnn, scnn_busy = _cycles("scnn", "fprop", 1.0)
    dense, dense_busy = _cycles("dense", "fprop", 1.0)
    # The dense engine forms only the pairs that meet at an output: SCNN's work minus border RCPs.
    assert 0.9 * scnn_busy < dense_busy < scnn_busy
    assert 0.35 < dense / scnn < 0.97
    # At 10% x 10% the Cartesian product holds ~1% of the dense MACs: far faster (>5x; ideal ~100x less
    # fragmentation, conflicts, barriers and the exposed first DRAM load).
    assert _cycles("dense", "fprop", 0.1)[0] > 5 * _cycles("scnn", "fprop", 0.1)[0]


def test_spatial_inner_weight_order_costs_bank_conflicts_at_full_density():
    from antsim.simulate import simulate_layer

    tensors = make_tensors(MID, 1.0, 1.0, 1.0, seed=2)
    base = load_arch(ARCH["scnn"]).to_dict()
    conflicts = {}
    for order in ("channel_inner", "spatial_inner"):
        arch = arch_from_dict({**base, "mapping": {**base["mapping"], "streamed_order": order}})
        conflicts[order] = simulate_layer(arch, MID, "fprop", tensors, fidelity="fast").stalls["bank_conflict"]
    # Raster-ordered 3x3 taps times raster-ordered activations put several products of one pair on the
    # same output: serialised on its bank. Channel-inner vectors hit 16 distinct outputs.
    assert conflicts["channel_inner"] < 0.1 * conflicts["spatial_inner"]


def test_ant_matches_scnn_on_fprop_dgrad_and_beats_it_on_wgrad():
    for phase in ("fprop", "dgrad"):
        ant, scnn = _cycles("ant", phase, 0.1)[0], _cycles("scnn", phase, 0.1)[0]
        assert abs(ant - scnn) <= 0.03 * scnn, phase  # stride 1: only border RCPs to skip
    assert _cycles("scnn", "wgrad", 0.1)[0] > 3 * _cycles("ant", "wgrad", 0.1)[0]  # 99% RCPs at 32x32


def test_shared_work_gives_every_record_a_cold_call_gives_and_counts_each_array_once():
    arch = load_arch("arch_configs/ant.yaml")
    layer = Layer("l", N=2, C=8, K=16, H=8, W=8, R=3, S=3, pad=1)
    tensors = make_tensors(layer, 0.3, 0.4, 0.5, seed=3)
    shared = SharedWork(arch)
    for phase in ("fprop", "dgrad", "wgrad"):
        warm = simulate_layer(arch, layer, phase, tensors, shared=shared)
        cold = simulate_layer(arch, layer, phase, tensors)
        assert warm.to_dict() == cold.to_dict()
        assert warm.energy_j == pytest.approx(sum(price(cold.actions, arch, cold.time_s).values()), rel=1e-12)
    assert shared.density(tensors.weights) == np.count_nonzero(tensors.weights) / tensors.weights.size
    other = tensors.weights.copy()
    other[other != 0] = 0  # another array (another id while both live): counted afresh
    assert shared.density(other) == 0.0 and shared.density(tensors.weights) > 0.0
    with pytest.raises(AntsimError, match="another arch"):
        simulate_layer(load_arch("arch_configs/scnn.yaml"), layer, "fprop", tensors, shared=shared)
