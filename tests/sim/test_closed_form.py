"""The closed-form timing tier equals the discrete-event model, and meets the closed forms it is built from.

``antsim.sim.closed_form`` computes the simpy model's timing as a recurrence. These tests run both tiers on
random synthetic schedules (screening, lock-step, halos, reductions, narrow DRAM, one or two accumulator
halves, staging depth 1–3, lookahead 0–2), on schedules built to tie (DRAM moving one value per cycle,
steps without work, zero halos, several batch tiles with read-backs: requests of different blocks at the
same instant, where simpy's event order decides) and on real dataflow output of every phase, and require
the same cycles, stalls, actions and details. Hand cases check the tier against closed forms directly.
"""

from __future__ import annotations

import numpy as np
import pytest

from antsim.dataflow import map_phase
from antsim.errors import AntsimError
from antsim.sim import Densities, PhaseTiming, SimParams, dram_bits_per_cycle, simulate_phase
from antsim.simulate import simulate_network
from antsim.sparsity.generators import make_tensors
from antsim.spec.arch import arch_from_dict, load_arch
from antsim.workloads.layers import PHASES, Layer
from tests.sim.conftest import assert_same_timing, random_case, tie_case

DENSE = Densities(1.0, 1.0, 1.0)


def _assert_same(arch, work, densities, params=None) -> PhaseTiming:
    events = simulate_phase(arch, work, densities, params)
    closed = simulate_phase(arch, work, densities, params, timing="closed_form")
    assert_same_timing(closed, events)
    return closed


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("policy", ["none", "ant"])
def test_random_schedules_match_the_event_model(seed, policy):
    arch, work, params = random_case(seed, policy)
    _assert_same(arch, work, Densities(0.3, 0.5, 0.4), params)


@pytest.mark.parametrize("seed", range(40))
def test_schedules_built_to_tie_match_the_event_model(seed):
    for policy in ("none", "ant"):
        arch, work, params = tie_case(seed, policy)
        _assert_same(arch, work, DENSE, params)


@pytest.mark.xfail(strict=True, reason="a known tie the positions do not record (antsim/sim/closed_form.py)")
def test_the_known_unrecorded_tie_still_differs():
    # Seed 801 of the tie generator: 5 of its first 6,000 cases (seeds 0-2999 x 2 policies) differ.
    arch, work, params = tie_case(801, "none")
    _assert_same(arch, work, DENSE, params)


def _layer() -> Layer:
    return Layer("l", N=3, C=24, K=20, H=14, W=14, R=3, S=3, stride=2, pad=1)


def _with_dram(arch, bandwidth_gbps: float):
    data = arch.to_dict()
    return arch_from_dict({**data, "dram": {**data["dram"], "bandwidth_gbps": bandwidth_gbps}})


@pytest.mark.parametrize("config", ["scnn", "ant", "ant_oracle", "dense"])
@pytest.mark.parametrize("phase", PHASES)
def test_real_dataflow_matches_the_event_model(config, phase):
    arch = load_arch(f"arch_configs/{config}.yaml")
    tensors = make_tensors(_layer(), 0.3, 0.4, 0.35, seed=5)
    work = map_phase(arch, _layer(), phase, tensors)
    densities = Densities(0.3, 0.4, 0.35)
    _assert_same(arch, work, densities)
    # DRAM-bound (a 40th of the bandwidth) and one staging slot / deeper lookahead on the same work.
    _assert_same(_with_dram(arch, arch.dram.bandwidth_gbps / 40), work, densities,
                 SimParams(staging_chunks=1, anticipation_lookahead=2))
    _assert_same(arch, work, densities, SimParams(staging_chunks=2, anticipation_lookahead=0))


@pytest.mark.parametrize("phase", PHASES)
def test_batch_tiles_and_passes_match_the_event_model(phase):
    # A tiny input buffer forces passes; batch 6 in tiles gives read-backs of wgrad's held dW.
    arch = load_arch("arch_configs/ant.yaml")
    data = arch.to_dict()
    arch = arch_from_dict({**data, "buffers": {**data["buffers"], "input_kb": 0.05}})
    layer = Layer("b", N=6, C=16, K=16, H=10, W=10, R=3, S=3, stride=1, pad=1)
    tensors = make_tensors(layer, 0.3, 0.4, 0.35, seed=2)
    work = map_phase(arch, layer, phase, tensors)
    closed = _assert_same(arch, work, Densities(0.3, 0.4, 0.35))
    assert closed.details["passes"] > 1


@pytest.mark.parametrize("config", ["scnn", "ant", "dense"])
def test_a_sampled_batch_of_16_matches_the_event_model(config):
    # fast fidelity, 2 of 16 images mapped and the rest estimated: the schedules a batch-16 sweep times
    arch = load_arch(f"arch_configs/{config}.yaml")
    layer = Layer("s", N=16, C=16, K=32, H=8, W=8, R=3, S=3, stride=1, pad=1)
    tensors = make_tensors(layer, 0.1, 0.5, 0.3, seed=4)
    for phase in PHASES:
        _assert_same(arch, map_phase(arch, layer, phase, tensors, "fast", batch_sample=2), Densities(0.1, 0.5, 0.3))


