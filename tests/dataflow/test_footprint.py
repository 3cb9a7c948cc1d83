"""Fast footprints: the sparse per-tap path in output-channel batches equals the exact enumeration."""

from __future__ import annotations

import numpy as np
import pytest
from dataflow_helpers import random_tensors, small_arch

from antsim.dataflow import footprint, map_phase
from antsim.dataflow.tiling import make_tiling
from antsim.phases import phase_problem
from antsim.workloads.layers import Layer


@pytest.mark.parametrize("phase", ["fprop", "dgrad"])
@pytest.mark.parametrize("bitmap_keys", [1 << 26, 300, 1])
def test_sparse_footprint_in_channel_batches_equals_exact(phase: str, bitmap_keys: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A small bitmap budget splits the output channels into batches (down to one channel a batch): partial
    and halo outputs, outputs per chunk and valid products stay the integers the exact path enumerates."""
    layer = Layer("f", N=2, C=6, K=10, H=9, W=7, R=3, S=3, stride=2, pad=1)
    t = random_tensors(layer, 0.3, seed=8)
    rows, cols, kc = 2, 3, 3
    exact = map_phase(small_arch("ant", rows, cols, kc), layer, phase, t, fidelity="exact")
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, rows, cols, kc)
    monkeypatch.setattr(footprint, "_BITMAP_KEYS", bitmap_keys)
    found = footprint.plane_footprint_sparse(problem, tiling, problem.stationary(t) != 0, problem.streamed(t) != 0)
    order = exact.chunk_image * tiling.n_groups + exact.chunk_group  # footprints are image-major, work executed
    for field in ("valid_products", "partial_outputs", "halo_outputs"):
        assert np.array_equal(getattr(found, field).reshape(tiling.n_chunks, -1)[order], getattr(exact, field)), field
    assert np.array_equal(found.output_values[order], exact.output_values)
