"""PhaseWork (``antsim.dataflow.work``) as map_phase fills it: shapes, chunks, and the inequalities of its counts."""

from __future__ import annotations

import numpy as np
from dataflow_helpers import MAPPING_CASES as CASES
from dataflow_helpers import random_tensors, small_arch

from antsim.dataflow import map_phase


def test_phase_work_shapes_and_bookkeeping() -> None:
    layer, density, rows, cols, kc = CASES[0]
    t = random_tensors(layer, density, seed=4)
    for phase in ("fprop", "dgrad", "wgrad"):
        work = map_phase(small_arch("ant", rows, cols, kc), layer, phase, t)
        groups = -(-(layer.C if phase == "dgrad" else layer.K) // kc)
        assert work.n_chunks == layer.N * groups and work.n_pes == rows * cols
        assert work.tiling["chunks"] == work.n_chunks and work.tiling["Kc"] == kc
        assert work.needs_reduction == (phase == "wgrad")
        assert (work.issued_pairs <= work.candidate_pairs).all()
        assert (work.valid_products <= work.issued_products).all()
        assert (work.halo_outputs <= work.partial_outputs).all()
        stationary = {"fprop": t.activations, "dgrad": t.grad_output, "wgrad": t.wgrad_activations}[phase]
        assert int(work.stationary_values.sum()) == np.count_nonzero(stationary)
        assert work.notes
    assert map_phase(small_arch("ant", rows, cols, kc), layer, "wgrad", t).halo_outputs.sum() == 0
