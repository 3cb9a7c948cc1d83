"""``antsim zoo``: list the networks, or one network's (or an ONNX model's) layers with their MACs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from antsim.cli._common import check_out_path, note
from antsim.workloads.gemm import Gemm
from antsim.workloads.layers import Layer, write_layers_csv
from antsim.workloads.onnx_import import NOT_MODELLED, SkippedNode, read_onnx

HELP = "list the network zoo, or the layers (conv and GEMM) and MACs of one network or of an ONNX model (--onnx)"
# An error's subject (antsim.errors.AntsimError) -> the flag that gave it; main() adds it to the message.
FLAGS = {"onnx": "--onnx"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", help="network name; omit to list all networks")
    parser.add_argument("--onnx", type=Path, default=None, metavar="MODEL",
                        help="read the Conv/Gemm/MatMul nodes of an ONNX model instead (needs antsim[onnx])")
    parser.add_argument("--batch", type=int, default=None,
                        help="batch size (default: 1 for zoo networks, the model's batch for --onnx)")
    parser.add_argument("--csv", "--out", type=Path, default=None, help="also write the layers as a layers CSV")


def run(args: argparse.Namespace) -> int:
    from antsim.errors import AntsimError
    from antsim.workloads.zoo import network, networks

    if args.batch is not None and args.batch < 1:
        raise AntsimError(f"--batch must be >= 1; got {args.batch}")
    if args.onnx is not None and args.name is not None:
        raise AntsimError(f"give either a network NAME ({args.name}) or --onnx {args.onnx}, not both")
    if args.csv is not None:
        if args.name is None and args.onnx is None:
            raise AntsimError(f"--csv {args.csv}: give a network NAME or --onnx MODEL to write its layers")
        check_out_path(args.csv, (".csv",), flag="--csv")
    out = sys.stdout
    skipped: tuple[SkippedNode, ...] = ()
    layers: list[Layer | Gemm]
    if args.onnx is not None:
        layers, skipped = _onnx_layers(args)
    elif args.name is None:
        batch = args.batch or 1
        out.write(f"{'network':<22}{'layers':>7}{'fwd GMACs':>12}   (batch {batch})\n")
        for name in networks():
            members = network(name)
            out.write(f"{name:<22}{len(members):>7}{sum(l.macs for l in members) * batch / 1e9:>12.3f}\n")
        return 0
    else:
        layers = [layer.with_batch(args.batch or 1) for layer in network(args.name)]
    _write_layers(layers)
    if skipped:
        _write_skipped(skipped)
    if args.csv:
        write_layers_csv(layers, args.csv)
    return 0


def _write_layers(layers: list[Layer | Gemm]) -> None:
    """The conv layers' table, the GEMM layers' table, and the MAC totals."""
    out = sys.stdout
    convs = [l for l in layers if not isinstance(l, Gemm)]
    gemms = [l for l in layers if isinstance(l, Gemm)]
    width = max(22, *(len(l.name) + 1 for l in layers))  # GoogLeNet's module paths run to 26 chars
    if convs:
        out.write(f"{'layer':<{width}}{'N':>4}{'C':>6}{'K':>6}{'H':>5}{'W':>5}{'R':>3}{'S':>3}"
                  f"{'str':>5}{'pad':>5}{'P':>5}{'Q':>5}{'MMACs':>10}\n")
    for l in convs:
        stride = l.stride_h if l.stride_h == l.stride_w else f"{l.stride_h}x{l.stride_w}"
        pad = l.pad_h if l.pad_h == l.pad_w else f"{l.pad_h}x{l.pad_w}"
        out.write(f"{l.name:<{width}}{l.N:>4}{l.C:>6}{l.K:>6}{l.H:>5}{l.W:>5}{l.R:>3}{l.S:>3}"
                  f"{stride!s:>5}{pad!s:>5}{l.P:>5}{l.Q:>5}{l.macs / 1e6:>10.2f}\n")
    if gemms:
        out.write(f"{'gemm layer':<{width}}{'M':>7}{'N':>7}{'K':>7}{'count':>7}{'A':>13}{'batch':>7}"
                  f"{'MMACs':>10}\n")
    for g in gemms:
        out.write(f"{g.name:<{width}}{g.M:>7}{g.N:>7}{g.K:>7}{g.count:>7}{g.a:>13}{g.batch:>7}{g.macs / 1e6:>10.2f}\n")
    total = sum(l.macs for l in layers)
    kinds = f"{len(convs)} conv layers" + (f" + {len(gemms)} gemm layers" if gemms else "")
    out.write(f"{kinds}, {total / 1e9:.3f} GMACs per phase, "
              f"{3 * total / 1e9:.3f} GMACs per training step (fprop + dgrad + wgrad)\n")


def _onnx_layers(args: argparse.Namespace) -> tuple[list[Layer | Gemm], tuple[SkippedNode, ...]]:
    """The model's layers at its batch (or ``--batch``), and the nodes not imported."""
    model = read_onnx(args.onnx, batch=args.batch)
    if model.model_batch is not None and model.model_batch != model.batch:
        note("zoo", f"--batch {model.batch} replaces batch {model.model_batch} of {args.onnx}")
    elif model.model_batch is None and args.batch is None:
        note("zoo", f"{args.onnx}: batch dimension is symbolic; layers at batch 1 (give --batch N)")
    return list(model.layers), model.skipped


def _write_skipped(skipped: tuple[SkippedNode, ...]) -> None:
    """Every node the import left out: a refused conv/GEMM one per line with its reason, the nodes with no
    conv/GEMM work one line per op type with all their names. Nothing is dropped silently."""
    refused = [node for node in skipped if node.reason != NOT_MODELLED]
    by_op: dict[str, list[str]] = {}
    for node in skipped:
        if node.reason == NOT_MODELLED:
            by_op.setdefault(node.op_type, []).append(node.name)
    out = sys.stdout
    out.write(f"{len(skipped)} ONNX node(s) not imported:\n")
    if refused:
        width = max(22, *(len(s.name) + 1 for s in refused))
        out.write(f"{'node':<{width}}{'op':<12}reason\n")
        for node in refused:
            out.write(f"{node.name:<{width}}{node.op_type:<12}{node.reason}\n")
    for op, names in by_op.items():
        out.write(f"{op} x{len(names)} ({NOT_MODELLED}): {', '.join(names)}\n")
