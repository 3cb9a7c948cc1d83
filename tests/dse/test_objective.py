"""Multi-fidelity screening: scaling, the dominance-with-margin rule, and a screened sweep (the proxy workload is
in test_workload.py)."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from optuna.distributions import IntDistribution
from optuna.trial import TrialState
from sweep_helpers import ANT, write_spec

from antsim.cli import main
from antsim.dse.evaluators import analytic
from antsim.dse.objective import Objective, build_arch, complete_metrics, scale_proxy, screen_reason
from antsim.dse.pareto import pareto_mask
from antsim.dse.spec import load_sweep
from antsim.dse.storage import make_storage
from antsim.dse.workload import proxy_workload, resolve_workload
from antsim.errors import SpecError
from antsim.workloads.gemm import Gemm
from antsim.workloads.layers import write_layers_csv


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


def test_screen_rule_exact_metrics_take_no_margin(tmp_path: Path) -> None:
    spec = load_sweep(write_spec(tmp_path, objectives={"time_s": "min", "area_mm2": "min"}))  # area_mm2 ≤ 40
    best = _trial(7, [1.0, 10.0], {}, {})
    estimate = {"time_s": 1.5, "area_mm2": 10.5, "energy_j": 1.0}  # 5 % more area: within the 10 % margin
    assert screen_reason(spec, estimate, [best], margin=0.1) == ""
    assert "trial 7" in screen_reason(spec, estimate, [best], margin=0.1, exact={"area_mm2"})
    over = {"time_s": 1.0, "area_mm2": 41.0, "energy_j": 1.0}  # breaks area ≤ 40 by 2.5 %
    assert screen_reason(spec, over, [], margin=0.1) == ""
    assert "constraint" in screen_reason(spec, over, [], margin=0.1, exact={"area_mm2"})


def test_screen_rule_per_metric_margins(tmp_path: Path) -> None:
    spec = load_sweep(write_spec(tmp_path, objectives={"time_s": "min", "energy_j": "min"}, constraints={}))
    best = _trial(7, [1.0, 1.0], {}, {})
    estimate = {"time_s": 1.2, "energy_j": 1.04}  # 20 % slower, 4 % more energy
    assert screen_reason(spec, estimate, [best], margin=0.1) == ""
    assert "trial 7" in screen_reason(spec, estimate, [best], margin=0.1, margins={"energy_j": 0.03})
    assert screen_reason(spec, estimate, [best], margin=0.1, margins={"energy_j": 0.05}) == ""


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


# --- the analytic screen (multi_fidelity.screen: analytic) on constructed cases --------------------------

def _toy_full(arch, workload, fidelity="fast", seed=0):  # type: ignore[no-untyped-def]
    """A constructed trade-off: more rows are faster but larger; a bigger input buffer costs everything."""
    rows, kb = arch.pe_array.rows, arch.buffers.input_kb
    return {"time_s": 16.0 / rows + kb / 10, "energy_j": 1.0 + kb / 10, "area_mm2": rows + kb / 10}


def _toy_screen(arch, workload, fidelity="fast", seed=0):  # type: ignore[no-untyped-def]
    """The full model's time and energy at half scale (calibration must recover them), its area exact (as
    the analytic screen's is)."""
    return {k: v if k == "area_mm2" else v / 2 for k, v in _toy_full(arch, workload).items()}


def _analytic_objective(tmp_path: Path, warmup: int = 3):  # type: ignore[no-untyped-def]
    spec = load_sweep(write_spec(tmp_path, space={"pe_array.rows": {"low": 2, "high": 16},
                                                  "buffers.input_kb": {"low": 1, "high": 64},
                                                  "anticipation.policy": {"choices": ["none", "ant"]}},
                                 constraints={}, multi_fidelity={"screen": "analytic", "warmup_trials": warmup,
                                                                 "margin": 0.1}))
    study = optuna.create_study(directions=["minimize"] * 3)
    return Objective(spec, resolve_workload(spec), _toy_full, None, _toy_screen), study


def _run(study: optuna.Study, objective, designs: list[tuple[int, float, str]]) -> list:  # type: ignore[no-untyped-def]
    for rows, kb, policy in designs:
        study.enqueue_trial({"pe_array.rows": rows, "buffers.input_kb": kb, "anticipation.policy": policy})
    study.optimize(objective, n_trials=len(designs))
    return study.get_trials()


def test_analytic_screen_prunes_a_dominated_design_and_keeps_a_front_one(tmp_path: Path) -> None:
    objective, study = _analytic_objective(tmp_path)
    warmup = [(4, 1.0, "none"), (8, 1.0, "none"), (16, 1.0, "none")]
    trials = _run(study, objective, warmup + [(8, 60.0, "none"), (7, 1.0, "none"), (12, 1.0, "none")])
    stages = [t.user_attrs.get("stage") for t in trials]
    assert stages == ["full", "full", "full", "proxy", "full", "full"]
    dominated = trials[3]
    assert dominated.state == TrialState.PRUNED and dominated.user_attrs["reason"].endswith("(analytic screen)")
    # The calibrated estimate is the full model's value (the screen is exact up to its scale of 1/2).
    assert dominated.user_attrs["estimate"]["time_s"] == pytest.approx(_toy_full_of(8, 60.0)["time_s"])
    # Every design of the front of all designs (full metrics) was evaluated in full: none was screened.
    values = [list(_toy_full_of(r, kb).values()) for r, kb, _ in warmup + [(8, 60.0, ""), (7, 1.0, ""),
                                                                               (12, 1.0, "")]]
    on_front = pareto_mask(values, ["minimize"] * 3)
    assert all(stage == "full" for stage, front in zip(stages, on_front, strict=True) if front)


