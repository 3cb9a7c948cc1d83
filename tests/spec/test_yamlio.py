"""``antsim.spec.yamlio``: the alias-expansion bound counts the nodes a brute-force walk of the loaded document
counts; an alias bomb is refused fast; pydantic errors become one line naming the dotted key and the value."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field

from antsim.errors import AntsimError, SpecError
from antsim.spec.yamlio import _expanded_size, load_yaml, lookup, validate_model


def _brute_force_nodes(value: Any) -> int:
    """Nodes of the expanded document: one per scalar, sequence or mapping, keys included."""
    if isinstance(value, dict):
        return 1 + sum(_brute_force_nodes(k) + _brute_force_nodes(v) for k, v in value.items())
    if isinstance(value, list):
        return 1 + sum(_brute_force_nodes(v) for v in value)
    return 1


@pytest.mark.parametrize("text", [
    "kind: arch\nname: x\n",
    "a: &a [1, 2, {b: 3}]\nc: [*a, *a]\nd: *a\n",
    "base: &b {x: 1, y: [2, 3]}\nlist: [*b, *b, *b]\nnested: &n {p: *b, q: *b}\nmore: [*n, *n]\n",
])
def test_expanded_size_counts_what_a_brute_force_walk_counts(text: str) -> None:
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    assert _expanded_size(node, {}, set()) == _brute_force_nodes(yaml.safe_load(text))


def test_yaml_alias_bomb_is_refused_fast(tmp_path: Path) -> None:
    from antsim.spec.yamlio import load_yaml

    rows = ["a: &a [" + ", ".join(["x"] * 10) + "]"]
    rows += [f"{b}: &{b} [" + ", ".join([f"*{a}"] * 10) + "]" for a, b in zip("abcdefgh", "bcdefghi", strict=True)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(rows) + "\n")  # 10^9 leaves once expanded
    start = time.perf_counter()
    with pytest.raises(AntsimError, match="alias bomb"):
        load_yaml(path)
    assert time.perf_counter() - start < 1.0


def test_load_yaml_checks_kind_and_mapping(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("kind: sweep\nname: x\n")
    assert load_yaml(path, kind="sweep") == {"kind": "sweep", "name": "x"}
    with pytest.raises(SpecError, match=r"s\.yaml: kind: must be 'arch'; got 'sweep'"):
        load_yaml(path, kind="arch")
    path.write_text("- 1\n- 2\n")
    with pytest.raises(SpecError, match="must be a YAML mapping; got 'list'"):
        load_yaml(path)


class _Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    F: int = Field(4, ge=1)


class _Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    pe_array: _Inner = _Inner()


@pytest.mark.parametrize(("data", "line"), [
    ({"name": "a", "pe_array": {"F": 0}}, "f.yaml: pe_array.F: Input should be greater than or equal to 1; got 0"),
    ({"name": "a", "pe_array": {"colour": 1}}, "f.yaml: pe_array.colour: unknown key; known: F"),
    ({"pe_array": {}}, "f.yaml: name: required key is missing"),
])
def test_validation_errors_name_the_dotted_key_and_value(data: dict, line: str) -> None:
    with pytest.raises(SpecError) as info:
        validate_model(_Outer, data, "f.yaml")
    assert str(info.value) == line


def test_lookup_follows_a_pydantic_location_and_misses_quietly() -> None:
    data = {"a": [{"b": 5}]}
    assert lookup(data, ("a", 0, "b")) == 5 and lookup(data, ("a", 3)) is None and lookup(data, ("x",)) is None
