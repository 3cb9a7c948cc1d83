"""Screening ahead (``multi_fidelity.screen_ahead``): the front it finds is the front of every trial
evaluated in full, a design is screened out only by one evaluated in full before it that beats its estimate
by the margins, full evaluations are the evaluator's own, and the trial quota holds with two workers."""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import FrozenTrial, TrialState
from sweep_helpers import REPO, write_spec

from antsim.dse import attrs
from antsim.dse.ahead import promise
from antsim.dse.evaluators import analytic
from antsim.dse.objective import build_arch, complete_metrics, constraint_values
from antsim.dse.pareto import pareto_mask
from antsim.dse.runner import SweepOptions, run_sweep
from antsim.dse.spec import SweepSpec, load_sweep
from antsim.dse.storage import WORKER_ATTR, make_storage
from antsim.dse.workload import resolve_workload

N_TRIALS = 48
# The toy evaluator on one of the three layers (scaled by the median full/proxy ratio) estimates the whole
# workload within ~2 % in this space: a 5 % margin keeps every front design.
MARGIN = 0.05


# A space where most designs are dominated: the toy model's tiny layers are DRAM-bound, so a faster DRAM buys
# time at no area, and a bigger input buffer only adds area.
SPACE = {"pe_array.rows": {"low": 2, "high": 16}, "pe_array.F": {"choices": [2, 4, 8]},
         "buffers.input_kb": {"low": 4, "high": 64, "log": True}, "dram.bandwidth_gbps": {"low": 1, "high": 100,
                                                                                        "log": True},
         "anticipation.policy": {"choices": ["none", "ant", "oracle"]}}


def _sweep(tmp_path: Path, name: str, ahead: int, workers: int = 1, **changes: object) -> tuple[SweepSpec, list]:
    mf = {"screen": "proxy_layers", "proxy_layers": 1, "warmup_trials": 6, "margin": MARGIN, "screen_ahead": ahead}
    changes = {"space": SPACE, "sampler": "random", **changes}
    spec = load_sweep(write_spec(tmp_path, name, n_trials=N_TRIALS, multi_fidelity=mf, **changes))
    url = f"sqlite:///{tmp_path / name}.db"
    run_sweep(spec, SweepOptions(storage_url=url, study_name=name, n_trials=N_TRIALS, workers=workers, seed=5))
    return spec, optuna.load_study(study_name=name, storage=make_storage(url, 60)).get_trials()


def _full_metrics(spec: SweepSpec, t: FrozenTrial) -> dict[str, float] | None:
    """The toy evaluator's metrics of the trial's design on the whole workload (None: not mappable)."""
    options = dict(spec.evaluator.options)
    try:
        arch = build_arch(spec, t.params, f"check{t.number}")
        return complete_metrics(analytic(arch, resolve_workload(spec), spec.fidelity, spec.seed, **options))
    except Exception:  # noqa: BLE001 - an arch rule or MappingError: never on any front
        return None


def _front(points: dict[int, list[float]]) -> set[int]:
    numbers = list(points)
    mask = pareto_mask([points[n] for n in numbers], ["minimize"] * 3) if numbers else []
    return {n for n, on in zip(numbers, mask, strict=True) if on}


def _fronts(spec: SweepSpec, trials: list[FrozenTrial]) -> tuple[set[int], set[int]]:
    """(front the sweep found, front of every trial's design evaluated in full)."""
    found = {t.number: list(t.values) for t in trials if attrs.stage(t) == "full" and attrs.is_feasible(t)}
    everything = {}
    for t in trials:
        metrics = _full_metrics(spec, t)
        if metrics is not None and not constraint_values(spec, metrics)[1]:
            everything[t.number] = [metrics[m] for m in spec.objectives]
    return _front(found), _front(everything)


def test_promise_is_the_product_of_the_objectives() -> None:
    spec = SweepSpec.model_validate({"base_arch": "x", "space": {}, "workload": {},
                                     "objectives": {"time_s": "minimize", "energy_j": "minimize",
                                                    "rcp_fraction": "maximize"}})
    designs = [{"time_s": 2.0, "energy_j": 3.0, "rcp_fraction": 0.5}, {"time_s": 1.0, "energy_j": 8.0,
               "rcp_fraction": 0.9}, {"time_s": 0.5, "energy_j": 1.0, "rcp_fraction": 0.05}]
    products = [d["time_s"] * d["energy_j"] / d["rcp_fraction"] for d in designs]
    assert [promise(spec, d) for d in designs] == pytest.approx([math.log(p) for p in products])
    assert sorted(range(3), key=lambda i: promise(spec, designs[i])) == sorted(range(3), key=lambda i: products[i])


@pytest.mark.slow  # two sweeps of 48 trials: ~30 s on the shared two cores
def test_screen_ahead_finds_the_front_of_every_design_and_keeps_full_results(tmp_path: Path) -> None:
    spec, ahead = _sweep(tmp_path, "ahead", 12)
    _, single = _sweep(tmp_path, "single", 1)
    # the seeded random sampler proposes the same designs under the same numbers asked one or 12 at a time
    assert [t.params for t in ahead] == [t.params for t in single]
    screened = [t for t in ahead if attrs.stage(t) == "proxy"]
    assert len(screened) >= N_TRIALS // 2, "the test space must screen designs out to test anything"
    found, everything = _fronts(spec, ahead)
    assert found == everything and len(found) >= 3
    for t in ahead:  # a design evaluated in full gets the evaluator's own metrics, whatever the order
        if attrs.stage(t) == "full":
            assert attrs.metrics(t) == _full_metrics(spec, t)


