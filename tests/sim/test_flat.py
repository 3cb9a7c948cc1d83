"""The specialised loop (``antsim.sim.flat``) gives the results of the blocks on simpy, bit for bit, where
simultaneous entries are the rule.

``FlatRun`` puts every entry the blocks put on the kernel's queue at the same point with the same time
expression, leaves out what nobody observes, and lets a process go on at once when its own entry would be
handed out next. Schedules built to tie (``tie_case``: integer work on a DRAM moving one value per 1–4
cycles, a third of the steps without work, zero halos, batch tiles with read-backs) make transfers,
multiplies and drains end on the same cycles, so any entry out of place would change a time or a stall
split; ``tests/sim/test_kernel.py`` runs the random and real-dataflow cases on all three environments.
"""

from __future__ import annotations

import pytest

from antsim.sim import Densities, SimParams, build_schedule, dram_bits_per_cycle, simulate_phase
from antsim.sim.flat import FlatRun
from antsim.sim.kernel import SimpyEnvironment
from tests.sim.conftest import tie_case

DENSE = Densities(1.0, 1.0, 1.0)


def _assert_as_on_simpy(arch, work, densities, params):
    got = simulate_phase(arch, work, densities, params)
    want = simulate_phase(arch, work, densities, params, environment=SimpyEnvironment)
    assert (got.cycles, got.end_cycle, type(got.end_cycle)) == (want.cycles, want.end_cycle, type(want.end_cycle))
    assert got.stalls == want.stalls
    assert got.actions == want.actions
    assert got.details == want.details


@pytest.mark.parametrize("seed", [*range(60), 801])
@pytest.mark.parametrize("policy", ["none", "ant"])
def test_schedules_built_to_tie_time_as_on_simpy(seed, policy):
    # Seed 801: the tie the closed form cannot see (tests/sim/test_closed_form.py).
    arch, work, params = tie_case(seed, policy)
    _assert_as_on_simpy(arch, work, DENSE, params)


def test_the_end_counts_a_last_wait_taken_at_once(make_work, make_arch):
    # One PE, unlimited DRAM, no drains: every wait is the process's own and nothing else is queued, so the
    # last multiply goes on at once; the end must still be its instant (3 chunks x 40 cycles).
    arch = make_arch(pe_array={"rows": 1, "cols": 1})
    work = make_work(3, 1, 40)
    schedule = build_schedule(arch, work, DENSE)
    run = FlatRun(schedule, dram_bits_per_cycle(arch), 2, False, 1)
    assert run.run() == 120.0 and run.clock == 120.0
    _assert_as_on_simpy(arch, work, DENSE, SimParams())
