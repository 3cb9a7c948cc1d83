"""``antsim.energy.actions``: the names are the table its docstring documents (the contract every producer and
every energy table uses), and ``check_actions`` refuses names outside it and negative counts."""

from __future__ import annotations

import re

import pytest

from antsim.energy import actions
from antsim.energy.actions import ACTIONS, check_actions


def _documented() -> dict[str, tuple[str, ...]]:
    rows = re.findall(r"^\| (\w+)\s+\| ([\w, ]+?)\s+\|", actions.__doc__ or "", flags=re.MULTILINE)
    return {component: tuple(a.strip() for a in names.split(",")) for component, names in rows
            if component != "component"}


def test_actions_are_the_documented_table() -> None:
    assert _documented() == ACTIONS and len(ACTIONS) == 11


def test_every_documented_action_with_any_count_passes() -> None:
    check_actions({component: {action: 0.0 for action in names} for component, names in ACTIONS.items()})
    check_actions({"dram": {"read_bits": 1e12}, "multiplier": {}})


@pytest.mark.parametrize(("counts", "message"), [
    ({"systolic": {"mac": 1.0}}, "unknown component 'systolic'"),
    ({"multiplier": {"divide": 1.0}}, "unknown action multiplier.divide; known: multiply"),
    ({"accumulator": {"update": -1.0}}, "negative count for accumulator.update: -1.0"),
])
def test_unknown_names_and_negative_counts_are_refused(counts: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        check_actions(counts)
