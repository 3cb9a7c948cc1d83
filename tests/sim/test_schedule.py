"""``antsim.sim.schedule``: passes and re-streams from the buffer sizes (hand arithmetic), and the step layout
``build_schedule`` makes of a PhaseWork (each pass a share of the work, drains on the last pass only)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from antsim.sim import Densities
from antsim.sim.schedule import _changes, _half_wait, accumulator_restreams, build_schedule, stationary_passes

DENSE = Densities(1.0, 1.0, 1.0)
DENSE_FORMAT = {"format": "dense", "index_bits": 0}


@pytest.mark.parametrize(("values", "passes"), [(0, 1), (5000, 1), (5120, 1), (5121, 2), (6000, 2), (15361, 4)])
def test_stationary_passes_fit_the_input_buffer(make_work, make_arch, values: int, passes: int) -> None:
    # The default 10 KB input buffer holds 10 * 8192 / 16 = 5120 dense 16-bit values.
    arch = make_arch(pe_array={"rows": 1, "cols": 1}, compression=DENSE_FORMAT)
    assert arch.buffers.input_kb == 10
    assert stationary_passes(arch, make_work(2, 1, 1, stationary=values), 1.0) == passes


def test_accumulator_overflow_restreams_each_chunk_or_the_run_sharing_a_half(make_work, make_arch) -> None:
    arch = make_arch(pe_array={"rows": 1, "cols": 1})
    capacity = arch.accumulators.banks * arch.accumulators.entries_per_bank
    assert capacity == 32 * 32
    work = make_work(3, 1, 1, partial=[[2500], [500], [1025]])
    assert accumulator_restreams(arch, work).tolist() == [3, 1, 2]  # ceil(partial / 1024)
    # Chunks drained together (one wgrad batch tile) share the half, hence its worst factor.
    shared = dataclasses.replace(work, drains=np.array([False, True, True]))
    assert accumulator_restreams(arch, shared).tolist() == [3, 3, 2]


def test_passes_split_the_work_and_drain_only_on_the_last(make_work, make_arch, rng) -> None:
    issued = rng.integers(0, 1000, size=(4, 4))
    arch = make_arch(pe_array={"rows": 2, "cols": 2}, compression=DENSE_FORMAT)
    work = make_work(4, 4, issued, partial=300, halo=9, stationary=6000, needs_reduction=True)  # per PE: 2 passes
    schedule = build_schedule(arch, work, DENSE)
    assert schedule.passes == 2 and schedule.n_steps == 8
    per_pass = schedule.issued.reshape(2, 4, 4)  # one batch tile: pass 0's chunks, then pass 1's
    np.testing.assert_array_equal(per_pass.sum(axis=0), issued)
    assert np.abs(per_pass[0] - per_pass[1]).max() <= 1
    np.testing.assert_array_equal(schedule.stationary_bits, [4 * 6000 * 16 / 2, 0, 0, 0] * 2)
    reduction = math.ceil(300 / 2) + math.ceil(math.log2(4))  # 2 partial sums per cycle into a 4-PE tree
    np.testing.assert_array_equal(schedule.reduction_cycles, [0] * 4 + [reduction] * 4)
    np.testing.assert_array_equal(schedule.halo_cycles, [0] * 4 + [math.ceil(9 / 2)] * 4)


def test_a_dense_design_has_no_bank_conflicts_and_policy_none_no_screening(make_work, make_arch) -> None:
    work = make_work(2, 1, 10, candidates=40, conflicts=5)
    dense = build_schedule(make_arch(pe_array={"rows": 1, "cols": 1}, sparsity_support=False), work, DENSE)
    assert dense.conflicts.sum() == 0 and dense.screen.sum() == 0
    ant = build_schedule(make_arch(pe_array={"rows": 1, "cols": 1},
                                   anticipation={"policy": "ant", "pairs_per_cycle": 4.0}), work, DENSE)
    assert ant.conflicts.tolist() == [[5.0], [5.0]] and ant.screen.tolist() == [[10.0], [10.0]]


@pytest.mark.parametrize("compression", [{"format": "zero_run", "index_bits": 4}, {"format": "bitmap", "index_bits": 0},
                                         {"format": "coordinate", "index_bits": 6}, DENSE_FORMAT])
@pytest.mark.parametrize("density", [1e-13, 0.013, 0.1, 0.37, 1.0])
def test_encoded_bits_each_is_the_scalar_function_bit_for_bit(make_arch, rng, compression, density) -> None:
    from antsim.sim.schedule import encoded_bits_each
    from antsim.spec.encoding import encoded_bits

    comp = make_arch(compression=compression).compression
    values = np.r_[0.0, rng.integers(0, 100000, 200) * 1.0, rng.random(50) * 777.7, -3.0]
    each = encoded_bits_each(values, density, comp)
    assert each.tolist() == [encoded_bits(float(v), density, comp) for v in values]  # == on floats: exact


@pytest.mark.parametrize("seed", range(10))
def test_restreams_and_step_changes_equal_a_loop(make_work, make_arch, seed) -> None:
    # accumulator_restreams takes each run's largest factor with a segmented maximum and _changes compares
    # neighbours with array operations; a plain loop over chunks must give the same integers and flags.
    rng = np.random.default_rng(seed)
    chunks = int(rng.integers(1, 25))
    arch = make_arch(pe_array={"rows": 2, "cols": 2}, accumulators={"banks": 4, "entries_per_bank": 8})
    work = make_work(chunks, 4, 5, partial=rng.integers(0, 200, (chunks, 4)))
    drains = rng.random(chunks) < 0.4
    drains[-1] = True
    work = dataclasses.replace(work, drains=drains)
    factors = [max(1, math.ceil(max(row) / 32 - 1e-9)) for row in work.partial_outputs.tolist()]
    want, run = [], []
    for chunk in range(chunks):
        run.append(chunk)
        if drains[chunk]:
            want += [max(factors[i] for i in run)] * len(run)
            run = []
    assert accumulator_restreams(arch, work).tolist() == want
    labels = [rng.integers(0, 3, chunks), rng.integers(0, 2, chunks)]
    flags = [i == 0 or any(lab[i] != lab[i - 1] for lab in labels) for i in range(chunks)]
    assert _changes(*labels).tolist() == flags
    assert _changes(labels[0]).tolist() == [i == 0 or labels[0][i] != labels[0][i - 1] for i in range(chunks)]


@pytest.mark.parametrize("halves", [1, 2])
@pytest.mark.parametrize("seed", range(6))
def test_half_wait_equals_a_loop(seed, halves) -> None:
    # _half_wait takes a shortcut when every step drains; both forms must be the loop's: run r reuses the
    # half of run r - halves, freed by that run's drain (its last step).
    rng = np.random.default_rng(seed)
    steps = int(rng.integers(1, 30))
    for drains in (np.ones(steps, bool), np.r_[rng.random(steps - 1) < 0.5, True]):
        drain_of_run, run_of_step, run = [], [], 0
        for step in range(steps):
            run_of_step.append(run)
            if drains[step]:
                drain_of_run.append(step)
                run += 1
        want = [drain_of_run[r - halves] if r >= halves else -1 for r in run_of_step]
        got = _half_wait(drains, halves)
        assert got.tolist() == want and got.dtype == np.int64


@pytest.mark.parametrize("seed", range(8))
def test_one_pass_steps_are_the_chunks_with_their_own_values(make_work, make_arch, seed) -> None:
    # With one pass build_schedule uses each chunk's arrays as they are; step by step they must be what the
    # layout says: the chunk's issued pairs, its streamed bits times its re-streams, its drain, and the
    # stationary share on the first step of each batch tile.
    rng = np.random.default_rng(seed)
    chunks = int(rng.integers(1, 20))
    arch = make_arch(pe_array={"rows": 2, "cols": 2}, compression=DENSE_FORMAT,
                     accumulators={"banks": 4, "entries_per_bank": 8})
    work = make_work(chunks, 4, rng.integers(0, 50, (chunks, 4)), partial=rng.integers(0, 60, (chunks, 4)),
                     halo=rng.integers(0, 9, (chunks, 4)), streamed=rng.integers(0, 900, chunks), outputs=30)
    tiles = np.sort(rng.integers(0, 3, chunks))
    work = dataclasses.replace(work, chunk_tile=np.unique(tiles, return_inverse=True)[1],
                               stationary_dram_values=rng.integers(0, 40, chunks))
    schedule = build_schedule(arch, work, DENSE)
    assert schedule.passes == 1
    restream = accumulator_restreams(arch, work)
    tile_values = np.bincount(work.chunk_tile, weights=work.stationary_dram_values)
    for step in range(chunks):
        assert schedule.issued[step].tolist() == work.issued_pairs[step].tolist()
        assert schedule.streamed_bits[step] == work.streamed_dram_values[step] * 16.0 * restream[step]
        assert schedule.halo_cycles[step] == math.ceil(work.halo_outputs[step].max() / 2)
        assert schedule.output_bits[step] == 30 * 16.0
        first = step == 0 or work.chunk_tile[step] != work.chunk_tile[step - 1]
        want = tile_values[work.chunk_tile[step]] * 16.0 if first and tile_values[work.chunk_tile[step]] else 0.0
        assert schedule.stationary_bits[step] == want
