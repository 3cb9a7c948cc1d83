"""The training curve of a capture: windowed loss / accuracy, as a table, CSV, Markdown report and PNG.

No PyTorch needed: everything here reads the per-step lists of a ``CaptureResult`` (or any equal-length
lists), so the report is also testable without a training run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from antsim.errors import AntsimError

CURVE_WINDOWS = 10  # rows of the summary's loss curve: one per tenth of the run


@dataclass(frozen=True)
class Window:
    """Mean training loss and accuracy over steps ``first … last`` (1-based, inclusive)."""

    first: int
    last: int
    loss: float
    accuracy: float
    lr: float  # the learning rate of the window's first step


def windows(losses: Sequence[float], accuracies: Sequence[float], lrs: Sequence[float],
            count: int = CURVE_WINDOWS) -> list[Window]:
    """Split the run into ``min(count, steps)`` consecutive windows of (nearly) equal length, earlier ones
    one step longer when the steps do not divide evenly; mean loss and accuracy of each."""
    steps = len(losses)
    if not (len(accuracies) == len(lrs) == steps):
        raise AntsimError(f"loss curve: {steps} losses, {len(accuracies)} accuracies, {len(lrs)} learning rates")
    count = min(count, steps)
    out, start = [], 0
    for i in range(count):
        size = steps // count + (1 if i < steps % count else 0)
        part = slice(start, start + size)
        out.append(Window(start + 1, start + size, math.fsum(losses[part]) / size,
                          math.fsum(accuracies[part]) / size, lrs[start]))
        start += size
    return out


def curve_table(rows: Sequence[Window], classes: int) -> list[str]:
    """Plain-text lines: one per window, then the chance loss ln(classes) to read the numbers against."""
    lines = [f"{'steps':>11s} {'lr':>9s} {'loss':>7s} {'accuracy':>8s}"]
    lines += [f"{w.first:>5d}-{w.last:<5d} {w.lr:9.5f} {w.loss:7.4f} {w.accuracy:8.3f}" for w in rows]
    lines.append(f"chance: loss ln({classes}) = {math.log(classes):.4f}, accuracy {1 / classes:.3f}")
    return lines


def curve_csv(losses: Sequence[float], accuracies: Sequence[float], lrs: Sequence[float]) -> str:
    """``step,lr,loss,accuracy`` — one row per step (1-based)."""
    rows = ["step,lr,loss,accuracy"]
    rows += [f"{i},{lr!r},{loss!r},{acc!r}"
             for i, (lr, loss, acc) in enumerate(zip(lrs, losses, accuracies, strict=True), start=1)]
    return "\n".join(rows) + "\n"


def curve_markdown(title: str, settings: Mapping[str, Any], description: str, rows: Sequence[Window],
                   classes: int, png_name: str | None) -> str:
    """A Markdown report: settings, data, windowed loss curve table and (if drawn) the PNG."""
    lines = [f"# {title}", "", f"Data: {description}.", "", "| setting | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in settings.items()]
    lines += ["", "| steps | lr (first step) | mean loss | mean accuracy |", "|---|---|---|---|"]
    lines += [f"| {w.first}–{w.last} | {w.lr:.5g} | {w.loss:.4f} | {w.accuracy:.3f} |" for w in rows]
    lines += ["", f"Chance level: loss ln({classes}) = {math.log(classes):.4f}, accuracy {1 / classes:.3f}. "
              "Loss and accuracy are those of each step's mini-batch before its update (training mode)."]
    if png_name:
        lines += ["", f"![loss curve]({png_name})"]
    return "\n".join(lines) + "\n"


def draw_curve(path: Path, losses: Sequence[float], accuracies: Sequence[float], lrs: Sequence[float],
               classes: int, title: str) -> None:
    """Per-step loss (and its windowed mean), accuracy and learning rate against the step, as a PNG.

    Drawn on a bare ``Figure`` (no pyplot, no ``matplotlib.use``): the caller's backend stays as it was.
    """
    from matplotlib.figure import Figure

    steps = list(range(1, len(losses) + 1))
    rows = windows(losses, accuracies, lrs)
    centres = [(w.first + w.last) / 2 for w in rows]
    fig = Figure(figsize=(6.5, 5.5))
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.plot(steps, losses, lw=0.6, alpha=0.45, label="loss per step")
    top.plot(centres, [w.loss for w in rows], "o-", label="window mean")
    top.axhline(math.log(classes), ls="--", c="grey", lw=0.8, label=f"chance ln({classes})")
    top.set_ylabel("cross-entropy (nats)")
    top.set_title(title, fontsize=9)
    top.legend(fontsize=8)
    bottom.plot(centres, [w.accuracy for w in rows], "o-", label="accuracy (window mean)")
    bottom.set_ylabel("accuracy")
    bottom.set_xlabel("step")
    lr_axis = bottom.twinx()
    lr_axis.plot(steps, lrs, c="tab:red", lw=0.8)
    lr_axis.set_ylabel("learning rate", color="tab:red")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
