"""Sweep throughput and multi-fidelity savings (BENCHMARKS.md, section sweep).

Measures, each in a fresh SQLite study in a temporary folder, through the real ``antsim sweep`` command:
  1. sweeps/smoke.yaml: trials per minute with 1 and 2 worker processes;
  2. sweeps/resnet18_cifar_pareto.yaml with full evaluation of every trial (multi-fidelity off): trials per
     minute with 1 and 2 workers (a few trials only: one is ~30 s);
  3. multi-fidelity: the same random-sampler sweep (same seed → the same designs) on a reduced ResNet-18
     workload (8 convs of stages 2–4) run twice, with and without the proxy screen; reports the
     evaluations and evaluation time (wall and CPU seconds — only CPU seconds compare across runs on a
     shared machine) saved, and which designs of the full run's Pareto front the screen dropped.

  4. ``--screen-error N``: the analytic screen (``multi_fidelity.screen: analytic``) against the full model on
     N random designs of resnet18_cifar_pareto.yaml's space, in this process: per anticipation policy and
     objective, Spearman's rank correlation, the full/screen ratio's range and the calibrated |error|
     (each design scaled by the median ratio of the other designs of its policy), and CPU seconds of both;
  5. ``--screened-sweep N``: resnet18_cifar_pareto.yaml, random sampler (seed 7; ``--sampler spec``: its
     NSGA-II), ``--workers 2``, every trial full (``--unscreened-trials``, one run per ``--unscreened-timings``
     tier) and with the analytic screen (N trials, one run per ``--screened-variants AHEAD:TIMING``, i.e.
     ``multi_fidelity.screen_ahead`` and ``timing``): designs per minute, wall, steady and by evaluation CPU;
     then every design the screen pruned is evaluated in full here, the Pareto front of all N designs is
     compared with the front the screened run found and, with ``closed_form``, the found front is re-run
     through the discrete-event model.

Usage: .venv/bin/python scripts/bench_sweep.py [--resnet-trials 3] [--mf-trials 24] [--json out.json]
       .venv/bin/python scripts/bench_sweep.py --only-screen --screen-error 40 --screened-sweep 96
       .venv/bin/python scripts/bench_sweep.py --only-screen --screened-sweep 64 --unscreened-trials 24 \
           --unscreened-timings events closed_form --screened-variants 1:events 16:closed_form
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import optuna
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from antsim.dse import attrs  # noqa: E402
from antsim.dse.pareto import pareto_mask  # noqa: E402
from antsim.dse.storage import make_storage  # noqa: E402


def _spec_variant(src: Path, folder: Path, name: str, **changes: object) -> Path:
    data = yaml.safe_load(src.read_text())
    data["base_arch"] = str((src.parent / data["base_arch"]).resolve())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _run(spec: Path, db: Path, n_trials: int, workers: int) -> dict:
    cmd = [sys.executable, "-m", "antsim", "sweep", str(spec), "--storage", f"sqlite:///{db}",
           "--n-trials", str(n_trials), "--workers", str(workers)]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - start
    study = optuna.load_study(study_name=spec.stem, storage=make_storage(f"sqlite:///{db}", 60))
    trials = [t for t in study.get_trials() if t.datetime_complete is not None]
    span = (max(t.datetime_complete for t in trials) - min(t.datetime_start for t in trials)).total_seconds()
    # Evaluation CPU seconds (full + proxy/screen): the rate each worker would reach on a core of its own,
    # Optuna/SQLite bookkeeping and process start excluded — what compares across loads of a shared machine.
    cpu = sum((attrs.seconds(t, attrs.EVAL_CPU_S) or 0.0) + (attrs.seconds(t, attrs.PROXY_EVAL_CPU_S) or 0.0)
              for t in trials)
    return {"spec": spec.name, "workers": workers, "trials": len(trials), "wall_s": round(wall, 2),
            "trials_per_min_wall": round(60 * len(trials) / wall, 2),
            "trials_per_min_steady": round(60 * len(trials) / span, 2) if span > 0 else None,
            "eval_cpu_s": round(cpu, 2),
            "trials_per_min_eval_cpu": round(60 * len(trials) * workers / cpu, 2) if cpu > 0 else None}


def _throughput(folder: Path, spec: Path, n_trials: int, label: str) -> list[dict]:
    rows = []
    for workers in (1, 2):
        row = _run(spec, folder / f"{label}_w{workers}.db", n_trials, workers)
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def _mf_comparison(folder: Path, n_trials: int, proxy_layers: int) -> dict:
    src = REPO / "sweeps" / "resnet18_cifar_pareto.yaml"
    # A reduced ResNet-18 (one conv per stage + the stem) keeps the full-evaluation run to minutes.
    workload = yaml.safe_load(src.read_text())["workload"]
    workload["select"] = ["layer2.0.conv1", "layer2.1.conv2", "layer3.0.conv1", "layer3.0.downsample",
                          "layer3.1.conv2", "layer4.0.conv1", "layer4.0.downsample", "layer4.1.conv2"]
    base = {"sampler": {"name": "random"}, "workload": workload, "n_trials": n_trials, "seed": 7}
    mf = {"proxy_layers": proxy_layers, "warmup_trials": 6, "margin": 0.1}
    out = {}
    studies = {}
    for label, multi in (("full", None), ("screened", mf)):
        spec = _spec_variant(src, folder, f"mf_{label}", multi_fidelity=multi, **base)
        db = folder / f"mf_{label}.db"
        row = _run(spec, db, n_trials, 1)
        study = optuna.load_study(study_name=spec.stem, storage=make_storage(f"sqlite:///{db}", 60))
        trials = study.get_trials()
        studies[label] = trials
        for key, full_key, proxy_key in (("eval_s", attrs.EVAL_S, attrs.PROXY_EVAL_S),
                                         ("eval_cpu_s", attrs.EVAL_CPU_S, attrs.PROXY_EVAL_CPU_S)):
            row[key] = round(sum((attrs.seconds(t, full_key) or 0.0) + (attrs.seconds(t, proxy_key) or 0.0)
                                 for t in trials), 2)
        row["full_evaluations"] = sum(attrs.stage(t) == "full" for t in trials)
        row["screened"] = sum(attrs.stage(t) == "proxy" for t in trials)
        out[label] = row
        print(json.dumps(row), flush=True)
    out.update(_front_loss(studies["full"], studies["screened"]))
    out["eval_time_saving"] = round(1 - out["screened"]["eval_s"] / out["full"]["eval_s"], 3)
    out["eval_cpu_saving"] = round(1 - out["screened"]["eval_cpu_s"] / out["full"]["eval_cpu_s"], 3)
    out["wall_time_saving"] = round(1 - out["screened"]["wall_s"] / out["full"]["wall_s"], 3)
    return out


def _front_loss(full: list, screened: list) -> dict:
    """Designs on the full run's Pareto front (feasible) that the screen pruned (same params by number)."""
    feasible = [t for t in full if attrs.is_feasible(t) and t.values]
    directions = ["minimize"] * len(feasible[0].values) if feasible else []  # the spec minimises all three
    front = {t.number for t, on in zip(feasible, pareto_mask([t.values for t in feasible], directions),
                                       strict=True) if on} if feasible else set()
    by_number = {t.number: t for t in screened}
    same_params = all(by_number[t.number].params == t.params for t in full if t.number in by_number)
    lost = sorted(n for n in front if by_number.get(n) and attrs.stage(by_number[n]) == "proxy")
    return {"same_designs_in_both_runs": same_params, "full_front_size": len(front),
            "front_designs_screened_out": lost}


