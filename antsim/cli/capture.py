"""``antsim capture``: train a CIFAR network with SWAT top-k sparsity and save its conv operands (.npz)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from antsim.cli._common import check_out_path
from antsim.errors import AntsimError

if TYPE_CHECKING:
    from antsim.capture.run import CaptureResult

HELP = "train a CIFAR network with SWAT top-k sparsity (PyTorch) and save each conv's W, A, saved A, dY"
# An error's subject (antsim.errors.AntsimError) -> the flag that gave it; main() adds it to the message.
FLAGS = {"schedule": "--schedule", "lr": "--lr", "warmup": "--warmup", "data": "--data", "data_dir": "--data-dir",
         "network": "--network", "width_mult": "--width-mult", "steps": "--steps", "batch": "--batch",
         "threads": "--threads", "density": "--density", "grad_density": "--grad-density", "momentum": "--momentum",
         "weight_decay": "--weight-decay"}

_NETWORKS = ("resnet18-cifar", "vgg16-cifar", "wrn-16-8-cifar")  # = antsim.capture.models.CAPTURE_NETWORKS
_DATA = ("natural", "cifar10", "digits", "synthetic")  # = antsim.capture.data.DATA_SOURCES
_SCHEDULES = ("cosine", "step", "constant")  # = antsim.capture.schedule.SCHEDULES
_LR, _MOMENTUM, _WEIGHT_DECAY = 0.004, 0.9, 5e-4  # = antsim.capture.run.DEFAULT_LR, MOMENTUM, WEIGHT_DECAY
_REPORT_SUFFIXES = (".md", ".csv")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--network", required=True, choices=_NETWORKS, help="network to train (zoo names)")
    parser.add_argument("--steps", type=int, default=20, help="training steps; the last one is captured (20)")
    parser.add_argument("--batch", type=int, default=4, help="mini-batch size N (4)")
    parser.add_argument("--density", type=float, default=0.1,
                        help="kept fraction of W and of the A saved for wgrad (SWAT top-k; 0.1)")
    parser.add_argument("--grad-density", type=float, default=1.0,
                        help="kept fraction of each conv's output gradient dY (top-k; 1.0 = dense)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the initial weights, batches and crops (0)")
    parser.add_argument("--width-mult", type=float, default=1.0,
                        help="scale every channel count (1.0 = zoo shapes; e.g. 0.125 for a quick run)")
    parser.add_argument("--data", default="natural", choices=_DATA,
                        help="training images: natural (crops of scikit-learn's / scikit-image's photos, the "
                             "default), cifar10 (needs --data-dir), digits or synthetic")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="CIFAR-10 python-version folder (data_batch_1..5) for --data cifar10")
    parser.add_argument("--lr", type=float, default=_LR, help=f"peak SGD learning rate ({_LR})")
    parser.add_argument("--schedule", default="cosine", choices=_SCHEDULES,
                        help="learning-rate schedule: warm-up then cosine decay to 0 (default), warm-up then "
                             "/10 at 50%% and 75%% of the steps (step), or constant")
    parser.add_argument("--warmup", type=int, default=None,
                        help="linear warm-up steps (default 5%% of --steps; none for constant)")
    parser.add_argument("--momentum", type=float, default=_MOMENTUM, help=f"SGD momentum ({_MOMENTUM})")
    parser.add_argument("--weight-decay", type=float, default=_WEIGHT_DECAY,
                        help=f"SGD weight decay ({_WEIGHT_DECAY})")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads (results are reproducible for a fixed count; 1)")
    parser.add_argument("--report", type=Path, default=None,
                        help="also write the training curve: FILE.md (Markdown) or FILE.csv (per step), "
                             "each with FILE.png beside it")
    parser.add_argument("--out", type=Path, required=True, help="tensors file to write (.npz)")


def run(args: argparse.Namespace) -> int:
    from antsim.capture import require_torch

    require_torch("capture")
    check_out_path(args.out, (".npz",))
    if args.report is not None:
        _check_report_path(args.report)
    from antsim.capture.run import capture
    from antsim.sparsity.tensors import save_tensors

    def report(step: int, steps: int, loss: float) -> None:
        sys.stderr.write(f"step {step}/{steps}  loss {loss:.4f}\n")

    result = capture(args.network, steps=args.steps, batch=args.batch, density=args.density,
                     grad_density=args.grad_density, seed=args.seed, width_mult=args.width_mult,
                     data=args.data, lr=args.lr, threads=args.threads, progress=report, data_dir=args.data_dir,
                     schedule=args.schedule, warmup=args.warmup, momentum=args.momentum,
                     weight_decay=args.weight_decay)
    save_tensors(args.out, result.tensors, packed=True)
    if args.report is not None:
        _write_report(args, result)
    _summary(args, result)
    return 0


def _check_report_path(path: Path) -> None:
    if path.suffix.lower() not in _REPORT_SUFFIXES:
        raise AntsimError(f"--report {path}: must end in {' or '.join(_REPORT_SUFFIXES)}")
    if path.parent.exists() and not path.parent.is_dir():
        raise AntsimError(f"--report {path}: {path.parent} is not a folder")


def _settings(args: argparse.Namespace, result: CaptureResult) -> dict[str, object]:
    schedule = result.schedule
    return {"network": f"{args.network} (width x{args.width_mult})", "batch": args.batch, "steps": args.steps,
            "density (W, saved A)": args.density, "grad density (dY)": args.grad_density,
            "data": args.data + (f" ({args.data_dir})" if args.data_dir else ""),
            "schedule": (f"{schedule.kind}, peak lr {schedule.lr}, warm-up {schedule.warmup} steps"
                         if schedule else args.schedule),
            "momentum / weight decay": f"{args.momentum} / {args.weight_decay}", "seed": args.seed,
            "threads": args.threads, "tensors": str(args.out)}


def _write_report(args: argparse.Namespace, result: CaptureResult) -> None:
    from antsim.capture.report import curve_csv, curve_markdown, draw_curve, windows
    from antsim.results import write_text_atomic

    png = args.report.with_suffix(".png")
    png.parent.mkdir(parents=True, exist_ok=True)
    title = f"antsim capture: {args.network} x{args.width_mult}, batch {args.batch}, {args.steps} steps"
    draw_curve(png, result.losses, result.accuracies, result.lrs, result.classes, title)
    if args.report.suffix.lower() == ".csv":
        text = curve_csv(result.losses, result.accuracies, result.lrs)
    else:
        rows = windows(result.losses, result.accuracies, result.lrs)
        text = curve_markdown(title, _settings(args, result), result.data, rows, result.classes, png.name)
    write_text_atomic(args.report, text)


def _summary(args: argparse.Namespace, result: CaptureResult) -> None:
    from antsim.capture.report import curve_table, windows

    lines = [f"wrote {args.out}: {len(result.layers)} conv layers of {args.network} (width x{args.width_mult}), "
             f"batch {args.batch}, step {args.steps}, loss {result.losses[-1]:.4f}",
             f"data: {result.data}", "loss curve (means over windows of steps):"]
    lines += curve_table(windows(result.losses, result.accuracies, result.lrs), result.classes)
    if args.report is not None:
        lines.append(f"report: {args.report} and {args.report.with_suffix('.png')}")
    lines.append(f"{'layer':24s} {'W':>7s} {'A':>7s} {'saved A':>7s} {'dY':>7s}")
    for name, tensors in result.tensors.items():
        d = tensors.densities()
        lines.append(f"{name:24s} {d['weights']:7.4f} {d['activations']:7.4f} {d['saved_activations']:7.4f} "
                     f"{d['grad_output']:7.4f}")
    sys.stdout.write("\n".join(lines) + "\n")
