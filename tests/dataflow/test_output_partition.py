"""Dense wgrad with dW partitioned over the PEs (mapping.wgrad_partition: output)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from dataflow_helpers import arch_from_dict, random_tensors

from antsim.dataflow import map_phase
from antsim.dataflow.output_partition import entry_blocks
from antsim.errors import SpecError
from antsim.phases import reference
from antsim.simulate import simulate_layer
from antsim.workloads.layers import Layer

LAYERS = [  # (layer, PE rows, PE cols)
    (Layer(name="pad", N=2, C=3, K=5, H=7, W=6, R=3, S=3, stride=1, pad=1), 2, 3),
    (Layer(name="stride", N=1, C=4, K=3, H=9, W=8, R=3, S=2, stride=2, pad=(1, 0)), 2, 3),
    (Layer(name="pointwise", N=1, C=7, K=4, H=5, W=5, R=1, S=1, stride=1, pad=0), 2, 3),
    (Layer(name="idle_pes", N=2, C=1, K=3, H=6, W=6, R=3, S=3, stride=1, pad=1), 4, 4),  # 9 entries, 16 PEs
]


def _dense(partition: str, rows: int = 2, cols: int = 3, kc: int = 2):  # type: ignore[no-untyped-def]
    return arch_from_dict({"name": "dense", "sparsity_support": False, "pe_array": {"rows": rows, "cols": cols},
                           "mapping": {"output_channel_group": kc, "wgrad_partition": partition}})


def _brute_force_per_pe(layer: Layer, n_pes: int, kc: int) -> np.ndarray:
    """Contributing (dY, A) element pairs of each PE's dW entries, per chunk, by enumeration."""
    bounds = entry_blocks(layer.C * layer.R * layer.S, n_pes)
    owner = np.searchsorted(bounds, np.arange(layer.C * layer.R * layer.S), side="right") - 1
    groups = -(-layer.K // kc)
    out = np.zeros((layer.N * groups, n_pes), np.int64)
    for n, k, c, r, s, p, q in itertools.product(range(layer.N), range(layer.K), range(layer.C), range(layer.R),
                                                 range(layer.S), range(layer.P), range(layer.Q)):
        h, w = p * layer.stride_h - layer.pad_h + r, q * layer.stride_w - layer.pad_w + s
        if 0 <= h < layer.H and 0 <= w < layer.W:
            out[n * groups + k // kc, owner[(c * layer.R + r) * layer.S + s]] += 1
    return out


@pytest.mark.parametrize(("layer", "rows", "cols"), LAYERS, ids=lambda case: getattr(case, "name", ""))
def test_each_pe_computes_exactly_its_own_dw_entries(layer: Layer, rows: int, cols: int) -> None:
    arch, planar = _dense("output", rows, cols), _dense("planar", rows, cols)
    n_pes = rows * cols
    t = random_tensors(layer, 0.4, seed=1)
    fast = map_phase(arch, layer, "wgrad", t)
    exact = map_phase(arch, layer, "wgrad", t, fidelity="exact")
    groups = -(-layer.K // 2)
    executed = fast.chunk_image * groups + fast.chunk_group  # brute force is image-major
    np.testing.assert_array_equal(fast.valid_products, _brute_force_per_pe(layer, n_pes, 2)[executed])
    np.testing.assert_allclose(exact.output, reference(layer, "wgrad", t), atol=1e-9)
    assert fast.products == exact.products == map_phase(planar, layer, "wgrad", t).products  # same MACs
    assert not fast.needs_reduction and fast.halo_outputs.sum() == 0 and fast.conflict_cycles.sum() == 0
    F_I = arch.pe_array.F * arch.pe_array.I
    np.testing.assert_array_equal(fast.issued_pairs, -(-fast.valid_products // F_I))
    # The whole batch fits one tile: each PE drains its entries for the group's channels once, after the
    # last image — C*R*S*Kc_g over the PEs — and holds nothing drained before.
    assert fast.tiling["batch_tile"] == layer.N
    kc_per_chunk = np.array([min(layer.K, 2 * (g + 1)) - 2 * g for g in fast.chunk_group])
    assert np.array_equal(fast.drains, fast.chunk_image == layer.N - 1)
    np.testing.assert_array_equal(fast.partial_outputs.sum(axis=1),
                                  np.where(fast.drains, kc_per_chunk * layer.C * layer.R * layer.S, 0))
    # Every busy PE receives the group's whole dY; idle PEs (more PEs than entries) receive nothing.
    busy = np.broadcast_to(fast.partial_outputs[-1] > 0, fast.partial_outputs.shape)
    assert busy[0].sum() == min(n_pes, layer.C * layer.R * layer.S)
    np.testing.assert_array_equal(fast.streamed_delivered[busy],
                                  np.broadcast_to(kc_per_chunk[:, None] * layer.P * layer.Q, busy.shape)[busy])
    assert fast.streamed_delivered[~busy].sum() == 0
    # Each activation plane is loaded from DRAM once (then broadcast), whatever the split of its taps.
    assert fast.stationary_values.sum() == layer.N * layer.C * layer.H * layer.W


def test_blocks_are_contiguous_and_balanced() -> None:
    bounds = entry_blocks(27, 64)  # a 3-channel 3x3 input layer on 64 PEs: 27 busy PEs, 37 idle
    sizes = np.diff(bounds)
    assert bounds[0] == 0 and bounds[-1] == 27 and sizes.max() - sizes.min() <= 1 and (sizes > 0).sum() == 27
    assert np.diff(entry_blocks(576, 64)).tolist() == [9] * 64


def test_output_partition_removes_the_cross_pe_reduction() -> None:
    layer = Layer(name="c", N=1, C=16, K=16, H=8, W=8, R=3, S=3, stride=1, pad=1)
    t = random_tensors(layer, 1.0, seed=2)
    planar = simulate_layer(_dense("planar", 2, 2, 8), layer, "wgrad", t, fidelity="fast")
    output = simulate_layer(_dense("output", 2, 2, 8), layer, "wgrad", t, fidelity="fast")
    assert planar.stalls["reduction"] > 0 and output.stalls["reduction"] == 0
    assert output.actions["reduction"]["add"] == 0 < planar.actions["reduction"]["add"]
    assert output.actions["multiplier"]["multiply"] == planar.actions["multiplier"]["multiply"]
    assert output.cycles < planar.cycles


def test_sparse_designs_keep_the_planar_split() -> None:
    with pytest.raises(SpecError, match="mapping.wgrad_partition: must be 'planar' in a sparse design.*'output'"):
        arch_from_dict({"name": "scnn", "mapping": {"wgrad_partition": "output"}})
