"""``antsim report``: an HTML + Markdown report (figures, data, inputs) from result files.

``antsim report RESULTS… [--baseline DESIGN] [--sweep EXPORT_DIR] --out reports/NAME`` writes the folder
``reports/NAME`` atomically (see ``antsim.report.build`` for its layout) and prints the summary table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from antsim.cli._common import add_workload_arguments, csv_batch_hint, resolve_workload
from antsim.errors import AntsimError

HELP = "write an HTML/Markdown report (figures, data, inputs) comparing result files"
# An error's subject (antsim.errors.AntsimError) -> the flag that gave it; main() adds it to the message.
FLAGS = {"baseline": "--baseline", "sweep": "--sweep"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS",
                        help="result files of one workload: antsim.result/1 .json or measurement .csv")
    parser.add_argument("--baseline", default=None,
                        help="design the ratios are over (default: scnn if present, else the first design)")
    parser.add_argument("--sweep", type=Path, default=None,
                        help="an 'antsim sweep --export' folder (trials.csv, pareto.csv): adds Pareto plots")
    parser.add_argument("--out", type=Path, required=True,
                        help="report folder, e.g. reports/NAME (replaced if it holds an earlier report)")
    add_workload_arguments(parser)  # only to read .csv results when no .json result echoes the layers


def run(args: argparse.Namespace) -> int:
    from antsim.cli.compare import command_line
    from antsim.report.build import build_report, check_report_target
    from antsim.report.compare import compare_results, format_summary
    from antsim.report.inputs import load_results

    check_report_target(args.out, what="--out")
    if args.sweep is not None and not args.sweep.is_dir():
        raise AntsimError(f"--sweep {args.sweep}: not a folder")
    def fallback() -> list:  # layers for CSV results when no JSON result echoes them; the CSV's N is the batch
        return resolve_workload(args, batch_hint=csv_batch_hint(args.results))[0]

    results, sources = load_results(args.results, fallback_layers=fallback)
    comparison = compare_results(results, sources, baseline=args.baseline)
    build_report(comparison, args.out, sweep_dir=args.sweep, progress=_note, command=command_line())
    _note(f"report written to {args.out}/index.html")
    sys.stdout.write(format_summary(comparison) + "\n")
    return 0


def _note(message: str) -> None:
    sys.stderr.write(f"antsim: {message}\n")
    sys.stderr.flush()