def test_tpe_screening_ahead_finds_the_front_of_every_design(tmp_path: Path) -> None:
    """TPE asked for 12 trials at once (the 11 others pending while it samples each) screens designs out and
    still finds the front of every one of its trials evaluated in full."""
    spec, trials = _sweep(tmp_path, "tpe", 12, sampler="tpe")
    assert spec.sampler.name == "tpe"
    assert sorted(t.number for t in trials) == list(range(N_TRIALS))
    assert all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials)
    assert sum(attrs.stage(t) == "proxy" for t in trials) >= N_TRIALS // 4, "nothing screened: nothing tested"
    found, everything = _fronts(spec, trials)
    assert found == everything and len(found) >= 3
    for t in trials:
        if attrs.stage(t) == "full":
            assert attrs.metrics(t) == _full_metrics(spec, t)


def test_a_design_is_screened_out_only_by_one_evaluated_in_full_before_it(tmp_path: Path) -> None:
    spec, trials = _sweep(tmp_path, "ahead", 12)
    margins = [MARGIN] * len(spec.objectives)
    true_front = _fronts(spec, trials)[1]
    dominated = 0
    for t in trials:
        if attrs.stage(t) != "proxy":
            continue
        estimate = attrs.estimate(t)
        assert estimate is not None
        match = re.search(r"dominated by trial (\d+)", attrs.reason(t))
        if match is None:  # the other reason: a constraint broken by more than the margin
            assert "breaks a constraint" in attrs.reason(t)
            assert any(v > MARGIN for v in constraint_values(spec, estimate)[0])
            continue
        dominated += 1
        by = trials[int(match.group(1))]
        assert attrs.stage(by) == "full" and attrs.is_feasible(by) and by.state == TrialState.COMPLETE
        assert by.datetime_complete <= t.datetime_complete
        assert all(v * (1 + g) <= estimate[m] for v, m, g in zip(by.values, spec.objectives, margins, strict=True))
        # Had the estimate been within the margin of the design's real metrics, the one that screened it out
        # is at least as good in every objective: it could not have been on the front.
        real = _full_metrics(spec, t)
        assert real is not None
        if all(real[m] * (1 + g) >= estimate[m] for m, g in zip(spec.objectives, margins, strict=True)):
            assert all(v <= real[m] for v, m in zip(by.values, spec.objectives, strict=True))
            assert t.number not in true_front
    assert dominated >= 3


@pytest.mark.slow  # spawned workers: ~35 s on the shared two cores
def test_two_workers_screening_ahead_hold_the_exact_quota(tmp_path: Path) -> None:
    spec, trials = _sweep(tmp_path, "two", 8, workers=2,
                          evaluator={"name": "analytic", "options": {"delay_s": 0.05, "min_input_bytes_per_pe": 4096}})
    assert sorted(t.number for t in trials) == list(range(N_TRIALS))
    assert all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials)
    assert {t.user_attrs[WORKER_ATTR].rsplit("/", 1)[1] for t in trials} == {"0", "1"}
    found, everything = _fronts(spec, trials)
    assert found == everything


@pytest.mark.slow  # a real two-worker sweep killed mid-batch: ~30 s on the shared two cores
def test_a_worker_killed_mid_batch_leaves_its_trials_to_be_redone(tmp_path: Path) -> None:
    mf = {"screen": "proxy_layers", "proxy_layers": 1, "warmup_trials": 2, "margin": MARGIN, "screen_ahead": 3}
    spec = write_spec(tmp_path, "killed", n_trials=12, space=SPACE, multi_fidelity=mf,
                      evaluator={"name": "analytic", "options": {"delay_s": 0.5}})
    url = f"sqlite:///{tmp_path / 'killed.db'}"
    proc = subprocess.Popen([sys.executable, "-m", "antsim", "sweep", str(spec), "--storage", url, "--heartbeat", "1",
                             "--workers", "2"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    held: list[int] = []
    deadline = time.time() + 180
    while not held and time.time() < deadline:  # a worker holding a whole batch, none of it finished yet
        try:
            trials = optuna.load_study(study_name="killed", storage=make_storage(url, 60)).get_trials(deepcopy=False)
        except Exception:  # noqa: BLE001 - the study is not created yet
            trials = []
        owners: dict[str, list[int]] = {}
        for t in trials:
            if t.state == TrialState.RUNNING and WORKER_ATTR in t.user_attrs:
                owners.setdefault(t.user_attrs[WORKER_ATTR], []).append(t.number)
        held = next((numbers for numbers in owners.values() if len(numbers) == 3), [])
        pid = next((int(o.split(":")[1].split("/")[0]) for o, numbers in owners.items() if numbers == held), 0)
        time.sleep(0.05)
    assert held, "no worker was seen holding a batch"
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "was killed by SIGKILL" in err and "Traceback" not in err
    trials = optuna.load_study(study_name="killed", storage=make_storage(url, 60)).get_trials()
    assert sorted(t.number for t in trials) == list(range(len(trials)))
    assert sum(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials) == 12
    failed = [t for t in trials if t.state == TrialState.FAIL]
    assert failed and {t.number for t in failed} <= set(held)  # only the dead worker's unfinished trials
    assert not [t for t in failed if "error" in t.user_attrs]  # abandoned, not counted: redone
    assert not [t for t in trials if t.state == TrialState.RUNNING]
