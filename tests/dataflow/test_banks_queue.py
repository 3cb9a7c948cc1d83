"""Bank FIFOs (``accumulators.queue_depth``): the backlog recurrence against a cycle-by-cycle queue
simulator, depth 0 = the max-load stall rule, and the mapping's conflicts at every fidelity."""

from __future__ import annotations

import numpy as np
import pytest
from dataflow_helpers import random_tensors, small_arch

from antsim.dataflow import map_phase
from antsim.dataflow.banks import BankQueues, bank_loads, max_load_extra
from antsim.errors import SpecError
from antsim.spec.arch import arch_from_dict
from antsim.workloads.layers import Layer


def _simulate_cycles(loads: list[list[int]], depth: int) -> int:
    """Cycles until every product of a pair sequence is written, simulated one cycle at a time.

    The array's output register holds the products of the pair it issued; a cycle (1) issues the next
    pair into the register when it is empty, (2) lets every bank write one product — the head of its
    FIFO, or straight from the register when its FIFO is empty — and (3) moves register products into
    their bank's FIFO while it holds fewer than ``depth``. Independent of ``BankQueues``' closed step."""
    banks = len(loads[0]) if loads else 0
    register = [0] * banks
    fifo = [0] * banks
    pending = list(loads)
    cycles = 0
    while pending or any(register) or any(fifo):
        if not any(register) and pending:
            register = list(pending.pop(0))
        for b in range(banks):
            if fifo[b]:
                fifo[b] -= 1
            elif register[b]:
                register[b] -= 1
            move = min(register[b], depth - fifo[b])
            fifo[b] += move
            register[b] -= move
        cycles += 1
        if not pending and not any(register) and not any(fifo):
            break
    return cycles


def _queued_cycles(slot: np.ndarray, loads: np.ndarray, n_slots: int, depth: int, parts: int = 1) -> np.ndarray:
    """Per slot: its items plus the model's stalls and drain, the sequence fed in ``parts`` calls."""
    queues = BankQueues(n_slots, loads.shape[1], depth)
    for chunk in np.array_split(np.arange(len(slot)), parts):
        queues.feed(slot[chunk], loads[chunk])
    return np.bincount(slot, minlength=n_slots) + queues.stalls + queues.drain()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("depth", [0, 1, 2, 3, 7])
def test_backlog_recurrence_matches_a_cycle_by_cycle_queue_simulator(seed: int, depth: int) -> None:
    rng = np.random.default_rng(seed)
    n_slots, banks, n = 5, 4, 120
    slot = rng.integers(0, n_slots, n)  # slots interleave, as the exact path's pairs do
    loads = rng.integers(0, 4, (n, banks)) * (rng.random((n, banks)) < 0.5)  # idle pairs included
    model = _queued_cycles(slot, loads, n_slots, depth, parts=3)
    for s in range(n_slots):
        sequence = [list(map(int, row)) for row in loads[slot == s]]
        assert model[s] == _simulate_cycles(sequence, depth), (s, depth)


def test_depth_zero_is_the_max_load_rule_and_conflicts_never_grow_with_depth() -> None:
    rng = np.random.default_rng(3)
    slot = rng.integers(0, 4, 300)
    loads = rng.poisson(0.6, (300, 8))
    queues = BankQueues(4, 8, 0)
    queues.feed(slot, loads)
    rule = np.maximum(loads.max(axis=1), 1) - 1
    assert np.array_equal(queues.stalls, np.bincount(slot, weights=rule, minlength=4))
    assert not queues.drain().any()
    cycles = [_queued_cycles(slot, loads, 4, depth) for depth in range(10)]
    assert all(np.all(a >= b) for a, b in zip(cycles, cycles[1:], strict=False))
    # a deep enough FIFO leaves only the busiest bank's work-conserving bound: per slot, from any pair on,
    # the cycles already spent plus the products still to write to one bank
    for s in range(4):
        own = loads[slot == s]
        tail = np.cumsum(own[::-1], axis=0)[::-1].max(axis=1)
        assert cycles[-1][s] >= max(len(own), int((np.arange(len(own)) + tail).max()))


