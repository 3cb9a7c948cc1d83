"""The CSV reading both measurement readers share: stripped header and cells, line numbers, one-line errors."""

from __future__ import annotations

import csv
from pathlib import Path

from antsim.errors import WorkloadError
from antsim.workloads.layers import check_unique_header


def read_csv_rows(path: Path, what: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """``(header, [(line, row)])`` of a CSV file (line numbers as an editor shows them).

    Raises:
        WorkloadError: ``"<path>: <what> not found"``, an unreadable file, or no data rows.
    """
    if not path.is_file():
        raise WorkloadError(f"{path}: {what} not found")
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            header = [h.strip() for h in (reader.fieldnames or [])]
            check_unique_header(path, header)
            rows = []
            for line, row in enumerate(reader, start=2):
                if None in row:  # csv.DictReader files cells beyond the header under the key None
                    raise WorkloadError(f"{path}: line {line}: more cells than header columns")
                rows.append((line, {(k or "").strip(): (v or "").strip() for k, v in row.items()}))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise WorkloadError(f"{path}: not a readable CSV ({exc})") from None
    if not rows:
        raise WorkloadError(f"{path}: no data rows")
    return header, rows
