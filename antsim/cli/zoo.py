"""``antsim zoo``: list the networks, or one network's conv layers with their MACs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from antsim.cli._common import check_out_path
from antsim.workloads.layers import write_layers_csv

HELP = "list the network zoo, or the conv layers and MACs of one network"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", help="network name; omit to list all networks")
    parser.add_argument("--batch", type=int, default=1, help="batch size for the MAC counts (default 1)")
    parser.add_argument("--csv", type=Path, default=None, help="also write the layers as a layers CSV")


def run(args: argparse.Namespace) -> int:
    from antsim.errors import AntsimError
    from antsim.workloads.zoo import network, networks

    if args.batch < 1:
        raise AntsimError(f"--batch must be >= 1; got {args.batch}")
    if args.csv is not None:
        if args.name is None:
            raise AntsimError(f"--csv {args.csv}: give a network NAME to write its layers")
        check_out_path(args.csv, (".csv",), flag="--csv")
    out = sys.stdout
    if args.name is None:
        out.write(f"{'network':<22}{'convs':>6}{'fwd GMACs':>12}   (batch {args.batch})\n")
        for name in networks():
            layers = network(name)
            out.write(f"{name:<22}{len(layers):>6}{sum(l.macs for l in layers) * args.batch / 1e9:>12.3f}\n")
        return 0
    layers = [layer.with_batch(args.batch) for layer in network(args.name)]
    width = max(22, *(len(l.name) + 1 for l in layers))  # GoogLeNet's module paths run to 26 chars
    out.write(f"{'layer':<{width}}{'N':>4}{'C':>6}{'K':>6}{'H':>5}{'W':>5}{'R':>3}{'S':>3}"
              f"{'str':>5}{'pad':>5}{'P':>5}{'Q':>5}{'MMACs':>10}\n")
    for l in layers:
        stride = l.stride_h if l.stride_h == l.stride_w else f"{l.stride_h}x{l.stride_w}"
        pad = l.pad_h if l.pad_h == l.pad_w else f"{l.pad_h}x{l.pad_w}"
        out.write(f"{l.name:<{width}}{l.N:>4}{l.C:>6}{l.K:>6}{l.H:>5}{l.W:>5}{l.R:>3}{l.S:>3}"
                  f"{stride!s:>5}{pad!s:>5}{l.P:>5}{l.Q:>5}{l.macs / 1e6:>10.2f}\n")
    total = sum(l.macs for l in layers)
    out.write(f"{len(layers)} conv layers, {total / 1e9:.3f} GMACs per phase, "
              f"{3 * total / 1e9:.3f} GMACs per training step (fprop + dgrad + wgrad)\n")
    if args.csv:
        write_layers_csv(layers, args.csv)
    return 0
