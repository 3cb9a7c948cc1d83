"""scripts/scnn_density_sweep.py: break-even interpolation on synthetic curves; a 2-layer run end to end."""

from __future__ import annotations

import csv
import importlib.util
import math
import random
import sys
from pathlib import Path

import pytest

import antsim

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "scnn_density_sweep.py"


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("scnn_density_sweep", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve string annotations through sys.modules
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


SWEEP = _script()


@pytest.mark.parametrize("crossing,growth", [(0.8, 3.5), (0.62, 6.0), (0.15, 1.2)])
def test_break_even_is_exact_on_a_geometric_curve(crossing: float, growth: float) -> None:
    # speed = exp(growth · (crossing − d)) is log-linear in d, so the interpolation must return `crossing`
    # wherever it falls between two sweep points; the input order must not matter.
    curve = [(d, math.exp(growth * (crossing - d))) for d in SWEEP.DENSITIES]
    random.Random(1).shuffle(curve)
    assert SWEEP.break_even(curve) == pytest.approx(crossing, rel=1e-12)


def test_break_even_on_the_published_curve_and_edge_cases() -> None:
    assert SWEEP.break_even(sorted(SWEEP.PAPER_SPEED.items())) == pytest.approx(0.85)  # the point at speed 1
    # between 0.79 at 1.0 and 1.21 at 0.5: ln-linear → 1 − 0.5 · ln 0.79 / (ln 0.79 − ln 1.21)
    expected = 1.0 - 0.5 * math.log(0.79) / (math.log(0.79) - math.log(1.21))
    assert SWEEP.break_even([(1.0, 0.79), (0.5, 1.21), (0.1, 9.0)]) == pytest.approx(expected, rel=1e-12)
    assert SWEEP.break_even([(1.0, 1.2), (0.5, 3.0)]) is None  # ahead at every point
    assert SWEEP.break_even([(1.0, 0.3), (0.1, 0.9)]) is None  # behind at every point
    assert SWEEP.break_even([(1.0, 0.5), (0.5, 1.0)]) == 0.5


def test_bad_arguments_exit_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, key in ((["--densities", "1.0,1.5"], "--densities"), (["--densities", "0.5,x"], "--densities"),
                      (["--layers", "0"], "--layers"), (["--jobs", "0"], "--jobs"),
                      (["--arch", str(SCRIPT.parents[1] / "arch_configs" / "scnn.yaml"),
                        "--arch", str(SCRIPT.parents[1] / "arch_configs" / "scnn.yaml")], "--arch")):
        assert SWEEP.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: {key}") and "\n" not in err, err


def test_two_layer_sweep_runs_and_its_table_is_consistent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sweep.csv"
    assert SWEEP.main(["--layers", "2", "--densities", "1.0,0.3", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = list(csv.DictReader(out.open()))
    assert [(float(r["density"]), r["design"]) for r in rows] == [(1.0, "dense"), (1.0, "scnn"), (0.3, "dense"),
                                                                  (0.3, "scnn")]
    dense = {float(r["density"]): r for r in rows if r["design"] == "dense"}
    scnn = {float(r["density"]): r for r in rows if r["design"] == "scnn"}
    # The dense design multiplies zeros: its cycles do not depend on density, and no design beats the
    # multiplier bound (all MACs over 64 PEs x 16 multipliers).
    layers = antsim.network("googlenet-imagenet")[1:3]
    assert dense[1.0]["cycles"] == dense[0.3]["cycles"]
    assert int(dense[1.0]["cycles"]) >= sum(layer.macs for layer in layers) / 1024
    assert int(scnn[0.3]["cycles"]) < int(scnn[1.0]["cycles"])
    for d in (1.0, 0.3):
        assert float(scnn[d]["speed_vs_dense"]) == pytest.approx(float(dense[d]["time_s"]) / float(scnn[d]["time_s"]))
        assert float(scnn[d]["energy_vs_dense"]) == pytest.approx(
            float(scnn[d]["energy_j"]) / float(dense[d]["energy_j"]))
        assert float(dense[d]["speed_vs_dense"]) == 1.0
    assert scnn[1.0]["paper_speed"] == "0.79" and scnn[0.3]["paper_speed"] == ""
    curve = [(d, float(r["speed_vs_dense"])) for d, r in scnn.items()]
    value = SWEEP.break_even(curve)
    shown = f"{value:.3f}" if value is not None else "above 1.00" if curve[1][1] > 1 else "below 0.30"
    assert f"break-even density (scnn speed = dense): {shown}" in printed
    assert "(paper: 0.850)" in printed


def test_set_changes_every_design_alike_and_bad_changes_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    scnn = SCRIPT.parents[1] / "arch_configs" / "scnn.yaml"
    changed = SWEEP.load_design(scnn, ["accumulators.queue_depth=3", "accumulators.bank_hash=mod"])
    base = antsim.load_arch(scnn)
    assert (changed.accumulators.queue_depth, changed.accumulators.bank_hash) == (3, "mod")
    a, b = base.to_dict(), changed.to_dict()
    assert {k for k in a if a[k] != b[k]} == {"accumulators"}
    assert {k for k in a["accumulators"] if a["accumulators"][k] != b["accumulators"][k]} == {"queue_depth",
                                                                                               "bank_hash"}
    for change, fragment in (("queue_depth=2", "--set: 'queue_depth=2'"), ("accumulators.queue_depth", "--set:"),
                             ("accumulators.queue_depth=-1", "accumulators.queue_depth"),
                             ("accumulators.queue_depth=2.5", "got 2.5")):
        assert SWEEP.main(["--layers", "1", "--densities", "1.0", "--set", change]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and fragment in err and "\n" not in err, err
