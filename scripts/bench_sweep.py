"""Sweep throughput and multi-fidelity savings (BENCHMARKS.md, section sweep).

Measures, each in a fresh SQLite study in a temporary folder, through the real ``antsim sweep`` command:
  1. sweeps/smoke.yaml: trials per minute with 1 and 2 worker processes;
  2. sweeps/resnet18_cifar_pareto.yaml with full evaluation of every trial (multi-fidelity off): trials per
     minute with 1 and 2 workers (a few trials only: one is ~30 s);
  3. multi-fidelity: the same random-sampler sweep (same seed → the same designs) on a reduced ResNet-18
     workload (8 convs of stages 2–4) run twice, with and without the proxy screen; reports the
     evaluations and evaluation time (wall and CPU seconds — only CPU seconds compare across runs on a
     shared machine) saved, and which designs of the full run's Pareto front the screen dropped.

Usage: .venv/bin/python scripts/bench_sweep.py [--resnet-trials 3] [--mf-trials 24] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
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
    return {"spec": spec.name, "workers": workers, "trials": len(trials), "wall_s": round(wall, 2),
            "trials_per_min_wall": round(60 * len(trials) / wall, 2),
            "trials_per_min_steady": round(60 * len(trials) / span, 2) if span > 0 else None}


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke-trials", type=int, default=24)
    parser.add_argument("--resnet-trials", type=int, default=3)
    parser.add_argument("--mf-trials", type=int, default=24)
    parser.add_argument("--mf-proxy-layers", type=int, default=2)
    parser.add_argument("--skip-resnet", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="write all numbers here")
    args = parser.parse_args()
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
        folder = Path(tmp)
        results["smoke"] = _throughput(folder, REPO / "sweeps" / "smoke.yaml", args.smoke_trials, "smoke")
        if not args.skip_resnet:
            full = _spec_variant(REPO / "sweeps" / "resnet18_cifar_pareto.yaml", folder, "resnet18_full",
                                 multi_fidelity=None)
            results["resnet18_full_eval"] = _throughput(folder, full, args.resnet_trials, "resnet18")
        results["multi_fidelity"] = _mf_comparison(folder, args.mf_trials, args.mf_proxy_layers)
    print(json.dumps(results, indent=1))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