def _random_designs(n: int, seed: int) -> list[tuple[dict, object]]:
    """``n`` random designs of resnet18_cifar_pareto.yaml's space that the arch rules accept."""
    from antsim.dse.objective import build_arch, suggest
    from antsim.dse.spec import load_sweep
    from antsim.errors import SpecError

    spec = load_sweep(REPO / "sweeps" / "resnet18_cifar_pareto.yaml")
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed), directions=["minimize"] * 3)
    out: list[tuple[dict, object]] = []
    while len(out) < n:
        trial = study.ask()
        params = suggest(trial, spec)
        try:
            out.append((params, build_arch(spec, params, f"design{len(out)}")))
        except SpecError:
            pass
        study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    return out


def _screen_error(n: int, seed: int) -> dict:
    """Screen vs full model on ``n`` random designs (see the module docstring, item 4)."""
    from scipy.stats import spearmanr

    from antsim.dse import screen
    from antsim.dse.evaluators import simulator
    from antsim.dse.spec import load_sweep
    from antsim.dse.workload import resolve_workload
    from antsim.errors import MappingError

    spec = load_sweep(REPO / "sweeps" / "resnet18_cifar_pareto.yaml")
    workload = resolve_workload(spec)
    screen.workload_operands(workload, spec.seed, False)  # once per process, as a sweep worker does
    rows = []
    for params, arch in _random_designs(n, seed):
        cpu = time.process_time()
        est = screen.analytic_screen(arch, workload, spec.fidelity, spec.seed)
        screen_s, cpu = time.process_time() - cpu, time.process_time()
        try:
            full = simulator(arch, workload, spec.fidelity, spec.seed)
        except MappingError:
            continue
        rows.append({"policy": params["anticipation.policy"], "params": params, "screen": est, "full": full,
                     "screen_cpu_s": screen_s, "full_cpu_s": time.process_time() - cpu})
        print(json.dumps({"design": len(rows), **{k: rows[-1][k] for k in ("policy", "screen_cpu_s", "full_cpu_s")}}),
              flush=True)
    out: dict = {"designs": len(rows), "seed": seed, "replay_screen_ahead": _replay(spec, rows),
                 "screen_cpu_s_median": round(statistics.median(r["screen_cpu_s"] for r in rows), 3),
                 "full_cpu_s_median": round(statistics.median(r["full_cpu_s"] for r in rows), 3)}
    for policy in sorted({r["policy"] for r in rows}):
        mine = [r for r in rows if r["policy"] == policy]
        for metric in ("time_s", "energy_j", "area_mm2", "stationary_passes"):
            est = [r["screen"][metric] for r in mine]
            full = [r["full"][metric] for r in mine]
            ratios = [f / e for f, e in zip(full, est, strict=True)]
            # Leave-one-out calibration: each design scaled by the median ratio of the others of its policy.
            errors = [abs(e * statistics.median(ratios[:i] + ratios[i + 1:]) / f - 1)
                      for i, (e, f) in enumerate(zip(est, full, strict=True))] if len(mine) > 1 else [0.0]
            rho = spearmanr(est, full).statistic if len(set(full)) > 1 and len(set(est)) > 1 else None
            out[f"{policy}.{metric}"] = {
                "n": len(mine), "spearman": None if rho is None else round(float(rho), 3),
                "ratio_min": round(min(ratios), 3), "ratio_max": round(max(ratios), 3),
                "calibrated_abs_error_median": round(statistics.median(errors), 4),
                "calibrated_abs_error_max": round(max(errors), 4)}
    return out


