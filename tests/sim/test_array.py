"""The vectorised PE array equals the reference model with one simpy process per PE.

``PEArray`` replaces ``n_pes`` PE processes and their anticipation units by one process; these tests run
both on random synthetic schedules (screening, lock-step, halos, reductions, narrow DRAM, single and
double accumulator buffers) and on real dataflow output, and require the same timing and ledger.
"""

from __future__ import annotations

import numpy as np
import pytest

from antsim.dataflow import map_phase
from antsim.sim import Densities, build_schedule, simulate_phase
from antsim.sim.engine import _Blocks
from antsim.sparsity.generators import make_tensors
from antsim.spec.arch import load_arch
from antsim.workloads.layers import PHASES, Layer
from tests.sim.conftest import assert_same_timing, random_case


def _assert_same(arch, work, densities, params=None):
    array = simulate_phase(arch, work, densities, params)
    reference = simulate_phase(arch, work, densities, params, per_pe=True)
    assert_same_timing(array, reference)
    return array


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("policy", ["none", "ant"])
def test_random_schedules_match_the_per_pe_model(seed, policy):
    arch, work, params = random_case(seed, policy, bandwidths=(4.0, 25.6, 1e5))
    _assert_same(arch, work, Densities(0.3, 0.5, 0.4), params)


@pytest.mark.parametrize("config", ["scnn", "ant", "ant_oracle", "dense"])
@pytest.mark.parametrize("phase", PHASES)
def test_real_dataflow_matches_the_per_pe_model(config, phase):
    arch = load_arch(f"arch_configs/{config}.yaml")
    layer = Layer("l", N=3, C=24, K=20, H=14, W=14, R=3, S=3, stride=2, pad=1)
    tensors = make_tensors(layer, 0.3, 0.4, 0.35, seed=5)
    work = map_phase(arch, layer, phase, tensors)
    _assert_same(arch, work, Densities(0.3, 0.4, 0.35))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("policy", ["none", "ant"])
def test_the_ledger_added_after_the_run_equals_running_totals(seed, policy):
    # PEArray adds its per-PE stall rows after the run (one sequential accumulate) and takes a step's
    # release as a maximum of maxima; a running total and the element-wise maximum, step by step, must
    # give the same floats, bit for bit.
    arch, work, params = random_case(seed, policy, bandwidths=(4.0, 25.6, 1e5))
    schedule = build_schedule(arch, work, Densities(0.3, 0.5, 0.4), params)
    blocks = _Blocks(arch, schedule, params)
    blocks.run()
    array = blocks.array
    assert array is not None
    barrier = np.zeros(schedule.n_pes) + array.lockstep_wait.sum(axis=0)
    anticipation, screened = np.zeros(schedule.n_pes), np.zeros(schedule.n_pes)
    for step in range(schedule.n_steps):
        start = array.started_at[step]
        done = start + array.own_cycles[step]
        if array.screening:
            waits_for = blocks.fetcher.ready_at[step]
            if step >= params.anticipation_lookahead:
                waits_for = max(waits_for, array.started_at[step - params.anticipation_lookahead])
            screened = np.maximum(screened, waits_for) + schedule.screen[step]
            assert np.array_equal(array.screened_rows[step], screened)
            anticipation += np.maximum(screened - done, 0.0)
            done = np.maximum(done, screened)
        assert array.released_at[step] == float(done.max(initial=start))
        barrier += array.released_at[step] - done
    assert np.array_equal(array.stalls["barrier_wait"], barrier)
    assert np.array_equal(array.stalls["anticipation"], anticipation)
