"""The shipped table of the learned GPU correction (``antsim.gpu.learned_table``): its features, its
provenance, and that it was fitted on the physical model as it is now (else refit:
``.venv/bin/python scripts/fit_gpu_correction.py``)."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

from antsim.gpu.learned import FEATURE_NAMES, model_fingerprint, shipped_table

DATA = Path(__file__).resolve().parents[1] / "data"


def test_the_table_holds_one_finite_weight_per_feature() -> None:
    table = shipped_table()
    assert table.features == FEATURE_NAMES
    assert all(math.isfinite(w) for w in (table.intercept, *table.weights)) and table.ridge_lambda > 0


def test_the_table_was_fitted_on_the_physical_model_as_it_is() -> None:
    assert shipped_table().fingerprint == model_fingerprint(), (
        "the physical GPU model changed since the learned correction was fitted: "
        "refit with .venv/bin/python scripts/fit_gpu_correction.py")


def test_the_provenance_names_the_measured_files() -> None:
    provenance = shipped_table().provenance
    assert provenance["refit"] == ".venv/bin/python scripts/fit_gpu_correction.py"
    files = provenance["data_files"]
    measured = {p.relative_to(DATA).as_posix() for harness in ("deepbench", "neusight")
                for p in (DATA / harness).glob("*.csv")}
    assert {entry["file"] for entry in files.values()} == measured
    for entry in files.values():  # the DeepBench sheets in tests/data are whole copies of the fitted ones
        if entry["file"].startswith("deepbench/"):
            assert hashlib.sha256((DATA / entry["file"]).read_bytes()).hexdigest() == entry["sha256"]
    assert provenance["rows"] == sum(entry["rows"] for entry in files.values())
