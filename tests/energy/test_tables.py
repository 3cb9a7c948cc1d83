"""Energy tables: the shipped files load and are sourced line by line; bad tables give one-line SpecErrors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from antsim.energy import ACTIONS, builtin_tables, load_table
from antsim.energy.tables import TABLES_DIR
from antsim.errors import SpecError

SHIPPED = sorted(TABLES_DIR.glob("*.yaml"))
NUMBER_LINE = re.compile(r"^\s*(?:-\s+)?([A-Za-z_][\w]*)\s*:\s*(-?\d[\d.eE+-]*)\s*(#.*)?$")


def test_both_builtin_tables_ship_and_load() -> None:
    assert {"default_16nm", "default_45nm"} <= set(builtin_tables())
    for name, node in (("default_16nm", 16), ("default_45nm", 45)):
        table = load_table(name)
        assert (table.kind, table.version, table.name, table.node_nm) == ("energy_table", 1, name, node)
        for component, actions in ACTIONS.items():
            if component == "dram":
                continue
            for action in actions:
                assert table.action_pj(component, action) > 0, f"{name}: {component}.{action}"
        assert {"lpddr4", "hbm2", "gddr5", "gddr6", "ddr4"} <= set(table.dram_pj_per_bit)


def test_table_is_frozen_and_cached_per_path() -> None:
    table = load_table("default_16nm")
    with pytest.raises(ValueError):
        table.node_nm = 7  # type: ignore[misc]
    assert load_table(TABLES_DIR / "default_16nm.yaml") is table
    assert load_table(str(TABLES_DIR / "default_16nm.yaml")) is table


def test_cache_sees_a_rewritten_file(tmp_path: Path) -> None:
    path = _copy(tmp_path, lambda d: d)
    assert load_table(path).energy.multiplier.multiply == pytest.approx(0.1392)
    path.write_text(path.read_text().replace("multiply: 0.1392", "multiply: 0.2000"))
    assert load_table(path).energy.multiplier.multiply == pytest.approx(0.2)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_number_in_a_shipped_table_has_a_source_comment(path: Path) -> None:
    lines = path.read_text().splitlines()
    numbers = 0
    for i, line in enumerate(lines):
        match = NUMBER_LINE.match(line)
        if not match:
            continue
        numbers += 1
        key, comment = match.group(1), match.group(3) or ""
        block = []  # the comment lines directly above
        j = i - 1
        while j >= 0 and lines[j].lstrip().startswith("#"):
            block.append(lines[j])
            j -= 1
        note = comment + " ".join(block)
        assert note.strip(), f"{path.name}:{i + 1}: {key} has no comment on its line or above"
        if key not in ("version", "node_nm"):
            cited = any(tag in note for tag in ("ref §", "DESIGN §", "[assumption"))
            assert cited, f"{path.name}:{i + 1}: {key} cites no source"
    data = yaml.safe_load(path.read_text())
    assert numbers == _count_numbers(data), "a number sits on a line the source check did not parse"


def _count_numbers(node: object) -> int:
    if isinstance(node, dict):
        return sum(_count_numbers(v) for v in node.values())
    return int(isinstance(node, (int, float)) and not isinstance(node, bool))


def _copy(tmp_path: Path, edit, name: str = "table.yaml") -> Path:
    data = yaml.safe_load((TABLES_DIR / "default_16nm.yaml").read_text())
    path = tmp_path / name
    path.write_text(yaml.safe_dump(edit(data)))
    return path


def _set(data: dict, dotted: str, value: object) -> dict:
    *parents, leaf = dotted.split(".")
    node = data
    for part in parents:
        node = node[part]
    node[leaf] = value
    return data


def _drop(data: dict, dotted: str) -> dict:
    *parents, leaf = dotted.split(".")
    node = data
    for part in parents:
        node = node[part]
    del node[leaf]
    return data


@pytest.mark.parametrize(("edit", "key", "value"), [
    (lambda d: _set(d, "energy.systolic", {"mac": 1.0}), "energy.systolic", None),
    (lambda d: _set(d, "energy.multiplier.divide", 1.0), "energy.multiplier.divide", None),
    (lambda d: _set(d, "energy.multiplier.multiply", -0.5), "energy.multiplier.multiply", "-0.5"),
    (lambda d: _set(d, "area.sram_mm2_per_kb", -1.0), "area.sram_mm2_per_kb", "-1.0"),
    (lambda d: _set(d, "dram_pj_per_bit.ddr5", -3.0), "dram_pj_per_bit.ddr5", "-3.0"),
    (lambda d: _set(d, "energy.crossbar.route", "cheap"), "energy.crossbar.route", "'cheap'"),
    (lambda d: _drop(d, "energy.accumulator.drain"), "energy.accumulator.drain", None),
    (lambda d: _drop(d, "energy.halo"), "energy.halo", None),
    (lambda d: _drop(d, "leakage.sram_uw_per_kb"), "leakage.sram_uw_per_kb", None),
    (lambda d: _set(d, "kind", "arch"), "kind", "'arch'"),
    (lambda d: _set(d, "version", 2), "version", "2"),
])
def test_bad_table_names_file_key_and_value(tmp_path: Path, edit, key: str, value: str | None) -> None:
    path = _copy(tmp_path, edit)
    with pytest.raises(SpecError) as info:
        load_table(path)
    message = str(info.value)
    assert "\n" not in message
    assert str(path.resolve()) in message and f": {key}" in message, message
    if value is not None:
        assert f"got {value}" in message, message


def test_unknown_component_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"energy\.systolic: unknown key; known: .*multiplier"):
        load_table(_copy(tmp_path, lambda d: _set(d, "energy.systolic", {"mac": 1.0})))


def test_missing_file_and_unknown_builtin(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="nope.yaml: file not found"):
        load_table(tmp_path / "nope.yaml")
    with pytest.raises(SpecError, match="default_3nm: unknown builtin energy table; known: default_16nm"):
        load_table("default_3nm")


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("kind: energy_table\nversion: 1\nenergy: {multiplier: [\n")
    with pytest.raises(SpecError, match=r"broken\.yaml: malformed YAML at line \d+"):
        load_table(path)


def test_a_document_without_kind_is_rejected(tmp_path: Path) -> None:
    path = _copy(tmp_path, lambda d: _drop(d, "kind"))
    with pytest.raises(SpecError, match=r"table\.yaml: kind: required key is missing"):
        load_table(path)
