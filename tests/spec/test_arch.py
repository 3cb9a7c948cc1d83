"""Arch specs: the shipped files load; bad input gives one line naming file, key and value, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import antsim
from antsim.cli import main
from antsim.errors import SpecError
from antsim.spec.arch import arch_field_paths, arch_from_dict

ROOT = Path(__file__).resolve().parents[2]


def test_scnn_and_ant_are_the_published_configuration() -> None:
    scnn = antsim.load_arch(ROOT / "arch_configs/scnn.yaml")
    ant = antsim.load_arch(ROOT / "arch_configs/ant.yaml")
    assert scnn.pe_array.n_pes == 64 and scnn.pe_array.multipliers == 1024
    assert (scnn.pe_array.F, scnn.pe_array.I, scnn.accumulators.banks) == (4, 4, 32)
    assert scnn.anticipation.policy == "none" and ant.anticipation.policy == "ant"
    dense = antsim.load_arch(ROOT / "arch_configs/dense.yaml")
    assert (scnn.screens_pairs, ant.screens_pairs, dense.screens_pairs) == (False, True, False)
    # the two files differ only in name/description and the anticipation section
    a, b = scnn.to_dict(), ant.to_dict()
    assert {k for k in a if a[k] != b[k]} == {"name", "description", "anticipation"}


def test_spec_is_frozen() -> None:
    scnn = antsim.load_arch(ROOT / "arch_configs/scnn.yaml")
    with pytest.raises(ValueError):
        scnn.pe_array.F = 8  # type: ignore[misc]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "arch.yaml"
    path.write_text(text)
    return path


BASE = (ROOT / "arch_configs/scnn.yaml").read_text()


@pytest.mark.parametrize("edit,key,fragment", [
    (lambda d: d["pe_array"].update(F=0), "pe_array.F", "got 0"),
    (lambda d: d["pe_array"].update(rows="8"), "pe_array.rows", "got '8'"),
    (lambda d: d["buffers"].update(input_kb=-1.0), "buffers.input_kb", "got -1.0"),
    (lambda d: d["pe_array"].update(colour="red"), "pe_array.colour", "unknown key; known: F, I, cols"),
    (lambda d: d.update(bogus=1), "bogus", "unknown key"),
    (lambda d: d["anticipation"].update(policy="psychic"), "anticipation.policy", "got 'psychic'"),
    (lambda d: d.pop("name"), "name", "required key is missing"),
    (lambda d: d.update(kind="gpu"), "kind", "must be 'arch'"),
    (lambda d: d.update(sparsity_support=False, anticipation={"policy": "ant"}), "anticipation.policy",
     "dense design"),
])
def test_bad_values_name_file_key_and_value(tmp_path: Path, capsys, edit, key: str, fragment: str) -> None:
    data = yaml.safe_load(BASE)
    edit(data)
    path = _write(tmp_path, yaml.safe_dump(data))
    with pytest.raises(SpecError) as info:
        antsim.load_arch(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {key}") and fragment in message and "\n" not in message


def test_malformed_yaml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"malformed YAML at line 3, column 1"):
        antsim.load_arch(_write(tmp_path, "kind: arch\npe_array: {rows: [\n"))
    with pytest.raises(SpecError, match="file not found"):
        antsim.load_arch(tmp_path / "missing.yaml")
    with pytest.raises(SpecError, match="must be a YAML mapping"):
        antsim.load_arch(_write(tmp_path, "- 1\n- 2\n"))


def test_relative_table_paths_resolve_against_the_arch_file(tmp_path: Path) -> None:
    data = yaml.safe_load(BASE)
    data["technology"]["energy_table"] = "tables/mine.yaml"
    arch = antsim.load_arch(_write(tmp_path, yaml.safe_dump(data)))
    assert arch.technology.energy_table == str((tmp_path / "tables/mine.yaml").resolve())


def test_field_paths_cover_sweepable_parameters() -> None:
    paths = arch_field_paths()
    for key in ("pe_array.rows", "pe_array.F", "accumulators.banks", "buffers.input_kb",
                "mapping.output_channel_group", "technology.clock_ghz", "dram.bandwidth_gbps",
                "anticipation.policy", "anticipation.pairs_per_cycle"):
        assert key in paths
    with pytest.raises(SpecError, match="<sweep>: pe_array.rows"):
        arch_from_dict({"name": "x", "pe_array": {"rows": 0}}, source="<sweep>")


def test_cli_reports_spec_errors_in_one_line_with_exit_2(tmp_path: Path, capsys) -> None:
    path = _write(tmp_path, BASE.replace("F: 4 ", "F: -4 "))
    pytest.importorskip("antsim.cli.simulate", reason="simulate command not built yet")
    try:
        status = main(["simulate", "--arch", str(path), "--out", str(tmp_path / "r.json")])
    except SystemExit as exc:  # argparse-level failure would be a bug in the test setup
        raise AssertionError(exc) from None
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "pe_array.F" in err[0] and "-4" in err[0]
    assert not (tmp_path / "r.json").exists()