def test_one_pe_unlimited_dram_takes_its_issued_pairs(make_work, make_arch, rng):
    issued = rng.integers(1, 500, size=(7, 1))
    timing = simulate_phase(make_arch(pe_array={"rows": 1, "cols": 1}), make_work(7, 1, issued), DENSE,
                            timing="closed_form")
    assert timing.cycles == int(issued.sum())
    assert timing.stalls["busy"] == pytest.approx(issued.sum())


def test_barrier_makes_each_step_its_slowest_pe(make_work, make_arch, rng):
    issued = rng.integers(0, 300, size=(12, 64))
    timing = simulate_phase(make_arch(), make_work(12, 64, issued), DENSE, timing="closed_form")
    worst = issued.max(axis=1)
    assert timing.cycles == int(worst.sum())
    assert timing.stalls["barrier_wait"] == pytest.approx(np.mean((worst[:, None] - issued).sum(axis=0)))


def test_dram_bound_phase_takes_its_bits_over_the_bandwidth(make_work, make_arch):
    arch = make_arch(pe_array={"rows": 2, "cols": 2}, compression={"format": "coordinate"},
                     dram={"bandwidth_gbps": 8.0})
    timing = simulate_phase(arch, make_work(40, 4, 10, streamed=5000), DENSE, timing="closed_form")
    total_bits = 40 * 5000 * (16 + 4)
    # every transfer back to back; only the last chunk's 10 cycles of compute are not hidden
    assert timing.end_cycle == pytest.approx(total_bits / dram_bits_per_cycle(arch) + 10)
    assert timing.details["dram_busy_cycles"] == pytest.approx(total_bits / dram_bits_per_cycle(arch))


def test_staging_depth_decides_whether_transfers_hide(make_work, make_arch):
    # per chunk 500 values x 16 b / 204.8 b/cycle = 39.06 cycles of transfer vs 100 of compute
    arch = make_arch(pe_array={"rows": 1, "cols": 1}, compression={"format": "dense", "index_bits": 0},
                     dram={"bandwidth_gbps": 25.6})
    transfer = 500 * 16 / 204.8
    double = simulate_phase(arch, make_work(10, 1, 100, streamed=500), DENSE, timing="closed_form")
    assert double.end_cycle == pytest.approx(transfer + 10 * 100)
    single = simulate_phase(arch, make_work(10, 1, 100, streamed=500), DENSE, SimParams(staging_chunks=1),
                            timing="closed_form")
    assert single.end_cycle == pytest.approx(10 * (transfer + 100))


def test_write_back_shares_the_channel_with_the_next_fetch(make_work, make_arch):
    # 1 PE, one slot, 16 b/cycle: fetches take 50 cycles, write-backs 30, compute 20. After the first fetch
    # and compute the channel never idles (each next fetch is asked for at a release, before the channel
    # frees), so it carries the 4 other fetches and all 5 write-backs back to back.
    arch = make_arch(pe_array={"rows": 1, "cols": 1}, compression={"format": "dense", "index_bits": 0},
                     dram={"bandwidth_gbps": 2.0})
    work = make_work(5, 1, 20, streamed=50, outputs=30)
    timing = _assert_same(arch, work, DENSE, SimParams(staging_chunks=1))
    assert timing.end_cycle == pytest.approx(50 + 20 + 4 * 50 + 5 * 30)
    assert timing.details["dram_busy_cycles"] == pytest.approx(5 * 50 + 5 * 30)


def test_anticipation_bound_screening_sets_the_pace(make_work, make_arch, rng):
    candidates = rng.integers(400, 800, size=(9, 1))
    arch = make_arch(pe_array={"rows": 1, "cols": 1}, anticipation={"policy": "ant", "pairs_per_cycle": 4.0})
    work = make_work(9, 1, 5, candidates=candidates)
    timing = simulate_phase(arch, work, DENSE, SimParams(anticipation_lookahead=0), timing="closed_form")
    # without lookahead each step takes max(5 multiplies, candidates / 4 screened)
    assert timing.end_cycle == pytest.approx(float(np.maximum(5, candidates[:, 0] / 4).sum()))


def test_a_phase_without_chunks_takes_no_time(make_work, make_arch):
    timing = simulate_phase(make_arch(), make_work(0, 64, 0), DENSE, timing="closed_form")
    assert timing.cycles == 0 and timing.end_cycle == 0.0


def test_an_unknown_timing_is_refused(make_work, make_arch):
    with pytest.raises(AntsimError, match="timing: unknown 'simpy'; known: events, closed_form"):
        simulate_phase(make_arch(), make_work(2, 4, 1), DENSE, timing="simpy")  # type: ignore[arg-type]
    with pytest.raises(AntsimError, match="per_pe=True .* no closed form"):  # not silently ignored
        simulate_phase(make_arch(), make_work(2, 4, 1), DENSE, per_pe=True, timing="closed_form")


def test_network_echoes_the_closed_form_tier_only():
    arch = load_arch("arch_configs/scnn.yaml")
    layers = [Layer("a", N=1, C=8, K=8, H=8, W=8, R=3, S=3, stride=1, pad=1)]
    events = simulate_network(arch, layers, densities={"w": 0.3, "a": 0.4, "g": 0.5}, sparsity="uniform")
    closed = simulate_network(arch, layers, densities={"w": 0.3, "a": 0.4, "g": 0.5}, sparsity="uniform",
                              timing="closed_form")
    assert "timing" not in events.to_dict()["workload"]
    assert closed.to_dict()["workload"]["timing"] == "closed_form"
    assert [r.cycles for r in closed.records] == [r.cycles for r in events.records]
