"""Action counts → joules: per-action energy scaled to the arch's sizes, plus leakage × time.

The scaling laws (documented per entry in tables/README.md):

- multiplier: quadratic in operand width;
- crossbar: per routed word, linear in the number of outputs (accumulator banks) and in word width
  (the Aladdin crossbar rule, docs/energy_area_reference.md §1d);
- storage (buffers, FIFO, accumulator banks): per bit ∝ (size / reference size)^exponent, × word bits;
- everything else: per action, per bit where the entry says so.

Pure functions of (arch, table, counts, time); nothing here sees cycles.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from antsim.energy import geometry as geo
from antsim.energy.actions import ActionCounts, check_actions
from antsim.energy.tables import EnergyTable, load_table
from antsim.spec.arch import ArchSpec

PJ = 1e-12
UW = 1e-6


def _storage_pj_per_bit(table: EnergyTable, component: str, action: str, size_kb: float, ref_kb: float) -> float:
    scale = geo.size_scale(size_kb, ref_kb, table.parameters.storage_size_exponent)
    return table.action_pj(component, action) * scale


def _datapath_pj(arch: ArchSpec, table: EnergyTable) -> dict[str, dict[str, float]]:
    """pJ per action of the multiplier, coordinate, crossbar and accumulator components."""
    par, acc = table.parameters, arch.accumulators
    sparse = arch.sparsity_support
    bank_kb = geo.accumulator_bank_kb(arch)
    rmw = _storage_pj_per_bit(table, "accumulator", "update", bank_kb, par.accumulator_ref_kb)
    drain = _storage_pj_per_bit(table, "accumulator", "drain", bank_kb, par.accumulator_ref_kb)
    route = (table.action_pj("crossbar", "route") * (acc.banks / par.crossbar_outputs)
             * (acc.value_bits / par.crossbar_bits))
    return {
        "multiplier": {"multiply": table.action_pj("multiplier", "multiply")
                       * (arch.pe_array.multiplier_bits / par.multiplier_bits) ** 2},
        # A dense design has no coordinate units and no scatter crossbar: products go to fixed adders.
        "coordinate": {"compute": table.action_pj("coordinate", "compute") if sparse else 0.0},
        "crossbar": {"route": route if sparse else 0.0},
        "accumulator": {"update": (rmw + par.accumulator_add_pj_per_bit) * acc.value_bits + _bank_fifo_pj(arch, table),
                        "drain": drain * acc.value_bits},
    }


def _bank_fifo_pj(arch: ArchSpec, table: EnergyTable) -> float:
    """pJ a product spends in its bank's FIFO (``accumulators.queue_depth`` > 0): one write and one read of
    value + entry bits, at the weight FIFO's per-bit cost scaled to the FIFO's size (both are small
    register-file FIFOs). [assumption] Every product passes through the FIFO (no bypass when the bank is
    idle), so this is the upper end of what FIFOs cost."""
    if arch.accumulators.queue_depth == 0:
        return 0.0
    bits = arch.accumulators.value_bits + geo.bank_fifo_entry_bits(arch)
    size, ref = geo.bank_fifo_kb(arch), table.parameters.weight_fifo_ref_kb
    return bits * sum(_storage_pj_per_bit(table, "weight_fifo", action, size, ref) for action in ("read", "write"))


def _storage_pj(arch: ArchSpec, table: EnergyTable) -> dict[str, dict[str, float]]:
    """pJ per word read/written in the input buffer, weight FIFO and output buffer."""
    par, bits = table.parameters, geo.word_bits(arch)
    sizes = {
        "input_buffer": (arch.buffers.input_kb, par.input_buffer_ref_kb),
        "weight_fifo": (geo.weight_fifo_kb(arch), par.weight_fifo_ref_kb),
        "output_buffer": (arch.buffers.output_kb, par.output_buffer_ref_kb),
    }
    return {
        component: {action: _storage_pj_per_bit(table, component, action, size, ref) * bits
                    for action in ("read", "write")}
        for component, (size, ref) in sizes.items()
    }


def energy_per_action_pj(arch: ArchSpec, table: EnergyTable | None = None) -> dict[str, dict[str, float]]:
    """Energy of one action of every component for this arch's sizes (pJ).

    Args:
        arch: The design; its ``technology.energy_table`` is used unless ``table`` is given.
        table: An already loaded table (overrides the arch's).

    Raises:
        SpecError: the table cannot be loaded, or it has no entry for ``arch.dram.technology``.
    """
    table = table or load_table(arch.technology.energy_table)
    value_bits = arch.accumulators.value_bits
    dram = table.dram_pj(arch.dram.technology)
    return {
        **_datapath_pj(arch, table),
        **_storage_pj(arch, table),
        "anticipation": {"screen": table.action_pj("anticipation", "screen")},
        "halo": {"transfer": table.action_pj("halo", "transfer") * value_bits},
        "reduction": {"add": table.action_pj("reduction", "add") * value_bits},
        "dram": {"read_bits": dram, "write_bits": dram},
    }


def energy_per_action(arch: ArchSpec, table: EnergyTable | None = None) -> dict[str, dict[str, float]]:
    """Energy of one action of every component for this arch's sizes (J); see ``energy_per_action_pj``."""
    per_action = energy_per_action_pj(arch, table)
    return {c: {a: pj * PJ for a, pj in actions.items()} for c, actions in per_action.items()}


def leakage_power(arch: ArchSpec, table: EnergyTable | None = None) -> dict[str, float]:
    """Static power of the whole chip, per component (W).

    Logic (multipliers, coordinate units, crossbar ports, accumulator adders, comparators) leaks
    ``leakage.logic_fraction_per_cycle`` of one action's dynamic energy every cycle; register-file and
    flip-flop storage leaks ``register_uw_per_bit``; SRAM buffers leak ``sram_uw_per_kb``.
    """
    table = table or load_table(arch.technology.energy_table)
    pj, leak, par = energy_per_action_pj(arch, table), table.leakage, table.parameters
    clock_hz = arch.technology.clock_ghz * 1e9

    def logic_w(energy_pj: float, instances: float) -> float:
        return instances * leak.logic_fraction_per_cycle * energy_pj * PJ * clock_hz

    n_mult = geo.crossbar_inputs(arch)
    lanes = geo.anticipation_lanes(arch)
    bound_bits = (lanes * par.anticipation_lane_bounds + (par.anticipation_shared_bounds if lanes else 0)) \
        * par.coordinate_bits
    add_pj = par.accumulator_add_pj_per_bit * arch.accumulators.value_bits
    per_pe = {
        "multiplier": logic_w(pj["multiplier"]["multiply"], n_mult),
        "coordinate": logic_w(pj["coordinate"]["compute"], n_mult),
        "crossbar": logic_w(pj["crossbar"]["route"], n_mult),
        "accumulator": logic_w(add_pj, arch.accumulators.banks)
        + (geo.accumulator_bits(arch) + geo.bank_fifo_bits(arch)) * leak.register_uw_per_bit * UW,
        "input_buffer": arch.buffers.input_kb * leak.sram_uw_per_kb * UW,
        "weight_fifo": geo.weight_fifo_bits(arch) * leak.register_uw_per_bit * UW,
        "output_buffer": arch.buffers.output_kb * leak.sram_uw_per_kb * UW,
        "anticipation": logic_w(pj["anticipation"]["screen"], lanes) + bound_bits * leak.register_uw_per_bit * UW,
    }
    return {c: w * arch.pe_array.n_pes for c, w in per_pe.items()}


@dataclass(frozen=True)
class PriceList:
    """A design's prices, worked out once: joules per action of every component and the chip's static power.

    Attributes:
        joules_per_action: component → action → J (``energy_per_action``).
        leakage_w: Static power of the whole chip (W; the sum of ``leakage_power``).
    """

    joules_per_action: Mapping[str, Mapping[str, float]]
    leakage_w: float

    def price(self, actions: ActionCounts, time_s: float) -> dict[str, float]:
        """Joules per component that has counts, plus ``"leakage"`` = static power × ``time_s`` (see ``price``)."""
        check_actions(actions)
        if not time_s >= 0:
            raise ValueError(f"time_s must be >= 0; got {time_s!r}")
        joules = {component: _sum_counts(counts, self.joules_per_action[component])
                  for component, counts in actions.items()}
        joules["leakage"] = self.leakage_w * time_s
        return joules


def price_list(arch: ArchSpec, table: EnergyTable | None = None) -> PriceList:
    """``arch``'s ``PriceList`` from ``table`` (default: its ``technology.energy_table``, loaded now).

    Raises:
        SpecError: the table cannot be loaded or lacks the arch's DRAM technology.
    """
    table = table or load_table(arch.technology.energy_table)
    return PriceList(energy_per_action(arch, table), sum(leakage_power(arch, table).values()))


def price(actions: ActionCounts, arch: ArchSpec, time_s: float, table: EnergyTable | None = None) -> dict[str, float]:
    """Energy of a run: counts × energy per action, per component, plus ``"leakage"`` = static power × time.

    Args:
        actions: component → action → count (names from ``antsim.energy.actions.ACTIONS``).
        arch: The design whose sizes and energy table price the actions.
        time_s: Duration of the run (s); leakage is charged for all of it.
        table: An already loaded table (overrides ``arch.technology.energy_table``).

    Returns:
        Joules per component that has counts, plus ``"leakage"``.

    Raises:
        ValueError: an unknown component or action, a negative count, or a negative ``time_s``.
        SpecError: the table cannot be loaded or lacks the arch's DRAM technology.
    """
    check_actions(actions)
    if not time_s >= 0:
        raise ValueError(f"time_s must be >= 0; got {time_s!r}")
    return price_list(arch, table).price(actions, time_s)


def _sum_counts(counts: Mapping[str, float], joules_per_action: Mapping[str, float]) -> float:
    return float(sum(count * joules_per_action[action] for action, count in counts.items()))
