"""One density rule, (0, 1], applied identically wherever a density enters antsim."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml

from antsim.cli import main
from antsim.dse.spec import load_sweep
from antsim.errors import AntsimError, SpecError
from antsim.simulate import check_densities, simulate_network
from antsim.sparsity.densities import DENSITY_KEYS, Densities, DensityError, check_density
from antsim.sparsity.generators import make_tensors
from antsim.sparsity.regimes import REGIMES, Regime
from antsim.spec.arch import load_arch
from antsim.workloads.layers import Layer

REPO = Path(__file__).resolve().parents[2]
SCNN = REPO / "arch_configs" / "scnn.yaml"
LAYER = Layer(name="c1", N=1, C=4, K=4, H=6, W=6, R=3, S=3, stride=1, pad=1)
RULE = "density of activations must be in (0, 1]"


def _through_simulate(value: object, tmp_path: Path) -> float:
    result = simulate_network(load_arch(SCNN), [LAYER], phases=("fprop",), densities={"a": value})  # type: ignore[dict-item]
    return float(result.to_dict()["workload"]["densities"]["a"])


def _through_cli(value: object, tmp_path: Path) -> float:
    csv = tmp_path / "l.csv"
    csv.write_text("name,N,C,K,H,W,R,S,stride,pad\nc1,1,4,4,6,6,3,3,1,1\n", encoding="utf-8")
    out = tmp_path / "r.json"
    try:
        code = main(["simulate", "--arch", str(SCNN), "--layers-csv", str(csv), "--phases", "fprop", "--density-a",
                     str(value), "--no-progress", "--out", str(out)])
    except SystemExit as exc:  # argparse's own refusal of a flag value (status 2, message on stderr)
        code = int(exc.code or 0)
    if code != 0:
        raise AntsimError(f"exit {code}")  # the message was written to stderr; the test reads it there
    return float(json.loads(out.read_text(encoding="utf-8"))["workload"]["densities"]["a"])


def _through_sweep_spec(value: object, tmp_path: Path) -> float:
    spec = {"kind": "sweep", "version": 1, "base_arch": str(SCNN), "evaluator": {"name": "analytic"},
            "space": {"pe_array.rows": {"low": 2, "high": 4}},
            "workload": {"layers": [LAYER.to_dict()], "densities": {"w": 0.1, "a": value, "g": 0.1}},
            "objectives": {"time_s": "min"}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return float(load_sweep(path).workload.densities["a"])


def _through_regime(value: object, tmp_path: Path) -> float:
    return Regime("mine", Densities.from_mapping({"a": value}), "swat").densities["a"]


def _through_generator(value: object, tmp_path: Path) -> float:
    big = Layer(name="c1", N=1, C=8, K=8, H=10, W=10, R=3, S=3, stride=1, pad=1)
    activations = make_tensors(big, density_a=value, model="uniform", seed=0).activations  # type: ignore[arg-type]
    return float(np.count_nonzero(activations) / activations.size)


ENTRY_POINTS: dict[str, Callable[[object, Path], float]] = {
    "simulate_network": _through_simulate, "cli --density-a": _through_cli, "sweep spec": _through_sweep_spec,
    "regime": _through_regime, "generator": _through_generator,
}
BAD = [0, -0.1, 1.1, math.nan, "x"]
GOOD = [1.0, 0.05]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("value", BAD, ids=repr)
def test_a_density_outside_0_1_is_refused_with_the_same_rule(entry: str, value: object, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(AntsimError) as caught:
        ENTRY_POINTS[entry](value, tmp_path)
    message = str(caught.value) + capsys.readouterr().err
    assert len(message.strip().splitlines()) == 1, message
    if value == "x" and entry in ("cli --density-a", "sweep spec"):
        # the flag's and the spec's number type refuse text first, naming the flag / key
        assert ("--density-a" if entry.startswith("cli") else "workload.densities.a") in message, message
        return
    assert RULE in message, message
    as_float = entry in ("cli --density-a", "sweep spec")  # a flag and a spec float field hold floats
    shown = repr(float(value)) if as_float else repr(value)  # type: ignore[arg-type]
    assert message.rstrip().endswith(f"got {shown}"), message
    where = {"cli --density-a": "--density-a: ", "sweep spec": "workload.densities.a: ",
             "simulate_network": "densities.a: ", "generator": "density_a: ", "regime": ""}[entry]
    assert f"{where}{RULE}" in message, message


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("value", GOOD, ids=repr)
def test_a_density_in_0_1_is_accepted_and_used(entry: str, value: float, tmp_path: Path) -> None:
    used = ENTRY_POINTS[entry](value, tmp_path)
    if entry == "generator":  # a Bernoulli mask of 800 elements: the measured density is near the asked one
        assert used == pytest.approx(value, abs=4 * math.sqrt(value * (1 - value) / 800) + 1e-12)
    else:
        assert used == value


def test_the_rule_is_open_at_0_closed_at_1_and_refuses_non_numbers() -> None:
    assert check_density("w", 1) == 1.0 and isinstance(check_density("w", 1), float)
    assert check_density("g", 5e-324) == 5e-324  # the smallest positive float is a density
    for bad in (0.0, -0.0, 1.0000001, math.inf, -math.inf, True, None, [0.5]):
        with pytest.raises(DensityError, match=r"density of output gradients must be in \(0, 1\]"):
            check_density("g", bad)


def test_densities_is_a_read_only_mapping_of_the_given_operands() -> None:
    d = Densities.from_mapping({"w": 0.2, "a_saved": 0.05})
    assert dict(d) == {"w": 0.2, "a": 0.1, "g": 0.1, "a_saved": 0.05}  # w, a, g default to 0.1
    assert d == {"w": 0.2, "a": 0.1, "g": 0.1, "a_saved": 0.05} and d.to_dict() == dict(d)
    assert "attn" not in d and d.get("attn") is None and len(d) == 4
    assert hash(d) == hash(Densities(w=0.2, a_saved=0.05))
    with pytest.raises(KeyError):
        d["attn"]
    with pytest.raises(AttributeError):
        d.w = 0.3  # type: ignore[misc]
    assert Densities.from_mapping({"attn": None}) == Densities()  # an optional operand given as None is absent
    assert set(DENSITY_KEYS) == {"w", "a", "g", "a_saved", "attn"}


def test_unknown_keys_are_refused_naming_the_known_ones() -> None:
    with pytest.raises(DensityError, match=r"^unknown key 'x'; known: w, a, g, a_saved, attn$"):
        Densities.from_mapping({"x": 0.5})
    with pytest.raises(AntsimError, match=r"^densities: unknown key 'x'; known: w, a, g, a_saved, attn$"):
        check_densities({"x": 0.5})


def test_check_densities_echo_is_the_plain_dict_it_always_was() -> None:
    assert check_densities(None) == {"w": 0.1, "a": 0.1, "g": 0.1}
    echo = check_densities({"a": 1, "attn": 0.5})
    assert echo == {"w": 0.1, "a": 1.0, "g": 0.1, "attn": 0.5} and type(echo) is dict
    assert all(type(v) is float for v in echo.values())


def test_every_builtin_regime_obeys_the_rule() -> None:
    for regime in REGIMES.values():
        assert isinstance(regime.densities, Densities)
        assert all(0 < v <= 1 for v in regime.densities.values())


def test_a_sweep_spec_may_give_the_attention_density_as_the_cli_does(tmp_path: Path) -> None:
    assert _through_sweep_spec(0.5, tmp_path) == 0.5  # the spec no longer refuses a key the CLI accepts
    spec_path = tmp_path / "sweep.yaml"
    data = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    data["workload"]["densities"]["attn"] = 0.0
    spec_path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(SpecError, match=r"workload\.densities\.attn: density of attention matrices must be in"):
        load_sweep(spec_path)
