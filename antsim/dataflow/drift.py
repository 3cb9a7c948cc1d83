"""Bounded PE drift: how far the PEs of a chunk may run apart when a weight FIFO feeds them.

SCNN broadcasts the streamed operand (the weights, in fprop) to every PE through a per-PE FIFO of
``buffers.weight_fifo_entries`` F-vectors (D = entries · F values). A PE that finishes its work on
the values it holds cannot take more until the broadcast moves on, and the broadcast moves on only
when every PE's FIFO has room: a PE can run at most one FIFO's worth of values ahead of the slowest
one. With ``mapping.pe_sync: free`` the PEs run unbounded within the chunk and meet only at the chunk
barrier.

Model (``lockstep_pairs``): the chunk's stream is its streamed blocks (one per input channel and stride
class) in the order they are sent; a block belongs to the window ``w = ⌊start / D⌋`` where ``start`` is
the number of values sent before it and D the FIFO depth. PEs synchronise at window boundaries, so
the chunk's multiplier cycles are at least ``Σ_w max_PE pairs(w, PE)`` — lock-step per input channel
when D is smaller than a block (DNNsim's SCNN synchronises at every input channel), one window (the
free-running ``max_PE Σ pairs``) when D holds the whole chunk. Within a block every value meets the
same stationary vectors of a PE, so cutting a block larger than D into pieces changes nothing.
"""

from __future__ import annotations

import numpy as np

from antsim.dataflow.footprint import rank_keys
from antsim.dataflow.pairing import Cells


def lockstep_pairs(cells: Cells, cell_pairs: np.ndarray, n_chunks: int, n_pes: int, fifo_values: int) -> np.ndarray:
    """Per chunk, the fewest multiplier cycles its pairs take when PEs drift at most ``fifo_values``.

    Blocks (chunk, stream key) are numbered in stream order by ``rank_keys``; a block's start is the running sum
    of the values of the chunk's earlier blocks, and the chunk's windows are numbered along its blocks (no sort).

    Args:
        cells: the pairing cells (slot, stream_key, nnz_t_all).
        cell_pairs: vector pairs each cell issues.
        n_chunks, n_pes: the work's shape. fifo_values: D, the weight FIFO's entries.

    Returns:
        (n_chunks,) int64; ≥ every PE's own pairs in the chunk.
    """
    out = np.zeros(n_chunks, np.int64)
    working = cell_pairs > 0
    if not working.any():
        return out
    for by_tables in (_windows_by_key, _windows_by_table):
        found = by_tables(cells, cell_pairs, working, (n_chunks, n_pes), fifo_values)
        if found is not None:
            return found
    fields = (cells.slot, cells.stream_key, cells.nnz_t_all, cell_pairs)
    slot, key, values, pairs = fields if working.all() else (a[working] for a in fields)
    chunk, pe = np.divmod(slot, n_pes)
    n_keys = int(key.max()) + 1
    blocks, block_of_cell = rank_keys(chunk * n_keys + key, n_chunks * n_keys)
    block_chunk = blocks // n_keys
    block_values = np.zeros(len(blocks), np.int64)
    block_values[block_of_cell] = values  # every cell of a block carries the block's broadcast size
    sent_before = np.cumsum(block_values) - block_values  # over all chunks' blocks in stream order
    first_of_chunk = np.ones(len(blocks), bool)
    first_of_chunk[1:] = block_chunk[1:] != block_chunk[:-1]
    chunk_base = np.maximum.accumulate(np.where(first_of_chunk, sent_before, 0))  # sent_before never decreases
    window = (sent_before - chunk_base) // max(1, fifo_values)
    # Blocks are in stream order and a chunk's windows never decrease along it: a new window starts at each
    # chunk's first block and wherever the window changes.
    first_of_window = first_of_chunk.copy()
    first_of_window[1:] |= window[1:] != window[:-1]
    window_of_block = np.cumsum(first_of_window) - 1
    n_windows = int(window_of_block[-1]) + 1
    per_pe = np.bincount(window_of_block[block_of_cell] * n_pes + pe, weights=pairs, minlength=n_windows * n_pes)
    worst = per_pe.reshape(n_windows, n_pes).max(axis=1)
    np.add.at(out, block_chunk[first_of_window], np.rint(worst).astype(np.int64))
    return out


