"""The batch loop (mapping.batch_tile): DRAM traffic per batch against brute-force counts of the loop nest."""

from __future__ import annotations

import numpy as np
import pytest
from dataflow_helpers import random_tensors, small_arch

from antsim.dataflow import map_phase
from antsim.dataflow.batching import BatchTiles, choose_tile_size, chunk_order, resident_values
from antsim.phases import reference
from antsim.sim import Densities, simulate_phase
from antsim.sim.schedule import build_schedule
from antsim.simulate import simulate_layer
from antsim.spec.encoding import encoded_bits
from antsim.workloads.layers import Layer

LAYER = Layer(name="b", N=5, C=3, K=6, H=7, W=6, R=3, S=3, stride=1, pad=1)
KC = 2  # 3 output-channel groups


def _arch(batch_tile: int, policy: str = "none", **sections: dict) -> object:
    return small_arch(policy, 2, 3, KC, mapping={"batch_tile": batch_tile}, **sections)


def _loop_nest(n_images: int, n_groups: int, tile: int) -> list[tuple[int, int, int]]:
    """(tile, group, image) of every chunk, written out as the three nested loops."""
    nest = []
    for t, first in enumerate(range(0, n_images, tile)):
        for g in range(n_groups):
            for n in range(first, min(n_images, first + tile)):
                nest.append((t, g, n))
    return nest


