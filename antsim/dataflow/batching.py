"""The batch loop of a mapping: which images share the input buffer, and the chunk order that follows.

A training step runs every layer over a batch of ``N`` images. SCNN (an inference design) processes one
image at a time: for image n, for output-channel group g — so the weights are streamed from DRAM once
per image and, in wgrad, every image's dW partial sums are reduced across the PEs and written back.
A training accelerator blocks the batch loop instead: it holds the stationary tiles of ``b`` images in
the input buffer (a *batch tile*) and runs

    for tile t: load the stationary tiles of t's images
        for group g: stage g's weights once
            for image n in t: multiply (wgrad: accumulate dW over n in the same accumulator half)
        (wgrad: reduce dW across PEs once, add to the earlier tiles' dW, write back)

``b`` is ``mapping.batch_tile`` or, when that is 0, the largest tile whose stationary values fit every
PE's ``buffers.input_kb`` (at least 1: one image that does not fit is tiled in time by the timing
model's passes, as before). With ``b = 1`` the order is SCNN's.

What the order changes (``batch_tiled``): weights (fprop, dgrad: a streamed operand that does not
depend on the image) are read from DRAM once per (tile, group) instead of once per (image, group); the
stationary tiles are loaded per tile; wgrad drains its accumulators once per (tile, group), the dW of
tiles after the first being read back from DRAM and accumulated [assumption: read-modify-write of every
written entry]. The work per image (pairs, products, conflicts) does not change.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from antsim.dataflow.work import PER_PE_FIELDS, PhaseWork


@dataclass(frozen=True)
class BatchTiles:
    """Consecutive images grouped into batch tiles of ``size`` (the last one may be smaller)."""

    size: int
    n_images: int

    @property
    def tile_of_image(self) -> np.ndarray:
        return np.arange(self.n_images) // self.size

    @property
    def n_tiles(self) -> int:
        return -(-self.n_images // self.size)


def resident_values(per_image: np.ndarray, size: int) -> np.ndarray:
    """Per PE, the most stationary values any tile of ``size`` consecutive images holds at once.

    Args:
        per_image: (N, n_pes) stationary non-zeros of each image's tile on each PE.
    """
    starts = np.arange(0, per_image.shape[0], size)
    return np.add.reduceat(per_image, starts, axis=0).max(axis=0).astype(np.int64)


def choose_tile_size(requested: int, per_image: np.ndarray, capacity_values: float) -> int:
    """Images per batch tile: ``requested`` (clipped to the batch) or, when 0, the largest that fits.

    Args:
        requested: ``mapping.batch_tile`` (0 = auto).
        per_image: (N, n_pes) stationary non-zeros per image and PE.
        capacity_values: non-zeros one PE's input buffer holds (capacity bits / bits per value).
    """
    n_images = per_image.shape[0]
    if requested:
        return max(1, min(requested, n_images))
    for size in range(n_images, 1, -1):
        if resident_values(per_image, size).max(initial=0) <= capacity_values:
            return size
    return 1


def chunk_order(tiles: BatchTiles, n_groups: int) -> np.ndarray:
    """Indices ``n · n_groups + g`` of the image-major chunks in execution order (tile, group, image).

    Built by placing each chunk, without a loop: chunk (n, g) of tile t (first image ``t · size``, ``m_t`` images)
    runs after the ``t · size · n_groups`` chunks of the earlier tiles, the ``g · m_t`` of its earlier groups and
    the images of its group before n."""
    image = np.arange(tiles.n_images, dtype=np.int64)
    first = image // tiles.size * tiles.size  # each image's tile's first image
    images_in_tile = np.minimum(tiles.size, tiles.n_images - first)
    position = (first * n_groups + image - first)[:, None] + np.arange(n_groups, dtype=np.int64) * images_in_tile[
        :, None]
    order = np.empty(tiles.n_images * n_groups, np.int64)
    order[position.ravel()] = np.arange(tiles.n_images * n_groups, dtype=np.int64)
    return order


def _run_bounds(tile: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per chunk in execution order: first of its tile, first of its (tile, group) run, last of that run."""
    starts_tile = np.ones(len(tile), bool)
    np.not_equal(tile[1:], tile[:-1], out=starts_tile[1:])
    starts_run = starts_tile.copy()
    starts_run[1:] |= group[1:] != group[:-1]
    ends_run = np.ones(len(tile), bool)
    ends_run[:-1] = starts_run[1:]
    return starts_tile, starts_run, ends_run


def batch_tiled(work: PhaseWork, tiles: BatchTiles, n_groups: int, per_image: np.ndarray,
                streamed_per_image: bool) -> PhaseWork:
    """``work`` (chunks image-major, one image per tile) reordered and re-counted for ``tiles``.

    Args:
        work: image-major chunks (``n · n_groups + g``); for wgrad, partial and written outputs already
            accumulated per tile and reported on the tile's last image (``tap_footprint``).
        tiles: the batch tiles. n_groups: output-channel groups.
        per_image: (N, n_pes) stationary non-zeros per image and PE.
        streamed_per_image: True when the streamed operand depends on the image (wgrad's dY); False for
            weights, which a tile stages once per group.
    """
    order = chunk_order(tiles, n_groups)
    image, group = np.divmod(order, n_groups)
    tile = image // tiles.size
    starts_tile, starts_run, ends_run = _run_bounds(tile, group)
    # One image per tile keeps SCNN's image-major order: the per-chunk arrays are kept as they are (no gather).
    in_order = tiles.size == 1
    moved = {} if in_order else {name: getattr(work, name)[order] for name in (*PER_PE_FIELDS, "lockstep_pairs")}
    streamed = work.streamed_dram_values if in_order else work.streamed_dram_values[order]
    if not streamed_per_image:
        streamed = np.where(starts_run, streamed, 0)
    per_tile = np.add.reduceat(per_image.sum(axis=1), np.arange(0, tiles.n_images, tiles.size))
    outputs = work.output_values if in_order else work.output_values[order]
    accumulates = work.phase == "wgrad"
    drains = ends_run if accumulates else np.ones(len(order), bool)
    readback = np.where(drains & (tile > 0), outputs, 0) if accumulates else np.zeros(len(order), np.int64)
    return replace(
        work, **moved, streamed_dram_values=streamed, output_values=outputs,
        stationary_dram_values=np.where(starts_tile, per_tile[tile], 0).astype(np.int64),
        output_readback_values=readback.astype(np.int64), drains=drains, chunk_tile=tile,
        chunk_group=group, chunk_image=image, stationary_resident=resident_values(per_image, tiles.size),
        tiling={**work.tiling, "batch_tile": tiles.size, "batch_tiles": tiles.n_tiles},
    )
