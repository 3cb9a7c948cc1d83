"""Priced but never slows (issue 15): every capacity or width that costs area is refused below the minimum the
modelled function needs — one SpecError line naming key and value — and every shipped config and sweep
bound stays valid; a sampled sweep point below a minimum is an infeasible trial with its reason."""

from __future__ import annotations

import copy
from pathlib import Path

import optuna
import pytest
import yaml

from antsim.dse.runner import SweepOptions, run_sweep
from antsim.dse.spec import load_sweep
from antsim.errors import SpecError
from antsim.spec.arch import arch_from_dict, load_arch

ROOT = Path(__file__).resolve().parents[2]
SCNN = load_arch(ROOT / "arch_configs/scnn.yaml").to_dict()


def _with(section: str, **values: object) -> dict:
    data = copy.deepcopy(SCNN)
    data[section].update(values)
    return data


def _refused(data: dict, key: str, value: object) -> str:
    with pytest.raises(SpecError) as err:
        arch_from_dict(data, source="probe.yaml")
    msg = str(err.value)
    assert err.value.key == key and "\n" not in msg
    assert msg.startswith(f"probe.yaml: {key}: ") and msg.endswith(f"got {value!r}")
    return msg


@pytest.mark.parametrize("fmt", ["zero_run", "coordinate"])
def test_a_zero_bit_index_is_refused_where_the_format_needs_one(fmt: str) -> None:
    _refused(_with("compression", format=fmt, index_bits=0), "compression.index_bits", 0)
    assert arch_from_dict(_with("compression", format=fmt, index_bits=1)).compression.index_bits == 1


def test_bitmap_takes_no_per_value_index() -> None:
    # the bitmap size is values + one bit per position: an index width would be priced and never used
    _refused(_with("compression", format="bitmap", index_bits=4), "compression.index_bits", 4)
    assert arch_from_dict(_with("compression", format="bitmap", index_bits=0)).compression.format == "bitmap"


def test_a_dense_design_needs_no_index() -> None:
    dense = load_arch(ROOT / "arch_configs/dense.yaml")
    assert dense.compression.index_bits == 0 and not dense.sparsity_support


def test_the_weight_fifo_holds_two_f_vectors() -> None:
    _refused(_with("buffers", weight_fifo_entries=1), "buffers.weight_fifo_entries", 1)
    assert arch_from_dict(_with("buffers", weight_fifo_entries=2)).buffers.weight_fifo_entries == 2


@pytest.mark.parametrize(("banks", "entries", "bits"), [(32, 32, 24), (64, 32, 24), (16, 128, 32)])
def test_the_output_buffer_holds_one_drained_accumulator_half(banks: int, entries: int, bits: int) -> None:
    need_kb = banks * entries * bits / 8 / 1024  # bytes of one half, computed here from the definition
    data = _with("accumulators", banks=banks, entries_per_bank=entries, value_bits=bits)
    data["buffers"]["output_kb"] = need_kb
    assert arch_from_dict(data).buffers.output_kb == need_kb
    data["buffers"]["output_kb"] = need_kb * 0.999
    msg = _refused(data, "buffers.output_kb", need_kb * 0.999)
    assert f"{banks * entries * bits / 8:g} B" in msg


def test_the_issue_15_pareto_points_are_refused() -> None:
    # the sweep that put 2.6-byte output buffers, 2-entry FIFOs and 0-bit indices on its front
    _refused(_with("buffers", output_kb=2.6 / 1024), "buffers.output_kb", 2.6 / 1024)
    _refused(_with("buffers", output_kb=0.000001), "buffers.output_kb", 0.000001)
    _refused(_with("compression", index_bits=0), "compression.index_bits", 0)


@pytest.mark.parametrize("path", sorted((ROOT / "arch_configs").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_is_above_the_minimums(path: Path) -> None:
    load_arch(path)


@pytest.mark.parametrize("path", sorted((ROOT / "sweeps").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_sweep_bound_is_above_the_minimums(path: Path) -> None:
    load_sweep(path)  # checks every bound and choice with the arch's own rules


def test_a_sampled_point_below_a_minimum_is_an_infeasible_trial(tmp_path: Path) -> None:
    # each choice is valid beside the base arch (64 banks -> 6 KB <= 10 KB; 4 KB >= 3 KB), the pair is not
    spec_path = tmp_path / "mins.yaml"
    spec_path.write_text(yaml.safe_dump({
        "kind": "sweep", "version": 1, "base_arch": str(ROOT / "arch_configs/ant.yaml"),
        "evaluator": {"name": "analytic"},
        "space": {"accumulators.banks": {"choices": [32, 64]}, "buffers.output_kb": {"choices": [4.0, 10.0]}},
        "workload": {"layers": [{"name": "a", "N": 1, "C": 8, "K": 16, "H": 8, "W": 8, "R": 3, "S": 3,
                                 "stride": 1, "pad": 1}]},
        "objectives": {"time_s": "min", "area_mm2": "min"}, "sampler": "grid", "n_trials": 4, "seed": 0}))
    spec = load_sweep(spec_path)
    url = f"sqlite:///{tmp_path / 'mins.db'}"
    summary = run_sweep(spec, SweepOptions(storage_url=url, study_name="mins", n_trials=4))
    assert summary.counts.finished == 4 and summary.counts.errors == 0
    trials = optuna.load_study(study_name="mins", storage=url).get_trials()
    bad = [t for t in trials if t.params == {"accumulators.banks": 64, "buffers.output_kb": 4.0}]
    assert len(bad) == 1 and bad[0].state == optuna.trial.TrialState.PRUNED
    assert bad[0].user_attrs["feasible"] is False
    assert bad[0].user_attrs["reason"].startswith("arch rule: buffers.output_kb: must hold one drained")
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials if t is not bad[0])
