"""The per-PE reference model (``antsim.sim.pe``, one simpy process per PE) against closed forms: a lone PE
takes its issued pairs, bank conflicts add to its step, the barrier waits for the slowest PE, and without
lookahead a step takes the longer of multiplying and screening; every cycle lands in one stall category."""

from __future__ import annotations

import math

import numpy as np
import pytest

from antsim.sim import STALL_KEYS, Densities, SimParams, simulate_phase

DENSE = Densities(1.0, 1.0, 1.0)


def test_a_lone_pe_takes_its_issued_pairs(make_work, make_arch, rng) -> None:
    issued = rng.integers(1, 500, size=(7, 1))
    timing = simulate_phase(make_arch(pe_array={"rows": 1, "cols": 1}), make_work(7, 1, issued), DENSE, per_pe=True)
    assert timing.cycles == int(issued.sum()) and timing.stalls["busy"] == pytest.approx(issued.sum())
    assert timing.stalls["barrier_wait"] == 0.0


def test_conflicts_lengthen_the_step_and_the_barrier_waits_for_the_slowest(make_work, make_arch, rng) -> None:
    issued = rng.integers(10, 100, size=(6, 4))
    conflicts = rng.integers(0, 20, size=(6, 4))
    timing = simulate_phase(make_arch(pe_array={"rows": 2, "cols": 2}),
                            make_work(6, 4, issued, conflicts=conflicts), DENSE, per_pe=True)
    own = issued + conflicts
    assert timing.cycles == int(own.max(axis=1).sum())
    assert timing.stalls["bank_conflict"] == pytest.approx(conflicts.sum(axis=0).mean())
    assert timing.stalls["barrier_wait"] == pytest.approx((own.max(axis=1)[:, None] - own).sum(axis=0).mean())


def test_without_lookahead_a_step_takes_the_longer_of_multiply_and_screen(make_work, make_arch, rng) -> None:
    issued = rng.integers(50, 150, size=(8, 1))
    candidates = rng.integers(0, 800, size=(8, 1))
    arch = make_arch(pe_array={"rows": 1, "cols": 1}, anticipation={"policy": "ant", "pairs_per_cycle": 4.0})
    work = make_work(8, 1, issued, candidates=candidates)
    timing = simulate_phase(arch, work, DENSE, SimParams(anticipation_lookahead=0), per_pe=True)
    assert timing.end_cycle == pytest.approx(np.maximum(issued, candidates / 4.0).sum())
    assert timing.stalls["anticipation"] == pytest.approx(np.maximum(0, candidates / 4.0 - issued).sum())


def test_every_cycle_is_in_one_stall_category(every_stall_phase) -> None:
    arch, work = every_stall_phase
    timing = simulate_phase(arch, work, Densities(0.2, 0.1, 1.0), per_pe=True)
    assert set(timing.stalls) == set(STALL_KEYS) and min(timing.stalls.values()) >= 0
    assert math.fsum(timing.stalls.values()) == pytest.approx(timing.end_cycle)
