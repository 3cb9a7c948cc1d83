"""The sweep's metric vocabulary: one table of every metric an objective or constraint may name.

Each ``Metric`` carries the name (the sweep spec's key, the export's ``objective.<name>`` /
``metric.<name>`` column), the stored unit, the direction in which it improves, the words of an axis
label and how an axis scales it for a reader. The sweep spec validates names against ``METRICS``, the
export names its objective columns with ``objective_column`` (the report reads them back by the same
prefix), and the figures and the report label axes with ``readable_axis``. Names an earlier report
used are read through ``LEGACY_NAMES``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

Direction = Literal["minimize", "maximize"]  # Optuna's spelling of an objective's direction
#: How an axis shows a metric: ``si`` with the SI prefix that puts its largest value between 1 and 1000
#: (``ms``, ``µJ``); ``count`` over a power of ten (``cycles (×10^6)``); ``plain`` as stored (mm², ratios).
Scale = Literal["si", "count", "plain"]


@dataclass(frozen=True)
class Metric:
    """One metric: ``name`` in ``unit`` ('' for a count or a ratio), better toward ``direction``."""

    name: str
    unit: str
    direction: Direction
    label: str  # the words of an axis label, unit added by readable_axis
    scale: Scale
    description: str  # what the sweep spec documents for the name


# What antsim's evaluators report (antsim.dse.evaluators: simulator network_metrics, analytic) and what
# antsim.dse.objective.complete_metrics derives from them. Every one is a cost, so lower is better; a spec
# may still ask to maximise any of them (its objectives' directions win over these).
_TABLE = (
    Metric("time_s", "s", "minimize", "time per step", "si", "training-step time of the workload (s)"),
    Metric("energy_j", "J", "minimize", "energy per step", "si", "energy of the workload (J)"),
    Metric("area_mm2", "mm²", "minimize", "area", "plain", "design area (mm²)"),
    Metric("edp", "J·s", "minimize", "energy-delay product", "si", "energy-delay product (J·s)"),
    Metric("power_w", "W", "minimize", "power", "si", "average power, energy / time (W)"),
    Metric("cycles", "", "minimize", "cycles", "count", "accelerator cycles"),
    Metric("rcp_fraction", "", "minimize", "RCP fraction", "plain",
           "redundant Cartesian products the design multiplies / products it multiplies"),
    Metric("stationary_passes", "", "minimize", "stationary passes", "plain",
           "most passes any (layer, phase) needs for its stationary operand to fit the input buffer (buffer"
           " feasibility: constrain to max 1)"),
    Metric("accumulator_restreams", "", "minimize", "accumulator re-streams", "plain",
           "most extra streamings any (layer, phase) needs on accumulator overflow"),
)
METRICS: dict[str, Metric] = {m.name: m for m in _TABLE}
#: Names the report's reader once used for a metric (its ``edp_js`` column), mapped to today's name.
LEGACY_NAMES: dict[str, str] = {"edp_js": "edp"}

OBJECTIVE_PREFIX = "objective."  # trials.csv / pareto.csv column of an objective: objective.<name>

# SI prefixes from femto (an energy-delay product of one small layer is ~1e-13 J·s) to tera.
_SI_PREFIXES = ((1e-15, "f"), (1e-12, "p"), (1e-9, "n"), (1e-6, "µ"), (1e-3, "m"), (1.0, ""), (1e3, "k"),
                (1e6, "M"), (1e9, "G"), (1e12, "T"))
LOG_SPAN = 100.0  # a log axis once the largest positive value is more than 100x the smallest (two decades)


def canonical_name(name: str) -> str:
    """Today's name of a metric (``edp_js`` → ``edp``); other names unchanged."""
    return LEGACY_NAMES.get(name, name)


def metric_label(name: str) -> str:
    """The words of metric ``name`` (``time per step``); a name outside the table as it is."""
    metric = METRICS.get(canonical_name(name))
    return metric.label if metric is not None else name


def objective_column(name: str) -> str:
    return f"{OBJECTIVE_PREFIX}{name}"


def scaled_unit(top: float, unit: str, scale: Scale) -> tuple[float, str]:
    """Divisor and unit text that put ``top`` (the largest magnitude shown) between 1 and 1000."""
    if scale == "plain" or not np.isfinite(top) or top <= 0:
        return 1.0, unit
    if scale == "si":
        divisor, prefix = next(((f, p) for f, p in reversed(_SI_PREFIXES) if top >= f), _SI_PREFIXES[0])
        return divisor, f"{prefix}{unit}"
    exponent = int(np.floor(np.log10(top) / 3) * 3)
    return 10.0 ** exponent, (f"×10^{exponent} {unit}".rstrip() if exponent else unit)


class Axis(NamedTuple):
    """Divide the stored values by ``divisor`` to plot them under ``label``; ``log``: a log scale."""

    divisor: float
    label: str
    log: bool


def readable_axis(name: str, values: np.ndarray) -> Axis:
    """The axis of metric ``name`` over ``values`` (NaN ignored): its label and unit from ``METRICS``
    scaled for a reader, on a log scale where the positive values span more than two decades; a name
    outside the table (an Optuna ``values_0`` column) keeps its name and its values."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    metric = METRICS.get(canonical_name(name))
    log = bool(finite.size >= 2 and np.all(finite > 0) and finite.max() > LOG_SPAN * finite.min())
    suffix = ", log scale" if log else ""
    if metric is None:
        return Axis(1.0, f"{name}{suffix}", log)
    top = float(np.abs(finite).max()) if finite.size else 0.0
    divisor, unit = scaled_unit(top, metric.unit, metric.scale)
    words = f"{metric.label} ({unit})" if unit else metric.label
    return Axis(divisor, f"{words}{suffix}", log)
