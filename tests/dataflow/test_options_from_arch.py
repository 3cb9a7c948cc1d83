"""``antsim.dataflow.options.MappingOptions.from_arch`` on the shipped designs, against the rules the shipped
configs state: SCNN broadcasts the whole streamed operand (no fetch filter even when asked), ANT's row pointers
filter it, an ideal dense engine addresses only what its tile needs, SCNN's DCNN pairs every element."""

from __future__ import annotations

from pathlib import Path

import pytest

from antsim.dataflow.options import MappingOptions
from antsim.spec.arch import arch_from_dict, load_arch

CONFIGS = Path(__file__).resolve().parents[2] / "arch_configs"


@pytest.mark.parametrize(("name", "expected"), [
    ("scnn", MappingOptions("fast", "none", dense=False, ideal_dense=False, fetch_filter=False)),
    ("ant", MappingOptions("fast", "ant", dense=False, ideal_dense=False, fetch_filter=True)),
    ("ant_oracle", MappingOptions("fast", "oracle", dense=False, ideal_dense=False, fetch_filter=True)),
    ("dense", MappingOptions("fast", "none", dense=True, ideal_dense=True, fetch_filter=True)),
    ("dcnn", MappingOptions("fast", "none", dense=True, ideal_dense=False, fetch_filter=False)),
])
def test_the_shipped_designs_map_as_their_configs_say(name: str, expected: MappingOptions) -> None:
    assert MappingOptions.from_arch(load_arch(CONFIGS / f"{name}.yaml"), "fast") == expected


def test_fidelity_and_streamed_order_pass_through_and_policy_none_never_filters() -> None:
    data = load_arch(CONFIGS / "scnn.yaml").to_dict()
    asked = arch_from_dict({**data, "anticipation": {**data["anticipation"], "fetch_filter": True},
                            "mapping": {**data["mapping"], "streamed_order": "spatial_inner"}})
    options = MappingOptions.from_arch(asked, "exact")
    assert options.fidelity == "exact" and not options.fetch_filter and not options.channel_inner
    assert MappingOptions() == MappingOptions.from_arch(load_arch(CONFIGS / "scnn.yaml"), "fast")
