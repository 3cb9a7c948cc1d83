"""Block-level checks of the discrete-event model against closed forms (synthetic PhaseWork)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from antsim.energy.actions import check_actions
from antsim.sim import STALL_KEYS, Densities, SimParams, dram_bits_per_cycle, simulate_phase

DENSE = Densities(1.0, 1.0, 1.0)


def test_one_pe_no_conflicts_unlimited_dram_cycles_equal_issued_pairs(make_work, make_arch, rng):
    issued = rng.integers(1, 500, size=(7, 1))
    timing = simulate_phase(make_arch(pe_array={"rows": 1, "cols": 1}), make_work(7, 1, issued), DENSE)
    assert timing.cycles == int(issued.sum())
    assert timing.stalls["busy"] == pytest.approx(issued.sum())
    assert timing.stalls["barrier_wait"] == 0.0


def test_small_traffic_adds_only_the_first_load(make_work, make_arch):
    # 1000 stationary + 100 streamed values at 16 b, dense format: exposed = stationary + first chunk.
    arch = make_arch(pe_array={"rows": 1, "cols": 1}, compression={"format": "dense", "index_bits": 0},
                     dram={"bandwidth_gbps": 25.6})
    work = make_work(5, 1, 1000, streamed=100, stationary=1000)
    timing = simulate_phase(arch, work, DENSE)
    bpc = dram_bits_per_cycle(arch)
    assert bpc == pytest.approx(204.8)
    exposed = (1000 * 16 + 100 * 16) / bpc  # later chunks are prefetched while the PE computes
    assert timing.end_cycle == pytest.approx(5 * 1000 + exposed)
    assert timing.stalls["memory_stall"] == pytest.approx(exposed)


def test_barrier_wait_is_sum_of_max_minus_own(make_work, make_arch, rng):
    issued = rng.integers(0, 300, size=(12, 64))
    timing = simulate_phase(make_arch(), make_work(12, 64, issued), DENSE)
    worst = issued.max(axis=1)
    assert timing.cycles == int(worst.sum())
    assert timing.stalls["barrier_wait"] == pytest.approx(np.mean((worst[:, None] - issued).sum(axis=0)))
    assert timing.stalls["busy"] == pytest.approx(issued.sum(axis=0).mean())


def test_bank_conflicts_add_to_the_chunk_time(make_work, make_arch, rng):
    issued = rng.integers(10, 100, size=(6, 4))
    conflicts = rng.integers(0, 20, size=(6, 4))
    arch = make_arch(pe_array={"rows": 2, "cols": 2})
    timing = simulate_phase(arch, make_work(6, 4, issued, conflicts=conflicts), DENSE)
    assert timing.cycles == int((issued + conflicts).max(axis=1).sum())
    assert timing.stalls["bank_conflict"] == pytest.approx(conflicts.sum(axis=0).mean())


def test_dram_bound_cycles_equal_bytes_over_bandwidth(make_work, make_arch):
    arch = make_arch(pe_array={"rows": 2, "cols": 2}, compression={"format": "coordinate"},
                     dram={"bandwidth_gbps": 8.0})
    work = make_work(40, 4, 10, streamed=5000)
    timing = simulate_phase(arch, work, DENSE)
    total_bytes = 40 * 5000 * (16 + 4) / 8
    bytes_per_cycle = 8.0 / 1.0  # GB/s at 1 GHz
    # the last chunk's compute (10 cycles) is the only thing not hidden behind the transfers
    assert timing.end_cycle == pytest.approx(total_bytes / bytes_per_cycle + 10)
    assert timing.actions["dram"]["read_bits"] == pytest.approx(total_bytes * 8)


def test_double_buffering_hides_transfers_shorter_than_compute(make_work, make_arch):
    # per chunk: 500 values x 16 b / 204.8 b/cycle = 39 cycles of transfer vs 100 of compute
    arch = make_arch(pe_array={"rows": 1, "cols": 1}, compression={"format": "dense", "index_bits": 0},
                     dram={"bandwidth_gbps": 25.6})
    timing = simulate_phase(arch, make_work(10, 1, 100, streamed=500), DENSE)
    assert timing.end_cycle == pytest.approx(500 * 16 / 204.8 + 10 * 100)
    single = simulate_phase(arch, make_work(10, 1, 100, streamed=500), DENSE, SimParams(staging_chunks=1))
    assert single.end_cycle == pytest.approx(10 * (500 * 16 / 204.8 + 100))


def test_anticipation_bound_runs_at_pairs_per_cycle(make_work, make_arch, rng):
    candidates = rng.integers(400, 800, size=(9, 1))
    arch = make_arch(pe_array={"rows": 1, "cols": 1}, anticipation={"policy": "ant", "pairs_per_cycle": 4.0})
    work = make_work(9, 1, 5, candidates=candidates)
    timing = simulate_phase(arch, work, DENSE)  # the unit is the bottleneck and never idles
    assert timing.end_cycle == pytest.approx(candidates.sum() / 4.0)
    assert timing.stalls["anticipation"] == pytest.approx(candidates.sum() / 4.0 - 9 * 5)


def test_without_lookahead_chunk_time_is_max_of_multiply_and_screen(make_work, make_arch, rng):
    issued = rng.integers(50, 150, size=(8, 1))
    candidates = rng.integers(0, 800, size=(8, 1))
    arch = make_arch(pe_array={"rows": 1, "cols": 1}, anticipation={"policy": "ant", "pairs_per_cycle": 4.0})
    work = make_work(8, 1, issued, candidates=candidates)
    timing = simulate_phase(arch, work, DENSE, SimParams(anticipation_lookahead=0))
    assert timing.end_cycle == pytest.approx(np.maximum(issued, candidates / 4.0).sum())
    lookahead = simulate_phase(arch, work, DENSE)
    assert lookahead.end_cycle <= timing.end_cycle + 1e-9


def test_policy_none_never_screens(make_work, make_arch):
    timing = simulate_phase(make_arch(pe_array={"rows": 1, "cols": 1}),
                            make_work(3, 1, 10, candidates=1000), DENSE)
    assert timing.cycles == 30
    assert timing.actions["anticipation"]["screen"] == 0


def test_halo_exchange_overlaps_next_chunk_when_double_buffered(make_work, make_arch):
    halo_cycles = math.ceil(30 / SimParams().halo_values_per_cycle)
    work = make_work(6, 4, 100, halo=30)
    arch = make_arch(pe_array={"rows": 2, "cols": 2})
    assert simulate_phase(arch, work, DENSE).end_cycle == pytest.approx(6 * 100 + halo_cycles)
    single = make_arch(pe_array={"rows": 2, "cols": 2}, accumulators={"double_buffered": False})
    timing = simulate_phase(single, work, DENSE)
    assert timing.end_cycle == pytest.approx(6 * (100 + halo_cycles))
    assert timing.stalls["halo"] == pytest.approx(6 * halo_cycles)


def test_wgrad_reduction_takes_a_pipelined_tree(make_work, make_arch):
    work = make_work(3, 64, 200, partial=100, outputs=100, needs_reduction=True)
    arch = make_arch(accumulators={"double_buffered": False})
    timing = simulate_phase(arch, work, DENSE)
    per_chunk = math.ceil(100 / SimParams().reduction_values_per_cycle) + math.ceil(math.log2(64))
    last_write = 100 * (16 + 4) / dram_bits_per_cycle(arch)  # earlier write-backs overlap the next chunk
    assert timing.end_cycle == pytest.approx(3 * (200 + per_chunk) + last_write)
    assert timing.stalls["reduction"] == pytest.approx(3 * per_chunk)
    assert timing.actions["reduction"]["add"] == 3 * (64 * 100 - 100)


def test_stationary_overflow_tiles_in_time_and_restreams(make_work, make_arch):
    # 10 KB input buffer = 81920 b; 6000 values x 16 b = 96000 b -> 2 passes
    arch = make_arch(pe_array={"rows": 1, "cols": 1}, compression={"format": "dense", "index_bits": 0})
    work = make_work(4, 1, 101, streamed=300, stationary=6000)
    timing = simulate_phase(arch, work, DENSE)
    assert timing.details["passes"] == 2
    assert timing.actions["dram"]["read_bits"] == pytest.approx(6000 * 16 + 2 * 4 * 300 * 16)
    assert timing.stalls["busy"] == pytest.approx(4 * 101)  # compute is split, not repeated


def test_accumulator_overflow_restreams_the_chunk(make_work, make_arch):
    arch = make_arch(pe_array={"rows": 1, "cols": 1}, compression={"format": "dense", "index_bits": 0})
    work = make_work(2, 1, 10, streamed=100, partial=[[2500], [500]])  # one half holds 32 x 32 = 1024
    timing = simulate_phase(arch, work, DENSE)
    assert timing.details["accumulator_restreams"] == 2
    assert timing.actions["dram"]["read_bits"] == pytest.approx((3 + 1) * 100 * 16)


def test_stalls_sum_to_simulated_time(every_stall_phase):
    arch, work = every_stall_phase
    timing = simulate_phase(arch, work, Densities(0.2, 0.1, 1.0))
    assert set(timing.stalls) == set(STALL_KEYS)
    assert math.fsum(timing.stalls.values()) == pytest.approx(timing.end_cycle)
    assert min(timing.stalls.values()) >= 0
    assert timing.cycles == math.ceil(timing.end_cycle - 1e-9)


def test_action_counts_use_the_energy_names_and_the_work(make_work, make_arch, rng):
    issued = rng.integers(0, 50, size=(3, 4))
    arch = make_arch(pe_array={"rows": 2, "cols": 2}, anticipation={"policy": "ant"})
    work = make_work(3, 4, issued, candidates=issued + 7, halo=3)
    timing = simulate_phase(arch, work, DENSE)
    check_actions(timing.actions)
    assert timing.actions["multiplier"]["multiply"] == issued.sum() * 16
    assert timing.actions["crossbar"]["route"] == issued.sum() * 12  # RCPs dropped before the crossbar
    at_bank = make_arch(pe_array={"rows": 2, "cols": 2}, anticipation={"policy": "ant"},
                        accumulators={"drop_invalid": "at_bank"})
    assert simulate_phase(at_bank, work, DENSE).actions["crossbar"]["route"] == issued.sum() * 16  # routed too
    assert timing.actions["accumulator"]["update"] == issued.sum() * 12
    assert timing.actions["anticipation"]["screen"] == (issued + 7).sum()
    assert timing.actions["halo"]["transfer"] == 3 * 12


def test_repeated_simulations_are_identical(make_work, make_arch, rng):
    issued = rng.integers(0, 200, size=(5, 64))
    arch = make_arch(anticipation={"policy": "ant"}, dram={"bandwidth_gbps": 10.0})
    work = make_work(5, 64, issued, candidates=issued * 2, streamed=4000, halo=9)
    first, second = (simulate_phase(arch, work, Densities(0.1, 0.1)) for _ in range(2))
    assert first == second


def test_dense_design_has_no_bank_conflicts_nor_crossbar(make_work, make_arch):
    work = make_work(4, 4, 100, conflicts=25)
    dense = make_arch(pe_array={"rows": 2, "cols": 2}, sparsity_support=False)
    sparse = make_arch(pe_array={"rows": 2, "cols": 2})
    assert simulate_phase(dense, work, DENSE).cycles == 400
    assert simulate_phase(sparse, work, DENSE).cycles == 500
    actions = simulate_phase(dense, work, DENSE).actions
    assert actions["crossbar"]["route"] == 0 and actions["multiplier"]["multiply"] == 16 * 1600


def test_a_phase_without_chunks_takes_no_time(make_work, make_arch):
    timing = simulate_phase(make_arch(pe_array={"rows": 2, "cols": 2}), make_work(0, 4, 0, stationary=10), DENSE)
    assert timing.cycles == 0 and timing.actions["multiplier"]["multiply"] == 0