# ``lockstep_pairs`` numbers its windows through dense (chunk, stream key) and (chunk, window, PE) tables (no ranking
# of the blocks) when the first holds at most 2 entries per cell and the second at most 4 per cell (plus 2^16).
# Speed only: both give the same integers (tests/dataflow/test_drift.py). [choice] Measured here (one core, every
# lock-step call of a ResNet-18 CIFAR step): docs/footprint_speed.md.
_TABLE_PER_CELL = 2
_WINDOWS_PER_CELL = 4


def _windows_by_table(cells: Cells, cell_pairs: np.ndarray, working: np.ndarray, shape: tuple[int, int],
                      fifo_values: int) -> np.ndarray | None:
    """``lockstep_pairs`` through dense tables, or None when they would not fit: a block's start is the running sum,
    along its chunk's row of a (chunk, stream key) table, of the values of the blocks with working cells (0 where
    a key has none), its window the start over D; per (chunk, window, PE) the cells' pairs are summed (the idle
    cells' are 0), and each chunk sums its windows' busiest PE (a window without pairs adds 0)."""
    n_chunks, n_pes = shape
    n_keys = int(cells.stream_key.max()) + 1
    if n_chunks * n_keys > _TABLE_PER_CELL * len(cell_pairs):
        return None
    chunk, pe = np.divmod(cells.slot, n_pes)
    block = chunk * n_keys + cells.stream_key
    sent = np.zeros((n_chunks, n_keys), np.int64)
    sent.ravel()[block[working]] = cells.nnz_t_all[working]  # every cell of a block carries its broadcast size
    before = np.cumsum(sent, axis=1)
    before -= sent
    depth = max(1, fifo_values)
    n_windows = int(before[:, -1].max()) // depth + 1  # no block starts later than its chunk's last key
    if n_chunks * n_windows * n_pes > _WINDOWS_PER_CELL * len(cell_pairs) + (1 << 16):
        return None
    window = before // depth
    window += np.arange(n_chunks)[:, None] * n_windows
    pairs = cell_pairs if working.all() else np.where(working, cell_pairs, 0)
    per_pe = np.bincount(window.ravel()[block] * n_pes + pe, weights=pairs, minlength=n_chunks * n_windows * n_pes)
    worst = np.rint(per_pe.reshape(n_chunks, n_windows, n_pes).max(axis=2)).astype(np.int64)
    return worst.sum(axis=1)


# ``lockstep_pairs`` numbers its windows through (stream key) tables when every stream key belongs to one chunk (a
# key holds its output-channel group, so at one image it does), the key space holds at most 8 entries per cell and the
# windows × PEs at most ``_WINDOWS_PER_CELL`` per cell (plus 2^16). Speed only: the same integers as the other paths
# (tests/dataflow/test_drift.py). [choice] Every lock-step call of a ResNet-18 CIFAR step (0.016–4.6 keys per cell)
# takes it; all of them together 0.59–0.78× the time of the (chunk, key) tables and ranks, measured here (one core):
# docs/footprint_speed.md.
_KEYS_PER_CELL = 8