def _variant(text: str) -> tuple[int, str]:
    """``AHEAD:TIMING`` (``16:closed_form``) → (screen_ahead, timing)."""
    ahead, _, timing = text.partition(":")
    if not ahead.isdigit() or int(ahead) < 1 or timing not in ("events", "closed_form"):
        raise argparse.ArgumentTypeError(f"{text!r}: want AHEAD:TIMING, AHEAD >= 1, TIMING events or closed_form")
    return int(ahead), timing


@dataclass
class _Replayed:
    """What the screening rules read of a trial (``antsim.dse.objective``), for the offline replay."""

    number: int
    params: dict
    user_attrs: dict
    values: tuple | None


def _replay(spec: object, rows: list[dict], sizes: tuple[int, ...] = (1, 8, 16, 32, 64)) -> dict:
    """Full evaluations each screen-ahead batch size needs on recorded designs (in their recorded order), and
    whether the front found is the front of all of them: the objective's own calibration and pruning rule,
    batches ordered by ``antsim.dse.ahead.promise`` (one worker; no timing)."""
    from antsim.dse.ahead import promise
    from antsim.dse.objective import Objective, constraint_values, screen_reason
    from antsim.dse.screen import EXACT_METRICS, analytic_screen

    objective = Objective(spec, None, None, screener=analytic_screen)  # type: ignore[arg-type]
    mf, names = spec.multi_fidelity, list(spec.objectives)  # type: ignore[attr-defined]

    def done(i: int) -> _Replayed:
        full = rows[i]["full"]
        return _Replayed(i, rows[i]["params"], {"metrics": full, "proxy_metrics": rows[i]["screen"],
                                                 "feasible": not constraint_values(spec, full)[1]},
                         tuple(full[m] for m in names))

    def front(trials: list[_Replayed]) -> set:
        feasible = [t for t in trials if t.user_attrs["feasible"]]
        mask = pareto_mask([list(t.values) for t in feasible], list(spec.objectives.values()))  # type: ignore[attr-defined]
        return {t.number for t, on in zip(feasible, mask, strict=True) if on}

    out = {}
    for size in sizes:
        calibrated: list[_Replayed] = []
        for start in range(0, len(rows), size):
            waiting = list(range(start, min(start + size, len(rows))))
            while waiting:
                estimates = {i: objective.estimate(rows[i]["params"], rows[i]["screen"], calibrated) for i in waiting}
                waiting = [i for i in waiting if estimates[i] is None or not screen_reason(
                    spec, estimates[i], calibrated, mf.margin, EXACT_METRICS, mf.margins)]
                if waiting:
                    best = min(waiting, key=lambda i: (promise(spec, estimates[i] or rows[i]["screen"]), i))
                    waiting.remove(best)
                    calibrated.append(done(best))
        out[str(size)] = {"full_evaluations": len(calibrated),
                          "front_equal": front(calibrated) == front([done(i) for i in range(len(rows))])}
    return out


