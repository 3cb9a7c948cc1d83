"""``antsim.sim.params.SimParams``: the documented defaults, and widths or depths no hardware has are refused."""

from __future__ import annotations

import dataclasses

import pytest

from antsim.sim import SimParams


def test_defaults_are_the_documented_assumptions() -> None:
    # 2 values per cycle on a 48-bit link of 24-bit partial sums; double buffering; one chunk of lookahead.
    assert SimParams() == SimParams(halo_values_per_cycle=2.0, reduction_values_per_cycle=2.0, staging_chunks=2,
                                    anticipation_lookahead=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        SimParams().staging_chunks = 3  # type: ignore[misc]


@pytest.mark.parametrize("fields", [{"halo_values_per_cycle": 0.0}, {"reduction_values_per_cycle": -1.0},
                                    {"staging_chunks": 0}, {"anticipation_lookahead": -1}])
def test_impossible_values_are_refused(fields: dict) -> None:
    with pytest.raises(ValueError):
        SimParams(**fields)


def test_the_edges_are_allowed() -> None:
    edge = SimParams(halo_values_per_cycle=0.5, staging_chunks=1, anticipation_lookahead=0)
    assert (edge.staging_chunks, edge.anticipation_lookahead) == (1, 0)
