"""End to end with the real simulator: sweeps/smoke.yaml, export, and `antsim simulate` on a Pareto arch."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import optuna
import yaml
from sweep_helpers import REPO

from antsim.cli import main
from antsim.dse import attrs
from antsim.dse.spec import load_sweep
from antsim.dse.storage import make_storage
from antsim.dse.workload import resolve_workload


def test_smoke_sweep_with_simulator_and_rerun_of_exported_arch(tmp_path: Path) -> None:
    spec_path = REPO / "sweeps" / "smoke.yaml"
    out = tmp_path / "out"
    assert main(["sweep", str(spec_path), "--storage", f"sqlite:///{tmp_path / 'smoke.db'}", "--n-trials", "5",
                 "--export", str(out), "--no-figures"]) == 0
    with (out / "trials.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 5 and all(r["state"] in ("COMPLETE", "PRUNED") for r in rows)
    complete = [r for r in rows if r["state"] == "COMPLETE"]
    assert complete and all(float(r["metric.time_s"]) > 0 and float(r["metric.energy_j"]) > 0 for r in complete)
    point = json.loads((out / "pareto.json").read_text())["points"][0]
    # The same layers as a layers CSV, so `antsim simulate` sees them in the same order (same operand seeds).
    spec = load_sweep(spec_path)
    layers_csv = tmp_path / "layers.csv"
    with layers_csv.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "N", "C", "K", "H", "W", "R", "S", "stride", "pad"])
        for la in resolve_workload(spec).layers:
            writer.writerow([la.name, la.N, la.C, la.K, la.H, la.W, la.R, la.S, la.stride[0], la.pad[0]])
    result = tmp_path / "rerun.json"
    assert main(["simulate", "--arch", str(out / point["arch"]), "--layers-csv", str(layers_csv),
                 "--seed", str(spec.seed), "--sparsity", spec.workload.sparsity, "--out", str(result),
                 "--no-progress"]) == 0
    totals = json.loads(result.read_text())["totals"]
    assert {k: totals[k] for k in ("time_s", "energy_j", "area_mm2")} == point["objectives"]


def _smoke_variant(tmp_path: Path, name: str, **changes: object) -> Path:
    data = yaml.safe_load((REPO / "sweeps" / "smoke.yaml").read_text())
    data["base_arch"] = str((REPO / "sweeps" / data["base_arch"]).resolve())
    data.update(changes)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_closed_form_timing_gives_the_event_models_trials_and_is_echoed(tmp_path: Path) -> None:
    """``timing: closed_form``: the same designs get the event model's metrics (docs/timing_tier.md: equal on
    the zoo), the export and the study signature say which tier priced them, and a study made with one tier
    is not resumed with the other."""
    db = f"sqlite:///{tmp_path / 'timing.db'}"
    metrics = {}
    for timing in ("events", "closed_form"):
        spec = _smoke_variant(tmp_path, f"smoke_{timing}", timing=timing)
        out = tmp_path / f"out_{timing}"
        assert main(["sweep", str(spec), "--storage", db, "--n-trials", "6", "--export", str(out),
                     "--no-figures"]) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["evaluator"].get("timing") == (None if timing == "events" else timing)
        study = optuna.load_study(study_name=spec.stem, storage=make_storage(db, 60))
        assert ('"timing": "closed_form"' in (attrs.study_signature(study) or "")) == (timing == "closed_form")
        metrics[timing] = {t.number: (t.params, attrs.metrics(t)) for t in study.get_trials()}
    assert sum(m is not None for _, m in metrics["events"].values()) >= 3
    assert metrics["closed_form"] == metrics["events"]
    # the closed_form study resumed by the events spec (same name): refused, the tiers are not mixed
    (tmp_path / "again").mkdir()
    resumed = _smoke_variant(tmp_path / "again", "smoke_closed_form")
    assert main(["sweep", str(resumed), "--storage", db, "--n-trials", "7"]) == 2
