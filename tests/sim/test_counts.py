"""``antsim.sim.counts.action_counts`` against the sums its rules name, written out here from the work arrays:
products multiplied, RCPs dropped before the crossbar (or routed to the bank), one screen per candidate pair,
m − 1 adds to reduce m partial sums, DRAM bits as moved."""

from __future__ import annotations

import pytest

from antsim.energy.actions import ACTIONS, check_actions
from antsim.sim.counts import action_counts


def test_counts_are_the_sums_of_the_work(make_work, make_arch, rng) -> None:
    issued = rng.integers(0, 50, size=(3, 4))
    work = make_work(3, 4, issued, candidates=issued + 7, halo=3, partial=20, outputs=25, stationary=11,
                     needs_reduction=True)
    counts = action_counts(make_arch(pe_array={"rows": 2, "cols": 2}, anticipation={"policy": "ant"}), work,
                           dram_read_bits=1000.4, dram_write_bits=99.6)
    check_actions(counts)
    assert set(counts) == set(ACTIONS)
    total = int(issued.sum())
    assert counts["multiplier"] == {"multiply": 16 * total}  # build_work: 16 products per pair, 12 valid
    assert counts["coordinate"] == {"compute": 16 * total}
    assert counts["crossbar"] == {"route": 12 * total}
    assert counts["accumulator"] == {"update": 12 * total, "drain": 3 * 4 * 20}
    assert counts["input_buffer"] == {"read": 4 * total, "write": 4 * 11}
    assert counts["weight_fifo"] == {"read": 4 * total, "write": 4 * total}
    assert counts["output_buffer"] == {"read": 3 * 25, "write": 3 * 4 * 20}
    assert counts["anticipation"] == {"screen": total + 3 * 4 * 7}
    assert counts["halo"] == {"transfer": 3 * 4 * 3}
    assert counts["reduction"] == {"add": 3 * 4 * 20 - 3 * 25}
    assert counts["dram"] == {"read_bits": 1000.0, "write_bits": 100.0}


@pytest.mark.parametrize(("sections", "route", "compute", "screen"), [
    ({"accumulators": {"drop_invalid": "at_bank"}, "anticipation": {"policy": "ant"}}, 16, 16, 1),
    ({"anticipation": {"policy": "none"}}, 12, 16, 0),
    ({"sparsity_support": False, "compression": {"format": "dense", "index_bits": 0}}, 0, 0, 0),
])
def test_design_choices_change_only_their_counts(make_work, make_arch, sections: dict, route: int, compute: int,
                                                 screen: int) -> None:
    work = make_work(2, 1, 10, partial=5, outputs=5)
    counts = action_counts(make_arch(pe_array={"rows": 1, "cols": 1}, **sections), work, 0.0, 0.0)
    assert counts["crossbar"]["route"] == route * 20 and counts["coordinate"]["compute"] == compute * 20
    assert counts["anticipation"]["screen"] == screen * 20 and counts["multiplier"]["multiply"] == 16 * 20
    assert counts["reduction"]["add"] == 0  # no cross-PE reduction outside wgrad
