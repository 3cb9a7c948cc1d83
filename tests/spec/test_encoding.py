"""Compressed sizes against a brute-force encoder of SCNN's zero-run format."""

from __future__ import annotations

import numpy as np
import pytest

from antsim.spec.arch import Compression
from antsim.spec.encoding import encoded_bits, zero_run_placeholders


def brute_force_zero_run_entries(stream: np.ndarray, index_bits: int) -> int:
    """Entries the zero-run encoder stores: one per non-zero plus an explicit zero per full run."""
    longest = 2**index_bits - 1
    entries, run = 0, 0
    for value in stream:
        if value:
            entries, run = entries + 1, 0
        elif run == longest:  # this zero is stored explicitly with index = longest
            entries, run = entries + 1, 0
        else:
            run += 1
    return entries


@pytest.mark.parametrize("density", [0.3, 0.1, 0.03])
def test_zero_run_placeholders_match_brute_force(density):
    rng = np.random.default_rng(7)
    stream = rng.random(120_000) < density
    nnz = int(stream.sum())
    measured = brute_force_zero_run_entries(stream, 4) / nnz - 1.0
    assert zero_run_placeholders(density, 4) == pytest.approx(measured, rel=0.08, abs=0.003)


def test_formats_closed_forms():
    comp = {"value_bits": 16, "index_bits": 4}
    assert encoded_bits(100, 0.1, Compression(format="coordinate", **comp)) == 100 * 20
    assert encoded_bits(100, 0.1, Compression(format="bitmap", **comp)) == pytest.approx(100 * 16 + 1000)
    assert encoded_bits(100, 0.1, Compression(format="dense", **comp)) == pytest.approx(1000 * 16)
    assert encoded_bits(100, 1.0, Compression(format="zero_run", **comp)) == 100 * 20
    assert encoded_bits(0, 0.1, Compression(format="zero_run", **comp)) == 0
