"""PhaseWork (``antsim.dataflow.work``) as map_phase fills it: shapes, chunks, and the inequalities of its counts."""

from __future__ import annotations

import numpy as np
from dataflow_helpers import random_tensors, small_arch

from antsim.dataflow import map_phase
from antsim.workloads.layers import Layer

CASES = [  # (layer, density, rows, cols, Kc)
    (Layer("s1", N=2, C=3, K=5, H=9, W=7, R=3, S=3, stride=1, pad=1), 0.4, 2, 3, 2),
    (Layer("s2", N=1, C=4, K=3, H=11, W=9, R=3, S=3, stride=2, pad=1), 0.5, 3, 2, 2),
    (Layer("ns", N=3, C=2, K=4, H=9, W=10, R=5, S=3, stride=(2, 1), pad=(2, 0)), 0.3, 2, 2, 3),
    (Layer("k1", N=1, C=3, K=4, H=7, W=7, R=1, S=1, stride=2, pad=0), 0.6, 2, 2, 4),
    (Layer("k5", N=2, C=2, K=2, H=13, W=11, R=5, S=5, stride=1, pad=2), 0.25, 3, 3, 1),
]


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
