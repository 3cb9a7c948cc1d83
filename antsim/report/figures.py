"""Thin matplotlib renderers of the report infos (``antsim.report.data``, ``antsim.report.sweep``).

matplotlib is imported lazily, inside the renderers, and only through ``matplotlib.figure.Figure``
(Agg canvas, no pyplot state), so the simulator and the other commands never load it.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from antsim.report.data import CycleInfo, EnergyBreakdownInfo, ProductInfo, RatioInfo
from antsim.report.sweep import OBJECTIVES, DesignMark, SweepInfo

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

_RATIO_LABELS = {"speedup": "speedup", "energy_reduction": "energy reduction"}
# Colours that stay distinct in print and for the common colour-vision deficiencies (Okabe–Ito).
_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
            "#999999", "#882255", "#44AA99", "#117733")


def design_colors(designs: Sequence[str]) -> dict[str, str]:
    """One colour per design, stable across every figure of a report."""
    return {d: _PALETTE[i % len(_PALETTE)] for i, d in enumerate(designs)}


def _figure(width: float = 10.0, height: float = 4.6, ncols: int = 1, **kwargs: Any) -> tuple[Figure, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    axes = fig.subplots(1, ncols, **kwargs)
    return fig, axes


def figure_bytes(fig: Figure, fmt: str) -> bytes:
    """PNG or SVG bytes without timestamps or version strings (same data → same bytes)."""
    import matplotlib

    buffer = io.BytesIO()
    metadata = {"Software": None} if fmt == "png" else {"Date": None, "Creator": None}
    with matplotlib.rc_context({"svg.hashsalt": "antsim", "svg.fonttype": "path"}):
        fig.savefig(buffer, format=fmt, metadata=metadata, dpi=110)
    return buffer.getvalue()


def _scale(values: np.ndarray, unit: str) -> tuple[float, str]:
    """Divisor and label so the largest value reads between 1 and 1000 (``mJ``, ``×10⁹ products``)."""
    top = float(np.nanmax(values)) if values.size and np.isfinite(np.nanmax(values)) else 1.0
    prefixes = ((1e-12, "p"), (1e-9, "n"), (1e-6, "µ"), (1e-3, "m"), (1.0, ""), (1e3, "k"), (1e6, "M"),
                (1e9, "G"), (1e12, "T"))
    if unit in ("J", "s"):
        scale, prefix = next(((s, p) for s, p in reversed(prefixes) if top >= s), prefixes[0])
        return scale, f"{prefix}{unit}"
    exponent = int(np.floor(np.log10(top) / 3) * 3) if top > 0 else 0
    return 10.0 ** exponent, (f"×10^{exponent} {unit}" if exponent else unit)


def render_ratio(info: RatioInfo, colors: dict[str, str]) -> Figure:
    """Grouped bars: one group per layer, then the whole network and the geomean over layers (log y)."""
    groups = [*info.layers, "network", "geomean\n(layers)"]
    data = np.concatenate([info.per_layer, info.network[:, None], info.geomean[:, None]], axis=1)
    # Wide enough for ~0.1 in per bar, but never wider than a laptop page at 110 dpi.
    fig, ax = _figure(width=min(14.0, max(10.0, 3.0 + 0.09 * len(groups) * max(1, len(info.designs)))))
    n = max(1, len(info.designs))
    width = 0.8 / n
    x = np.arange(len(groups), dtype=float)
    x[-2:] += 0.6  # a gap sets the network-level groups apart from the per-layer ones
    for d, design in enumerate(info.designs):
        ax.bar(x + (d - (n - 1) / 2) * width, data[d], width, label=design, color=colors.get(design))
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    _times_formatter(ax)
    ax.set_xticks(x, groups, rotation=60, ha="right", fontsize=8)
    label = _RATIO_LABELS[info.metric]
    ax.set_ylabel(f"{label} over {info.baseline} (×, log scale)")
    ax.set_xlabel("layer (three training phases summed)")
    ax.set_title(f"{label.capitalize()} over {info.baseline} per layer, whole network and geomean")
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5), title="design", title_fontsize=8)
    return fig


def _times_formatter(ax: Axes) -> None:
    """Log-axis ticks written as plain ratios (``0.5×``, ``2×``) instead of powers of ten."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}×"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda _v, _pos: ""))


