"""A batch estimated from a sample of its images (``fast`` fidelity, ``batch_sample``).

Mapping cost grows with the batch (every image's non-zeros are vectorised, paired and counted), but the
images of a batch are draws of one sparsity process, so their work differs mostly by how many non-zeros
each holds — which varies a lot under a batch-wide top-k (SWAT keeps the largest magnitudes of the
whole tensor: per-image dY densities of 0.03–0.4 at a batch density of 0.1 are usual). The estimate
therefore works from each image's *work proxy*, counted exactly and cheaply on the full batch: the
stationary non-zeros of the image (fprop: A, dgrad: dY; the streamed weights are the same for every
image) or, for wgrad, the product of its A and dY non-zeros (every stationary value meets every streamed
one of the image).

With ``batch_sample = k`` the mapping runs on ``k`` images at evenly spaced ranks of the proxy; every
image of the batch takes the work of the sample image nearest in proxy, with its pair-proportional
counts (candidate and issued pairs, conflicts, products, stationary reads, the lock-step floor) scaled
by the ratio of the two proxies, and wgrad's streamed dY counts by the ratio of their dY non-zeros.
fprop and dgrad hold one image's outputs per chunk: an image's halo, held and written outputs are taken
from its sample image as they are (they saturate rather than grow with its non-zeros). The
image-major estimate then goes through the same batch loop (``batch_tiled``) as a full batch, with
the batch tile chosen from the exact per-image stationary counts: the loop nest, weight reuse, wgrad
drains and read-backs and the discrete-event timing are the full batch's.

wgrad accumulates dW over the images of a batch tile, and a tile holds the union of its images' dW
entries, which keeps growing with every image a PE sees (a PE's spatial tile meets few non-zero pairs
per image: at SWAT densities the union over 8 images is ~2× that over 2). So wgrad's footprint —
valid products, held partial sums, written dW — is counted exactly on the whole batch (mask
correlations, ``fast_footprint``); only its pair counts are estimated (for ``oracle``, re-packed from
the exact valid products). ``valid`` products are the sum of the estimate; ``total`` and ``skipped``
keep the sample's ratios to them.

A dense design treats every element as a non-zero, so all images are alike and the estimate is exact.
Its error against the full batch on every zoo network is measured by ``scripts/batch_sample_error.py``
and stated in BENCHMARKS.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from antsim.dataflow.batching import BatchTiles
from antsim.dataflow.footprint import Footprint
from antsim.dataflow.work import PER_PE_FIELDS, PhaseWork
from antsim.errors import MappingError
from antsim.results import ProductCounts
from antsim.sparsity.tensors import Tensors
from antsim.vocabulary import Fidelity


def check_batch_sample(batch_sample: int, fidelity: Fidelity) -> None:
    """Refuse a negative or non-integer sample, and any sample at ``exact`` fidelity (which must
    enumerate every product of every image)."""
    if not isinstance(batch_sample, int) or isinstance(batch_sample, bool) or batch_sample < 0:
        raise MappingError(f"batch_sample must be a non-negative int (0 = every image); got {batch_sample!r}")
    if batch_sample and fidelity == "exact":
        raise MappingError(f"batch_sample {batch_sample} needs fidelity fast: exact enumerates every image")


@dataclass(frozen=True)
class ImageSample:
    """The sampled images of a batch and how every image is estimated from them.

    Attributes:
        images: indices (ascending) of the sampled images in the batch, (k,).
        source: per batch image, the position in ``images`` of the sample image it copies, (N,).
        pair_scale: per batch image, its work proxy over its source's (pair-proportional counts), (N,).
        streamed_scale: per batch image, the same for its streamed operand when that is per image
            (wgrad's dY; 1 for the weights), (N,).
        proxy_ratio: the batch's proxy sum over the sample's (``total`` and ``skipped`` products).
    """

    images: np.ndarray
    source: np.ndarray
    pair_scale: np.ndarray
    streamed_scale: np.ndarray
    proxy_ratio: float


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    return np.where(denominator > 0, numerator / np.maximum(denominator, 1e-300), 1.0)


def plan_sample(stationary_nnz: np.ndarray, streamed_nnz: np.ndarray | None, k: int) -> ImageSample:
    """Pick ``k`` images at evenly spaced proxy ranks and map every image to its nearest sample.

    Args:
        stationary_nnz: non-zeros of each image's stationary operand, (N,).
        streamed_nnz: non-zeros of each image's streamed operand when it is per image (wgrad), else None.
        k: sample size (1 ≤ k < N).
    """
    stationary_nnz = np.asarray(stationary_nnz, dtype=np.float64)
    proxy = stationary_nnz if streamed_nnz is None else stationary_nnz * np.asarray(streamed_nnz, np.float64)
    n = len(proxy)
    order = np.argsort(proxy, kind="stable")
    images = np.unique(order[((np.arange(k) + 0.5) * n / k).astype(np.int64)])
    source = np.argmin(np.abs(proxy[:, None] - proxy[images][None, :]), axis=1)
    pair_scale = _ratio(proxy, proxy[images][source])
    if streamed_nnz is None:
        streamed_scale = np.ones(n)
    else:
        streamed = np.asarray(streamed_nnz, np.float64)
        streamed_scale = _ratio(streamed, streamed[images][source])
    sampled = float(proxy[images].sum())
    return ImageSample(images, source, pair_scale, streamed_scale,
                       float(proxy.sum()) / sampled if sampled > 0 else n / len(images))


def select_images(tensors: Tensors, images: np.ndarray) -> Tensors:
    """The operands of the chosen images (weights shared), with their non-zero masks when ``tensors`` has them."""
    saved = tensors.saved_activations
    selected = Tensors(tensors.weights, tensors.activations[images], tensors.grad_output[images],
                       None if saved is None else saved[images])
    masks = tensors.nonzero_masks()
    if masks is None:
        return selected
    saved_mask = masks.saved_activations
    return selected.with_masks(Tensors.of_masks(masks.weights, masks.activations[images], masks.grad_output[images],
                                                None if saved_mask is None else saved_mask[images]))


def _accumulated_rows(k: int, n_groups: int, n_images: int, full: BatchTiles) -> tuple[np.ndarray, np.ndarray]:
    """Chunk rows (full, sample) that carry a wgrad tile's held partial sums: each full tile's last
    image takes the last image of sample tile ``t mod (sample tiles)``."""
    sample = BatchTiles(min(full.size, k), k)
    tile = np.arange(full.n_tiles)
    full_last = np.minimum((tile + 1) * full.size, n_images) - 1
    sample_tile = tile % sample.n_tiles
    sample_last = np.minimum((sample_tile + 1) * sample.size, k) - 1
    groups = np.arange(n_groups)
    return ((full_last[:, None] * n_groups + groups).ravel(), (sample_last[:, None] * n_groups + groups).ravel())


_PAIR_FIELDS = ("candidate_pairs", "issued_pairs", "conflict_cycles", "issued_products", "valid_products",
                "stationary_reads")


def _scaled(values: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Integer counts ``values`` (rows) times a per-row ``scale``, rounded."""
    shape = (-1,) + (1,) * (values.ndim - 1)
    return np.rint(values * scale.reshape(shape)).astype(np.int64)


def _estimated_products(sampled: ProductCounts, valid: int, proxy_ratio: float) -> ProductCounts:
    """The batch's product counts: ``valid`` as estimated per chunk; ``total`` at the sample's
    valid-to-total ratio (the proxy ratio when the sample has no valid product); ``skipped`` at the
    sample's skipped-to-total ratio, never above the estimate's RCPs."""
    if sampled.valid > 0:
        total = max(valid, round(valid * sampled.total / sampled.valid))
    else:
        total = max(valid, round(sampled.total * proxy_ratio))
    skipped = round(total * sampled.skipped / sampled.total) if sampled.total else 0
    return ProductCounts(total=total, valid=valid, skipped=min(skipped, total - valid))


def expand_images(work: PhaseWork, tiles: BatchTiles, sample: ImageSample, per_image: np.ndarray,
                  held: Footprint | None, note: str | None = None) -> PhaseWork:
    """The image-major work of the batch estimated from ``work``, the image-major work of ``sample``'s
    images, for batch tiles ``tiles``; ``per_image`` (N, n_pes) is the batch's stationary values per
    image and PE (exact); ``held``: the batch's exact footprint (wgrad), which replaces the estimated
    valid products and held outputs. ``note``: when given, the copy is exact (a dense design) — it is
    recorded instead of the estimate's note and sample keys."""
    n_groups, n_images = int(work.tiling["groups"]), tiles.n_images
    k = work.n_chunks // n_groups
    rows = (sample.source[:, None] * n_groups + np.arange(n_groups)).ravel()
    pair_scale = np.repeat(sample.pair_scale, n_groups)
    streamed_scale = np.repeat(sample.streamed_scale, n_groups)
    fields = {name: getattr(work, name)[rows] for name in PER_PE_FIELDS}
    for name in _PAIR_FIELDS:
        fields[name] = _scaled(fields[name], pair_scale)
    fields["streamed_delivered"] = _scaled(fields["streamed_delivered"], streamed_scale)
    output_values = work.output_values[rows]
    if held is not None:  # held partial sums are the union over each batch tile's images: counted exactly
        shape = fields["valid_products"].shape
        fields.update(valid_products=held.valid_products.reshape(shape), partial_outputs=held.partial_outputs.reshape(
            shape), halo_outputs=held.halo_outputs.reshape(shape))
        output_values = np.asarray(held.output_values, dtype=np.int64)
    elif work.phase == "wgrad":
        full_rows, sample_rows = _accumulated_rows(k, n_groups, n_images, tiles)
        partial = np.zeros_like(fields["partial_outputs"])
        partial[full_rows] = work.partial_outputs[sample_rows]
        fields["partial_outputs"] = partial
        output_values = np.zeros_like(output_values)
        output_values[full_rows] = work.output_values[sample_rows]
    chunks = n_images * n_groups
    products = _estimated_products(work.products, int(fields["valid_products"].sum()), sample.proxy_ratio)
    return replace(
        work, **fields, output_values=output_values,
        streamed_dram_values=_scaled(work.streamed_dram_values[rows], streamed_scale),
        lockstep_pairs=_scaled(work.lockstep_pairs[rows], pair_scale),
        stationary_dram_values=np.zeros(chunks, np.int64), output_readback_values=np.zeros(chunks, np.int64),
        drains=np.ones(chunks, bool), chunk_tile=np.arange(chunks) // n_groups,
        chunk_group=np.arange(chunks) % n_groups, chunk_image=np.arange(chunks) // n_groups,
        stationary_values=per_image.sum(axis=0).astype(np.int64), products=products, output=None,
        tiling={**work.tiling, "images": n_images, "chunks": chunks,
                **({} if note else {"batch_sample": k, "sampled_images": [int(i) for i in sample.images]})},
        notes=(*work.notes, note or f"batch estimated from {k} of {n_images} images (at evenly spaced ranks of"
               " their non-zeros): each image takes the work of the sample image nearest in non-zeros, pair"
               " counts scaled by the ratio (antsim.dataflow.sampling)"),
    )
