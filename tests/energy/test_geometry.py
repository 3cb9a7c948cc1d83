"""``antsim.energy.geometry`` on SCNN's published per-PE storage (docs/energy_area_reference.md §2c): a 50-entry
weight FIFO of F-vectors is 0.5 KB, 32 banks × 32 entries × 24 b of accumulators are 3 KB a half and 6 KB
double-buffered; 16 crossbar inputs for 4×4 multipliers; a dense design stores no index."""

from __future__ import annotations

import math

import pytest

from antsim.energy.geometry import (
    BITS_PER_KB,
    accumulator_bank_kb,
    accumulator_bits,
    anticipation_lanes,
    bank_fifo_bits,
    bank_fifo_entry_bits,
    crossbar_inputs,
    has_index,
    size_scale,
    weight_fifo_bits,
    weight_fifo_kb,
    word_bits,
)
from antsim.spec.arch import arch_from_dict


def test_scnn_storage_sizes_are_the_published_ones(scnn) -> None:
    assert has_index(scnn) and word_bits(scnn) == 16 + 4
    assert weight_fifo_bits(scnn) == 50 * 4 * 20 == 4000
    assert weight_fifo_kb(scnn) == pytest.approx(0.5, abs=0.02)  # 4000 b = 0.49 KB, "0.5 KB" in the paper
    assert accumulator_bank_kb(scnn) == 32 * 24 / BITS_PER_KB  # one bank of one half: 32 entries × 24 b
    assert scnn.accumulators.banks * accumulator_bank_kb(scnn) == 3.0  # the 32 banks of one half: 3 KB
    assert accumulator_bits(scnn) == 6 * BITS_PER_KB  # both halves: 6 KB
    assert crossbar_inputs(scnn) == 16


def test_a_dense_design_stores_values_only(scnn) -> None:
    dense = arch_from_dict({**scnn.to_dict(), "name": "d", "sparsity_support": False,
                            "compression": {"format": "dense", "value_bits": 16, "index_bits": 0},
                            "anticipation": {"policy": "none"}})
    assert not has_index(dense) and word_bits(dense) == 16 and weight_fifo_bits(dense) == 50 * 4 * 16


def test_single_buffered_accumulators_hold_one_half(scnn) -> None:
    data = scnn.to_dict()
    single = arch_from_dict({**data, "accumulators": {**data["accumulators"], "double_buffered": False}})
    assert accumulator_bits(single) == 3 * BITS_PER_KB


@pytest.mark.parametrize(("pairs_per_cycle", "lanes"), [(4.0, 4), (2.5, 3), (0.5, 1)])
def test_anticipation_lanes_round_up_and_none_has_none(ant, scnn, pairs_per_cycle: float, lanes: int) -> None:
    data = ant.to_dict()
    unit = arch_from_dict({**data, "anticipation": {**data["anticipation"], "pairs_per_cycle": pairs_per_cycle}})
    assert anticipation_lanes(unit) == lanes and anticipation_lanes(scnn) == 0


def test_size_scale_is_a_power_law() -> None:
    assert size_scale(16.0, 8.0, 0.5) == pytest.approx(math.sqrt(2.0))
    assert size_scale(8.0, 8.0, 0.7) == 1.0 and size_scale(2.0, 8.0, 1.0) == 0.25


@pytest.mark.parametrize(("entries", "entry_bits"), [(1, 1), (2, 1), (32, 5), (33, 6), (64, 6)])
def test_bank_fifo_bits_hold_a_value_and_an_entry_index_per_queued_product(scnn, entries: int, entry_bits: int) -> None:
    data = scnn.to_dict()
    data["accumulators"].update(queue_depth=3, entries_per_bank=entries)
    queued = arch_from_dict(data)
    assert bank_fifo_entry_bits(queued) == entry_bits  # ⌈log2 entries⌉, at least one bit
    assert bank_fifo_bits(queued) == 3 * 32 * (24 + entry_bits)
    assert bank_fifo_bits(scnn) == 0  # queue_depth 0: no FIFO
