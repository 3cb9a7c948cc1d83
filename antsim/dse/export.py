"""Exporting a study: ``trials.csv``, ``pareto.csv`` / ``pareto.json``, one arch YAML per Pareto point,
``summary.json`` (counts, multi-fidelity savings) and figures (``antsim.dse.figures``)."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import statistics
import tempfile
import warnings
from pathlib import Path
from typing import Any

import optuna
import yaml
from optuna.trial import FrozenTrial, TrialState

from antsim.dse import attrs
from antsim.dse import storage as st
from antsim.dse.figures import write_figures
from antsim.dse.metrics import objective_column
from antsim.dse.objective import arch_dict
from antsim.dse.pareto import pareto_trials
from antsim.dse.progress import trial_outcomes
from antsim.dse.spec import SweepSpec
from antsim.dse.workload import export_echo, resolve_workload
from antsim.errors import AntsimError
from antsim.results import write_text_atomic


def load_existing_study(url: str, study_name: str) -> optuna.Study:
    """Load a study without creating anything.

    Raises:
        AntsimError: no such study in the storage.
    """
    names = st.study_names(url)
    if study_name not in names:
        raise AntsimError(f"study {study_name!r}: no such study in {url}; known: {', '.join(names) or 'none'}",
                          subject="study")
    return optuna.load_study(study_name=study_name, storage=st.make_storage(url, heartbeat_s=60))


def trial_row(spec: SweepSpec, t: FrozenTrial) -> dict[str, Any]:
    """One flat row per trial: identity, parameters, objectives, feasibility, metrics, user attributes."""
    row: dict[str, Any] = {"number": t.number, "state": t.state.name,
                           "duration_s": t.duration.total_seconds() if t.duration else None}
    row.update({f"param.{k}": t.params.get(k) for k in spec.space})
    values = t.values or [None] * len(spec.objectives)
    row.update({objective_column(k): v for k, v in zip(spec.objectives, values, strict=True)})
    row["feasible"] = attrs.is_feasible(t) if t.state == TrialState.COMPLETE else False
    reason = attrs.reason(t) or attrs.error(t) or ""
    if t.state == TrialState.FAIL and attrs.error(t) is None:
        reason = "abandoned: worker died mid-trial (stale heartbeat)"
    row.update({"reason": reason, "stage": attrs.stage(t), "eval_s": attrs.seconds(t, attrs.EVAL_S),
                "proxy_eval_s": attrs.seconds(t, attrs.PROXY_EVAL_S), "worker": attrs.worker(t) or ""})
    for prefix, values in (("metric", attrs.metrics(t)), ("proxy", attrs.proxy_metrics(t)),
                           ("estimate", attrs.estimate(t))):
        row.update({f"{prefix}.{k}": v for k, v in (values or {}).items()})
    return row


def _csv(rows: list[dict[str, Any]]) -> str:
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n", restval="")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def multi_fidelity_summary(trials: list[FrozenTrial]) -> dict[str, Any]:
    """Evaluations and evaluation time (wall and CPU seconds) spent, and what a full evaluation of every
    evaluated trial would have cost (mean full-evaluation time × trials)."""
    evaluated = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    full = [t for t in evaluated if attrs.stage(t) == "full"]
    screened = [t for t in evaluated if attrs.stage(t) == "proxy"]
    proxied = sum(attrs.seconds(t, attrs.PROXY_EVAL_S) is not None for t in evaluated)
    out: dict[str, Any] = {"full_evaluations": len(full), "screened_by_proxy": len(screened),
                           "proxy_evaluations": proxied}
    for unit, full_key, proxy_key in (("seconds", attrs.EVAL_S, attrs.PROXY_EVAL_S),
                                      ("cpu_seconds", attrs.EVAL_CPU_S, attrs.PROXY_EVAL_CPU_S)):
        full_s = [s for t in full if (s := attrs.seconds(t, full_key)) is not None]
        spent = sum(full_s) + sum(attrs.seconds(t, proxy_key) or 0.0 for t in evaluated)
        would = statistics.mean(full_s) * (len(full) + len(screened)) if full_s else None
        out[f"eval_{unit}"] = spent
        out[f"eval_{unit}_if_all_full"] = would
        out[f"saving_fraction_{unit}"] = (1 - spent / would) if would else None
    return out


def export_study(spec: SweepSpec, url: str, study_name: str, folder: Path, figures: bool = True) -> list[Path]:
    """Write the study's tables, Pareto archs and figures to ``folder``; return the paths written.

    Raises:
        AntsimError: no such study.
    """
    study = load_existing_study(url, study_name)
    trials = study.get_trials(deepcopy=False)
    final = folder
    check_export_target(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    # Built beside the target and renamed into place, so no file of an earlier export (a stale
    # arch_trialN.yaml, old figures) survives next to the new tables, and an error leaves the old export.
    folder = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        written = _export_into(spec, study, trials, url, study_name, folder, figures)
        (folder / EXPORT_MANIFEST).write_text(json.dumps(
            {"schema": "antsim.sweep-export/1", "files": sorted(p.name for p in written)}, indent=1) + "\n")
        folder.chmod(0o755)
        old = final.parent / f".{final.name}.old-{os.getpid()}"
        if final.exists():
            final.rename(old)
        folder.rename(final)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return [final / p.name for p in written]


EXPORT_MANIFEST = ".antsim-export.json"  # lists the files an export wrote; only such a folder is replaced


def check_export_target(folder: Path) -> None:
    """Refuse to replace anything but a missing or empty folder, or an export holding only its own files.

    Raises:
        AntsimError: ``folder`` is a file, a non-empty folder without the export manifest, or an export
            holding a file it did not write.
    """
    if folder.exists() and not folder.is_dir():
        raise AntsimError(f"export folder {folder}: exists and is not a folder", subject="export")
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    try:
        listed = set(json.loads((folder / EXPORT_MANIFEST).read_text(encoding="utf-8"))["files"])
    except (OSError, ValueError, KeyError, TypeError):
        raise AntsimError(f"export folder {folder}: exists and holds no {EXPORT_MANIFEST} (not an antsim sweep"
                          " export); refusing to replace it", subject="export") from None
    for path in sorted(folder.iterdir()):
        if path.name != EXPORT_MANIFEST and path.name not in listed:
            raise AntsimError(f"export folder {folder}: holds {path.name}, which the export did not write; refusing"
                              " to replace the folder", subject="export")


def _export_into(spec: SweepSpec, study: optuna.Study, trials: list[FrozenTrial], url: str, study_name: str,
                 folder: Path, figures: bool) -> list[Path]:
    written = [folder / "trials.csv"]
    write_text_atomic(written[0], _csv([trial_row(spec, t) for t in trials]))
    points: list[dict[str, Any]] = []
    for t in pareto_trials(spec, trials):
        name = attrs.arch_name(t) or f"trial{t.number}"
        arch_path = folder / f"arch_trial{t.number}.yaml"
        write_text_atomic(arch_path, yaml.safe_dump(arch_dict(spec, t.params, name), sort_keys=False))
        written.append(arch_path)
        points.append({"number": t.number, "params": t.params,
                       "objectives": dict(zip(spec.objectives, t.values, strict=True)),
                       "metrics": attrs.metrics(t) or {}, "arch": arch_path.name})
    rows = [{"number": p["number"], **{f"param.{k}": v for k, v in p["params"].items()},
             **{objective_column(k): v for k, v in p["objectives"].items()}, "arch": p["arch"]} for p in points]
    write_text_atomic(folder / "pareto.csv", _csv(rows) if rows else "number\n")
    doc = {"study": study_name, "objectives": spec.objectives, "points": points}
    write_text_atomic(folder / "pareto.json", json.dumps(doc, indent=1, sort_keys=True) + "\n")
    counts = st.count_trials(study)
    outcomes = trial_outcomes(trials)
    workload = resolve_workload(spec)
    summary = {"study": study_name, "storage": url, "trials": len(trials), "finished": counts.finished,
               # what the trials ran on: `antsim report --sweep` refuses an export of another workload
               "workload": export_echo(workload),
               # which model priced the trials: the report says so beside its own (simulated) designs
               "evaluator": {"name": spec.evaluator.name, "fidelity": spec.fidelity,
                             **({"timing": spec.timing} if spec.timing != "events" else {})},
               "complete": counts.complete, "pruned": counts.pruned, "failed": counts.errors,
               "abandoned": counts.abandoned, "running": counts.running, "pareto_size": len(points),
               "feasible": outcomes.feasible, "infeasible": outcomes.infeasible, "screened": outcomes.screened,
               "multi_fidelity": multi_fidelity_summary(trials)}
    write_text_atomic(folder / "summary.json", json.dumps(summary, indent=1, sort_keys=True) + "\n")
    written += [folder / "pareto.csv", folder / "pareto.json", folder / "summary.json"]
    if figures:
        with warnings.catch_warnings():  # importance evaluators warn about few trials; the figure says so
            warnings.simplefilter("ignore")
            written += write_figures(spec, study, trials, folder)
    return written