def _screened_sweep(folder: Path, n_trials: int, unscreened_trials: int, unscreened_timings: list[str],
                    variants: list[tuple[int, str]], sampler: str, front_check: bool = True) -> dict:
    """Throughput with and without the analytic screen, and the front it finds (module docstring, item 5):
    one unscreened run per timing tier, one screened run per (screen_ahead, timing) variant, in this order."""
    src = REPO / "sweeps" / "resnet18_cifar_pareto.yaml"
    mf = yaml.safe_load(src.read_text()).get("multi_fidelity") or {}
    analytic = {"screen": "analytic", "warmup_trials": mf.get("warmup_trials", 8), "margin": mf.get("margin", 0.1),
                "margins": mf.get("margins", {})}
    base = {"sampler": {"name": "random"}, "seed": 7} if sampler == "random" else {}
    out: dict = {"multi_fidelity": analytic, "sampler": sampler, "unscreened": {}, "screened": {}}
    for timing in unscreened_timings if unscreened_trials else []:
        full_spec = _spec_variant(src, folder, f"rn18_unscreened_{timing}", multi_fidelity=None,
                                  n_trials=unscreened_trials, timing=timing, **base)
        row = out["unscreened"][timing] = _run(full_spec, folder / f"rn18_unscreened_{timing}.db", unscreened_trials, 2)
        row["load_after"] = round(os.getloadavg()[0], 2)
        print(json.dumps(row), flush=True)
    for ahead, timing in variants:
        label = f"{ahead}:{timing}"
        spec = _spec_variant(src, folder, f"rn18_screened_{ahead}_{timing}", n_trials=n_trials, timing=timing,
                             multi_fidelity={**analytic, "screen_ahead": ahead}, **base)
        db = folder / f"rn18_screened_{ahead}_{timing}.db"
        row = out["screened"][label] = _run(spec, db, n_trials, 2)
        trials = optuna.load_study(study_name=spec.stem, storage=make_storage(f"sqlite:///{db}", 60)).get_trials()
        row.update(full_evaluations=sum(attrs.stage(t) == "full" for t in trials),
                   screened=sum(attrs.stage(t) == "proxy" for t in trials),
                   screen_cpu_s=round(sum(attrs.seconds(t, attrs.PROXY_EVAL_CPU_S) or 0.0 for t in trials), 2),
                   full_cpu_s=round(sum(attrs.seconds(t, attrs.EVAL_CPU_S) or 0.0 for t in trials), 2),
                   load_after=round(os.getloadavg()[0], 2))
        print(json.dumps(row), flush=True)
        if front_check:
            row["front"] = _front_check(spec, trials)
            print(json.dumps(row["front"]), flush=True)
    return out


