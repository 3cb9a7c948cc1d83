"""``antsim.dse.attrs``: the trial and study attributes keep the key names earlier studies and trials.csv hold."""

from __future__ import annotations

import optuna
import pytest

from antsim.dse import attrs


@pytest.fixture
def study() -> optuna.Study:
    return optuna.create_study(storage=optuna.storages.InMemoryStorage(), directions=["minimize"])


def test_writers_store_the_keys_a_stored_study_holds(study: optuna.Study) -> None:
    trial = study.ask()
    attrs.set_arch_name(trial, "scnn-trial0")
    attrs.set_metrics(trial, {"time_s": 1.0})
    attrs.set_proxy_metrics(trial, {"time_s": 0.1})
    attrs.set_estimate(trial, {"time_s": 0.9})
    attrs.set_stage(trial, "full")
    attrs.set_constraints(trial, (0.5, -1.0))
    attrs.set_verdict(trial, False, "area_mm2 9 > 8")
    attrs.set_seconds(trial, attrs.EVAL_S, 2.0, 1.5)
    attrs.set_seconds(trial, attrs.PROXY_EVAL_S, 0.2, 0.1)
    attrs.set_worker(trial, "host:1/0")
    attrs.set_error(trial, "ValueError()")
    attrs.set_study_identity(study, "{}", ["time_s"])
    assert study.trials[0].user_attrs == {  # the names spelt out: a renamed constant would orphan old studies
        "arch_name": "scnn-trial0", "metrics": {"time_s": 1.0}, "proxy_metrics": {"time_s": 0.1},
        "estimate": {"time_s": 0.9}, "stage": "full", "constraints": [0.5, -1.0], "feasible": False,
        "reason": "area_mm2 9 > 8", "eval_s": 2.0, "eval_cpu_s": 1.5, "proxy_eval_s": 0.2,
        "proxy_eval_cpu_s": 0.1, "worker": "host:1/0", "error": "ValueError()"}
    assert study.user_attrs == {"antsim_signature": "{}", "objectives": ["time_s"]}


def test_readers_of_a_frozen_trial(study: optuna.Study) -> None:
    trial = study.ask()
    attrs.set_verdict(trial, True, "")
    attrs.set_metrics(trial, {"energy_j": 3.0})
    attrs.set_seconds(trial, attrs.EVAL_S, 4.0, 3.0)
    frozen = study.trials[0]
    assert attrs.is_feasible(frozen) and attrs.reason(frozen) == "" and attrs.metrics(frozen) == {"energy_j": 3.0}
    assert attrs.seconds(frozen, attrs.EVAL_CPU_S) == 3.0 and attrs.seconds(frozen, attrs.PROXY_EVAL_S) is None
    assert attrs.stage(frozen) == "" and attrs.proxy_metrics(frozen) is None and attrs.estimate(frozen) is None
    assert attrs.arch_name(frozen) is None and attrs.worker(frozen) is None and attrs.error(frozen) is None
    assert attrs.study_signature(study) is None
    bare = study.ask()  # a trial nothing was set on: infeasible, no reason
    assert not attrs.is_feasible(study.trials[1]) and attrs.reason(bare) == ""