@pytest.mark.parametrize("groups", [1, 3, 4])
@pytest.mark.parametrize("tile", [1, 2, 3, 5, 7, 9])
def test_chunk_order_is_tile_group_image(tile: int, groups: int) -> None:
    """Every tile size, a last tile shorter than the others or not, one group or several."""
    order = chunk_order(BatchTiles(tile, 7), groups)
    assert order.dtype == np.int64
    assert [(n // groups // tile, n % groups, n // groups) for n in order] == _loop_nest(7, groups, tile)


def _loop_nest_work(work, n_groups: int, tile: int, per_image: np.ndarray, streamed_per_image: bool) -> dict:
    """Every field ``batch_tiled`` sets, chunk by chunk over the loop nest (``_loop_nest``), from the definitions in
    ``antsim.dataflow.batching``'s docstring."""
    nest = _loop_nest(per_image.shape[0], n_groups, tile)
    want: dict = {name: [] for name in ("order", "streamed_dram_values", "stationary_dram_values", "drains",
                                        "output_readback_values")}
    for step, (t, g, n) in enumerate(nest):
        chunk = n * n_groups + g
        first_of_run = step == 0 or nest[step - 1][:2] != (t, g)
        last_of_run = step == len(nest) - 1 or nest[step + 1][:2] != (t, g)
        first_of_tile = step == 0 or nest[step - 1][0] != t
        drains = last_of_run if work.phase == "wgrad" else True
        want["order"].append(chunk)
        want["streamed_dram_values"].append(int(work.streamed_dram_values[chunk])
                                            if streamed_per_image or first_of_run else 0)
        want["stationary_dram_values"].append(int(per_image[t * tile:(t + 1) * tile].sum()) if first_of_tile else 0)
        want["drains"].append(drains)
        want["output_readback_values"].append(int(work.output_values[chunk])
                                              if work.phase == "wgrad" and drains and t > 0 else 0)
    return want


@pytest.mark.parametrize("tile", [1, 2, 5])
@pytest.mark.parametrize("phase", ["fprop", "wgrad"])
def test_batch_tiled_equals_the_loop_nest_field_by_field(phase: str, tile: int) -> None:
    """``batch_tiled`` on an image-major work: every per-PE and per-chunk field moved to the loop nest's order
    (one image per tile: the image-major order itself), the DRAM terms and drains as the loop nest counts them."""
    from antsim.dataflow import mapper
    from antsim.dataflow.batching import batch_tiled
    from antsim.dataflow.work import PER_PE_FIELDS

    seen = []
    real = mapper.batch_tiled
    t = random_tensors(LAYER, 0.4, seed=8)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mapper, "batch_tiled", lambda *args, **kwargs: seen.append((args, kwargs)) or real(*args,
                                                                                                          **kwargs))
        map_phase(_arch(tile), LAYER, phase, t)
    (work, tiles, n_groups, per_image), kwargs = seen[0]
    got = batch_tiled(work, tiles, n_groups, per_image, **kwargs)
    want = _loop_nest_work(work, n_groups, tile, per_image, kwargs["streamed_per_image"])
    order = np.array(want.pop("order"))
    for name in (*PER_PE_FIELDS, "output_values", "lockstep_pairs"):
        np.testing.assert_array_equal(getattr(got, name), getattr(work, name)[order], err_msg=name)
    for name, values in want.items():
        np.testing.assert_array_equal(getattr(got, name), np.array(values, getattr(got, name).dtype), err_msg=name)
    np.testing.assert_array_equal(got.chunk_image, order // n_groups)
    np.testing.assert_array_equal(got.chunk_group, order % n_groups)
    np.testing.assert_array_equal(got.chunk_tile, order // n_groups // tile)
    assert got.tiling["batch_tile"] == tile and got.tiling["batch_tiles"] == -(-LAYER.N // tile)


@pytest.mark.parametrize("tile", [1, 2, 5])
@pytest.mark.parametrize("phase", ["fprop", "dgrad"])
def test_weights_are_read_once_per_tile_and_group(phase: str, tile: int) -> None:
    t = random_tensors(LAYER, 0.4, seed=3)
    work = map_phase(_arch(tile), LAYER, phase, t)
    n_tiles = -(-LAYER.N // tile)
    # SCNN broadcasts every weight block (no fetch filter): a tile reads all of W once.
    assert work.streamed_dram_values.sum() == n_tiles * np.count_nonzero(t.weights)
    stationary = t.activations if phase == "fprop" else t.grad_output
    assert work.stationary_dram_values.sum() == np.count_nonzero(stationary)  # each image loaded once
    nest = _loop_nest(LAYER.N, -(-(LAYER.K if phase == "fprop" else LAYER.C) // KC), tile)
    assert list(zip(work.chunk_tile, work.chunk_group, work.chunk_image, strict=True)) == nest
    # Every chunk drains: fprop/dgrad outputs belong to one image.
    assert work.drains.all() and work.output_readback_values.sum() == 0


@pytest.mark.parametrize("tile", [1, 2, 5])
def test_wgrad_accumulates_dw_over_a_tile_before_one_write_back(tile: int) -> None:
    t = random_tensors(LAYER, 0.4, seed=4)
    for fidelity in ("fast", "exact"):
        work = map_phase(_arch(tile), LAYER, "wgrad", t, fidelity=fidelity)
        assert work.tiling["batch_tile"] == tile
        # dY differs per image: streamed once per image, whatever the tile.
        assert work.streamed_dram_values.sum() == np.count_nonzero(t.grad_output)
        # One drain per (tile, group), after the tile's last image.
        assert work.drains.sum() == -(-LAYER.N // tile) * 3
        assert np.array_equal(work.drains, np.r_[work.chunk_group[1:] != work.chunk_group[:-1], True]
                              | np.r_[work.chunk_tile[1:] != work.chunk_tile[:-1], True])
        assert work.partial_outputs[~work.drains].sum() == 0
        # Written dW entries: the support of the dense dW of each tile's images (masks as operands).
        expected, readback = 0, 0
        masks = type(t)(t.weights != 0, (t.activations != 0).astype(float), (t.grad_output != 0).astype(float))
        for first in range(0, LAYER.N, tile):
            images = slice(first, min(LAYER.N, first + tile))
            part = type(t)(masks.weights, masks.activations[images], masks.grad_output[images])
            support = np.count_nonzero(reference(LAYER.with_batch(images.stop - first), "wgrad", part))
            expected += support
            readback += support if first else 0
        assert work.output_values.sum() == expected, fidelity
        assert work.output_readback_values.sum() == readback, fidelity


def test_auto_tile_is_the_largest_that_fits_the_input_buffer() -> None:
    per_image = np.array([[3, 1], [2, 4], [5, 0], [1, 1]])
    assert resident_values(per_image, 2).tolist() == [6, 5]  # tiles {0,1}, {2,3}
    assert resident_values(per_image, 3).tolist() == [10, 5]
    assert choose_tile_size(0, per_image, capacity_values=11) == 4  # everything: [11, 6]
    assert choose_tile_size(0, per_image, capacity_values=10) == 3
    assert choose_tile_size(0, per_image, capacity_values=6) == 2
    assert choose_tile_size(0, per_image, capacity_values=2) == 1  # even one image overflows: passes
    assert choose_tile_size(3, per_image, capacity_values=2) == 3  # asked for: honoured
    assert choose_tile_size(9, per_image, capacity_values=2) == 4  # clipped to the batch
    t = random_tensors(LAYER, 0.4, seed=5)
    tiny = map_phase(_arch(0, buffers={"input_kb": 0.05}), LAYER, "fprop", t)
    roomy = map_phase(_arch(0), LAYER, "fprop", t)
    assert roomy.tiling["batch_tile"] == LAYER.N and 1 <= tiny.tiling["batch_tile"] < LAYER.N
    bits = 0.05 * 8192 / (16 + 4)  # zero_run values + 4-bit indices, the placeholder term is small here
    assert tiny.stationary_resident.max() <= bits


def test_dram_reads_per_image_fall_with_batch_and_schedule_drains_per_tile() -> None:
    """The DRAM channel moves what the loop nest says: the whole-batch tile reads W once, one image
    at a time reads it N times; wgrad reduces once per group instead of once per (image, group)."""
    layer = Layer(name="wide", N=4, C=8, K=16, H=6, W=6, R=3, S=3, stride=1, pad=1)
    t = random_tensors(layer, 0.3, seed=6)
    reads = {}
    for tile in (1, 4):
        result = simulate_layer(_arch(tile), layer, "fprop", t)
        reads[tile] = result.actions["dram"]["read_bits"]
    arch = _arch(4)
    density_w = np.count_nonzero(t.weights) / t.weights.size
    per_read = sum(encoded_bits(float(np.count_nonzero(t.weights[g:g + KC])), density_w, arch.compression)
                   for g in range(0, layer.K, KC))
    assert reads[1] - reads[4] == pytest.approx((layer.N - 1) * per_read, abs=layer.N)  # three more reads of W
    work = map_phase(arch, layer, "wgrad", t)
    schedule = build_schedule(arch, work, Densities(0.3, 0.3, 1.0))
    assert np.count_nonzero(schedule.reduction_cycles) == -(-layer.K // KC)
    # A run of steps that accumulates into one half waits for the drain two runs back (double buffer).
    runs = np.cumsum(work.drains) - work.drains
    for step, freed_by in enumerate(schedule.half_wait):
        if runs[step] < 2:
            assert freed_by == -1
        else:
            assert work.drains[freed_by] and runs[freed_by] == runs[step] - 2
    timing = simulate_phase(arch, work, Densities(0.3, 0.3, 1.0))
    assert timing.cycles > 0
