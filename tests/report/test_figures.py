"""``antsim.report.figures``: bars drawn at the values of the info they render (read back from the axes), the
Okabe–Ito palette in its published order, and the same figure giving the same bytes."""

from __future__ import annotations

import numpy as np
import pytest

from antsim.report.data import EnergyBreakdownInfo, RatioInfo
from antsim.report.figures import design_colors, figure_bytes, render_energy_breakdown, render_ratio

# Okabe & Ito, "Color Universal Design" (2008): the eight colours of the colour-blind-safe palette, in order.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")

RATIO = RatioInfo(metric="speedup", baseline="scnn", designs=("ant", "v100"), backends=("accelerator", "gpu"),
                  layers=("conv1", "conv2", "conv3"), per_layer=np.array([[1.5, 2.0, 3.0], [0.5, 0.8, 4.0]]),
                  network=np.array([2.1, 1.2]), geomean=np.array([2.08, 1.17]))


def test_design_colours_follow_the_okabe_ito_order_and_wrap() -> None:
    designs = [f"d{i}" for i in range(14)]
    colors = design_colors(designs)
    assert tuple(colors[d] for d in designs[:8]) == OKABE_ITO
    assert len(set(colors[d] for d in designs[:12])) == 12 and colors["d12"] == colors["d0"]


def test_ratio_bars_are_the_per_layer_network_and_geomean_values() -> None:
    fig = render_ratio(RATIO, design_colors(RATIO.designs))
    ax = fig.axes[0]
    heights = np.array([bar.get_height() for bar in ax.patches]).reshape(2, 5)  # designs × (3 layers + 2)
    np.testing.assert_allclose(heights, np.c_[RATIO.per_layer, RATIO.network, RATIO.geomean])
    assert ax.get_yscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == [
        "conv1", "conv2", "conv3", "network", "geomean\n(layers)"]
    assert ax.patches[0].get_facecolor()[:3] == pytest.approx((0x00 / 255, 0x72 / 255, 0xB2 / 255))


def test_energy_stacks_sum_to_each_designs_energy_and_shares_to_100() -> None:
    energy = np.array([[1e-3, 2e-3, 7e-3], [4e-3, 4e-3, 2e-3]])
    info = EnergyBreakdownInfo(designs=("scnn", "ant"), components=("multiplier", "dram", "leakage"),
                               energy_j=energy, totals_j=energy.sum(axis=1))
    absolute, shares = render_energy_breakdown(info).axes[:2]
    assert absolute.get_ylabel() == "energy per training step (mJ)"
    tops = {}
    for bar in absolute.patches:
        tops[bar.get_x()] = max(tops.get(bar.get_x(), 0.0), bar.get_y() + bar.get_height())
    np.testing.assert_allclose(sorted(tops.values()), sorted(energy.sum(axis=1) * 1e3))
    share_tops = [bar.get_y() + bar.get_height() for bar in shares.patches[-2:]]
    np.testing.assert_allclose(share_tops, [100.0, 100.0])


def test_the_same_figure_gives_the_same_bytes() -> None:
    colors = design_colors(RATIO.designs)
    png = [figure_bytes(render_ratio(RATIO, colors), "png") for _ in range(2)]
    svg = [figure_bytes(render_ratio(RATIO, colors), "svg") for _ in range(2)]
    assert png[0] == png[1] and png[0][:8] == b"\x89PNG\r\n\x1a\n"
    assert svg[0] == svg[1] and b"<dc:date>" not in svg[0]
