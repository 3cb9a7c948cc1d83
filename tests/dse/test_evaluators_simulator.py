"""End to end with the real simulator: sweeps/smoke.yaml, export, and `antsim simulate` on a Pareto arch."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from sweep_helpers import REPO

from antsim.cli import main
from antsim.dse.spec import load_sweep
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
