"""Thin matplotlib renderers of the report infos (``antsim.report.data``); the sweep figures
(``render_pareto``, ``render_tradeoffs``) are the export's own renderers (``antsim.dse.figures``), drawn
here from the exported folder (``antsim.report.sweep``).

matplotlib is imported lazily, inside the renderers, and only through ``matplotlib.figure.Figure``
(Agg canvas, no pyplot state), so the simulator and the other commands never load it.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from antsim.dse.figures import PNG_DPI, new_figure, render_pareto, render_tradeoffs, write_png
from antsim.dse.metrics import scaled_unit
from antsim.report.data import CycleInfo, EnergyBreakdownInfo, ProductInfo, RatioInfo

# The sweep figures are the export's own (one renderer for both); the report draws them with its designs marked.
__all__ = ["design_colors", "figure_bytes", "render_cycles", "render_energy_breakdown", "render_pareto",
           "render_products", "render_ratio", "render_tradeoffs"]

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
    return new_figure(width, height, ncols, **kwargs)


def figure_bytes(fig: Figure, fmt: str) -> bytes:
    """PNG or SVG bytes without timestamps or version strings (same data → same bytes)."""
    import matplotlib

    buffer = io.BytesIO()
    if fmt == "png":  # the export writes its figures the same way: one figure, one set of bytes
        write_png(fig, buffer)
        return buffer.getvalue()
    with matplotlib.rc_context({"svg.hashsalt": "antsim", "svg.fonttype": "path"}):
        fig.savefig(buffer, format=fmt, metadata={"Date": None, "Creator": None}, dpi=PNG_DPI)
    return buffer.getvalue()


def _scale(values: np.ndarray, unit: str) -> tuple[float, str]:
    """Divisor and label so the largest value reads between 1 and 1000 (``mJ``, ``×10⁹ products``)."""
    top = float(np.nanmax(values)) if values.size and np.isfinite(np.nanmax(values)) else 1.0
    return scaled_unit(top, unit, "si" if unit in ("J", "s") else "count")


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
