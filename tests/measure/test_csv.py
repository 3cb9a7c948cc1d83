"""``antsim.measure._csv.read_csv_rows``: stripped header and cells with the line numbers an editor shows,
checked against the stdlib csv module; every unusable file is one WorkloadError naming it."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from antsim.errors import WorkloadError
from antsim.measure._csv import read_csv_rows

TEXT = " name , phase,time_s\nconv1, fprop ,1e-3\n\"a,b\",dgrad,\"2e-3 \"\nc3,wgrad,\n"


def test_rows_are_the_stripped_csv_cells_with_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text(TEXT, encoding="utf-8")
    header, rows = read_csv_rows(path, "measurement file")
    reference = list(csv.reader(io.StringIO(TEXT)))
    assert header == [h.strip() for h in reference[0]] == ["name", "phase", "time_s"]
    assert [line for line, _ in rows] == [2, 3, 4]
    assert [list(row.values()) for _, row in rows] == [[c.strip() for c in r] for r in reference[1:]]
    assert rows[1][1] == {"name": "a,b", "phase": "dgrad", "time_s": "2e-3"}


@pytest.mark.parametrize(("content", "message"), [
    (None, "m.csv: measurement file not found"),
    (b"name,phase\n", "m.csv: no data rows"),
    (b"name,phase\nconv1,fprop,extra\n", "m.csv: line 2: more cells than header columns"),
    (b"name,phase\n\xff\xfe,fprop\n", "m.csv: not a readable CSV"),
    (b"name,name\nconv1,conv2\n", "m.csv: header: column 'name' appears twice"),
])
def test_unusable_files_are_one_line_naming_the_file(tmp_path: Path, content: bytes | None, message: str) -> None:
    path = tmp_path / "m.csv"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(WorkloadError) as info:
        read_csv_rows(path, "measurement file")
    assert message in str(info.value) and "\n" not in str(info.value)
