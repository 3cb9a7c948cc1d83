"""Action counts: the boundary between timing and energy (the Accelergy split).

The simulator emits ``component → action → count``; ``antsim.energy`` prices them with an energy
table (pJ per action) and adds leakage × time; it never sees cycles otherwise.

Component and action names every producer and every table must use:

| component      | actions                        | counted per                                             |
|----------------|--------------------------------|---------------------------------------------------------|
| multiplier     | multiply                       | non-zero product computed (issued, RCPs included)       |
| coordinate     | compute                        | output-coordinate computation (one per issued product)  |
| crossbar       | route                          | product sent through the scatter crossbar               |
| accumulator    | update, drain                  | read-modify-write of a partial sum; entry drained       |
| input_buffer   | read, write                    | stationary-operand word (value + index)                 |
| weight_fifo    | read, write                    | streamed-operand word (value + index)                   |
| output_buffer  | read, write                    | output word                                             |
| anticipation   | screen                         | candidate vector pair checked by the RCP unit           |
| halo           | transfer                       | output value exchanged between neighbouring PEs         |
| reduction      | add                            | cross-PE partial-sum addition (wgrad)                   |
| dram           | read_bits, write_bits          | bit moved to/from off-chip memory                       |
"""

from __future__ import annotations

from collections.abc import Mapping

ACTIONS: dict[str, tuple[str, ...]] = {
    "multiplier": ("multiply",),
    "coordinate": ("compute",),
    "crossbar": ("route",),
    "accumulator": ("update", "drain"),
    "input_buffer": ("read", "write"),
    "weight_fifo": ("read", "write"),
    "output_buffer": ("read", "write"),
    "anticipation": ("screen",),
    "halo": ("transfer",),
    "reduction": ("add",),
    "dram": ("read_bits", "write_bits"),
}

ActionCounts = Mapping[str, Mapping[str, float]]


def check_actions(counts: ActionCounts) -> None:
    """Raise ``ValueError`` on a component or action name outside ``ACTIONS`` or a negative count."""
    for component, actions in counts.items():
        if component not in ACTIONS:
            raise ValueError(f"unknown component {component!r}; known: {', '.join(ACTIONS)}")
        for action, count in actions.items():
            if action not in ACTIONS[component]:
                raise ValueError(f"unknown action {component}.{action}; known: {', '.join(ACTIONS[component])}")
            if count < 0:
                raise ValueError(f"negative count for {component}.{action}: {count}")
