"""``antsim capture``: train a CIFAR network with SWAT top-k sparsity and save its conv operands (.npz)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from antsim.cli._common import check_out_path

if TYPE_CHECKING:
    from antsim.capture.run import CaptureResult

HELP = "train a CIFAR network with SWAT top-k sparsity (PyTorch) and save each conv's W, A, saved A, dY"

_NETWORKS = ("resnet18-cifar", "vgg16-cifar", "wrn-16-8-cifar")  # = antsim.capture.models.CAPTURE_NETWORKS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--network", required=True, choices=_NETWORKS, help="network to train (zoo names)")
    parser.add_argument("--steps", type=int, default=20, help="training steps; the last one is captured (20)")
    parser.add_argument("--batch", type=int, default=4, help="mini-batch size N (4)")
    parser.add_argument("--density", type=float, default=0.1,
                        help="kept fraction of W and of the A saved for wgrad (SWAT top-k; 0.1)")
    parser.add_argument("--grad-density", type=float, default=1.0,
                        help="kept fraction of each conv's output gradient dY (top-k; 1.0 = dense)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the initial weights and batch order (0)")
    parser.add_argument("--width-mult", type=float, default=1.0,
                        help="scale every channel count (1.0 = zoo shapes; e.g. 0.125 for a quick run)")
    parser.add_argument("--data", default="digits", choices=("digits", "synthetic"),
                        help="training images: scikit-learn's bundled digits (default) or a seeded synthetic set")
    parser.add_argument("--lr", type=float, default=0.005, help="SGD learning rate (momentum 0.9; 0.005)")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads (results are reproducible for a fixed count; 1)")
    parser.add_argument("--out", type=Path, required=True, help="tensors file to write (.npz)")


def run(args: argparse.Namespace) -> int:
    from antsim.capture import require_torch

    require_torch("capture")
    check_out_path(args.out, (".npz",))
    from antsim.capture.run import capture
    from antsim.sparsity.tensors import save_tensors

    def report(step: int, steps: int, loss: float) -> None:
        sys.stderr.write(f"step {step}/{steps}  loss {loss:.4f}\n")

    result = capture(args.network, steps=args.steps, batch=args.batch, density=args.density,
                     grad_density=args.grad_density, seed=args.seed, width_mult=args.width_mult,
                     data=args.data, lr=args.lr, threads=args.threads, progress=report)
    save_tensors(args.out, result.tensors, packed=True)
    _summary(args, result)
    return 0


def _summary(args: argparse.Namespace, result: CaptureResult) -> None:
    lines = [f"wrote {args.out}: {len(result.layers)} conv layers of {args.network} (width x{args.width_mult}), "
             f"batch {args.batch}, step {args.steps}, loss {result.losses[-1]:.4f}",
             f"{'layer':24s} {'W':>7s} {'A':>7s} {'saved A':>7s} {'dY':>7s}"]
    for name, tensors in result.tensors.items():
        d = tensors.densities()
        lines.append(f"{name:24s} {d['weights']:7.4f} {d['activations']:7.4f} {d['saved_activations']:7.4f} "
                     f"{d['grad_output']:7.4f}")
    sys.stdout.write("\n".join(lines) + "\n")
