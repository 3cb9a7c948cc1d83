"""Accumulator bank hashing (accumulators.bank_hash) and the drop point of invalid products."""

from __future__ import annotations

import numpy as np
import pytest
from dataflow_helpers import random_tensors, small_arch

from antsim.dataflow import map_phase
from antsim.dataflow.banks import bank_of, sliced_bank
from antsim.errors import SpecError
from antsim.simulate import simulate_layer
from antsim.spec.arch import arch_from_dict
from antsim.workloads.layers import Layer


def _xor_by_bits(index: int, banks: int) -> int:
    """The XOR of the index's log2(banks)-bit digits, one digit at a time (independent of bank_of)."""
    bits, bank = banks.bit_length() - 1, 0
    while index:
        bank ^= index % banks
        index >>= bits
    return bank


@pytest.mark.parametrize("banks", [2, 8, 32])
def test_xor_hash_is_the_xor_of_index_digits_and_a_bijection_on_aligned_runs(banks: int) -> None:
    index = np.arange(50 * banks)
    xor = bank_of(index, banks, "xor")
    assert xor.tolist() == [_xor_by_bits(int(i), banks) for i in index]
    assert np.array_equal(bank_of(index, banks, "mod"), index % banks)
    for start in range(0, len(index), banks):  # every aligned run of `banks` indices covers every bank
        assert sorted(xor[start:start + banks]) == list(range(banks))


def test_xor_spreads_power_of_two_strides_that_mod_piles_onto_one_bank() -> None:
    banks = 32
    column = np.arange(32) * 32 + 5  # one column of a 32-wide plane: every index ≡ 5 (mod 32)
    assert len(set(bank_of(column, banks, "mod").tolist())) == 1
    assert len(set(bank_of(column, banks, "xor").tolist())) == 32


def test_xor_needs_power_of_two_banks() -> None:
    with pytest.raises(SpecError, match="accumulators.banks"):
        arch_from_dict({"name": "x", "accumulators": {"banks": 24, "bank_hash": "xor"}})
    with pytest.raises(SpecError, match="accumulators.banks"):  # sliced: F = 4 groups of banks
        arch_from_dict({"name": "x", "accumulators": {"banks": 30}})
    assert arch_from_dict({"name": "x", "accumulators": {"banks": 24}}).accumulators.bank_hash == "sliced"
    assert arch_from_dict({"name": "x", "accumulators": {"banks": 30, "bank_hash": "mod"}}).accumulators.banks == 30


def test_sliced_hash_gives_a_streamed_vectors_channels_their_own_banks() -> None:
    k, entry = np.meshgrid(np.arange(4), np.arange(8), indexing="ij")  # F = 4 channels x 8 consecutive entries
    banks = sliced_bank(k.ravel(), entry.ravel() + 13, 32, 4)
    assert sorted(banks.tolist()) == list(range(32))  # one product per bank


def test_dense_operands_never_conflict_with_the_sliced_hash_but_do_with_mod() -> None:
    """At full density an I-vector is 4 consecutive raster positions of a 7x7 tile (entries within 7 of
    each other in the 9-wide output window) and an F-vector 4 consecutive output channels: the sliced
    hash puts the 16 products in 16 banks. Under mod the channel stride 81 ≡ 17 (mod 32) collides."""
    layer = Layer(name="p14", N=1, C=4, K=8, H=14, W=14, R=3, S=3, stride=1, pad=1)
    t = random_tensors(layer, 1.0, seed=4)
    conflicts = {}
    for bank_hash in ("sliced", "mod"):
        arch = small_arch("none", 2, 2, 4, accumulators={"bank_hash": bank_hash})
        conflicts[bank_hash] = int(map_phase(arch, layer, "fprop", t, fidelity="exact").conflict_cycles.sum())
    assert conflicts["sliced"] == 0 and conflicts["mod"] > 0


def test_wgrad_with_channels_a_multiple_of_banks_conflicts_under_mod_not_xor() -> None:
    """wgrad's region index is (k, ch, r, s): with R = S = 1 and 32 channels, the F·I products of a pair
    (one dY element × I activations of consecutive channels... spread by ch) land 32 apart under mod."""
    layer = Layer(name="pw", N=1, C=64, K=8, H=4, W=4, R=1, S=1, stride=1, pad=0)
    t = random_tensors(layer, 1.0, seed=2)
    cycles = {}
    for bank_hash in ("mod", "xor"):
        arch = small_arch("none", 1, 1, 8, accumulators={"bank_hash": bank_hash, "banks": 32})
        exact = map_phase(arch, layer, "wgrad", t, fidelity="exact")
        fast = map_phase(arch, layer, "wgrad", t, fidelity="fast")
        assert np.array_equal(exact.conflict_cycles, fast.conflict_cycles)  # every pair sampled: exact
        cycles[bank_hash] = int(exact.conflict_cycles.sum())
    assert cycles["xor"] < cycles["mod"]


def test_invalid_products_cross_the_crossbar_only_when_dropped_at_the_bank() -> None:
    layer = Layer(name="s2", N=1, C=4, K=8, H=9, W=9, R=3, S=3, stride=2, pad=1)
    t = random_tensors(layer, 0.5, seed=3)
    routes = {}
    for drop in ("before_crossbar", "at_bank"):
        arch = small_arch("none", 2, 2, 4, accumulators={"drop_invalid": drop})
        work = map_phase(arch, layer, "fprop", t)
        result = simulate_layer(arch, layer, "fprop", t, fidelity="fast")
        routes[drop] = result.actions["crossbar"]["route"]
        assert result.actions["coordinate"]["compute"] == work.issued_products.sum()
        expected = work.valid_products.sum() if drop == "before_crossbar" else work.issued_products.sum()
        assert routes[drop] == expected
    assert routes["before_crossbar"] < routes["at_bank"]  # stride 2: most pairs are RCPs