def render_energy_breakdown(info: EnergyBreakdownInfo) -> Figure:
    """Stacked bars per design: absolute energy per component (left) and the same as shares (right)."""
    fig, (ax_abs, ax_share) = _figure(ncols=2)
    scale, unit = _scale(info.energy_j.sum(axis=1), "J")
    shares = info.energy_j / np.where(info.energy_j.sum(axis=1, keepdims=True) > 0,
                                      info.energy_j.sum(axis=1, keepdims=True), 1.0) * 100
    x = np.arange(len(info.designs))
    cmap = _component_colors(len(info.components))
    for ax, values in ((ax_abs, info.energy_j / scale), (ax_share, shares)):
        bottom = np.zeros(len(info.designs))
        for k, component in enumerate(info.components):
            ax.bar(x, values[:, k], 0.6, bottom=bottom, label=component, color=cmap[k])
            bottom += values[:, k]
        ax.set_xticks(x, info.designs)
        ax.set_xlabel("design")
    totals = info.energy_j.sum(axis=1)
    spread = totals.max() / totals[totals > 0].min() if np.any(totals > 0) else 1.0
    if spread > 30:  # GPUs beside accelerators span decades: the small designs stay visible on a log axis
        ax_abs.set_yscale("log")
        unit += ", log scale"
    ax_abs.set_ylabel(f"energy per training step ({unit})")
    ax_share.set_ylabel("share of design energy (%)")
    ax_abs.set_title("Energy by component")
    ax_share.set_title("Energy shares")
    ax_share.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig


def _component_colors(n: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab20"]
    return [cmap(i % 20) for i in range(n)]


def _stacked_groups(ax: Axes, stacks: Sequence[tuple[str, np.ndarray, Any, str | None]], designs: Sequence[str],
                    phases: Sequence[str]) -> None:
    """Bars per (phase, design) stacked over ``stacks`` [(label, values[d, p], colour, hatch)]."""
    n = len(designs)
    positions = np.array([[p * (n + 1) + d for p in range(len(phases))] for d in range(n)], dtype=float)
    bottom = np.zeros((n, len(phases)))
    for label, values, color, hatch in stacks:
        ax.bar(positions.ravel(), values.ravel(), 0.85, bottom=bottom.ravel(), label=label, color=color,
               hatch=hatch, edgecolor="white" if hatch is None else "#444444", linewidth=0.4)
        bottom += values
    ax.set_xticks(positions.T.ravel(), [design for _phase in phases for design in designs], fontsize=7,
                  rotation=90 if n > 3 else 0)
    # Phase names label the groups from above, so the design names below stay one per bar.
    top = ax.secondary_xaxis("top")
    top.set_xticks(positions.mean(axis=0), list(phases), fontsize=9)
    top.tick_params(length=0)


def render_products(info: ProductInfo) -> Figure:
    """Product composition per phase and design: valid / RCP skipped / RCP issued (absolute and share)."""
    fig, (ax_abs, ax_share) = _figure(width=11.0, height=4.8, ncols=2)
    scale, unit = _scale(info.total.astype(float), "products")
    safe_total = np.where(info.total > 0, info.total, 1).astype(float)
    dense = np.array(info.dense or (False,) * len(info.designs), bool)[:, None]
    parts = [("valid", info.valid, "#009E73", None), ("RCP skipped (anticipated)", info.rcp_skipped, "#BBBBBB", "//"),
             ("RCP issued", np.where(dense, 0, info.rcp_issued), "#D55E00", None)]
    if dense.any():  # a dense design multiplies every zero: its extra products are not RCPs
        parts.append(("zero-operand products (dense design)", np.where(dense, info.rcp_issued, 0), "#CC79A7", ".."))
    parts = [p for p in parts if p[1].any() or p[0] == "valid"]
    _stacked_groups(ax_abs, [(n, v / scale, c, h) for n, v, c, h in parts], info.designs, info.phases)
    _stacked_groups(ax_share, [(n, v / safe_total * 100, c, h) for n, v, c, h in parts], info.designs, info.phases)
    # designs differ by orders of magnitude (a dense design forms every product): counts on a log axis
    ax_abs.set_yscale("log")
    _label_absolute_and_share(ax_abs, ax_share,
                              (f"Cartesian products per step ({unit}, log scale)", "share of products formed (%)"),
                              ("Products per phase", "Product composition per phase"))
    return fig


def render_cycles(info: CycleInfo) -> Figure:
    """Cycle breakdown per phase and design (absolute and share)."""
    fig, (ax_abs, ax_share) = _figure(width=11.0, height=4.8, ncols=2)
    heights = info.cycles.sum(axis=2)
    scale, unit = _scale(heights, "cycles")
    safe = np.where(heights > 0, heights, 1.0)
    colors = _component_colors(len(info.categories))
    stacks_abs = [(c, info.cycles[:, :, k] / scale, colors[k], None) for k, c in enumerate(info.categories)]
    stacks_share = [(c, info.cycles[:, :, k] / safe * 100, colors[k], None) for k, c in enumerate(info.categories)]
    _stacked_groups(ax_abs, stacks_abs, info.designs, info.phases)
    _stacked_groups(ax_share, stacks_share, info.designs, info.phases)
    _label_absolute_and_share(ax_abs, ax_share, (f"cycles per step ({unit})", "share of cycles (%)"),
                              ("Cycle breakdown per phase", "Cycle shares per phase"))
    return fig


def _label_absolute_and_share(ax_abs: Any, ax_share: Any, ylabels: tuple[str, str], titles: tuple[str, str]) -> None:
    """Labels of the two-panel (absolute, share) stacked figures grouped by phase; legend beside the share panel."""
    for ax, ylabel, title in zip((ax_abs, ax_share), ylabels, titles, strict=True):
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.set_xlabel("design, grouped by phase")
    ax_share.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))


