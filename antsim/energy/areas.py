"""Per-component chip area from the arch's sizes and an area table (unit areas × instance counts).

A dense design (``sparsity_support: false``) has no scatter crossbar, no coordinate units and no index
bits in its weight FIFO; a design without anticipation (``policy: none``) has no anticipation unit.
"""

from __future__ import annotations

from antsim.energy import geometry as geo
from antsim.energy.tables import EnergyTable, load_table
from antsim.spec.arch import ArchSpec

UM2_PER_MM2 = 1e6

# Keys of ``area()``, in datapath order; the first eight match antsim.energy.actions.ACTIONS.
AREA_COMPONENTS = ("multiplier", "coordinate", "crossbar", "accumulator", "input_buffer", "weight_fifo",
                   "output_buffer", "anticipation", "other")


def anticipation_um2(arch: ArchSpec, table: EnergyTable) -> float:
    """Area of one PE's anticipation unit (µm²): comparators and bound registers of its screening lanes.

    Per lane: ``anticipation_comparators_per_lane`` comparators and ``anticipation_lane_bounds`` registers,
    each ``coordinate_bits`` wide; the lanes share ``anticipation_shared_bounds`` registers.
    """
    lanes = geo.anticipation_lanes(arch)
    if lanes == 0:
        return 0.0
    par, area = table.parameters, table.area
    comparator = par.coordinate_bits * area.comparator_um2_per_bit
    register = par.coordinate_bits * area.register_um2_per_bit
    lane = par.anticipation_comparators_per_lane * comparator + par.anticipation_lane_bounds * register
    return lanes * lane + par.anticipation_shared_bounds * register


def _datapath_um2(arch: ArchSpec, table: EnergyTable) -> dict[str, float]:
    par, area, acc = table.parameters, table.area, arch.accumulators
    inputs = geo.crossbar_inputs(arch)
    sparse = arch.sparsity_support
    crossbar = inputs * area.crossbar_um2_per_input * (acc.banks / par.crossbar_outputs) \
        * (acc.value_bits / par.crossbar_bits)
    coordinate = inputs * par.coordinate_adders * par.coordinate_bits * area.adder_um2_per_bit
    return {
        "multiplier": inputs * area.multiplier_um2 * (arch.pe_array.multiplier_bits / par.multiplier_bits) ** 2,
        "coordinate": coordinate if sparse else 0.0,
        "crossbar": crossbar if sparse else 0.0,
        "accumulator": (geo.accumulator_bits(arch) + geo.bank_fifo_bits(arch)) * area.register_file_um2_per_bit
        + acc.banks * acc.value_bits * area.adder_um2_per_bit,
    }


def pe_area_um2(arch: ArchSpec, table: EnergyTable | None = None) -> dict[str, float]:
    """Area of one PE per component (µm²), ``other`` included.

    Args:
        arch: The design; its ``technology.area_table`` is used unless ``table`` is given.
        table: An already loaded table (overrides the arch's).
    """
    table = table or load_table(arch.technology.area_table)
    area = table.area
    parts = {
        **_datapath_um2(arch, table),
        "input_buffer": arch.buffers.input_kb * area.sram_mm2_per_kb * UM2_PER_MM2,
        "weight_fifo": geo.weight_fifo_bits(arch) * area.register_file_um2_per_bit,
        "output_buffer": arch.buffers.output_kb * area.sram_mm2_per_kb * UM2_PER_MM2,
        "anticipation": anticipation_um2(arch, table),
    }
    parts["other"] = area.other_fraction * sum(parts.values())
    return {c: parts[c] for c in AREA_COMPONENTS}


def area(arch: ArchSpec, table: EnergyTable | None = None) -> dict[str, float]:
    """Area of the whole chip (all PEs) per component (mm²); keys are ``AREA_COMPONENTS``.

    Raises:
        SpecError: the arch's area table cannot be loaded.
    """
    n_pes = arch.pe_array.n_pes
    return {c: um2 * n_pes / UM2_PER_MM2 for c, um2 in pe_area_um2(arch, table).items()}


def area_total(arch: ArchSpec, table: EnergyTable | None = None) -> float:
    """Area of the whole chip (mm²)."""
    return sum(area(arch, table).values())
