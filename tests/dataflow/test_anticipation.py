"""RCP fractions and anticipation on 32×32 planes, and exact bank-conflict counting."""

from __future__ import annotations

import numpy as np
import pytest
from dataflow_helpers import config_with, random_tensors, small_arch

from antsim.dataflow import map_phase
from antsim.sparsity.generators import make_tensors
from antsim.workloads.layers import Layer

PLANE32 = Layer("plane32", N=1, C=4, K=4, H=32, W=32, R=3, S=3, stride=1, pad=1)


@pytest.mark.parametrize("density", [0.05, 0.2, 0.6])
def test_wgrad_rcp_fraction_on_one_tile_is_density_independent(density: float) -> None:
    """One PE tile holding the whole plane: RCP fraction ≈ 1 − R·S/(H·W), whatever the density."""
    arch = small_arch("none", rows=1, cols=1, kc=4)
    t = random_tensors(PLANE32, density, seed=int(density * 100))
    p = map_phase(arch, PLANE32, "wgrad", t).products
    expected = 1 - PLANE32.R * PLANE32.S / (PLANE32.H * PLANE32.W)
    assert p.rcp / p.total == pytest.approx(expected, abs=0.03 * (1 - expected) + 1e-3)
    # total is every non-zero pair of the same image
    assert p.total == np.count_nonzero(t.activations) * np.count_nonzero(t.grad_output)


@pytest.mark.parametrize("model", ["uniform", "topk_field"])
def test_ant_anticipates_most_wgrad_rcps_and_oracle_all(model: str) -> None:
    """resnet18-cifar-like 3×3 layer at 32×32 (channels reduced), density 0.1, default SCNN tiling."""
    layer = Layer("res", N=1, C=16, K=16, H=32, W=32, R=3, S=3, stride=1, pad=1)
    t = make_tensors(layer, density_w=0.1, density_a=0.1, density_g=0.1, model=model, seed=0)
    base = map_phase(config_with("arch_configs/scnn.yaml"), layer, "wgrad", t).products
    ant = map_phase(config_with("arch_configs/ant.yaml"), layer, "wgrad", t).products
    oracle = map_phase(config_with("arch_configs/ant.yaml", anticipation={"policy": "oracle"}), layer, "wgrad",
                       t).products
    assert base.skipped == 0 and base.rcp > 0.95 * base.total
    assert ant.total == base.total and ant.valid == base.valid == oracle.valid
    assert ant.skipped >= 0.90 * ant.rcp
    assert oracle.skipped == oracle.rcp


def test_one_bank_serialises_every_valid_product() -> None:
    """1×1 stride-1 fprop: every product is valid, so with one bank a pair costs one cycle per product."""
    layer = Layer("pw", N=1, C=3, K=6, H=8, W=8, R=1, S=1)
    t = random_tensors(layer, 0.5, seed=11)
    arch = small_arch("none", 2, 2, 3, accumulators={"banks": 1, "bank_hash": "mod"})
    work = map_phase(arch, layer, "fprop", t, fidelity="exact")
    assert work.products.rcp == 0
    assert np.array_equal(work.conflict_cycles, work.issued_products - work.issued_pairs)
    assert work.conflict_cycles.sum() > 0


def test_enough_banks_with_distinct_outputs_never_conflict() -> None:
    """1×1 fprop: a pair's products hit distinct (k, p, q); banks ≥ the accumulator region → no conflict."""
    layer = Layer("pw", N=1, C=3, K=6, H=8, W=8, R=1, S=1)
    t = random_tensors(layer, 0.5, seed=12)
    region = 3 * 4 * 4  # Kc × tile (a 1×1 kernel reaches only the PE's own 4×4 tile)
    for banks, bank_hash in ((region, "mod"), (64, "xor")):  # each a bijection on indices < banks
        work = map_phase(small_arch("none", 2, 2, 3, accumulators={"banks": banks, "bank_hash": bank_hash}),
                         layer, "fprop", t, fidelity="exact")
        assert work.conflict_cycles.sum() == 0, bank_hash
    one_pe_lane = map_phase(small_arch("none", 2, 2, 3, pe_array={"F": 1, "I": 1},
                                       accumulators={"banks": 1, "bank_hash": "mod"}),
                            layer, "fprop", t, fidelity="exact")
    assert one_pe_lane.conflict_cycles.sum() == 0