_LOG_SPAN = 100.0  # a log axis once the largest positive value is more than 100x the smallest (two decades)
_MARKERS = ("*", "P", "D", "X", "^", "v", "s", "p")


def _objective_axis(info: SweepInfo, index: int, marks: Sequence[DesignMark] = ()) -> tuple[float, str, bool]:
    """Divisor, axis label and log flag of one objective: SI prefix for seconds and joules
    (``time (µs)``), a log scale when the trials and the marked designs span more than two decades."""
    name = info.objectives[index]
    label = OBJECTIVES.get(name, name)
    values = np.concatenate([info.values[:, index], [m.values[index] for m in marks]])
    finite = values[np.isfinite(values)]
    log = bool(finite.size >= 2 and np.all(finite > 0) and finite.max() > _LOG_SPAN * finite.min())
    unit = {"time_s": "s", "energy_j": "J"}.get(name)
    scale = 1.0
    if unit is not None:
        scale, prefixed = _scale(np.abs(finite), unit)
        label = label.replace(f"({unit})", f"({prefixed})")
    return scale, label + (", log scale" if log else ""), log


def _scatter_pair(ax: Axes, info: SweepInfo, i: int, j: int, front_line: bool, color_third: bool = False,
                  marks: Sequence[DesignMark] = ()) -> Any:
    """Trials on objectives ``i`` (x) and ``j`` (y); the Pareto set joined by a line (``front_line``) or
    coloured by a third objective (``color_third``; returns that scatter for a colour bar, else None); the
    report's own designs (``marks``) as labelled black markers where both their values are known."""
    (sx, label_x, log_x), (sy, label_y, log_y) = _objective_axis(info, i, marks), _objective_axis(info, j, marks)
    x, y = info.values[:, i] / sx, info.values[:, j] / sy
    feasible, pareto = info.feasible & ~info.pareto, info.pareto
    infeasible = ~info.feasible & np.isfinite(x) & np.isfinite(y)
    ax.scatter(x[infeasible], y[infeasible], marker="x", s=14, color="#BBBBBB", label="infeasible")
    ax.scatter(x[feasible], y[feasible], s=14, color="#56B4E9", alpha=0.7, label="feasible")
    third = next((k for k in range(len(info.objectives)) if k not in (i, j)), None) if color_third else None
    if front_line:
        order = np.argsort(x[pareto])
        ax.plot(x[pareto][order], y[pareto][order], "-", color="#D55E00", linewidth=1)
    fill: dict[str, Any] = ({"c": info.values[pareto, third], "cmap": "viridis"} if third is not None
                            else {"color": "#D55E00"})
    points = ax.scatter(x[pareto], y[pareto], s=30, edgecolors="#D55E00", linewidths=1.2, label="Pareto set",
                        zorder=3, **fill)
    for k, mark in enumerate(marks):
        mx, my = mark.values[i] / sx, mark.values[j] / sy
        if np.isfinite(mx) and np.isfinite(my):
            ax.scatter([mx], [my], marker=_MARKERS[k % len(_MARKERS)], s=90, color="black", zorder=4,
                       label=f"report: {mark.design}")
            ax.annotate(mark.design, (mx, my), xytext=(5, 5), textcoords="offset points", fontsize=8)
    ax.set_xlabel(label_x)
    ax.set_ylabel(label_y)
    if log_x:
        ax.set_xscale("log")
    else:
        ax.ticklabel_format(axis="x", style="plain", useOffset=False)
    if log_y:
        ax.set_yscale("log")
    else:
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    ax.grid(alpha=0.3)
    return points if third is not None else None


def render_pareto(info: SweepInfo, marks: Sequence[DesignMark] = ()) -> Figure:
    """The first two objectives of every trial; the Pareto set is a line for two objectives, else it is
    coloured by the third objective; the report's own designs marked."""
    fig, ax = _figure(width=7.5, height=5.0)
    two = len(info.objectives) == 2
    points = _scatter_pair(ax, info, 0, 1, front_line=two, color_third=not two, marks=marks)
    if points is not None:
        label = OBJECTIVES.get(info.objectives[2], info.objectives[2])
        fig.colorbar(points, ax=ax, label=f"Pareto points: {label}")
    ax.set_title(f"Pareto front: {info.objectives[0]} vs {info.objectives[1]}")
    ax.legend(fontsize=8)
    return fig


def render_tradeoffs(info: SweepInfo, marks: Sequence[DesignMark] = ()) -> Figure:
    """Every pair of objectives side by side, the report's own designs marked."""
    pairs = info.pairs()
    fig, axes = _figure(width=min(15.0, 5.0 * len(pairs)), height=4.4, ncols=len(pairs), squeeze=False)
    for ax, (i, j) in zip(axes[0], pairs, strict=True):
        _scatter_pair(ax, info, i, j, front_line=len(info.objectives) == 2, marks=marks)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Trade-offs between objectives (orange: the Pareto set of all objectives together)")
    return fig
