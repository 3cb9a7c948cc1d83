"""Pricing: counts × per-action energy (checked against hand arithmetic on the raw YAML), leakage × time."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from antsim.energy import ACTIONS, energy_per_action, leakage_power, load_table, price
from antsim.energy.tables import TABLES_DIR
from antsim.errors import SpecError
from antsim.spec.arch import arch_from_dict

ROOT = Path(__file__).resolve().parents[2]
RAW16 = yaml.safe_load((TABLES_DIR / "default_16nm.yaml").read_text())
PJ = 1e-12


def _variant(arch, **sections):
    data = arch.to_dict()
    for dotted, value in sections.items():
        section, key = dotted.split("__")
        data[section][key] = value
    return arch_from_dict(data)


def _hand_pj_scnn_16nm() -> dict[str, dict[str, float]]:
    """pJ per action for scnn.yaml (16-b mult, 32 banks × 32 × 24 b, 10 KB buffers, 50-entry FIFO, 16+4-b words),
    written out from the raw 16 nm YAML entries with the laws of tables/README.md."""
    e, p = RAW16["energy"], RAW16["parameters"]
    word = 16 + 4
    bank_kb = 32 * 24 / 8192
    fifo_kb = 50 * 4 * word / 8192
    acc_scale = math.sqrt(bank_kb / p["accumulator_ref_kb"])
    buf_scale = math.sqrt(10 / 16)
    fifo_scale = math.sqrt(fifo_kb / p["weight_fifo_ref_kb"])
    return {
        "multiplier": {"multiply": e["multiplier"]["multiply"]},
        "coordinate": {"compute": e["coordinate"]["compute"]},
        "crossbar": {"route": e["crossbar"]["route"] * (32 / 4) * (24 / 32)},
        "accumulator": {"update": (e["accumulator"]["update"] * acc_scale + p["accumulator_add_pj_per_bit"]) * 24,
                        "drain": e["accumulator"]["drain"] * acc_scale * 24},
        "input_buffer": {a: e["input_buffer"][a] * buf_scale * word for a in ("read", "write")},
        "weight_fifo": {a: e["weight_fifo"][a] * fifo_scale * word for a in ("read", "write")},
        "output_buffer": {a: e["output_buffer"][a] * buf_scale * word for a in ("read", "write")},
        "anticipation": {"screen": e["anticipation"]["screen"]},
        "halo": {"transfer": e["halo"]["transfer"] * 24},
        "reduction": {"add": e["reduction"]["add"] * 24},
        "dram": {"read_bits": 8.0, "write_bits": 8.0},
    }


def _counts(scale: float = 1.0) -> dict[str, dict[str, float]]:
    base = 1000.0
    return {c: {a: scale * base * (i + 1) * (j + 2) for j, a in enumerate(acts)}
            for i, (c, acts) in enumerate(ACTIONS.items())}


def test_energy_per_action_matches_hand_arithmetic(scnn) -> None:
    hand = _hand_pj_scnn_16nm()
    got = energy_per_action(scnn)
    assert set(got) == set(ACTIONS)
    for component, actions in ACTIONS.items():
        for action in actions:
            assert got[component][action] == pytest.approx(hand[component][action] * PJ, rel=1e-12), \
                f"{component}.{action}"


def test_price_is_counts_times_per_action_energy(scnn) -> None:
    hand = _hand_pj_scnn_16nm()
    counts = _counts()
    joules = price(counts, scnn, 0.0)
    assert set(joules) == set(ACTIONS) | {"leakage"}
    assert joules["leakage"] == 0.0
    for component, actions in counts.items():
        expected = sum(n * hand[component][a] * PJ for a, n in actions.items())
        assert joules[component] == pytest.approx(expected, rel=1e-12), component


def test_only_counted_components_are_returned(scnn) -> None:
    joules = price({"multiplier": {"multiply": 1e6}}, scnn, 1e-3)
    assert set(joules) == {"multiplier", "leakage"}
    assert joules["multiplier"] == pytest.approx(1e6 * RAW16["energy"]["multiplier"]["multiply"] * PJ)


def test_energy_is_linear_in_counts(scnn) -> None:
    one, three = price(_counts(), scnn, 1e-4), price(_counts(3.0), scnn, 1e-4)
    for component in ACTIONS:
        assert three[component] == pytest.approx(3 * one[component], rel=1e-12)
    assert three["leakage"] == one["leakage"]


def test_leakage_is_power_times_time(scnn) -> None:
    counts = _counts()
    base = price(counts, scnn, 1e-3)["leakage"]
    assert base > 0
    assert price(counts, scnn, 5e-3)["leakage"] == pytest.approx(5 * base, rel=1e-12)
    assert price({}, scnn, 1e-3)["leakage"] == pytest.approx(base, rel=1e-12)
    assert base == pytest.approx(sum(leakage_power(scnn).values()) * 1e-3, rel=1e-12)


def test_leakage_power_matches_hand_arithmetic(scnn) -> None:
    e, p, leak = RAW16["energy"], RAW16["parameters"], RAW16["leakage"]
    hand = _hand_pj_scnn_16nm()
    f, clock, n_pes = leak["logic_fraction_per_cycle"], 1e9, 64
    logic_pj = 16 * (hand["multiplier"]["multiply"] + hand["coordinate"]["compute"] + hand["crossbar"]["route"]) \
        + 32 * p["accumulator_add_pj_per_bit"] * 24
    register_bits = 32 * 32 * 24 * 2 + 50 * 4 * 20
    watts = n_pes * (f * logic_pj * PJ * clock + register_bits * leak["register_uw_per_bit"] * 1e-6
                     + 20 * leak["sram_uw_per_kb"] * 1e-6)
    assert e  # the energy entries feed `hand`
    assert sum(leakage_power(scnn).values()) == pytest.approx(watts, rel=1e-12)


def test_ant_unit_leaks_and_scnn_has_none(scnn, ant) -> None:
    assert leakage_power(scnn)["anticipation"] == 0.0
    assert leakage_power(ant)["anticipation"] > 0.0


def test_sizes_scale_energy(scnn) -> None:
    base = energy_per_action(scnn)
    half_mult = energy_per_action(_variant(scnn, pe_array__multiplier_bits=8))
    assert half_mult["multiplier"]["multiply"] == pytest.approx(base["multiplier"]["multiply"] / 4)
    wide_xbar = energy_per_action(_variant(scnn, accumulators__banks=64))
    assert wide_xbar["crossbar"]["route"] == pytest.approx(2 * base["crossbar"]["route"])
    big_buffer = energy_per_action(_variant(scnn, buffers__input_kb=40.0))
    assert big_buffer["input_buffer"]["read"] == pytest.approx(2 * base["input_buffer"]["read"])  # √(40/10)
    assert big_buffer["output_buffer"] == base["output_buffer"]
    # 32 x 128 x 24 b = 12 KB per half: the output buffer must hold a drained half (spec rule)
    deep_banks = energy_per_action(_variant(scnn, accumulators__entries_per_bank=128, buffers__output_kb=12.0))
    assert deep_banks["accumulator"]["drain"] == pytest.approx(2 * base["accumulator"]["drain"])  # √4


def test_dense_design_has_no_crossbar_or_coordinate_energy(scnn) -> None:
    data = scnn.to_dict()
    data["sparsity_support"] = False
    data["compression"] = {"format": "dense", "value_bits": 16, "index_bits": 0}
    dense = arch_from_dict(data)
    got, base = energy_per_action(dense), energy_per_action(scnn)
    assert got["crossbar"]["route"] == 0.0 and got["coordinate"]["compute"] == 0.0
    assert got["multiplier"] == base["multiplier"]
    # 16-b words instead of 16 + 4
    assert got["input_buffer"]["read"] == pytest.approx(base["input_buffer"]["read"] * 16 / 20)


def test_dram_technology_picks_its_row(scnn) -> None:
    hbm = energy_per_action(_variant(scnn, dram__technology="hbm2"))
    assert hbm["dram"]["read_bits"] == pytest.approx(3.9 * PJ)
    with pytest.raises(SpecError, match=r"default_16nm\.yaml: dram_pj_per_bit\.sdram: unknown DRAM technology"):
        energy_per_action(_variant(scnn, dram__technology="sdram"))


def test_bad_counts_and_time_are_rejected(scnn) -> None:
    with pytest.raises(ValueError, match="unknown action multiplier.divide"):
        price({"multiplier": {"divide": 1}}, scnn, 0.0)
    with pytest.raises(ValueError, match="unknown component"):
        price({"systolic": {"mac": 1}}, scnn, 0.0)
    with pytest.raises(ValueError, match="negative count"):
        price({"multiplier": {"multiply": -1}}, scnn, 0.0)
    with pytest.raises(ValueError, match="time_s"):
        price({}, scnn, -1.0)


def test_45nm_table_prices_the_same_actions_higher(scnn) -> None:
    data = scnn.to_dict()
    data["technology"]["energy_table"] = "default_45nm"
    e45, e16 = energy_per_action(arch_from_dict(data)), energy_per_action(scnn)
    for component in ("multiplier", "crossbar", "accumulator", "input_buffer", "anticipation"):
        for action, joules in e16[component].items():
            assert e45[component][action] == pytest.approx(joules / 0.174, rel=2e-3), f"{component}.{action}"


def test_16nm_entries_are_45nm_scaled_by_stillmaker_baas() -> None:
    """The two files are derived separately; every logic/SRAM energy entry must agree with the
    S&B 45→16 nm energy ratio 0.174 (docs/energy_area_reference.md §4); halo/reduction use a V²-only wire law."""
    t16, t45 = load_table("default_16nm"), load_table("default_45nm")
    for component, actions in ACTIONS.items():
        if component in ("dram", "halo", "reduction"):
            continue
        for action in actions:
            ratio = t16.action_pj(component, action) / t45.action_pj(component, action)
            assert ratio == pytest.approx(0.174, rel=1e-3), f"{component}.{action}"
    assert t16.dram_pj_per_bit == t45.dram_pj_per_bit


# CACTI 7 SRAM reads and writes at 45 nm, word width 16–64 b (docs/energy_area_reference.md §1c):
# (KB, word bits, read pJ, write pJ) per access.
CACTI_45NM = [
    (0.375, 16, 0.628, 1.530),
    (2.0, 32, 2.232, 2.635),
    (16.0, 32, 9.978, 6.868),
    (64.0, 64, 25.87, 19.65),
    (100.0, 64, 28.33, 23.41),
    (128.0, 64, 32.29, 26.07),
]


@pytest.mark.parametrize(("kb", "bits", "read_pj", "write_pj"), CACTI_45NM)
def test_storage_law_tracks_cacti_points(kb: float, bits: int, read_pj: float, write_pj: float) -> None:
    """size^0.5 per bit, anchored at one CACTI point, stays within 2× of every other read of width 16–64 b
    (and 3× of the writes: small-array writes carry a fixed overhead the law ignores)."""
    data = {"name": "probe", "compression": {"format": "zero_run", "value_bits": bits // 2, "index_bits": bits // 2},
            "buffers": {"input_kb": kb, "output_kb": 10.0, "weight_fifo_entries": 50},
            "technology": {"energy_table": "default_45nm"}}
    per_access = energy_per_action(arch_from_dict(data))["input_buffer"]
    assert 0.5 < per_access["read"] / (read_pj * PJ) < 2.0
    assert 1 / 3 < per_access["write"] / (write_pj * PJ) < 3.0


def test_a_table_path_in_the_arch_is_used(tmp_path: Path, scnn) -> None:
    raw = (TABLES_DIR / "default_16nm.yaml").read_text().replace("multiply: 0.1392", "multiply: 0.2784")
    path = tmp_path / "doubled.yaml"
    path.write_text(raw)
    data = scnn.to_dict()
    data["technology"]["energy_table"] = str(path)
    arch = arch_from_dict(data)
    assert energy_per_action(arch)["multiplier"]["multiply"] == pytest.approx(2 * energy_per_action(scnn)
                                                                              ["multiplier"]["multiply"])
    assert load_table(path).source == str(path.resolve())


def test_bank_fifos_add_one_write_and_one_read_per_update_and_leak_as_registers(scnn) -> None:
    """accumulators.queue_depth Q: every product is written to and read from its bank's FIFO (value 24 b + entry
    5 b for 32 entries), priced at the weight FIFO's per-bit law for a Q × 29 b FIFO; the FIFO bits leak as
    registers. Q = 0 prices nothing extra."""
    e, p = RAW16["energy"], RAW16["parameters"]
    queued = _variant(scnn, accumulators__queue_depth=2)
    bits = 24 + 5
    scale = math.sqrt(2 * bits / 8192 / p["weight_fifo_ref_kb"])
    hand_pj = (e["weight_fifo"]["read"] + e["weight_fifo"]["write"]) * scale * bits
    base, got = energy_per_action(scnn), energy_per_action(queued)
    assert got["accumulator"]["update"] - base["accumulator"]["update"] == pytest.approx(hand_pj * PJ, rel=1e-12)
    assert {c: a for c, a in got.items() if c != "accumulator"} == {c: a for c, a in base.items() if c != "accumulator"}
    assert got["accumulator"]["drain"] == base["accumulator"]["drain"]
    fifo_bits = 2 * 32 * bits * scnn.pe_array.n_pes
    extra_w = leakage_power(queued)["accumulator"] - leakage_power(scnn)["accumulator"]
    assert extra_w == pytest.approx(fifo_bits * RAW16["leakage"]["register_uw_per_bit"] * 1e-6, rel=1e-9)
