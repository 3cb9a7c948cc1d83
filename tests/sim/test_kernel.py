"""The specialised loop and the event kernel give simpy's results bit for bit.

``antsim.sim.kernel`` replaces simpy with the few primitives the blocks use and leaves out the events
nobody observes; the blocks' code is the same on both. ``antsim.sim.flat`` (``simulate_phase``'s default)
runs the PE-array wiring's processes on one specialised queue loop. These tests run every block wiring
(the PE array and the per-PE reference, screening, lock-step, halos, reductions, re-streams, narrow DRAM,
single and double accumulator buffers, staging depths) on simpy, on the kernel and (the PE array) on the
specialised loop and require every field of the timing to be equal with ``==``, floats included — the
order in which simultaneous requests reach the DRAM port decides the times, so any difference in event
order would show (tests/sim/test_flat.py adds schedules built to tie).
"""

from __future__ import annotations

import numpy as np
import pytest

from antsim.dataflow import map_phase
from antsim.sim import Densities, SimParams, simulate_phase
from antsim.sim.kernel import Environment, SimpyEnvironment
from antsim.sparsity.generators import make_tensors
from antsim.spec.arch import load_arch
from antsim.workloads.layers import PHASES, Layer
from tests.sim.conftest import random_case


def _assert_identical(arch, work, densities, params=None, per_pe=False):
    want = simulate_phase(arch, work, densities, params, per_pe=per_pe, environment=SimpyEnvironment)
    runs = [simulate_phase(arch, work, densities, params, per_pe=per_pe, environment=Environment)]
    if not per_pe:  # the default: the specialised loop
        runs.append(simulate_phase(arch, work, densities, params))
    for got in runs:
        assert (got.cycles, got.end_cycle) == (want.cycles, want.end_cycle)
        assert type(got.end_cycle) is type(want.end_cycle)
        assert got.stalls == want.stalls
        assert got.actions == want.actions
        assert got.details == want.details


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("policy", ["none", "ant"])
def test_random_schedules_time_as_on_simpy(seed, policy):
    arch, work, params = random_case(seed, policy)
    _assert_identical(arch, work, Densities(0.3, 0.5, 0.4), params)


@pytest.mark.parametrize("seed", range(8))
def test_random_schedules_per_pe_time_as_on_simpy(seed):
    arch, work, params = random_case(seed, "ant", bandwidths=(4.0, 25.6))
    _assert_identical(arch, work, Densities(0.3, 0.5, 0.4), params, per_pe=True)


def test_passes_and_restreams_time_as_on_simpy(make_work, make_arch, rng):
    # Stationary values beyond the input buffer (several passes) and partial outputs beyond one
    # accumulator half (re-streams), on a DRAM channel slow enough to be contended.
    issued = rng.integers(0, 300, size=(12, 4))
    arch = make_arch(pe_array={"rows": 2, "cols": 2}, buffers={"input_kb": 1},
                     accumulators={"banks": 4, "entries_per_bank": 8}, dram={"bandwidth_gbps": 8.0})
    work = make_work(12, 4, issued, halo=rng.integers(0, 40, (12, 4)), partial=rng.integers(0, 90, (12, 4)),
                     streamed=rng.integers(0, 3000, 12), outputs=700, stationary=2000)
    got = simulate_phase(arch, work, Densities(0.5, 0.5, 0.5))
    assert got.details["passes"] > 1 and got.details["accumulator_restreams"] > 0
    _assert_identical(arch, work, Densities(0.5, 0.5, 0.5))


@pytest.mark.parametrize("config", ["scnn", "ant", "dense"])
@pytest.mark.parametrize("phase", PHASES)
def test_real_dataflow_times_as_on_simpy(config, phase):
    arch = load_arch(f"arch_configs/{config}.yaml")
    layer = Layer("l", N=4, C=24, K=20, H=14, W=14, R=3, S=3, stride=2, pad=1)
    tensors = make_tensors(layer, 0.3, 0.4, 0.35, seed=7)
    work = map_phase(arch, layer, phase, tensors)
    _assert_identical(arch, work, Densities(0.3, 0.4, 0.35), SimParams(staging_chunks=1))


@pytest.mark.parametrize("environment", [Environment, SimpyEnvironment])
def test_lock_grants_in_request_order_and_slots_wait_for_a_return(environment):
    env = environment()
    lock, slots, log = env.lock(), env.slots(1), []

    def user(name, hold):
        with lock.request() as request:
            yield request
            log.append((name, "got", env.now))
            yield env.timeout(hold)

    def taker(name):
        yield slots.get(1)
        log.append((name, "slot", env.now))
        yield env.timeout(2)
        slots.put(1)

    for name, hold in (("a", 3), ("b", 1), ("c", 2)):
        env.process(user(name, hold))
    env.process(taker("x"))
    env.process(taker("y"))
    env.run()
    assert [entry for entry in log if entry[1] == "got"] == [("a", "got", 0), ("b", "got", 3), ("c", "got", 4)]
    assert [entry for entry in log if entry[1] == "slot"] == [("x", "slot", 0), ("y", "slot", 2)]
    assert np.isclose(env.now, 6)