def test_bank_loads_and_max_load_extra_count_products_per_bank() -> None:
    rng = np.random.default_rng(5)
    group, bank = rng.integers(0, 50, 400), rng.integers(0, 8, 400)
    brute = np.zeros((50, 8), int)
    for g, b in zip(group, bank, strict=True):
        brute[g, b] += 1
    assert np.array_equal(bank_loads(group, bank, 8, 50), brute)
    assert np.array_equal(max_load_extra(group, bank, 8, 50), np.maximum(brute.max(axis=1), 1) - 1)
    from antsim.dataflow import banks as banks_mod

    dense_limit = banks_mod._DENSE_LOADS
    try:  # the sorted-keys path for large tables gives the same maxima
        banks_mod._DENSE_LOADS = 0
        assert np.array_equal(max_load_extra(group, bank, 8, 50), np.maximum(brute.max(axis=1), 1) - 1)
    finally:
        banks_mod._DENSE_LOADS = dense_limit


LAYER = Layer("c", N=1, C=4, K=8, H=16, W=16, R=3, S=3, stride=1, pad=1)


def _queued_arch(policy: str, depth: int, **accumulators: object):  # type: ignore[no-untyped-def]
    return small_arch(policy, 4, 4, 4, accumulators={"queue_depth": depth, **accumulators})


@pytest.mark.parametrize("policy", ["none", "ant", "oracle"])
def test_mapping_conflicts_fall_with_depth_and_fast_equals_exact_when_every_pair_is_sampled(policy: str) -> None:
    t = random_tensors(LAYER, 0.25, seed=21)
    for phase in ("fprop", "dgrad", "wgrad"):
        totals = []
        for depth in (0, 1, 4):
            exact = map_phase(_queued_arch(policy, depth, bank_hash="mod"), LAYER, phase, t, fidelity="exact")
            fast = map_phase(_queued_arch(policy, depth, bank_hash="mod"), LAYER, phase, t)
            assert np.array_equal(fast.conflict_cycles, exact.conflict_cycles), (phase, depth)
            totals.append(exact.conflict_cycles)
        assert totals[0].sum() > 0, phase
        assert np.all(totals[0] >= totals[1]) and np.all(totals[1] >= totals[2]), phase


def test_depth_zero_leaves_every_record_unchanged() -> None:
    t = random_tensors(LAYER, 0.4, seed=22)
    default = small_arch("none", 4, 4, 4)
    zero = _queued_arch("none", 0)
    for phase in ("fprop", "wgrad"):
        a, b = map_phase(default, LAYER, phase, t), map_phase(zero, LAYER, phase, t)
        assert np.array_equal(a.conflict_cycles, b.conflict_cycles) and np.array_equal(a.issued_pairs, b.issued_pairs)


def test_one_bank_never_writes_faster_than_one_product_a_cycle() -> None:
    """With a single bank every valid product of a slot takes one write cycle, whatever the FIFO."""
    t = random_tensors(LAYER, 0.6, seed=23)
    for depth in (0, 3, 1000):
        work = map_phase(_queued_arch("none", depth, banks=1, bank_hash="mod"), LAYER, "fprop", t, fidelity="exact")
        cycles = work.issued_pairs + work.conflict_cycles
        assert np.all(cycles >= work.valid_products), depth
        if depth == 0:  # the stall rule: a pair takes max(1, its valid products) cycles
            assert np.all(cycles >= np.maximum(work.valid_products, work.issued_pairs))


@pytest.mark.parametrize("value", [-1, 2.5, "4", True, 2000])
def test_bad_queue_depth_is_refused_naming_file_key_and_value(value: object) -> None:
    with pytest.raises(SpecError) as info:
        arch_from_dict({"name": "x", "accumulators": {"queue_depth": value}}, "arch.yaml")
    message = str(info.value)
    assert "arch.yaml" in message and "accumulators.queue_depth" in message and repr(value) in message
    assert "\n" not in message


