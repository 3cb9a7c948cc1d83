"""The literal vocabularies: one set of values for the types, the runtime checks, the specs and the CLI;
a word outside it is refused with one line wherever a user can give it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args, get_origin

import pytest
import yaml

import antsim
from antsim import vocabulary
from antsim.cli import build_parser, main
from antsim.dataflow import FIDELITIES as DATAFLOW_FIDELITIES
from antsim.dataflow import map_phase
from antsim.dataflow.anticipation import POLICIES as DATAFLOW_POLICIES
from antsim.dse.spec import MultiFidelitySpec, SweepSpec, WorkloadSpec, load_sweep
from antsim.errors import AntsimError, MappingError, SpecError, WorkloadError
from antsim.gpu import menus
from antsim.gpu.estimate import estimate_gpu
from antsim.gpu.spec import PRECISIONS
from antsim.phases import phase_problem
from antsim.results import LayerResult
from antsim.simulate import simulate_layer, simulate_network
from antsim.sparsity.generators import make_tensors
from antsim.spec.arch import Anticipation, load_arch
from antsim.vocabulary import (
    FIDELITIES,
    LIBRARIES,
    PHASES,
    POLICIES,
    PRECISION_NAMES,
    SELECTIONS,
    Fidelity,
    Library,
    Phase,
    Policy,
    Precision,
    Selection,
    parse_fidelity,
    parse_phase,
    parse_phases,
    parse_policy,
)
from antsim.workloads import gemm as gemm_workloads
from antsim.workloads import layers as conv_workloads
from antsim.workloads.layers import Layer

REPO = Path(__file__).resolve().parents[1]
SCNN = REPO / "arch_configs" / "scnn.yaml"
LAYER = Layer(name="c1", N=1, C=4, K=4, H=6, W=6, R=3, S=3, stride=1, pad=1)


def _choices(command: str, flag: str) -> tuple[str, ...]:
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[command]  # type: ignore[index]
    return tuple(next(a for a in sub._actions if flag in a.option_strings).choices)


def _literal_values(annotation: object) -> tuple[object, ...]:
    """The values of the first ``Literal`` inside ``annotation`` (``tuple[Literal[...], ...] | None``…)."""
    if get_origin(annotation) is Literal:
        return get_args(annotation)
    return next((v for a in get_args(annotation) if (v := _literal_values(a))), ())


def test_each_runtime_tuple_is_its_literal_types_values() -> None:
    assert PHASES == get_args(Phase) == ("fprop", "dgrad", "wgrad")
    assert POLICIES == get_args(Policy) == ("none", "ant", "oracle")
    assert FIDELITIES == get_args(Fidelity) == ("fast", "exact")
    assert PRECISION_NAMES == get_args(Precision) == ("fp32", "tf32", "fp16", "bf16", "fp16_pseudo")
    assert SELECTIONS == get_args(Selection) == ("timed", "heuristic")
    assert LIBRARIES == get_args(Library) == ("cudnn5", "cudnn6", "cudnn7", "cudnn7.6", "cudnn8")


def test_every_place_that_lists_a_vocabulary_lists_the_same_values() -> None:
    assert conv_workloads.PHASES == gemm_workloads.PHASES == antsim.PHASES == PHASES
    assert DATAFLOW_POLICIES == POLICIES and DATAFLOW_FIDELITIES == FIDELITIES
    assert get_args(Anticipation.model_fields["policy"].annotation) == POLICIES  # the arch spec's field
    assert get_args(SweepSpec.model_fields["fidelity"].annotation) == FIDELITIES
    for field in (WorkloadSpec.model_fields["phases"], MultiFidelitySpec.model_fields["proxy_phases"]):
        assert _literal_values(field.annotation) == PHASES  # tuple[Phase, ...] (| None)
    assert tuple(PRECISIONS) == PRECISION_NAMES  # the GPU model prices exactly the precisions the type allows
    assert menus.SELECTIONS == SELECTIONS and menus.LIBRARIES == LIBRARIES
    assert menus.DEFAULT_SELECTION in SELECTIONS and menus.DEFAULT_LIBRARY in LIBRARIES
    assert _choices("simulate", "--fidelity") == _choices("compare", "--fidelity") == FIDELITIES
    assert _choices("gpu", "--selection") == SELECTIONS and _choices("gpu", "--library") == LIBRARIES


def test_parse_returns_the_word_and_refuses_others_naming_the_known_ones() -> None:
    assert parse_phase("wgrad") == "wgrad" and parse_policy("ant") == "ant" and parse_fidelity("exact") == "exact"
    assert parse_phases(["wgrad", "fprop", "wgrad"]) == ("fprop", "wgrad")  # canonical order, once each
    with pytest.raises(AntsimError, match=r"^phase: unknown 'bprop'; known: fprop, dgrad, wgrad$"):
        parse_phase("bprop")
    with pytest.raises(AntsimError, match=r"^anticipation\.policy: unknown 'magic'; known: none, ant, oracle$"):
        parse_policy("magic")
    with pytest.raises(AntsimError, match=r"^fidelity: unknown 3; known: fast, exact$"):
        parse_fidelity(3)
    with pytest.raises(AntsimError, match="must be a sequence of phase names; got 'fprop'"):
        parse_phases("fprop")


def _one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(exc.value)
    assert "\n" not in message, message
    return message


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: simulate_layer(load_arch(SCNN), LAYER, "bprop", make_tensors(LAYER)),  # type: ignore[arg-type]
     AntsimError, ("phase", "'bprop'", "fprop, dgrad, wgrad")),
    (lambda: simulate_network(load_arch(SCNN), [LAYER], phases=("bprop",)),  # type: ignore[arg-type]
     AntsimError, ("phase", "'bprop'")),
    (lambda: simulate_network(load_arch(SCNN), [LAYER], fidelity="slow"),  # type: ignore[arg-type]
     AntsimError, ("fidelity", "'slow'", "fast, exact")),
    (lambda: map_phase(load_arch(SCNN), LAYER, "fprop", make_tensors(LAYER), fidelity="slow"),  # type: ignore[arg-type]
     MappingError, ("fidelity", "'slow'")),
    (lambda: phase_problem(LAYER, "bprop"), WorkloadError, ("phase", "'bprop'")),  # type: ignore[arg-type]
    (lambda: LayerResult.from_dict({"layer": "c1", "phase": "bprop", "time_s": 1.0}), AntsimError,
     ("record phase", "'bprop'")),
    (lambda: estimate_gpu("v100", [LAYER], precision="fp8"), AntsimError, ("precision", "'fp8'")),  # type: ignore[arg-type]
    (lambda: estimate_gpu("v100", [LAYER], selection="best"), AntsimError, ("selection", "'best'")),  # type: ignore[arg-type]
    (lambda: estimate_gpu("v100", [LAYER], library="cudnn9"), AntsimError, ("library", "'cudnn9'")),  # type: ignore[arg-type]
], ids=["simulate_layer-phase", "simulate_network-phase", "simulate_network-fidelity", "map_phase-fidelity",
        "phase_problem", "result-file-phase", "gpu-precision", "gpu-selection", "gpu-library"])
def test_the_library_refuses_a_bad_word_with_one_line(call, error: type[Exception], words: tuple[str, ...]) -> None:
    with pytest.raises(error) as caught:
        call()
    message = _one_line(caught)
    assert all(w in message for w in words), message


def _arch_with_policy(tmp_path: Path, policy: str) -> Path:
    data = yaml.safe_load(SCNN.read_text(encoding="utf-8"))
    data.setdefault("anticipation", {})["policy"] = policy
    path = tmp_path / "arch.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_a_bad_policy_in_an_arch_file_is_refused_naming_file_key_and_value(tmp_path: Path) -> None:
    path = _arch_with_policy(tmp_path, "magic")
    with pytest.raises(SpecError) as caught:
        load_arch(path)
    message = _one_line(caught)
    assert str(path) in message and "anticipation.policy" in message and "'magic'" in message, message
    assert load_arch(_arch_with_policy(tmp_path, "ant")).anticipation.policy == "ant"


def _sweep(tmp_path: Path, **overrides: object) -> Path:
    spec = {"kind": "sweep", "version": 1, "base_arch": str(SCNN), "evaluator": {"name": "analytic"},
            "space": {"pe_array.rows": {"low": 2, "high": 4}},
            "workload": {"layers": [LAYER.to_dict()]}, "objectives": {"time_s": "min"}}
    for key, value in overrides.items():
        if key == "phases":
            spec["workload"]["phases"] = value  # type: ignore[index]
        else:
            spec[key] = value
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize(("override", "key", "value"), [
    ({"phases": ["fprop", "bprop"]}, "workload.phases", "bprop"),
    ({"fidelity": "slow"}, "fidelity", "slow"),
])
def test_a_bad_word_in_a_sweep_spec_is_refused_naming_the_key(tmp_path: Path, override: dict, key: str,
                                                              value: str) -> None:
    path = _sweep(tmp_path, **override)
    with pytest.raises(SpecError) as caught:
        load_sweep(path)
    message = _one_line(caught)
    assert str(path) in message and key in message and value in message, message
    assert load_sweep(_sweep(tmp_path, phases=["wgrad", "fprop"], fidelity="exact")).fidelity == "exact"


@pytest.mark.parametrize(("flags", "words"), [
    (["--phases", "fprop,bprop"], ("--phases", "bprop", "fprop, dgrad, wgrad")),
    (["--fidelity", "slow"], ("--fidelity", "'slow'", "fast", "exact")),
])
def test_a_bad_word_on_the_command_line_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                              flags: list[str], words: tuple[str, ...]) -> None:
    csv = tmp_path / "l.csv"
    csv.write_text("name,N,C,K,H,W,R,S,stride,pad\nc1,1,4,4,6,6,3,3,1,1\n", encoding="utf-8")
    out = tmp_path / "r.json"
    try:
        code = main(["simulate", "--arch", str(SCNN), "--layers-csv", str(csv), *flags, "--no-progress",
                     "--out", str(out)])
    except SystemExit as exc:  # argparse refuses a value outside a flag's choices itself
        code = int(exc.code or 0)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert all(w in err for w in words), err
    assert not out.exists()


def test_the_module_lists_every_vocabulary_it_defines() -> None:
    exported = set(vocabulary.__all__)
    assert {"Phase", "Policy", "Fidelity", "Precision", "Selection", "Library"} <= exported
    assert {"PHASES", "POLICIES", "FIDELITIES", "PRECISION_NAMES", "SELECTIONS", "LIBRARIES"} <= exported