def _windows_by_key(cells: Cells, cell_pairs: np.ndarray, working: np.ndarray, shape: tuple[int, int],
                    fifo_values: int) -> np.ndarray | None:
    """``lockstep_pairs`` through per-key tables, or None when a key is shared by chunks or a table would not fit.
    Keys ordered by (chunk, key) (a stable radix sort of their chunks): a block's start is the running sum of the
    values of its chunk's earlier keys (0 for keys without working cells), its window the start over D; a chunk's
    windows are numbered after the earlier chunks', and per (window, PE) the cells' pairs are summed."""
    n_chunks, n_pes = shape
    key = cells.stream_key
    n_keys = int(key.max()) + 1
    if n_keys > _KEYS_PER_CELL * len(key) or n_chunks >= 1 << 15:
        return None
    tables = _key_tables(cells, working, n_keys, shape)
    if tables is None:
        return None
    chunk_of_key, sent = tables
    order = np.argsort(chunk_of_key, kind="stable")
    keys_per_chunk = np.bincount(chunk_of_key, minlength=n_chunks + 1)
    first_key = np.cumsum(keys_per_chunk) - keys_per_chunk
    before = np.cumsum(sent[order])
    before -= sent[order]
    before -= np.repeat(before[np.minimum(first_key, n_keys - 1)], keys_per_chunk)  # from the chunk's first key
    window = before // max(1, fifo_values)
    windows_per_chunk = np.zeros(n_chunks + 1, np.int64)
    held = keys_per_chunk > 0
    windows_per_chunk[held] = window[first_key[held] + keys_per_chunk[held] - 1] + 1  # the chunk's last key's
    n_windows = int(windows_per_chunk[:n_chunks].sum())
    if n_windows * n_pes > _WINDOWS_PER_CELL * len(cell_pairs) + (1 << 16):
        return None
    first_window = np.cumsum(windows_per_chunk) - windows_per_chunk
    # A cell's (window, PE) entry is window · n_pes + slot − chunk · n_pes: the key's part is one table.
    window += np.repeat(first_window - np.arange(n_chunks + 1), keys_per_chunk)
    shift_of_key = np.empty(n_keys, np.int64)
    shift_of_key[order] = window * n_pes
    pairs = cell_pairs if working.all() else np.where(working, cell_pairs, 0)
    per_pe = np.bincount(shift_of_key[key] + cells.slot, weights=pairs,
                         minlength=(n_windows + windows_per_chunk[n_chunks]) * n_pes)
    worst = np.rint(per_pe[:n_windows * n_pes].reshape(n_windows, n_pes).max(axis=1)).astype(np.int64)
    out = np.zeros(n_chunks, np.int64)
    has = windows_per_chunk[:n_chunks] > 0
    out[has] = np.add.reduceat(worst, first_window[:n_chunks][has])
    return out


def _key_tables(cells: Cells, working: np.ndarray, n_keys: int, shape: tuple[int, int]
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """Per stream key: its chunk (int16; keys without cells: a spare chunk past the last) and the values its
    block broadcasts (int64; 0 without working cells), or None when a key is shared by chunks.

    Both go through one scatter of ``chunk << 32 | values`` (values: non-negative counts in int32; chunks below
    2^15) and one gather that checks every cell agrees with its key's entry; keys without working cells are then
    zeroed. Cells of one key that disagree on their values (never: a block's cells carry its broadcast size) take
    the two scatters, whose last (working) writer wins."""
    n_chunks, n_pes = shape
    key, values = cells.stream_key, cells.nnz_t_all
    chunk = cells.slot // n_pes
    every = working.all()
    if values.dtype.itemsize <= 4:
        packed = chunk << 32
        packed |= values
        packed_of_key = np.full(n_keys, n_chunks << 32, np.int64)
        packed_of_key[key] = packed
        if np.array_equal(packed_of_key[key], packed):
            sent = packed_of_key & 0xFFFFFFFF
            if not every:
                idle = np.ones(n_keys, bool)
                idle[key[working]] = False
                sent[idle] = 0
            return (packed_of_key >> 32).astype(np.int16), sent
    chunk_of_key = np.full(n_keys, n_chunks, np.int16)
    chunk_of_key[key] = chunk
    if not np.array_equal(chunk_of_key[key], chunk):
        return None
    sent = np.zeros(n_keys, np.int64)
    if every:
        sent[key] = values  # every cell of a block carries its broadcast size
    else:
        sent[key[working]] = values[working]
    return chunk_of_key, sent