@pytest.mark.parametrize("depth", [0, 1, 2, 5])
def test_long_sequences_take_the_stall_to_stall_scan_with_the_same_result(depth: int) -> None:
    """Slots with more than ``long_sequence`` items run ``_scan``; forcing either path gives the same
    stalls and backlogs, and both match the cycle-by-cycle simulator."""
    rng = np.random.default_rng(depth)
    slot = np.repeat([0, 1, 2], [700, 40, 300])[rng.permutation(1040)]
    loads = rng.integers(0, 3, (1040, 6)) * (rng.random((1040, 6)) < 0.3)
    loads[rng.random(1040) < 0.02] += 3  # a few bursts
    results = []
    for long_sequence in (10**9, 50, 0):  # position loop only, mixed, scan only
        queues = BankQueues(3, 6, depth, long_sequence=long_sequence)
        for chunk in np.array_split(np.arange(1040), 4):
            queues.feed(slot[chunk], loads[chunk])
        results.append((queues.stalls.copy(), queues.backlog.copy()))
    for stalls, backlog in results[1:]:
        assert np.array_equal(stalls, results[0][0]) and np.array_equal(backlog, results[0][1])
    cycles = np.bincount(slot) + results[-1][0] + results[-1][1].max(axis=1)
    for s in range(3):
        assert cycles[s] == _simulate_cycles([list(map(int, r)) for r in loads[slot == s]], depth)


@pytest.mark.slow
@pytest.mark.parametrize("depth", [1, 4])
def test_sampled_queue_estimates_stay_close_to_exact(depth: int) -> None:
    """Stated tolerance (docs/accumulator_banks.md §2): sampled in runs, the queued stall cycles
    stay within 2 % of exact's pair + conflict cycles per phase (none), 4 % for the oracle's packed groups."""
    import dataclasses

    from test_exact import _context

    from antsim.dataflow import exact as exact_mod
    from antsim.dataflow.banks import BankMap

    layer = Layer("c", N=1, C=8, K=8, H=16, W=16, R=3, S=3, stride=1, pad=1)
    t = random_tensors(layer, 0.4, seed=14)
    for policy, tolerance in (("none", 0.02), ("oracle", 0.04)):
        arch = _queued_arch(policy, depth, bank_hash="mod")
        for phase in ("fprop", "dgrad", "wgrad"):
            work = map_phase(arch, layer, phase, t, fidelity="exact")
            context = dataclasses.replace(_context(arch, layer, phase, t, fetch_filter=policy != "none"),
                                          banks=BankMap(32, "mod", 4, depth))
            if policy == "oracle":
                estimate, step = exact_mod.sampled_oracle_conflicts(context, work.issued_pairs.ravel(), budget=500)
            else:
                estimate, step = exact_mod.sampled_conflicts(context, policy, budget=2000,
                                                             issued_pairs=work.issued_pairs.ravel())
            exact = int(work.conflict_cycles.sum())
            busy = int(work.issued_pairs.sum()) + exact
            assert abs(int(estimate.sum()) - exact) <= tolerance * busy, (policy, phase, step)


def test_a_queued_design_simulates_faster_with_the_same_work_and_output() -> None:
    """End to end: FIFOs shorten the bank-conflict stalls, and with them the layer; products, actions
    and the functional output are those of the unbuffered design."""
    from antsim.simulate import simulate_layer

    t = random_tensors(LAYER, 0.5, seed=21)
    results = [simulate_layer(_queued_arch("none", depth, bank_hash="mod"), LAYER, "fprop", t, fidelity="exact")
               for depth in (0, 2)]
    unbuffered, queued = results
    assert queued.stalls["bank_conflict"] < unbuffered.stalls["bank_conflict"]
    assert queued.cycles < unbuffered.cycles and queued.stalls["busy"] == unbuffered.stalls["busy"]
    assert queued.products == unbuffered.products and queued.actions == unbuffered.actions
    assert np.array_equal(queued.output, unbuffered.output)
