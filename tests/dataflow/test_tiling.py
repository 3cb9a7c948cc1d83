"""Planar tiling: the capacity-sized output-channel group (``mapping.output_channel_group: 0``)."""

from __future__ import annotations

import pytest
from dataflow_helpers import random_tensors, small_arch

from antsim.dataflow import map_phase
from antsim.dataflow.tiling import make_tiling
from antsim.phases import phase_problem
from antsim.workloads.layers import Layer


@pytest.mark.parametrize("layer,phase,entries,kc", [
    # 56x56 on 8x8 PEs: 7x7 tiles, a 3x3 stride-1 pad-1 fprop reaches a 9x9 output window: 1024 // 81
    (Layer("a", N=1, C=64, K=64, H=56, W=56, R=3, S=3, stride=1, pad=1), "fprop", 1024, 12),
    # 7x7 on 8x8 PEs: 1x1 tiles (the last row/column empty), window 3x3: 1024 // 9 = 113, capped at K = 64
    (Layer("b", N=1, C=32, K=64, H=7, W=7, R=3, S=3, stride=1, pad=1), "fprop", 1024, 64),
    # 1x1 conv: the window is the tile itself, 4x4 at 32x32: 1024 // 16 = 64 of K = 256
    (Layer("c", N=1, C=16, K=256, H=32, W=32, R=1, S=1), "fprop", 1024, 64),
    # dgrad's output is the input plane (dA): the 7x7 tile's window under a 3x3 stride-1 reach is 9x9 again
    (Layer("d", N=1, C=64, K=64, H=56, W=56, R=3, S=3, stride=1, pad=1), "dgrad", 1024, 12),
    # wgrad: each output channel is C·R·S partial sums of dW: 1024 // (8·3·3) = 14
    (Layer("e", N=1, C=8, K=32, H=16, W=16, R=3, S=3, stride=1, pad=1), "wgrad", 1024, 14),
    # ... and at least one channel when even one does not fit (64·9 = 576 > 512)
    (Layer("f", N=1, C=64, K=32, H=16, W=16, R=3, S=3, stride=1, pad=1), "wgrad", 512, 1),
])
def test_capacity_group_is_what_one_accumulator_half_holds(layer: Layer, phase: str, entries: int, kc: int) -> None:
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, 8, 8, 0, entries)
    assert tiling.kc == kc
    assert tiling.n_groups == -(-problem.streamed_shape[2] // kc)
    assert make_tiling(problem, 8, 8, 5, entries).kc == 5  # a given Kc is kept


@pytest.mark.parametrize("phase", ["fprop", "dgrad", "wgrad"])
def test_capacity_groups_never_overflow_the_accumulator_half(phase: str) -> None:
    """With Kc = 0 no PE holds more partial outputs in a chunk than one half's banks × entries; the fixed
    Kc that overflows here re-streams instead (the reason SCNN sizes Kc from its accumulators)."""
    layer = Layer("g", N=1, C=6, K=24, H=12, W=12, R=3, S=3, stride=1, pad=1)
    t = random_tensors(layer, 0.9, seed=2)
    half = 4 * 16
    auto = small_arch("none", 2, 2, 0, accumulators={"banks": 4, "entries_per_bank": 16})
    work = map_phase(auto, layer, phase, t, fidelity="exact")
    assert work.partial_outputs.max() <= half
    assert work.tiling["Kc"] == make_tiling(phase_problem(layer, phase), 2, 2, 0, half).kc
    fixed = map_phase(small_arch("none", 2, 2, 8, accumulators={"banks": 4, "entries_per_bank": 16}), layer, phase,
                      t, fidelity="exact")
    assert fixed.partial_outputs.max() > half
    assert work.valid_products.sum() == fixed.valid_products.sum()
