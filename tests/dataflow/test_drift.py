"""Bounded PE drift (mapping.pe_sync: fifo): lock-step windows of one weight FIFO, against closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from dataflow_helpers import random_tensors, small_arch

from antsim.dataflow import drift, map_phase
from antsim.dataflow.drift import lockstep_pairs
from antsim.dataflow.pairing import Cells
from antsim.simulate import simulate_layer
from antsim.workloads.layers import Layer


def _cells(slot: list[int], key: list[int], values: list[int], values_dtype: type = np.int64) -> Cells:
    zeros = np.zeros(len(slot), np.int64)
    return Cells(slot=np.array(slot), i0=zeros, n_i=zeros, f0=zeros, n_f=zeros, nnz_s=zeros, nnz_t=zeros,
                 nnz_t_all=np.array(values, values_dtype), stream_key=np.array(key))


def test_windows_of_one_fifo_by_hand() -> None:
    # One chunk, two PEs, three blocks of 4, 4 and 8 values; PE 0 works on blocks 0 and 2, PE 1 on block 1.
    cells = _cells(slot=[0, 1, 0], key=[0, 1, 2], values=[4, 4, 8])
    pairs = np.array([10, 6, 3])
    assert lockstep_pairs(cells, pairs, 1, 2, fifo_values=1).tolist() == [10 + 6 + 3]  # every block a window
    assert lockstep_pairs(cells, pairs, 1, 2, fifo_values=8).tolist() == [max(10, 6) + 3]  # blocks 0+1 | 2
    assert lockstep_pairs(cells, pairs, 1, 2, fifo_values=100).tolist() == [max(13, 6)]  # free-running
    # Two chunks: each starts its stream afresh.
    cells = _cells(slot=[0, 1, 2, 3], key=[0, 1, 0, 1], values=[4, 4, 4, 4])
    assert lockstep_pairs(cells, np.array([5, 1, 2, 7]), 2, 2, fifo_values=4).tolist() == [5 + 1, 2 + 7]


def test_lockstep_per_channel_is_the_sum_over_channels_of_the_busiest_pe() -> None:
    """A FIFO of 2 F-vectors (8 values) below every channel's weight block, SCNN fprop: Σ over input channels
    of max over PEs ceil(tile nnz / I)·ceil(group weights nnz / F)."""
    layer = Layer(name="c", N=1, C=6, K=8, H=6, W=6, R=3, S=3, stride=1, pad=1)
    t = random_tensors(layer, 0.4, seed=5)
    arch = small_arch("none", 2, 2, 8, buffers={"weight_fifo_entries": 2})
    work = map_phase(arch, layer, "fprop", t)
    expected = 0
    for c in range(layer.C):
        assert np.count_nonzero(t.weights[:, c]) >= 8  # each block starts a window of its own
        n_f = -(-np.count_nonzero(t.weights[:, c]) // 4)
        tiles = [t.activations[0, c, i * 3:(i + 1) * 3, j * 3:(j + 1) * 3] for i in range(2) for j in range(2)]
        expected += max(-(-np.count_nonzero(tile) // 4) for tile in tiles) * n_f
    assert work.lockstep_pairs.tolist() == [expected]
    assert expected >= work.issued_pairs.max()
    free = map_phase(small_arch("none", 2, 2, 8, mapping={"pe_sync": "free"}), layer, "fprop", t)
    assert free.lockstep_pairs.sum() == 0
    deep = map_phase(small_arch("none", 2, 2, 8, buffers={"weight_fifo_entries": 65536}), layer, "fprop", t)
    assert np.array_equal(deep.lockstep_pairs, deep.issued_pairs.max(axis=1))  # one window: free-running


def test_a_shallow_fifo_costs_barrier_cycles_never_busy_ones() -> None:
    layer = Layer(name="c", N=1, C=8, K=8, H=8, W=8, R=3, S=3, stride=1, pad=1)
    t = random_tensors(layer, 0.3, seed=6)
    shallow = simulate_layer(small_arch("none", 2, 2, 4, buffers={"weight_fifo_entries": 2}), layer, "fprop", t)
    free = simulate_layer(small_arch("none", 2, 2, 4, mapping={"pe_sync": "free"}), layer, "fprop", t)
    assert shallow.cycles >= free.cycles
    assert shallow.stalls["busy"] == free.stalls["busy"]
    assert shallow.stalls["barrier_wait"] >= free.stalls["barrier_wait"]
    assert sum(shallow.stalls.values()) == pytest.approx(shallow.cycles, abs=1)


def _reference_lockstep(cells: Cells, pairs: np.ndarray, n_chunks: int, n_pes: int, fifo_values: int) -> list[int]:
    """The module docstring's model in plain loops: per chunk, its working cells' blocks in ascending stream key,
    each in window ⌊values sent before it / D⌋; Σ over windows of the busiest PE's pairs."""
    out = []
    for chunk in range(n_chunks):
        mine = [i for i in range(len(pairs)) if pairs[i] > 0 and cells.slot[i] // n_pes == chunk]
        block_values = {int(cells.stream_key[i]): int(cells.nnz_t_all[i]) for i in mine}
        window_of, sent = {}, 0
        for key in sorted(block_values):
            window_of[key] = sent // max(1, fifo_values)
            sent += block_values[key]
        per_pe: dict[tuple[int, int], int] = {}
        for i in mine:
            at = (window_of[int(cells.stream_key[i])], int(cells.slot[i]) % n_pes)
            per_pe[at] = per_pe.get(at, 0) + int(pairs[i])
        busiest: dict[int, int] = {}
        for (window, _), total in per_pe.items():
            busiest[window] = max(busiest.get(window, 0), total)
        out.append(sum(busiest.values()))
    return out


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("path", ["as chosen", "keys", "tables", "ranks"])
@pytest.mark.parametrize("own_keys", [False, True])
@pytest.mark.parametrize("values_dtype", [np.int64, np.int32])
def test_lockstep_equals_plain_loops_over_the_definition(seed: int, path: str, own_keys: bool, values_dtype: type,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Random chunks, PEs, stream keys (dense and sparse key spaces: both ``footprint.rank_keys`` paths; shared by
    chunks, or each key in one chunk as at one image), block sizes, idle cells and FIFO depths from one value to the
    whole stream; windows numbered through the per-key tables, the dense (chunk, key) tables or the ranked blocks
    (forced), or as ``lockstep_pairs`` chooses; block sizes int64 or int32 (as ``make_cells`` narrows them: the
    per-key tables then pack chunk and size into one scatter)."""
    if path != "as chosen":
        monkeypatch.setattr(drift, "_KEYS_PER_CELL", 10 ** 9 if path == "keys" else 0)
        monkeypatch.setattr(drift, "_TABLE_PER_CELL", 10 ** 9 if path == "tables" else 0)
        monkeypatch.setattr(drift, "_WINDOWS_PER_CELL", 10 ** 9)
    rng = np.random.default_rng(seed)
    n_chunks, n_pes = int(rng.integers(1, 6)), int(rng.integers(1, 9))
    n_keys = int(rng.choice([3, 40, 5000]))
    n_cells = int(rng.integers(1, 300))
    slot = rng.integers(0, n_chunks * n_pes, n_cells)
    key = rng.integers(0, n_keys, n_cells)
    if own_keys:  # key k of chunk c is k · chunks + c: no key is shared
        key = key * n_chunks + slot // n_pes
    block_values = rng.integers(0, 30, size=(n_chunks, int(key.max()) + 1))
    cells = _cells(slot.tolist(), key.tolist(), block_values[slot // n_pes, key].tolist(), values_dtype)
    pairs = rng.integers(0, 50, n_cells) * (rng.random(n_cells) < 0.8)
    shared = len({(int(k), int(c)) for k, c in zip(key, slot // n_pes, strict=True)}) > len(set(key.tolist()))
    for fifo_values in (0, 1, 7, 60, 10 ** 6):
        expected = _reference_lockstep(cells, pairs, n_chunks, n_pes, fifo_values)
        assert lockstep_pairs(cells, pairs, n_chunks, n_pes, fifo_values).tolist() == expected
        by_key = drift._windows_by_key(cells, pairs, pairs > 0, (n_chunks, n_pes), fifo_values)
        assert (by_key is not None) == (path == "keys" and not shared) or path == "as chosen"
        by_table = drift._windows_by_table(cells, pairs, pairs > 0, (n_chunks, n_pes), fifo_values)
        assert (by_table is not None) == (path == "tables") or path == "as chosen"
    assert lockstep_pairs(cells, np.zeros(n_cells, np.int64), n_chunks, n_pes, 7).tolist() == [0] * n_chunks
