#!/usr/bin/env python
"""Compare the structure of captured SWAT operands with the synthetic generators; write a Markdown report.

For each capture (``antsim capture`` .npz; made here with PyTorch when not given), computes the operand
statistics of ``antsim.capture.stats`` (per-channel density CV, neighbour clustering, wgrad co-location)
for the captured tensors and for each generator model (uniform, topk_field, channel) at the captured
shapes and per-layer densities, then fits ``topk_field``'s ``FieldParams`` (spatial_sigma, channel_sigma)
per operand on a small grid so its medians fall on the captured ones, and ``swat``'s envelope
(``SwatParams.envelope_sigma``, ``image_sigma``, ``envelope_length``) so its saved-A and dY medians do.

Usage::

    .venv/bin/python scripts/calibrate_sparsity.py          # capture ResNet-18 (b4, 400 steps, natural)
    .venv/bin/python scripts/calibrate_sparsity.py --captures a.npz b.npz --out reports/calibration.md
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("uniform", "topk_field", "channel")  # swat (the default) is added below
STATS = [("weights", "channel_cv"), ("weights", "clustering"), ("weights", "batch_cv"),
         *[(op, st) for op in ("activations", "saved_activations", "grad_output")
           for st in ("density", "channel_cv", "clustering", "spatial_cv", "batch_cv")],
         ("wgrad", "colocation")]
SPATIAL = (0.0, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
CHANNEL = (0.0, 0.15, 0.3, 0.45, 0.6, 0.8)
ENVELOPE = (0.0, 0.1, 0.15, 0.2, 0.25, 0.35, 0.5)  # SwatParams.envelope_sigma grid
IMAGE = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0)  # SwatParams.image_sigma grid
LENGTH = (0.125, 0.25, 0.5)  # SwatParams.envelope_length, tried at the best (envelope, image) pair
SWAT_STATS = ("channel_cv", "clustering", "spatial_cv", "batch_cv")
# make_tensors derives the saved A from the forward A's field, so those two share one FieldParams.
FIT_GROUPS = {"weights": ("weights",), "activations + saved": ("activations", "saved_activations"),
              "grad_output": ("grad_output",)}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--captures", nargs="*", type=Path, default=None, help="tensors files (default: capture)")
    p.add_argument("--network", default="resnet18-cifar")
    p.add_argument("--steps", type=int, default=400, help="training steps of each capture (400)")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--data", default="natural", help="training data of the captures (antsim capture --data)")
    p.add_argument("--data-dir", type=Path, default=None, help="CIFAR-10 folder for --data cifar10")
    p.add_argument("--lr", type=float, default=None, help="peak lr (default: antsim capture's)")
    p.add_argument("--schedule", default="cosine", help="lr schedule (antsim capture --schedule)")
    p.add_argument("--density", type=float, default=0.1)
    p.add_argument("--grad-densities", default="1.0,0.1")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-fit", action="store_true", help="skip the FieldParams grid fit")
    p.add_argument("--out", type=Path, default=ROOT / "reports" / "calibration.md")
    return p.parse_args()


def ensure_captures(args: argparse.Namespace) -> list[Path]:
    if args.captures:
        return list(args.captures)
    from antsim.capture import require_torch

    require_torch()
    from antsim.capture.run import capture
    from antsim.sparsity.tensors import save_tensors

    paths = []
    for gd in (float(x) for x in args.grad_densities.split(",")):
        path = ROOT / "reports" / "capture" / f"{args.network}_b{args.batch}_g{gd}_{args.data}_s{args.steps}.npz"
        if not path.exists():
            t0 = time.perf_counter()
            lr = {} if args.lr is None else {"lr": args.lr}
            result = capture(args.network, steps=args.steps, batch=args.batch, density=args.density,
                             grad_density=gd, seed=args.seed, data=args.data, data_dir=args.data_dir,
                             schedule=args.schedule, **lr)
            save_tensors(path, result.tensors)
            tenth = max(1, args.steps // 10)
            print(f"captured {path.name} in {time.perf_counter() - t0:.0f} s; loss first/last tenth "
                  f"{sum(result.losses[:tenth]) / tenth:.3f} / {sum(result.losses[-tenth:]) / tenth:.3f}",
                  file=sys.stderr)
        paths.append(path)
    return paths


def cell(summary: dict, operand: str, stat: str) -> str:
    key = "colocation" if operand == "wgrad" else f"{operand}.{stat}"
    median, lo, hi, count = summary.get(key, (math.nan, math.nan, math.nan, 0))
    return "n/a" if count == 0 else f"{median:.2f} [{lo:.2f}–{hi:.2f}]"


def comparison_table(captured_summary: dict, model_summaries: dict[str, dict]) -> list[str]:
    lines = ["| operand | statistic | captured | " + " | ".join(model_summaries) + " |",
             "|---|---|---|" + "---|" * len(model_summaries)]
    for operand, stat in STATS:
        cells = [cell(captured_summary, operand, stat)] + [cell(s, operand, stat) for s in model_summaries.values()]
        lines.append(f"| {operand} | {stat} | " + " | ".join(cells) + " |")
    return lines


def layer_table(rows: list[dict]) -> list[str]:
    cols = [("weights.density", "W"), ("activations.density", "A"), ("grad_output.density", "dY"),
            ("weights.channel_cv", "W cv"), ("activations.channel_cv", "A cv"), ("saved_activations.channel_cv",
            "sA cv"), ("grad_output.channel_cv", "dY cv"), ("activations.clustering", "A clu"),
            ("saved_activations.clustering", "sA clu"), ("grad_output.clustering", "dY clu"),
            ("saved_activations.spatial_cv", "sA sp"), ("grad_output.spatial_cv", "dY sp"),
            ("saved_activations.batch_cv", "sA img"), ("colocation", "coloc")]
    lines = ["| layer | " + " | ".join(c[1] for c in cols) + " |", "|---|" + "---|" * len(cols)]
    for r in rows:
        lines.append(f"| {r['layer']} | " + " | ".join(f"{float(r.get(k, math.nan)):.2f}" for k, _ in cols) + " |")
    return lines


def _score(summary: dict, target: dict, operands: tuple[str, ...],
           stats: tuple[str, ...] = ("channel_cv", "clustering")) -> float:
    """Sum over operands and statistics of |log(median / captured median)| (undefined ones skipped)."""
    score = 0.0
    for operand in operands:
        for stat in stats:
            value, goal = summary[f"{operand}.{stat}"][0], target[f"{operand}.{stat}"][0]
            if math.isfinite(goal) and math.isfinite(value) and goal > 0 and value > 0:
                score += abs(math.log(value / goal))
    return score


def fit_field(captured, captured_summary: dict) -> tuple[list[str], dict]:
    """Grid over FieldParams; per operand group the point whose median CV and clustering are closest
    to the captured medians (sum of |log ratio|). Returns the report lines and ``{group: FieldParams}``
    (a group without any finite captured statistic, e.g. a dense dY, is left out)."""
    from antsim.capture.stats import summarize, synthetic_like, tensors_stats
    from antsim.sparsity.generators import FieldParams

    best: dict[str, tuple[float, float, float, dict]] = {}
    for spatial in SPATIAL:
        for channel in CHANNEL:
            params = FieldParams(spatial, channel)
            summary = summarize(tensors_stats(synthetic_like(captured, "topk_field", 0, params)))
            for group, operands in FIT_GROUPS.items():
                score = _score(summary, captured_summary, operands)
                if group not in best or score < best[group][0] - 1e-12:
                    best[group] = (score, spatial, channel, summary)
    lines = ["| operand group | best spatial_sigma | best channel_sigma | operand | captured CV | fitted CV |"
             " captured clustering | fitted clustering |", "|---|---|---|---|---|---|---|---|"]
    for group, (_, spatial, channel, summary) in best.items():
        for operand in FIT_GROUPS[group]:
            cap = [captured_summary[f"{operand}.{s}"][0] for s in ("channel_cv", "clustering")]
            fit = [summary[f"{operand}.{s}"][0] for s in ("channel_cv", "clustering")]
            lines.append(f"| {group} | {spatial} | {channel} | {operand} | {cap[0]:.2f} | {fit[0]:.2f} | "
                         f"{cap[1]:.2f} | {fit[1]:.2f} |")
    fitted = {group: FieldParams(spatial, channel) for group, (_, spatial, channel, _) in best.items()
              if any(captured_summary[f"{op}.{st}"][0] > 0 for op in FIT_GROUPS[group]
                     for st in ("channel_cv", "clustering"))}
    return lines, fitted


def fit_swat(captured, captured_summary: dict, fields: dict) -> tuple[list[str], object]:
    """Grid fit of the ``swat`` model. Saved A and dY come from independent random streams, so one grid
    over (FieldParams base, envelope_sigma, image_sigma) scores both at once and each picks its own point:
    A's (forward-A channel CV and clustering + saved-A channel CV, clustering, spatial CV, batch CV) and
    dY's (its four). Bases: the current default FieldParams and the topk_field fit (``fields``). Then
    ``envelope_length`` (shared) by the total score. Returns the report lines and the best SwatParams."""
    from dataclasses import replace

    from antsim.capture.stats import summarize, synthetic_like, tensors_stats
    from antsim.sparsity.generators import SwatParams

    a_terms = (("activations", ("channel_cv", "clustering")), ("saved_activations", SWAT_STATS))
    g_terms = (("grad_output", SWAT_STATS),)

    def part(summary: dict, terms) -> float:
        return sum(_score(summary, captured_summary, (op,), stats) for op, stats in terms)

    summaries: dict[SwatParams, dict] = {}

    def summary_of(params: SwatParams) -> dict:
        if params not in summaries:
            summaries[params] = summarize(tensors_stats(synthetic_like(captured, "swat", 0, params)))
        return summaries[params]

    default = SwatParams()
    fitted = replace(default, **{name: fields[group] for name, group in
                                 (("weights", "weights"), ("activations", "activations + saved"),
                                  ("grad_output", "grad_output")) if group in fields})
    grid = [replace(base, envelope_sigma=e, image_sigma=i) for base in dict.fromkeys((default, fitted))
            for e in ENVELOPE for i in IMAGE]
    best_a = min(grid, key=lambda p: part(summary_of(p), a_terms))
    best_g = min(grid, key=lambda p: part(summary_of(p), g_terms))
    combined = replace(best_a, grad_output=best_g.grad_output, grad_envelope_sigma=best_g.envelope_sigma,
                       grad_image_sigma=best_g.image_sigma)
    if combined.grad_envelope_sigma == combined.envelope_sigma and combined.grad_image_sigma == combined.image_sigma:
        combined = replace(combined, grad_envelope_sigma=None, grad_image_sigma=None)

    def total(p: SwatParams) -> float:
        return part(summary_of(p), a_terms) + part(summary_of(p), g_terms)

    best = min([replace(combined, envelope_length=length) for length in LENGTH], key=total)

    def fields_of(p: SwatParams) -> str:
        return " / ".join(f"({f.spatial_sigma}, {f.channel_sigma})" for f in (p.weights, p.activations, p.grad_output))

    def envelope_of(p: SwatParams) -> str:
        g = p.for_grad()
        return f"{p.envelope_sigma}, {p.image_sigma} / {g.envelope_sigma}, {g.image_sigma} / {p.envelope_length}"

    lines = ["| SwatParams | W / A / dY FieldParams | envelope σ, image σ: A / dY / length |"
             " score A | score dY | total |", "|---|---|---|---|---|---|"]
    for label, p in (("current default", default), ("best on this capture", best)):
        sa, sg = part(summary_of(p), a_terms), part(summary_of(p), g_terms)
        lines.append(f"| {label} | {fields_of(p)} | {envelope_of(p)} | {sa:.3f} | {sg:.3f} | {sa + sg:.3f} |")
    lines += ["", f"({len(summaries)} parameter points; score = sum of |log(median / captured median)|.)", "",
              "| operand | statistic | captured | current default | best fit |", "|---|---|---|---|---|"]
    for operand, stats in (("weights", ("channel_cv", "clustering")), *a_terms, *g_terms):
        for stat in stats:
            cells = [cell(x, operand, stat) for x in (captured_summary, summary_of(default), summary_of(best))]
            lines.append(f"| {operand} | {stat} | " + " | ".join(cells) + " |")
    return lines, best


def report_one(path: Path, fit: bool) -> tuple[list[str], tuple | None]:
    """The report section of one capture, and (captured tensors, their summary, best SwatParams) if fitted."""
    from antsim.capture.stats import summarize, synthetic_like, tensors_stats
    from antsim.sparsity.tensors import load_tensors

    captured = load_tensors(path)
    rows = tensors_stats(captured)
    summary = summarize(rows)
    models = {m: summarize(tensors_stats(synthetic_like(captured, m, seed=0))) for m in MODELS}
    models["swat (default)"] = summarize(tensors_stats(synthetic_like(captured, "swat", seed=0)))
    lines = [f"## {path.name}", ""]
    curve = path.with_suffix(".md")  # the capture's own report (antsim capture --report), if it was made
    if curve.exists():
        lines += [f"Capture report `{curve.name}`:", ""]
        lines += [line for line in curve.read_text().splitlines()[1:] if not line.startswith("![")] + [""]
    lines += [f"{len(rows)} conv layers. Cells: median [min–max] over layers.",
             "Synthetic tensors have the captured shapes and per-layer densities (default FieldParams;",
             "`swat` = the default model, antsim.sparsity.generators.SwatParams).", ""]
    lines += comparison_table(summary, models) + [""]
    if fit:
        t0 = time.perf_counter()
        fit_lines, fields = fit_field(captured, summary)
        lines += [f"### topk_field fit (grid spatial_sigma {SPATIAL} × channel_sigma {CHANNEL}; "
                  f"{time.perf_counter() - t0:.0f} s)", ""] + fit_lines + [""]
        t0 = time.perf_counter()
        swat_lines, best = fit_swat(captured, summary, fields)
        lines += [f"### swat envelope fit (envelope_sigma {ENVELOPE} × image_sigma {IMAGE}, then "
                  f"envelope_length {LENGTH}; {time.perf_counter() - t0:.0f} s)", ""] + swat_lines + [""]
    lines += ["### Per layer (captured)", ""] + layer_table(rows) + [""]
    return lines, ((captured, summary, best) if fit else None)


def joint_fit(names: list[str], fits: list[tuple]) -> list[str]:
    """One SwatParams for all captures: among the per-capture optima, A's part (FieldParams and envelope of
    A) from the one with the least A score summed over captures, dY's part likewise over the captures
    whose dY is sparse (and the envelope length with it)."""
    from dataclasses import replace

    from antsim.capture.stats import summarize, synthetic_like, tensors_stats

    a_terms = (("activations", ("channel_cv", "clustering")), ("saved_activations", SWAT_STATS))
    g_terms = (("grad_output", SWAT_STATS),)
    cache: dict = {}

    def scores(params, k: int) -> tuple[float, float]:
        if (params, k) not in cache:
            captured, target, _ = fits[k]
            summary = summarize(tensors_stats(synthetic_like(captured, "swat", 0, params)))
            cache[params, k] = tuple(sum(_score(summary, target, (op,), st) for op, st in terms)
                                     for terms in (a_terms, g_terms))
        return cache[params, k]

    sparse_dy = [k for k, (_, target, _) in enumerate(fits) if target["grad_output.density"][0] < 1.0]
    candidates = list(dict.fromkeys(best for _, _, best in fits))
    best_a = min(candidates, key=lambda p: sum(scores(p, k)[0] for k in range(len(fits))))
    best_g = min(candidates, key=lambda p: sum(scores(p, k)[1] for k in sparse_dy)) if sparse_dy else best_a
    g = best_g.for_grad()
    joint = replace(best_a, grad_output=best_g.grad_output, envelope_length=best_g.envelope_length,
                    grad_envelope_sigma=g.envelope_sigma, grad_image_sigma=g.image_sigma)
    lines = ["## Joint fit over the captures", "",
             "Candidates: each capture's best SwatParams above. Score per capture: A part / dY part "
             "(sum of |log(median / captured median)|).", "",
             "| SwatParams | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    from antsim.sparsity.generators import SwatParams

    for label, params in (("current default", SwatParams()), *((f"best of {names[k]}", f[2]) for k, f in
                                                                enumerate(fits)), ("joint", joint)):
        cells = [" / ".join(f"{x:.3f}" for x in scores(params, k)) for k in range(len(fits))]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", f"Joint SwatParams: `{joint!r}`", ""]
    return lines


def main() -> int:
    args = parse_args()
    sys.path.insert(0, str(ROOT))
    paths = ensure_captures(args)
    lines = ["# Sparsity calibration: captured SWAT operands vs synthetic generators", "",
             "Made by `scripts/calibrate_sparsity.py` (statistics: `antsim/capture/stats.py`).", ""]
    fits = []
    for path in paths:
        print(f"statistics of {path} ...", file=sys.stderr)
        section, fitted = report_one(path, fit=not args.no_fit)
        lines += section
        fits += [fitted] if fitted else []
    if len(fits) > 1:
        lines += joint_fit([p.name for p in paths], fits)
    from antsim.results import write_text_atomic

    write_text_atomic(args.out, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
