"""SCNN's DCNN (mapping.dense_packing: cartesian) against DNNsim's closed form of dense cycles."""

from __future__ import annotations

import numpy as np
import pytest
from dataflow_helpers import arch_from_dict, random_tensors

from antsim.dataflow import map_phase
from antsim.errors import SpecError
from antsim.phases import reference
from antsim.workloads.layers import Layer


def _dcnn(packing: str, rows: int = 3, cols: int = 2, kc: int = 3):  # type: ignore[no-untyped-def]
    return arch_from_dict({"name": "d", "sparsity_support": False, "pe_array": {"rows": rows, "cols": cols},
                           "mapping": {"output_channel_group": kc, "dense_packing": packing}})


@pytest.mark.parametrize("density", [1.0, 0.3])
def test_cartesian_dense_issues_every_tile_element_times_every_group_weight(density: float) -> None:
    """Per (chunk, PE): Σ over input channels ceil(tile positions / I) · ceil(Kc_g·R·S / F) pairs (DNNsim's
    dense_cycles), whatever the operands hold — zeros are multiplied."""
    layer = Layer(name="c", N=2, C=3, K=7, H=7, W=5, R=3, S=3, stride=1, pad=1)
    t = random_tensors(layer, density, seed=1)
    work = map_phase(_dcnn("cartesian"), layer, "fprop", t)
    rows, cols, kc, F, I = 3, 2, 3, 4, 4
    th, tw = -(-layer.H // rows), -(-layer.W // cols)
    tile = [max(0, min(th, layer.H - i * th)) * max(0, min(tw, layer.W - j * tw))
            for i in range(rows) for j in range(cols)]
    for chunk, g in enumerate(work.chunk_group):
        kc_g = min(layer.K, (g + 1) * kc) - g * kc
        expected = [layer.C * -(-positions // I) * -(-(kc_g * layer.R * layer.S) // F) for positions in tile]
        assert work.issued_pairs[chunk].tolist() == expected
    assert work.conflict_cycles.sum() == 0
    exact = map_phase(_dcnn("cartesian"), layer, "fprop", t, fidelity="exact")
    np.testing.assert_allclose(exact.output, reference(layer, "fprop", t), atol=1e-9)
    assert exact.products == work.products
    assert work.products.total == layer.N * layer.C * layer.H * layer.W * layer.K * layer.R * layer.S


def test_cartesian_dense_is_never_faster_than_ideal_dense_and_only_dense_designs_take_it() -> None:
    layer = Layer(name="s", N=1, C=4, K=8, H=6, W=6, R=3, S=3, stride=2, pad=1)
    t = random_tensors(layer, 0.5, seed=2)
    for phase in ("fprop", "dgrad", "wgrad"):
        ideal = map_phase(_dcnn("ideal"), layer, phase, t)
        cartesian = map_phase(_dcnn("cartesian"), layer, phase, t)
        assert cartesian.issued_pairs.sum() >= ideal.issued_pairs.sum(), phase
        assert cartesian.products.valid == ideal.products.valid, phase
    with pytest.raises(SpecError, match="dense_packing"):
        arch_from_dict({"name": "x", "mapping": {"dense_packing": "cartesian"}})
