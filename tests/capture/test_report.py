"""The capture's loss-curve report (``antsim.capture.report``): windows, CSV, Markdown and PNG."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest

from antsim.capture.report import curve_csv, curve_markdown, curve_table, draw_curve, windows
from antsim.errors import AntsimError


def test_windows_are_the_means_of_array_split() -> None:
    rng = np.random.default_rng(0)
    for steps in (1, 7, 10, 23, 400):
        losses, accs, lrs = rng.random(steps), rng.random(steps), rng.random(steps)
        rows = windows(losses.tolist(), accs.tolist(), lrs.tolist())
        parts = np.array_split(np.arange(steps), min(10, steps))
        assert [(w.first, w.last) for w in rows] == [(int(p[0]) + 1, int(p[-1]) + 1) for p in parts]
        np.testing.assert_allclose([w.loss for w in rows], [losses[p].mean() for p in parts], rtol=1e-12)
        np.testing.assert_allclose([w.accuracy for w in rows], [accs[p].mean() for p in parts], rtol=1e-12)
        assert [w.lr for w in rows] == [lrs[p[0]] for p in parts]
    with pytest.raises(AntsimError, match="3 losses, 2 accuracies"):
        windows([1.0, 2.0, 3.0], [0.1, 0.2], [0.1, 0.1, 0.1])


def test_csv_markdown_table_and_png(tmp_path: Path) -> None:
    losses, accs, lrs = [2.3, 2.0, 1.5, 1.2], [0.1, 0.25, 0.5, 0.75], [0.01, 0.02, 0.01, 0.005]
    rows = list(csv.DictReader(io.StringIO(curve_csv(losses, accs, lrs))))
    assert [int(r["step"]) for r in rows] == [1, 2, 3, 4]
    assert [float(r["loss"]) for r in rows] == losses and [float(r["accuracy"]) for r in rows] == accs
    assert [float(r["lr"]) for r in rows] == lrs
    w = windows(losses, accs, lrs, count=2)
    text = curve_markdown("t", {"batch": 4}, "natural: crops", w, 10, "c.png")
    assert "| 1–2 | 0.01 | 2.1500 | 0.175 |" in text and "| 3–4 | 0.01 | 1.3500 | 0.625 |" in text
    assert "ln(10) = 2.3026" in text and "![loss curve](c.png)" in text and "| batch | 4 |" in text
    table = curve_table(w, 10)
    assert table[1].split()[-2:] == ["2.1500", "0.175"] and "2.3026" in table[-1]
    draw_curve(tmp_path / "c.png", losses, accs, lrs, 10, "t")
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