def _toy_full_of(rows: int, kb: float) -> dict:
    class _Arch:  # the two fields the toy reads
        pe_array = type("pe", (), {"rows": rows})
        buffers = type("buf", (), {"input_kb": kb})

    return _toy_full(_Arch, None)


def test_analytic_screen_calibrates_per_policy(tmp_path: Path) -> None:
    """Three none trials calibrate none; an ant design has no peer yet, so it is evaluated in full even when
    its estimate would be dominated."""
    objective, study = _analytic_objective(tmp_path)
    trials = _run(study, objective, [(4, 1.0, "none"), (8, 1.0, "none"), (16, 1.0, "none"), (8, 60.0, "ant"),
                                     (8, 60.0, "none")])
    assert [t.user_attrs.get("stage") for t in trials] == ["full", "full", "full", "full", "proxy"]
    assert "estimate" not in trials[3].user_attrs


@pytest.mark.parametrize(("mf", "key", "rule"), [
    ({"screen": "bogus"}, "multi_fidelity.screen", "unknown screen; known: proxy_layers, analytic"),
    ({"screen": "analytic", "proxy_layers": 2}, "multi_fidelity.proxy_layers", "applies to screen: proxy_layers"),
    ({"screen": "analytic", "proxy_select": ["a"]}, "multi_fidelity.proxy_select", "applies to screen: proxy_layers"),
    ({"screen": 3}, "multi_fidelity.screen", ""),
    ({"screen": "analytic", "sparsity": "x"}, "multi_fidelity.screen", "sparse designs only"),
    ({"margins": {"speed": 0.1}}, "multi_fidelity.margins.speed", "unknown metric"),
    ({"margins": {"energy_j": 11.0}}, "multi_fidelity.margins.energy_j", "must be in [0, 10]"),
])
def test_bad_screen_keys_are_refused(tmp_path: Path, mf: dict, key: str, rule: str) -> None:
    dense = {}
    if mf.pop("sparsity", None):  # a dense base design
        dense = {"base_arch": str(ANT.parent / "dense.yaml"), "space": {"pe_array.rows": {"low": 2, "high": 16}}}
    with pytest.raises(SpecError) as info:
        load_sweep(write_spec(tmp_path, multi_fidelity=mf, **dense))
    assert info.value.key == key and rule in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(("name", "param"), [("accumulators.queue_depth", {"choices": [0, 2]}),
                                             ("accumulators.bank_hash", {"choices": ["mod", "sliced"]})])
def test_analytic_screen_refuses_a_swept_parameter_it_does_not_model(tmp_path: Path, name: str, param: dict) -> None:
    path = write_spec(tmp_path, space={"pe_array.rows": {"low": 2, "high": 16}, name: param},
                      multi_fidelity={"screen": "analytic"})
    with pytest.raises(SpecError, match="does not model this parameter") as info:
        load_sweep(path)
    assert info.value.key == f"space.{name}" and "\n" not in str(info.value)
    assert load_sweep(write_spec(tmp_path, space={"pe_array.rows": {"low": 2, "high": 16}, name: param},
                                 multi_fidelity={"screen": "proxy_layers"})).space[name]


def test_analytic_screen_refuses_gemm_layers(tmp_path: Path) -> None:
    csv = tmp_path / "layers.csv"
    write_layers_csv([Gemm(name="fc", M=10, N=2, K=64, a="weights", batch=2)], csv)
    path = write_spec(tmp_path, workload={"layers_csv": str(csv)}, multi_fidelity={"screen": "analytic"})
    with pytest.raises(SpecError, match="conv layers only") as info:
        load_sweep(path)
    assert info.value.key == "multi_fidelity.screen"


@pytest.mark.slow  # 39 s on the shared machine at load 9 (16 simulator trials through the CLI)
def test_analytic_screened_sweep_end_to_end(tmp_path: Path) -> None:
    """``antsim sweep`` with the analytic screen and the real simulator on two small layers: every trial gets
    the screen's look, its recorded screen metrics are ``analytic_screen``'s, and the export counts it."""
    from antsim.dse.screen import analytic_screen

    layers = [{"name": "a", "N": 1, "C": 8, "K": 16, "H": 8, "W": 8, "R": 3, "S": 3, "stride": 1, "pad": 1},
              {"name": "b", "N": 1, "C": 16, "K": 16, "H": 4, "W": 4, "R": 3, "S": 3, "stride": 2, "pad": 1}]
    path = write_spec(tmp_path, "e2e", evaluator="simulator", n_trials=16, sampler="random",
                      workload={"layers": layers, "densities": {"w": 0.3, "a": 0.3, "g": 0.3}, "sparsity": "uniform"},
                      space={"pe_array.rows": {"low": 2, "high": 8}, "pe_array.F": {"choices": [2, 4]},
                             "anticipation.policy": {"choices": ["none", "ant"]}},
                      multi_fidelity={"screen": "analytic", "warmup_trials": 4, "margin": 0.05})
    assert main(["sweep", str(path), "--export", str(tmp_path / "out"), "--no-figures"]) == 0
    spec = load_sweep(path)
    db = tmp_path / "results" / "e2e.db"
    study = optuna.load_study(study_name="e2e", storage=make_storage(f"sqlite:///{db}", 60))
    trials = study.get_trials()
    assert len(trials) == 16 and all("proxy_metrics" in t.user_attrs for t in trials)
    workload = resolve_workload(spec)
    for t in trials[:3]:
        arch = build_arch(spec, t.params, t.user_attrs["arch_name"])
        assert t.user_attrs["proxy_metrics"] == complete_metrics(analytic_screen(arch, workload, seed=spec.seed))
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())["multi_fidelity"]
    assert summary["screened_by_proxy"] == sum(t.user_attrs.get("stage") == "proxy" for t in trials)
    assert summary["proxy_evaluations"] == 16
