"""``antsim sweep SPEC``: an Optuna design-space sweep (create or resume), and its export."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from antsim.cli._common import seed_value
from antsim.errors import AntsimError

HELP = "run or resume an Optuna design-space sweep (area / energy / speed) and export its Pareto set"
# An error's subject (antsim.errors.AntsimError) -> the flag that gave it; main() adds it to the message.
FLAGS = {"storage": "--storage", "study": "--study", "export": "--export", "force": "{message} (--force)"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", type=Path, help="sweep YAML (kind: sweep), e.g. sweeps/smoke.yaml")
    parser.add_argument("--storage", default=None,
                        help="Optuna RDB URL (default sqlite:///<spec folder>/results/<spec stem>.db; "
                             "postgresql://user@host:port/db for many machines)")
    parser.add_argument("--study", default=None, help="study name (default: the spec file's stem)")
    parser.add_argument("--n-trials", type=int, default=None,
                        help="finished trials the study should hold in total (default: the spec's n_trials)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="stop starting trials after this many seconds (default: the spec's timeout_s)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes on this machine (default 1)")
    parser.add_argument("--seed", type=seed_value, default=None, help="sampler seed (default: the spec's seed)")
    parser.add_argument("--heartbeat", type=int, default=5,
                        help="trial heartbeat interval in s; a killed worker's trial is failed after 3 missed "
                             "beats (default 5)")
    parser.add_argument("--export", type=Path, default=None, metavar="DIR",
                        help="after running, write trials.csv, pareto.csv/json, arch_trial<N>.yaml, figures")
    parser.add_argument("--export-only", action="store_true", help="with --export: export without running trials")
    parser.add_argument("--no-figures", action="store_true", help="export tables only (no matplotlib)")
    from antsim.cli.simulate import add_force_argument

    add_force_argument(parser)


def _guard(spec, opts, force: bool) -> None:  # (SweepSpec, SweepOptions)
    """The resource guard on the base arch and the full workload (simulator trials only), ``workers`` at once."""
    if spec.evaluator.name != "simulator" or spec.base_arch_spec is None:
        return
    from antsim.dse.workload import resolve_workload
    from antsim.guard import guard_run

    workload = resolve_workload(spec)
    guard_run([spec.base_arch_spec], workload.layers, workload.phases, workload.densities, None, spec.fidelity,
              concurrent=opts.workers, force=force)


def _options(args: argparse.Namespace):  # -> tuple[SweepSpec, SweepOptions]
    from antsim.dse.runner import SweepOptions
    from antsim.dse.spec import load_sweep
    from antsim.dse.storage import default_storage_url, normalise_url

    for flag, value, low in (("--n-trials", args.n_trials, 1), ("--workers", args.workers, 1),
                             ("--heartbeat", args.heartbeat, 1)):
        if value is not None and value < low:
            raise AntsimError(f"{flag} must be >= {low}; got {value}")
    if args.timeout is not None and args.timeout <= 0:
        raise AntsimError(f"--timeout must be > 0; got {args.timeout}")
    spec = load_sweep(args.spec)  # validates everything before any storage is touched
    url = args.storage or default_storage_url(args.spec)
    normalise_url(url)
    opts = SweepOptions(storage_url=url, study_name=args.study or spec.stem,
                        n_trials=args.n_trials or spec.n_trials,
                        timeout_s=args.timeout if args.timeout is not None else spec.timeout_s,
                        workers=args.workers, seed=spec.seed if args.seed is None else args.seed,
                        heartbeat_s=args.heartbeat)
    return spec, opts


def run(args: argparse.Namespace) -> int:
    from antsim.dse.runner import effective_trials, run_sweep

    spec, opts = _options(args)
    if args.export_only and args.export is None:
        raise AntsimError("--export-only needs --export DIR")
    if args.export is not None:
        from antsim.dse.export import check_export_target

        check_export_target(args.export)  # before any trial runs: an export that could not be written fails now

    def report(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    if not args.export_only:
        _guard(spec, opts, args.force)
        summary = run_sweep(spec, opts, progress=report)
        o = summary.outcomes
        found = (f"; {summary.found_failed} FAIL trial(s) found from an earlier run (redone)"
                 if summary.found_failed else "")
        if summary.lost_workers:
            report(f"antsim sweep: {'; '.join(summary.lost_workers)}; the other workers redid its trial and "
                   "finished the study")
        sys.stdout.write(f"study {opts.study_name} ({opts.storage_url}): {o.finished}/"
                         f"{effective_trials(spec, opts.n_trials)} trials finished ({o.describe()}){found}; "
                         f"{summary.ran} run now in {summary.elapsed_s:.1f} s\n")
    if args.export is not None:
        from antsim.dse.export import export_study

        written = export_study(spec, opts.storage_url, opts.study_name, args.export, figures=not args.no_figures)
        sys.stdout.write(f"exported {len(written)} files to {args.export}\n")
    return 0
