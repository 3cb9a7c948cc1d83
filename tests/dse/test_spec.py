"""Bad sweep specs: one-line error naming the key, exit 2, and no study (nor database) created."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from sweep_helpers import write_spec

from antsim.cli import main
from antsim.dse.spec import load_sweep
from antsim.dse.storage import make_storage, study_names
from antsim.errors import SpecError


def _study(folder: Path, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=make_storage(f"sqlite:///{folder / 'results' / name}.db", 60))


BAD = [
    ("empty_range", {"space": {"pe_array.rows": {"low": 4, "high": 4}}}, "space.pe_array.rows", "empty range"),
    ("empty_choices", {"space": {"pe_array.F": {"choices": []}}}, "space.pe_array.F.choices", "empty range"),
    ("low_gt_high", {"space": {"pe_array.rows": {"low": 9, "high": 3}}}, "space.pe_array.rows", "low > high"),
    ("unknown_param", {"space": {"pe_array.banana": {"low": 1, "high": 3}}}, "space.pe_array.banana",
     "unknown parameter"),
    ("unknown_objective", {"objectives": {"time_s": "min", "speed": "max"}}, "objectives.speed",
     "unknown objective"),
    ("unknown_sampler", {"sampler": "simulated_annealing"}, "sampler.name", "unknown sampler"),
    # The arch's own rule (pe_array.rows ≤ 64) rejects the bound.
    ("bound_out_of_arch_range", {"space": {"pe_array.rows": {"low": 2, "high": 100}}},
     "space.pe_array.rows.high", "less than or equal to 64"),
    ("choice_out_of_arch_range", {"space": {"anticipation.policy": {"choices": ["ant", "magic"]}}},
     "space.anticipation.policy.choices[1]", "magic"),
    ("unknown_constraint_metric", {"constraints": {"volume": {"max": 3}}}, "constraints.volume", "unknown metric"),
    ("unknown_timing", {"timing": "cycle_accurate"}, "timing", "closed_form"),
    ("screen_ahead_zero", {"multi_fidelity": {"screen_ahead": 0}}, "multi_fidelity.screen_ahead", "1"),
    # the toy evaluator has no timing tier: refused, not ignored
    ("timing_without_simulator", {"timing": "closed_form"}, "timing", "applies to evaluator simulator only"),
    ("timing_as_evaluator_option", {"evaluator": {"name": "simulator", "options": {"timing": "closed_form"}}},
     "evaluator.options.timing", "top-level key timing"),
]


@pytest.mark.parametrize(("name", "override", "key", "words"), BAD, ids=[b[0] for b in BAD])
def test_bad_spec_exits_2_naming_key_and_creates_no_study(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                          name: str, override: dict, key: str, words: str) -> None:
    spec = write_spec(tmp_path, name, **override)
    db = tmp_path / "results" / f"{name}.db"
    assert main(["sweep", str(spec), "--storage", f"sqlite:///{db}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert str(spec) in err and key in err and words in err, err
    assert not db.exists()
    assert study_names(f"sqlite:///{db}") == []


def test_bad_spec_against_existing_storage_adds_no_study(tmp_path: Path) -> None:
    good = write_spec(tmp_path, "good", n_trials=2)
    db = tmp_path / "shared.db"
    assert main(["sweep", str(good), "--storage", f"sqlite:///{db}"]) == 0
    bad = write_spec(tmp_path, "bad", space={"pe_array.rows": {"low": 9, "high": 3}})
    assert main(["sweep", str(bad), "--storage", f"sqlite:///{db}"]) == 2
    assert study_names(f"sqlite:///{db}") == ["good"]


def test_valid_spec_resolves_paths_and_kinds(tmp_path: Path) -> None:
    spec = load_sweep(write_spec(tmp_path, space={"pe_array.rows": {"low": 2, "high": 8, "step": 2},
                                                  "technology.clock_ghz": {"low": 0.5, "high": 2.0, "log": True},
                                                  "anticipation.policy": {"choices": ["none", "ant"]}}))
    assert spec.stem == "tiny" and spec.directions == ["minimize"] * 3
    assert spec.base_arch_spec is not None and spec.base_arch_spec.name == "ant"


def test_int_parameter_rejects_fractional_bound(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"space\.pe_array\.rows\.high.*integer"):
        load_sweep(write_spec(tmp_path, space={"pe_array.rows": {"low": 2, "high": 8.5}}))


def test_categorical_parameter_needs_choices(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"space\.anticipation\.policy.*choices"):
        load_sweep(write_spec(tmp_path, space={"anticipation.policy": {"low": 0, "high": 1}}))


def test_unknown_select_layer_names_index(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"workload\.select\[1\]"):
        load_sweep(write_spec(tmp_path, workload={"layers": [{"name": "a", "N": 1, "C": 4, "K": 4, "H": 4,
                                                               "W": 4, "R": 3, "S": 3, "pad": 1}],
                                                  "select": ["a", "zz"]}))


def test_resume_with_changed_space_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = f"sqlite:///{tmp_path / 'r.db'}"
    assert main(["sweep", str(write_spec(tmp_path, "r", n_trials=2)), "--storage", db]) == 0
    changed = write_spec(tmp_path, "r", n_trials=3, space={"pe_array.rows": {"low": 2, "high": 8}})
    assert main(["sweep", str(changed), "--storage", db]) == 2
    assert "another space" in capsys.readouterr().err
    # Raising n_trials alone is a resume that runs only the missing trial.
    assert main(["sweep", str(write_spec(tmp_path, "r", n_trials=3)), "--storage", db]) == 0
    out = capsys.readouterr().out
    assert "3/3 trials finished" in out and "1 run now" in out


def test_unknown_evaluator_option_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"evaluator\.options"):
        load_sweep(write_spec(tmp_path, evaluator={"name": "analytic", "options": {"delai_s": 1}}))
    with pytest.raises(SpecError, match=r"evaluator\.name.*unknown evaluator"):
        load_sweep(write_spec(tmp_path, evaluator="magic"))


@pytest.mark.parametrize("sampler", ["nsga2", "tpe", "random", "qmc"])
def test_every_sampler_runs(tmp_path: Path, sampler: str) -> None:
    spec = write_spec(tmp_path, sampler, n_trials=3, sampler=sampler)
    assert main(["sweep", str(spec)]) == 0
    assert len(_study(tmp_path, sampler).trials) == 3


def test_grid_sampler_is_capped_at_grid_size(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "grid", n_trials=50, sampler="grid",
                      space={"pe_array.rows": {"low": 2, "high": 6, "step": 2}, "pe_array.F": {"choices": [2, 4]}})
    assert main(["sweep", str(spec)]) == 0
    study = _study(tmp_path, "grid")
    assert sorted((t.params["pe_array.rows"], t.params["pe_array.F"]) for t in study.trials) == [
        (r, f) for r in (2, 4, 6) for f in (2, 4)]


def test_grid_sampler_needs_step_for_float(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"space\.technology\.clock_ghz.*grid sampler needs a step"):
        load_sweep(write_spec(tmp_path, sampler="grid", space={"technology.clock_ghz": {"low": 0.5, "high": 1.0}}))
