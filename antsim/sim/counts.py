"""Action counts of one (layer, phase): the boundary between timing and energy (docs/development.md habit 7).

Names follow ``antsim/energy/actions.py``. Assumptions:

* every issued product is multiplied and gets its output coordinate computed; it crosses the scatter
  crossbar only if valid when ``accumulators.drop_invalid`` is ``before_crossbar`` (the coordinate is
  computed beside the multiply, so an RCP's crossbar request is simply not raised — the default),
  else every issued product is routed and an RCP is dropped at the bank (``at_bank``);
* accumulator updates = valid products (halo products included); drains = partial outputs per PE;
* the anticipation unit screens every candidate pair (only when the design has one);
* reduction adds = Σ partial outputs − outputs (reducing m copies of one output takes m − 1 adds);
* the input buffer is written once with each stationary value (each pass loads its own part) and
  read ``stationary_reads`` times; the weight FIFO is written and read once per delivered streamed
  value; the output buffer is written with each PE's drained entries and read once per written-back
  output;
* DRAM bits are those the channel actually moved (re-streaming for passes included).
"""

from __future__ import annotations

import numpy as np

from antsim.dataflow.work import PhaseWork
from antsim.spec.arch import ArchSpec


def _total(array: np.ndarray) -> float:
    return float(array.sum(dtype="int64"))


def action_counts(arch: ArchSpec, work: PhaseWork, dram_read_bits: float,
                  dram_write_bits: float) -> dict[str, dict[str, float]]:
    """Component → action → count for one simulated (layer, phase).

    Args:
        arch: The design (does it have an anticipation unit?).
        work: The dataflow's per-chunk, per-PE work.
        dram_read_bits: Bits the DRAM channel read (stationary + streamed, re-streams included).
        dram_write_bits: Bits written back.

    Returns:
        Counts named as in ``antsim.energy.actions.ACTIONS``.
    """
    issued_products = _total(work.issued_products)
    partials = _total(work.partial_outputs)
    outputs = _total(work.output_values)
    valid = _total(work.valid_products)
    delivered = _total(work.streamed_delivered)
    has_unit = arch.screens_pairs
    routed = valid if arch.accumulators.drop_invalid == "before_crossbar" else issued_products
    computed = issued_products if arch.sparsity_support else 0.0
    scattered = routed if arch.sparsity_support else 0.0
    return {
        "multiplier": {"multiply": issued_products},
        "coordinate": {"compute": computed},
        "crossbar": {"route": scattered},
        "accumulator": {"update": valid, "drain": partials},
        "input_buffer": {"read": _total(work.stationary_reads), "write": _total(work.stationary_values)},
        "weight_fifo": {"read": delivered, "write": delivered},
        "output_buffer": {"read": outputs, "write": partials},
        "anticipation": {"screen": _total(work.candidate_pairs) if has_unit else 0.0},
        "halo": {"transfer": _total(work.halo_outputs)},
        "reduction": {"add": max(0.0, partials - outputs) if work.needs_reduction else 0.0},
        "dram": {"read_bits": float(round(dram_read_bits)), "write_bits": float(round(dram_write_bits))},
    }
