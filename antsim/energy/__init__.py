"""energy stage: action counts × per-technology energy table + leakage × time, and per-component area.

The Accelergy split: the simulator emits ``component → action → count`` (names in
``antsim.energy.actions``); this package prices them with a YAML reference table
(antsim/energy/tables/NAME.yaml, format in tables/README.md) and never sees cycles.
"""

from __future__ import annotations

from antsim.energy.actions import ACTIONS, ActionCounts, check_actions
from antsim.energy.areas import AREA_COMPONENTS, area, area_total, pe_area_um2
from antsim.energy.pricing import PriceList, energy_per_action, energy_per_action_pj, leakage_power, price, price_list
from antsim.energy.tables import EnergyTable, builtin_tables, load_table

__all__ = [
    "ACTIONS",
    "AREA_COMPONENTS",
    "ActionCounts",
    "EnergyTable",
    "PriceList",
    "area",
    "area_total",
    "builtin_tables",
    "check_actions",
    "energy_per_action",
    "energy_per_action_pj",
    "leakage_power",
    "load_table",
    "pe_area_um2",
    "price",
    "price_list",
]
