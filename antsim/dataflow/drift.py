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

from antsim.dataflow.pairing import Cells


def lockstep_pairs(cells: Cells, cell_pairs: np.ndarray, n_chunks: int, n_pes: int, fifo_values: int) -> np.ndarray:
    """Per chunk, the fewest multiplier cycles its pairs take when PEs drift at most ``fifo_values``.

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
    slot, key, values, pairs = (a[working] for a in (cells.slot, cells.stream_key, cells.nnz_t_all, cell_pairs))
    chunk, pe = np.divmod(slot, n_pes)
    blocks, block_of_cell = np.unique(chunk * (key.max() + 1) + key, return_inverse=True)
    block_chunk = blocks // (key.max() + 1)
    block_values = np.zeros(len(blocks), np.int64)
    block_values[block_of_cell] = values  # every cell of a block carries the block's broadcast size
    ends = np.cumsum(block_values)
    chunk_start = np.zeros(n_chunks + 1, np.int64)
    np.maximum.at(chunk_start, block_chunk + 1, ends)
    chunk_start = np.maximum.accumulate(chunk_start)
    start = ends - block_values - chunk_start[block_chunk]
    window = start // max(1, fifo_values)
    windows, window_of_cell = np.unique(block_chunk[block_of_cell] * (window.max() + 1) + window[block_of_cell],
                                        return_inverse=True)
    per_pe = np.bincount(window_of_cell * n_pes + pe, weights=pairs, minlength=len(windows) * n_pes)
    worst = per_pe.reshape(len(windows), n_pes).max(axis=1)
    np.add.at(out, windows // (window.max() + 1), np.rint(worst).astype(np.int64))
    return out
