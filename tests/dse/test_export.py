"""Export: trials.csv, a Pareto set checked by brute-force dominance, re-runnable arch YAMLs, figure data."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import optuna
import pytest
from sweep_helpers import write_spec

from antsim.cli import main
from antsim.dse.evaluators import analytic
from antsim.dse.export import export_study
from antsim.dse.figures import _get_importance_info, render_pareto, render_tradeoffs, sweep_info
from antsim.dse.objective import complete_metrics
from antsim.dse.progress import progress_line
from antsim.dse.spec import load_sweep
from antsim.dse.storage import make_storage
from antsim.dse.workload import resolve_workload
from antsim.report.figures import figure_bytes
from antsim.report.sweep import _get_sweep_info
from antsim.spec.arch import load_arch


def _dominates(a: list[float], b: list[float]) -> bool:
    return all(x <= y for x, y in zip(a, b, strict=True)) and any(x < y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("export")
    # power_w is maximised to check that directions are honoured; area ≤ 40 mm² and a 4 KB buffer floor
    # make some trials infeasible.
    spec = write_spec(folder, "exp", n_trials=40, sampler="random",
                      objectives={"time_s": "min", "area_mm2": "min", "power_w": "max"})
    out = folder / "out"
    assert main(["sweep", str(spec), "--export", str(out)]) == 0
    return spec, out


def _rows(out: Path) -> list[dict[str, str]]:
    with (out / "trials.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_trials_csv_records_every_trial_with_reason(exported: tuple[Path, Path]) -> None:
    _, out = exported
    rows = _rows(out)
    assert [int(r["number"]) for r in rows] == list(range(40))
    pruned = [r for r in rows if r["state"] == "PRUNED"]
    violated = [r for r in rows if r["state"] == "COMPLETE" and r["feasible"] == "False"]
    assert pruned and all(r["reason"].startswith("mapping: input buffer") for r in pruned)
    assert all(float(r["param.buffers.input_kb"]) < 4 for r in pruned)
    assert violated and all("area_mm2" in r["reason"] and float(r["objective.area_mm2"]) > 40 for r in violated)


def test_pareto_set_is_exactly_the_non_dominated_feasible_trials(exported: tuple[Path, Path]) -> None:
    _, out = exported
    feasible = {int(r["number"]): [float(r["objective.time_s"]), float(r["objective.area_mm2"]),
                                   -float(r["objective.power_w"])]
                for r in _rows(out) if r["state"] == "COMPLETE" and r["feasible"] == "True"}
    brute = {n for n, p in feasible.items() if not any(_dominates(q, p) for q in feasible.values())}
    pareto = json.loads((out / "pareto.json").read_text())
    numbers = {p["number"] for p in pareto["points"]}
    assert numbers == brute and 1 <= len(numbers) < len(feasible)
    with (out / "pareto.csv").open() as handle:
        assert {int(r["number"]) for r in csv.DictReader(handle)} == brute


def test_exported_arch_reloads_and_reproduces_objectives(exported: tuple[Path, Path]) -> None:
    spec_path, out = exported
    spec = load_sweep(spec_path)
    workload = resolve_workload(spec)
    for point in json.loads((out / "pareto.json").read_text())["points"]:
        arch = load_arch(out / point["arch"])
        for path, value in point["params"].items():
            section, leaf = path.split(".")
            assert getattr(getattr(arch, section), leaf) == value
        metrics = complete_metrics(analytic(arch, workload, spec.fidelity, spec.seed, min_input_bytes_per_pe=4096))
        assert {k: metrics[k] for k in point["objectives"]} == point["objectives"]


def test_figures_written_and_figure_data_matches_pareto(exported: tuple[Path, Path]) -> None:
    spec_path, out = exported
    for name in ("pareto.png", "tradeoff.png", "importance.png", "history.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    spec = load_sweep(spec_path)
    study = optuna.load_study(study_name="exp", storage=make_storage(
        f"sqlite:///{spec_path.parent / 'results' / 'exp.db'}", 60))
    info = sweep_info(spec, study.get_trials())
    pareto = json.loads((out / "pareto.json").read_text())["points"]
    assert info.numbers[info.pareto].tolist() == [p["number"] for p in pareto]


def _study_info(spec_path: Path):  # type: ignore[no-untyped-def]
    study = optuna.load_study(study_name="exp", storage=make_storage(
        f"sqlite:///{spec_path.parent / 'results' / 'exp.db'}", 60))
    return sweep_info(load_sweep(spec_path), study.get_trials())


def test_the_report_reads_the_export_into_the_same_info_and_draws_the_same_figures(
        exported: tuple[Path, Path]) -> None:
    spec_path, out = exported
    mine, read = _study_info(spec_path), _get_sweep_info(out)
    assert (read.objectives, read.directions, read.evaluator) == (mine.objectives, mine.directions, mine.evaluator)
    assert read.directions == ("minimize", "minimize", "maximize")
    for field in ("numbers", "values", "feasible", "pareto"):
        np.testing.assert_array_equal(getattr(read, field), getattr(mine, field), err_msg=field)
    assert 1 <= read.pareto.sum() < read.feasible.sum() < len(read.numbers)
    # one renderer: the report's figure of the exported folder is the export's own figure, byte for byte
    assert figure_bytes(render_pareto(read), "png") == (out / "pareto.png").read_bytes()
    assert figure_bytes(render_tradeoffs(read), "png") == (out / "tradeoff.png").read_bytes()


def test_the_progress_line_counts_the_same_mixed_direction_front(exported: tuple[Path, Path]) -> None:
    spec_path, out = exported
    study = optuna.load_study(study_name="exp", storage=make_storage(
        f"sqlite:///{spec_path.parent / 'results' / 'exp.db'}", 60))
    line, _ = progress_line(study, load_sweep(spec_path), 40, 0, 1.0)
    assert f"| Pareto {len(json.loads((out / 'pareto.json').read_text())['points'])} |" in line


def test_without_pareto_csv_the_report_computes_the_same_mixed_direction_front(exported: tuple[Path, Path],
                                                                               tmp_path: Path) -> None:
    spec_path, out = exported
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (copy / "pareto.csv").unlink()  # the front now comes from pareto_mask and pareto.json's directions
    read, mine = _get_sweep_info(copy), _study_info(spec_path)
    np.testing.assert_array_equal(read.pareto, mine.pareto)
    (copy / "pareto.json").unlink()  # no record of the directions: every metric minimised, another front
    assert _get_sweep_info(copy).directions == ("minimize",) * 3
    assert not np.array_equal(_get_sweep_info(copy).pareto, mine.pareto)


def test_importance_with_too_few_trials_is_a_note_not_a_crash(tmp_path: Path) -> None:
    spec_path = write_spec(tmp_path, "one", n_trials=1)
    assert main(["sweep", str(spec_path), "--export", str(tmp_path / "o")]) == 0
    spec = load_sweep(spec_path)
    study = optuna.load_study(study_name="one", storage=make_storage(f"sqlite:///{tmp_path / 'results/one.db'}", 60))
    info = _get_importance_info(spec, study)
    assert all(not imp for imp in info.importances) and all("not computable" in n for n in info.notes)
    assert (tmp_path / "o" / "importance.png").exists()


def test_export_of_missing_study_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    spec_path = write_spec(tmp_path, "nostudy")
    assert main(["sweep", str(spec_path), "--export", str(tmp_path / "o"), "--export-only"]) == 2
    assert "no such study" in capsys.readouterr().err
    with pytest.raises(Exception, match="no such study"):
        export_study(load_sweep(spec_path), f"sqlite:///{tmp_path / 'x.db'}", "nostudy", tmp_path / "o")


def test_same_seed_same_trials(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "det", n_trials=8)
    runs = []
    for i in range(2):
        out = tmp_path / f"o{i}"
        assert main(["sweep", str(spec), "--storage", f"sqlite:///{tmp_path / f'd{i}.db'}", "--export", str(out),
                     "--no-figures"]) == 0
        runs.append([{k: v for k, v in r.items() if k.startswith(("param.", "objective.", "state", "reason"))}
                     for r in _rows(out)])
    assert runs[0] == runs[1] and len(runs[0]) == 8
    assert (tmp_path / "o0" / "pareto.json").read_text() == (tmp_path / "o1" / "pareto.json").read_text()


def _expected_outcomes(rows: list[dict[str, str]]) -> dict[str, int]:
    """Brute force from trials.csv: a refused design (PRUNED by a rule, or COMPLETE with a broken
    constraint) is infeasible; a multi-fidelity skip is screened."""
    screened = sum(r["state"] == "PRUNED" and r["reason"].startswith("screened:") for r in rows)
    pruned = sum(r["state"] == "PRUNED" for r in rows) - screened
    broken = sum(r["state"] == "COMPLETE" and r["feasible"] == "False" for r in rows)
    feasible = sum(r["state"] == "COMPLETE" and r["feasible"] == "True" for r in rows)
    return {"feasible": feasible, "infeasible": pruned + broken, "screened": screened}


def test_infeasible_trials_are_counted_as_infeasible(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    spec = write_spec(tmp_path, "inf", n_trials=30, sampler="random")
    out = tmp_path / "o"
    assert main(["sweep", str(spec), "--export", str(out), "--no-figures"]) == 0
    captured = capsys.readouterr()
    want = _expected_outcomes(_rows(out))
    assert want["infeasible"] > 0 and want["feasible"] > 0  # the fixture spec refuses some designs both ways
    summary = json.loads((out / "summary.json").read_text())
    assert {k: summary[k] for k in want} == want
    line = (f"30/30 trials finished ({want['feasible']} feasible, {want['infeasible']} infeasible, "
            f"{want['screened']} screened, 0 failed)")
    assert line in captured.out
    last_progress = [x for x in captured.err.splitlines() if x.startswith("[sweep inf]")][-1]
    assert f"({want['feasible']} feasible, {want['infeasible']} infeasible," in last_progress


def test_a_resumed_run_counts_the_fail_it_found(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    spec = write_spec(tmp_path, "res", n_trials=3)
    assert main(["sweep", str(spec), "--no-figures"]) == 0
    url = f"sqlite:///{tmp_path / 'results' / 'res.db'}"
    study = optuna.load_study(study_name="res", storage=url)
    lost = study.ask()  # a trial whose worker was killed: FAIL without an evaluator error
    study.tell(lost, state=optuna.trial.TrialState.FAIL)
    capsys.readouterr()
    assert main(["sweep", str(spec), "--n-trials", "4", "--no-figures"]) == 0
    out = capsys.readouterr().out
    assert "4/4 trials finished" in out and "1 FAIL trial(s) found from an earlier run (redone)" in out
    assert "1 run now" in out


def test_objective_names_are_set_on_the_study(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "names", n_trials=2, objectives={"time_s": "min", "power_w": "max"})
    assert main(["sweep", str(spec), "--no-figures"]) == 0
    study = optuna.load_study(study_name="names", storage=f"sqlite:///{tmp_path / 'results' / 'names.db'}")
    assert study.metric_names == ["time_s", "power_w"]


def test_summary_records_the_workload_the_trials_ran(exported: tuple[Path, Path]) -> None:
    spec_path, out = exported
    workload = resolve_workload(load_sweep(spec_path))
    recorded = json.loads((out / "summary.json").read_text())["workload"]
    assert recorded["layers"] == [layer.to_dict() for layer in workload.layers]
    assert recorded["phases"] == list(workload.phases)
