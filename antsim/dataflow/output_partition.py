"""Dense wgrad with the weight gradient partitioned over the PEs (``mapping.wgrad_partition: output``).

SCNN's planar tiling gives every PE a spatial tile of the activations, so in wgrad every PE holds a
partial sum of every ``dW`` entry of the output-channel group and the PEs must reduce them across the
array after each chunk (``PhaseWork.needs_reduction``). A dense training engine maps wgrad the other
way round, as an output-stationary GEMM ``dW = dY · im2col(A)``: each PE owns a disjoint block of
``dW`` entries and accumulates them over every output position, so nothing is reduced across PEs.

Per chunk (image ``n``, output-channel group ``g`` of ``Kc_g`` channels) the ``C·R·S`` entries
``(c, r, s)`` are cut into ``n_pes`` contiguous, near-equal blocks (c-major, so a PE needs the
activation planes of few channels); each PE computes its entries for all ``Kc_g`` channels:

* valid products = ``Kc_g · Σ rows(r)·cols(s)`` over its entries, where ``rows(r)`` counts the output
  rows ``p`` whose input row ``p·stride − pad + r`` is inside the image (a dense engine skips only
  padding taps), packed into ``ceil(valid / (F·I))`` full multiplier cycles;
* it receives the group's whole ``dY`` (``Kc_g·P·Q`` values, broadcast) and the activation planes
  (``H·W`` values) of the channels its block touches; each plane is loaded from DRAM once, counted in
  ``stationary_per_image`` at the PE holding the channel's first entry (a PE whose block starts inside a
  channel receives that plane by broadcast, so its buffer holds up to one plane more than counted);
* it ends the chunk holding ``Kc_g · entries`` finished outputs (no halo, no reduction).

Only dense designs may use it (validated with the arch spec): a Cartesian sparse PE cannot keep its
products within a fixed block of outputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from antsim.dataflow.tiling import Tiling
from antsim.workloads.layers import Layer


@dataclass(frozen=True)
class OutputPartition:
    """Per slot (``chunk · n_pes + pe``) work of output-partitioned dense wgrad, int64 arrays."""

    valid_products: np.ndarray
    issued_pairs: np.ndarray
    stationary_reads: np.ndarray
    streamed_delivered: np.ndarray
    partial_outputs: np.ndarray
    stationary_per_image: np.ndarray  # (N, n_pes): the planes each PE loads per image (each plane once in all)
    entries_per_pe: np.ndarray  # (c, r, s) entries each PE owns

    @property
    def zeros(self) -> np.ndarray:
        return np.zeros_like(self.valid_products)


def _in_window(extent_out: int, extent_in: int, taps: int, stride: int, pad: int) -> np.ndarray:
    """Per tap: output positions whose input position ``o·stride − pad + tap`` lies inside the input."""
    positions = np.arange(extent_out)[None, :] * stride - pad + np.arange(taps)[:, None]
    return ((positions >= 0) & (positions < extent_in)).sum(axis=1)


def entry_blocks(n_entries: int, n_pes: int) -> np.ndarray:
    """First entry of each PE's contiguous block (length ``n_pes + 1``; sizes differ by at most one)."""
    return (np.arange(n_pes + 1) * n_entries) // n_pes


def partition_wgrad(layer: Layer, tiling: Tiling, F: int, I: int) -> OutputPartition:
    """Per-chunk, per-PE work of dense wgrad with ``dW`` entries partitioned over the PEs."""
    rows = _in_window(layer.P, layer.H, layer.R, layer.stride_h, layer.pad_h)
    cols = _in_window(layer.Q, layer.W, layer.S, layer.stride_w, layer.pad_w)
    per_entry = np.broadcast_to(np.outer(rows, cols).ravel(), (layer.C, layer.R * layer.S)).ravel()
    bounds = entry_blocks(per_entry.size, tiling.n_pes)
    cumulative = np.concatenate(([0], np.cumsum(per_entry, dtype=np.int64)))
    windows = cumulative[bounds[1:]] - cumulative[bounds[:-1]]  # Σ rows·cols per PE
    entries = np.diff(bounds)
    # Each channel's activation plane is loaded once, by the PE holding the channel's first entry, and
    # broadcast to the other PEs whose blocks reach into that channel.
    owner = np.searchsorted(bounds, np.arange(layer.C) * layer.R * layer.S, side="right") - 1
    channels = np.bincount(owner, minlength=tiling.n_pes)
    group_channels = np.array([min(layer.K, (g + 1) * tiling.kc) - g * tiling.kc for g in range(tiling.n_groups)])
    kc = np.tile(group_channels, tiling.n_images)[:, None]  # (n_chunks, 1)
    valid = kc * windows[None, :]
    issued = -(-valid // (F * I))
    busy = entries[None, :] > 0
    return OutputPartition(
        valid_products=valid.astype(np.int64),
        issued_pairs=issued.astype(np.int64),
        stationary_reads=(issued * I).astype(np.int64),
        streamed_delivered=np.where(busy, kc * layer.P * layer.Q, 0).astype(np.int64),
        partial_outputs=(kc * entries[None, :]).astype(np.int64),
        stationary_per_image=np.broadcast_to(channels * layer.H * layer.W, (tiling.n_images, tiling.n_pes)
                                             ).astype(np.int64),
        entries_per_pe=entries.astype(np.int64),
    )
