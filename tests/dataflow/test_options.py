"""``MappingOptions`` from the arch: ``mapping.wgrad_dy``, wgrad's dY broadcast to every PE (SCNN's default) or tiled.

The tiled count is checked against a brute force written from the definition: a PE pairs every
activation non-zero of its tile with every dY non-zero whose row and column can land an output
(0 ≤ r < R, 0 ≤ s < S) from some row and column of the tile.
"""

from __future__ import annotations

import numpy as np
import pytest
from dataflow_helpers import random_tensors, small_arch

from antsim.dataflow import map_phase
from antsim.phases import conv_wgrad
from antsim.simulate import simulate_layer
from antsim.workloads.layers import Layer


def _reaches(lo: int, hi: int, p: int, stride: int, pad: int, kernel: int) -> bool:
    """Some tile row y in [lo, hi] and tap r in [0, kernel) with y = p·stride + r − pad."""
    return any(lo <= p * stride + r - pad <= hi for r in range(kernel))


def _brute_tiled_total(layer: Layer, t, rows: int, cols: int) -> int:  # type: ignore[no-untyped-def]
    tile_h, tile_w = -(-layer.H // rows), -(-layer.W // cols)
    total = 0
    for n in range(layer.N):
        for i in range(rows):
            for j in range(cols):
                y_lo, y_hi = i * tile_h, min((i + 1) * tile_h, layer.H) - 1
                x_lo, x_hi = j * tile_w, min((j + 1) * tile_w, layer.W) - 1
                if y_lo > y_hi or x_lo > x_hi:
                    continue
                a = np.count_nonzero(t.activations[n, :, y_lo:y_hi + 1, x_lo:x_hi + 1])
                reached = 0
                for p, q in zip(*np.nonzero(np.any(t.grad_output[n] != 0, axis=0)), strict=True):
                    if (_reaches(y_lo, y_hi, p, layer.stride[0], layer.pad[0], layer.R)
                            and _reaches(x_lo, x_hi, q, layer.stride[1], layer.pad[1], layer.S)):
                        reached += np.count_nonzero(t.grad_output[n, :, p, q])
                total += a * reached
    return total


@pytest.mark.parametrize("shape", [dict(H=12, W=10, R=3, S=3, stride=1, pad=1),
                                   dict(H=11, W=11, R=5, S=3, stride=2, pad=2),
                                   dict(H=9, W=9, R=1, S=1, stride=1, pad=0)])
def test_tiled_dy_pairs_each_tile_with_the_dy_in_its_reach(shape: dict) -> None:
    layer = Layer("w", N=2, C=5, K=6, **shape)
    t = random_tensors(layer, 0.5, seed=3)
    tiled = small_arch("none", 3, 2, 2, mapping={"wgrad_dy": "tiled"})
    broadcast = small_arch("none", 3, 2, 2, mapping={"wgrad_dy": "broadcast"})
    work_t = map_phase(tiled, layer, "wgrad", t, fidelity="exact")
    work_b = map_phase(broadcast, layer, "wgrad", t, fidelity="exact")
    assert work_t.products.total == _brute_tiled_total(layer, t, 3, 2)
    assert work_b.products.total == sum(np.count_nonzero(t.activations[n]) * np.count_nonzero(t.grad_output[n])
                                        for n in range(layer.N))
    # Tiling drops only pairs that cannot meet: the same valid products, the same dW, none skipped.
    assert work_t.products.valid == work_b.products.valid
    assert work_t.products.skipped == work_b.products.skipped == 0
    reference = conv_wgrad(t.activations, t.grad_output, (layer.R, layer.S), layer.stride, layer.pad)
    np.testing.assert_allclose(work_t.output, reference, atol=1e-9)
    fast = map_phase(tiled, layer, "wgrad", t)
    assert fast.products == work_t.products


def test_tiled_dy_applies_to_wgrad_only_and_is_never_slower() -> None:
    layer = Layer("w", N=1, C=8, K=8, H=16, W=16, R=3, S=3, stride=1, pad=1)
    t = random_tensors(layer, 0.3, seed=5)
    tiled = small_arch("none", 4, 4, 4, mapping={"wgrad_dy": "tiled"})
    broadcast = small_arch("none", 4, 4, 4, mapping={"wgrad_dy": "broadcast"})
    for phase in ("fprop", "dgrad"):
        assert map_phase(tiled, layer, phase, t).products == map_phase(broadcast, layer, phase, t).products
    slow = simulate_layer(broadcast, layer, "wgrad", t, fidelity="fast")
    fast = simulate_layer(tiled, layer, "wgrad", t, fidelity="fast")
    assert fast.cycles < slow.cycles
    assert fast.products.total < slow.products.total