def _front_check(spec_path: Path, trials: list) -> dict:
    """Evaluate the screened designs in full (the sweep's timing tier); compare the front of every design with
    the screened run's. With ``timing: closed_form`` the found front is also re-run through the discrete-event
    model (``des_confirms_front``: every metric of every front design equal)."""
    from antsim.dse.evaluators import simulator
    from antsim.dse.objective import build_arch, complete_metrics, constraint_values
    from antsim.dse.spec import load_sweep
    from antsim.dse.workload import resolve_workload
    from antsim.errors import MappingError, SpecError

    spec = load_sweep(spec_path)
    workload = resolve_workload(spec)
    found, everything = {}, {}
    for t in trials:
        if attrs.stage(t) == "full" and attrs.is_feasible(t) and t.values:
            found[t.number] = everything[t.number] = list(t.values)
        elif attrs.stage(t) == "proxy":
            try:
                metrics = complete_metrics(simulator(build_arch(spec, t.params, f"check{t.number}"), workload,
                                                     spec.fidelity, spec.seed, timing=spec.timing))
            except (MappingError, SpecError):
                continue
            if not constraint_values(spec, metrics)[1]:
                everything[t.number] = [metrics[m] for m in spec.objectives]
    directions = list(spec.objectives.values())

    def front(points: dict) -> set:
        numbers = list(points)
        mask = pareto_mask([points[n] for n in numbers], directions) if numbers else []
        return {n for n, on in zip(numbers, mask, strict=True) if on}

    true_front, found_front = front(everything), front(found)
    out = {"true_front_size": len(true_front), "found_front_size": len(found_front),
           "true_front_designs_screened_out": sorted(true_front - found_front),
           "found_front_not_on_true_front": sorted(found_front - true_front)}
    if spec.timing != "events":
        by_number = {t.number: t for t in trials}
        out["des_confirms_front"] = all(
            complete_metrics(simulator(build_arch(spec, by_number[n].params, f"des{n}"), workload, spec.fidelity,
                                       spec.seed)) == attrs.metrics(by_number[n]) for n in sorted(found_front))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke-trials", type=int, default=24)
    parser.add_argument("--resnet-trials", type=int, default=3)
    parser.add_argument("--mf-trials", type=int, default=24)
    parser.add_argument("--mf-proxy-layers", type=int, default=2)
    parser.add_argument("--skip-resnet", action="store_true")
    parser.add_argument("--screen-error", type=int, default=0, metavar="N",
                        help="analytic screen vs full model on N random designs (0: skip)")
    parser.add_argument("--screen-seed", type=int, default=23, help="11 is the set the screen was tuned on")
    parser.add_argument("--screened-sweep", type=int, default=0, metavar="N",
                        help="2-worker resnet18 sweep of N trials with the analytic screen (0: skip)")
    parser.add_argument("--unscreened-trials", type=int, default=32, help="0: skip the unscreened run")
    parser.add_argument("--unscreened-timings", nargs="+", default=["events"], choices=["events", "closed_form"],
                        help="one unscreened run per timing tier")
    parser.add_argument("--screened-variants", nargs="+", type=_variant, default=[(1, "events")],
                        metavar="AHEAD:TIMING", help="one screened run per multi_fidelity.screen_ahead:timing")
    parser.add_argument("--sampler", choices=["random", "spec"], default="random",
                        help="random (seed 7, the default) or the spec's own sampler (NSGA-II) for the sweep runs")
    parser.add_argument("--only-screen", action="store_true", help="skip sections 1-3")
    parser.add_argument("--no-front-check", action="store_true",
                        help="--screened-sweep: throughput only (repeated runs; the front checked in another)")
    parser.add_argument("--json", type=Path, default=None, help="write all numbers here")
    args = parser.parse_args()
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
        folder = Path(tmp)
        if not args.only_screen:
            results["smoke"] = _throughput(folder, REPO / "sweeps" / "smoke.yaml", args.smoke_trials, "smoke")
        if not args.skip_resnet and not args.only_screen:
            full = _spec_variant(REPO / "sweeps" / "resnet18_cifar_pareto.yaml", folder, "resnet18_full",
                                 multi_fidelity=None)
            results["resnet18_full_eval"] = _throughput(folder, full, args.resnet_trials, "resnet18")
        if not args.only_screen:
            results["multi_fidelity"] = _mf_comparison(folder, args.mf_trials, args.mf_proxy_layers)
        if args.screen_error:
            results["screen_error"] = _screen_error(args.screen_error, args.screen_seed)
        if args.screened_sweep:
            results["screened_sweep"] = _screened_sweep(folder, args.screened_sweep, args.unscreened_trials,
                                                        args.unscreened_timings, args.screened_variants, args.sampler,
                                                        not args.no_front_check)
    print(json.dumps(results, indent=1))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
