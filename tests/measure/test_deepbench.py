"""The DeepBench reader: one-line errors naming file, line, column and value."""

from __future__ import annotations

from pathlib import Path

import pytest

from antsim.errors import WorkloadError
from antsim.measure.deepbench import DEEPBENCH_COLUMNS, is_deepbench_csv, read_deepbench_csv

GOOD = ["P100", "fp32", "Resnet", 56, 56, 64, 8, 64, 1, 1, 0, 0, 1, 1, 0.163, 0.149, 0.333, "IMPLICIT_GEMM"]


def _write(path: Path, *rows: list, header: tuple[str, ...] = DEEPBENCH_COLUMNS) -> Path:
    path.write_text(",".join(header) + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return path


def test_a_row_maps_onto_a_layer_and_seconds(tmp_path: Path) -> None:
    (m,) = read_deepbench_csv(_write(tmp_path / "db.csv", GOOD))
    assert (m.layer.name, m.layer.C, m.layer.K, m.layer.H, m.layer.P, m.line) == ("Resnet-2", 64, 64, 56, 56, 2)
    assert m.times_s == pytest.approx({"fprop": 0.163e-3, "dgrad": 0.149e-3, "wgrad": 0.333e-3})
    assert m.implicit_gemm and m.source == "Resnet" and m.gpu == "P100"
    assert is_deepbench_csv(tmp_path / "db.csv")


@pytest.mark.parametrize(("index", "value", "message"), [
    (5, "5.5", "line 2: column C must be an integer; got '5.5'"),
    (15, "-0.1", "line 2: column dgrad_ms must be a finite number >= 0; got '-0.1'"),
    (16, "fast", "line 2: column wgrad_ms must be a number; got 'fast'"),
    (8, "0", "line 2: "),  # R = 0: the layer's own shape check, prefixed with the file and line
])
def test_bad_values_name_the_line_and_column(tmp_path: Path, index: int, value: str, message: str) -> None:
    row = list(GOOD)
    row[index] = value
    path = _write(tmp_path / "db.csv", row)
    with pytest.raises(WorkloadError, match=f"^{path}: {message}"):
        read_deepbench_csv(path)


def test_missing_column_file_and_precision(tmp_path: Path) -> None:
    no_k = [c for c in DEEPBENCH_COLUMNS if c != "K"]
    with pytest.raises(WorkloadError, match="lacks column\\(s\\) K$"):
        read_deepbench_csv(_write(tmp_path / "a.csv", [v for c, v in zip(DEEPBENCH_COLUMNS, GOOD, strict=True)
                                                       if c != "K"], header=tuple(no_k)))
    with pytest.raises(WorkloadError, match="measurement CSV not found"):
        read_deepbench_csv(tmp_path / "absent.csv")
    two = _write(tmp_path / "b.csv", ["X", "fp16", *GOOD[2:]], ["X", "bf16", *GOOD[2:]])
    with pytest.raises(WorkloadError, match="several precisions \\(bf16, fp16\\); choose one"):
        read_deepbench_csv(two, "default")
    assert [m.precision for m in read_deepbench_csv(two, "bf16")] == ["bf16"]
    assert len(read_deepbench_csv(two)) == 2


def test_source_and_algorithm_columns_are_optional(tmp_path: Path) -> None:
    header = tuple(c for c in DEEPBENCH_COLUMNS if c not in ("source", "fwd_algo"))
    row = [v for c, v in zip(DEEPBENCH_COLUMNS, GOOD, strict=True) if c in header]
    (m,) = read_deepbench_csv(_write(tmp_path / "db.csv", row, header=header))
    assert m.layer.name == "deepbench-2" and m.algo == "" and not m.implicit_gemm and m.source == ""
