"""Multi-fidelity screening: scaling, the dominance-with-margin rule, and a screened sweep (the proxy workload is
in test_workload.py)."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from optuna.distributions import IntDistribution
from optuna.trial import TrialState
from sweep_helpers import write_spec

from antsim.cli import main
from antsim.dse.evaluators import analytic
from antsim.dse.objective import build_arch, complete_metrics, scale_proxy, screen_reason
from antsim.dse.spec import load_sweep
from antsim.dse.storage import make_storage
from antsim.dse.workload import proxy_workload, resolve_workload


def _trial(number: int, values: list[float], metrics: dict, proxy: dict) -> optuna.trial.FrozenTrial:
    trial = optuna.trial.create_trial(values=values, params={"x": 1}, distributions={"x": IntDistribution(0, 2)},
                                      user_attrs={"metrics": metrics, "proxy_metrics": proxy, "feasible": True})
    trial.number = number
    return trial


def test_scale_proxy_uses_median_full_over_proxy_ratio() -> None:
    calibrated = [_trial(i, [1.0], {"time_s": r * 2.0}, {"time_s": 2.0}) for i, r in enumerate((3.0, 5.0, 100.0))]
    assert scale_proxy({"time_s": 0.5}, calibrated) == {"time_s": 0.5 * 5.0}


def test_screen_rule_dominance_with_margin(tmp_path: Path) -> None:
    spec = load_sweep(write_spec(tmp_path, objectives={"time_s": "min", "power_w": "max"}, constraints={}))
    best = _trial(7, [1.0, 10.0], {}, {})
    # Dominated by more than the 10 % margin in both objectives → screened, naming the trial.
    assert "trial 7" in screen_reason(spec, {"time_s": 1.2, "power_w": 8.0}, [best], margin=0.1)
    # Within the margin in one objective → kept for a full evaluation.
    assert screen_reason(spec, {"time_s": 1.05, "power_w": 8.0}, [best], margin=0.1) == ""
    assert screen_reason(spec, {"time_s": 1.2, "power_w": 9.5}, [best], margin=0.1) == ""


def test_screen_rule_constraint(tmp_path: Path) -> None:
    spec = load_sweep(write_spec(tmp_path))  # area_mm2 ≤ 40
    assert "constraint" in screen_reason(spec, {"time_s": 1, "energy_j": 1, "area_mm2": 45.0}, [], margin=0.1)
    assert screen_reason(spec, {"time_s": 1, "energy_j": 1, "area_mm2": 43.0}, [], margin=0.1) == ""


@pytest.fixture(scope="module")
def screened(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("mf")
    spec = write_spec(folder, "mf", n_trials=30, sampler="random",
                      multi_fidelity={"proxy_layers": 1, "warmup_trials": 4, "margin": 0.05})
    assert main(["sweep", str(spec), "--export", str(folder / "out"), "--no-figures"]) == 0
    return spec, folder


def test_screened_trials_are_pruned_with_their_estimate(screened: tuple[Path, Path]) -> None:
    spec_path, folder = screened
    spec = load_sweep(spec_path)
    study = optuna.load_study(study_name="mf", storage=make_storage(f"sqlite:///{folder / 'results/mf.db'}", 60))
    trials = study.get_trials()
    stages = [t.user_attrs.get("stage") for t in trials]
    assert stages.count("proxy") > 0 and stages.count("full") >= 4
    full = resolve_workload(spec)
    proxy = proxy_workload(spec, full)
    for t in trials:
        if t.user_attrs.get("stage") != "proxy":
            continue
        assert t.state == TrialState.PRUNED and t.user_attrs["reason"].startswith("screened: ")
        arch = build_arch(spec, t.params, "check")
        opts = dict(spec.evaluator.options)
        assert t.user_attrs["proxy_metrics"] == complete_metrics(analytic(arch, proxy, **opts))
        earlier = [u for u in trials if u.number < t.number and u.state == TrialState.COMPLETE]
        assert "metrics" not in t.user_attrs and len(earlier) >= 4
    summary = json.loads((folder / "out" / "summary.json").read_text())["multi_fidelity"]
    assert summary["screened_by_proxy"] == stages.count("proxy")
    assert summary["full_evaluations"] == stages.count("full")
    # Every trial gets the proxy look first (also those the proxy finds unmappable: no full run for them).
    assert summary["proxy_evaluations"] == len(trials) == 30
    unmappable = [t for t in trials if t.user_attrs.get("reason", "").startswith("mapping:")]
    assert unmappable and all("eval_s" not in t.user_attrs for t in unmappable)
