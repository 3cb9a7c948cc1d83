"""Seeded generators of sparse training operands (W, A, dY) at a chosen density per operand.

Models (``make_tensors(..., model=NAME)``):

* ``swat`` (default) — calibrated on operands captured from SWAT training that learns (``antsim capture``
  on natural-photo crops; BENCHMARKS.md "capture", ``reports/calibration.md``): W is the top-k of i.i.d.
  values (no clustering inside kernels, even channels); the SWAT top-k copies — A (or the saved A when a
  separate forward density is given) and a top-k dY — are the top-k of |smooth field| × an *envelope*: a
  smooth log-normal gain over the plane shared by the batch times a log-normal per-image gain, each copy
  with its own envelope. That non-stationarity (some regions and, above all for dY, some images keep most
  non-zeros) is what loads planar PE tiles unevenly in real captures; it brings the captured statistics
  (channel CV, clustering, spatial and per-image CV) into range and ANT's simulated speedup near the
  captured one, where ``topk_field`` is far off.
* ``uniform`` — independent Bernoulli masks: every element non-zero with probability = density. Reproduces
  neither the per-channel imbalance nor the spatial clustering of real sparse training.
* ``topk_field`` — whole-tensor top-k of |smooth random field|: a Gaussian random field smoothed
  over the spatial axes, scaled per channel by a log-normal factor; keeping the k largest magnitudes (as
  SWAT's top-k does) yields uneven per-channel density and spatially clustered non-zeros (docs/sources.md §1.2)
  at exactly the requested density.
* ``channel`` — channel-structured: whole channels non-zero (structured pruning / dead ReLU channels), the
  rest zero; density is met to the nearest channel.

Values of non-zeros are the field values (signed, never 0); under ``uniform`` and ``channel`` they are i.i.d.
standard normals drawn for the non-zeros alone (``_masked_normals``; docs/operand_draws.md). Saved activations for
wgrad (SWAT) are the top-k by magnitude of the forward activations at ``density_a_saved``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

import numpy as np

from antsim.errors import AntsimError
from antsim.sparsity.densities import Densities, DensityError, check_density
from antsim.sparsity.tensors import Tensors
from antsim.workloads.layers import Layer

MaskModel = Callable[[tuple[int, ...], float, np.random.Generator, "FieldParams"], np.ndarray]
_MODELS: dict[str, MaskModel] = {}


@dataclass(frozen=True)
class FieldParams:
    """Shape of the smooth field behind ``topk_field``.

    Attributes:
        spatial_sigma: Gaussian smoothing length over the spatial axes (elements). [assumption: 1.5 gives
            neighbour clustering of the order seen in ReLU feature maps; see BENCHMARKS.md calibration]
        channel_sigma: log-normal sigma of the per-channel scale; larger → more uneven per-channel density.
            [assumption: 0.5; docs/sources.md §1.2 reports a per-channel CV of 0.2–1.6 in real tensors]
    """

    spatial_sigma: float = 1.5
    channel_sigma: float = 0.5


def _register(name: str) -> Callable[[MaskModel], MaskModel]:
    def wrap(fn: MaskModel) -> MaskModel:
        _MODELS[name] = fn
        return fn

    return wrap


# Elements per chunk of the chunked draws (``_bernoulli_positions``, ``_place_normals``) and of the candidate pass
# of the top-k selection (``_top_positions``): bounds their temporaries, not results. [choice] 2^18 elements, 2 MiB
# of float64, small enough to stay in a core's L2 cache between the draw and its use. Measured on 2.4 M elements:
# the uniform draws + compare 1.16-1.27x faster than whole-array draws.
_CHUNK = 1 << 18


def _bernoulli_positions(size: int, density: float, rng: np.random.Generator, mask: np.ndarray | None = None
                         ) -> list[np.ndarray]:
    """Where ``rng.random(size) < density``: per chunk of ``_CHUNK`` elements, the ascending offsets (intp) within
    the chunk, every chunk's uniforms drawn before this returns (the normals that follow must not interleave).

    The same draws as the whole array's, because a ``Generator`` fills an array (or ``out=``) in C order, one draw
    after the other from its bit stream, with no state beside the bit generator's, so consecutive chunks continue
    the one stream (tests/sparsity/test_generators_reference.py compares across chunk sizes). The offsets are read
    from the compare while it is in cache. ``mask`` (flat bool of ``size``): the compare is written there, so the
    whole mask is kept at no extra pass; else into one chunk's buffer, and the mask never exists whole.
    """
    uniforms = np.empty(min(size, _CHUNK))
    below = np.empty(uniforms.size, bool) if mask is None else mask
    positions = []
    for start in range(0, size, _CHUNK):
        count = min(_CHUNK, size - start)
        rng.random(out=uniforms[:count])
        chunk = below[:count] if mask is None else mask[start:start + count]
        np.less(uniforms[:count], density, out=chunk)
        positions.append(np.flatnonzero(chunk))  # intp, the index type: no casts either way
    return positions


def _place_normals(out: np.ndarray, positions: Iterable[np.ndarray], rng: np.random.Generator) -> None:
    """Write consecutive ``rng.standard_normal`` draws (a drawn 0 replaced by 1.0, cast to ``out``'s float32) at
    ``positions``: per chunk of ``_CHUNK`` elements of flat ``out``, the ascending offsets within it.

    The assignment at the chunk's offsets writes what ``_masked_normals``'s boolean assignment writes for the same
    mask (the same elements in the same order, the same float64 → float32 cast; a non-zero normal stays non-zero,
    see there). For a Bernoulli mask, offsets read from the compare while it is in cache and assigned at are
    cheaper than a whole mask written, read again and assigned through (docs/operand_speed.md).
    """
    flat_out = out.reshape(-1)
    drawn, cast = np.empty(min(flat_out.size, _CHUNK)), np.empty(min(flat_out.size, _CHUNK), out.dtype)
    for start, offsets in zip(range(0, flat_out.size, _CHUNK), positions, strict=True):
        normals, values = drawn[:offsets.size], cast[:offsets.size]
        rng.standard_normal(out=normals)
        normals[normals == 0] = 1.0
        np.copyto(values, normals, casting="same_kind")  # cast contiguously: the scatter then copies, 2x faster
        flat_out[start:start + _CHUNK][offsets] = values  # not np.put: a memmove call per element


def _masked_normals(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """float32 of ``mask``'s shape: 0 off the mask; on it, in C order, the consecutive draws of
    ``rng.standard_normal(count_nonzero(mask))`` with a drawn 0 replaced by 1.0.

    One normal per non-zero, not one per element: the values are i.i.d. N(0, 1) (a drawn 0 aside) whatever the
    mask, as those of a whole-array draw kept at the mask's positions were (before session 9), at a density's
    fraction of the draws. The masks are unchanged, the values are not those of the whole-array draw
    (docs/operand_draws.md). The chunks continue one stream (see ``_bernoulli_positions``), so the values do not
    depend on ``_CHUNK``. A non-zero float64 normal stays non-zero in float32: numpy's ziggurat returns a non-zero
    integer times a layer width of 4.8e-17 or more (its narrowest layer, 0.215 / 2^52), or a tail value above
    3.6, far from float32's smallest subnormal (1.4e-45); the boolean assignment casts as ``astype`` does. The
    boolean assignment, not offsets: on the channel model's runs of whole kernels or planes it is
    the faster (5.8 against 7.2 ms on a 2.4 M-element mask of 9-element runs, docs/operand_speed.md).
    """
    out = np.zeros(mask.shape, np.float32)
    flat_mask, flat_out = mask.reshape(-1), out.reshape(-1)
    buffer = np.empty(min(flat_mask.size, _CHUNK))
    for start in range(0, flat_mask.size, _CHUNK):
        chunk = flat_mask[start:start + _CHUNK]
        normals = buffer[:int(np.count_nonzero(chunk))]
        rng.standard_normal(out=normals)
        normals[normals == 0] = 1.0
        flat_out[start:start + _CHUNK][chunk] = normals
    return out


def bernoulli_normals(shape: tuple[int, ...], density: float, rng: np.random.Generator) -> np.ndarray:
    """float32 operand of independent Bernoulli non-zeros: ``rng.random(shape) < density`` picks them (the mask
    of ``np.where(rng.random(shape) < density, normals, 0.0)``, bit for bit), then one
    ``rng.standard_normal`` per non-zero, in C order, gives their values (0 → 1.0; ``_masked_normals``'s
    contract). Holds the output, the non-zeros' int64 offsets and four chunk buffers: 4 + 8·density bytes per
    element (at most 1 B more than f62f66e's whole bool mask up to density 0.125; 12 B at density 1, within
    ``antsim.guard``'s 17)."""
    out = np.zeros(shape, np.float32)
    _place_normals(out, _bernoulli_positions(out.size, density, rng), rng)
    return out


def bernoulli_normals_and_mask(shape: tuple[int, ...], density: float, rng: np.random.Generator
                               ) -> tuple[np.ndarray, np.ndarray]:
    """``bernoulli_normals`` (the same bytes and generator state) and its non-zero mask, which is the compare that
    picks the non-zeros (a non-zero normal stays non-zero, ``_masked_normals``), kept whole: 1 B per element more,
    no pass over the output."""
    out, mask = np.zeros(shape, np.float32), np.empty(shape, bool)
    _place_normals(out, _bernoulli_positions(out.size, density, rng, mask.reshape(-1)), rng)
    return out, mask


@_register("uniform")
def _uniform(shape: tuple[int, ...], density: float, rng: np.random.Generator, params: FieldParams) -> np.ndarray:
    return bernoulli_normals(shape, density, rng)


def _smooth_field(shape: tuple[int, ...], rng: np.random.Generator, params: FieldParams) -> np.ndarray:
    field = rng.standard_normal(shape)
    if params.spatial_sigma > 0:
        from scipy.ndimage import gaussian_filter  # here: 0.15-0.25 s of import that uniform/channel never need
        sigma = (0, 0, params.spatial_sigma, params.spatial_sigma)
        # In place: scipy filters the second axis in place already (its output is that pass's input); each line
        # is read into a buffer before it is written, so the first axis gives the same values too.
        gaussian_filter(field, sigma=sigma, mode="wrap", output=field)
        field /= field.std() or 1.0
    channel_scale = np.exp(params.channel_sigma * rng.standard_normal((1, shape[1], 1, 1)))
    if params.channel_sigma != 0:  # sigma 0 (swat's W): every scale is exp(±0) = 1.0 and x·1.0 is x, bit for bit
        field *= channel_scale  # in place: the same products as field * channel_scale, one full-size array fewer
    return field


# Elements per block of the selection passes of ``top_k`` and ``top_k_mask``: bounds their temporaries (one
# float and one bool per element of a block), not results. [choice] 2^20 elements, ≈ 9 MiB of float64 + bool.
_TOP_K_BLOCK = 1 << 20


def _negated_kth(negated: np.ndarray, keep: int) -> float | None:
    """The ``keep``-th smallest of ``negated`` (flat −|values|, owned: partitioned in place), or None when the
    selection of the ``keep`` largest magnitudes is not "every element at or above that magnitude": an element
    past the k-th ties with it (the position-based choice among ties is then ``np.argpartition``'s own) or the
    k-th is NaN.

    Why the threshold selects what ``np.argpartition(-|values|, keep - 1)[:keep]`` selects: after the partition
    every element before position keep − 1 is ≤ the k-th and every one after it ≥; if none after it equals it
    (``np.fmin`` skips NaN, which the partition sorts last and the argpartition never takes before a number),
    the elements ≤ the k-th are exactly the first ``keep``, the set the argpartition returns.
    """
    negated.partition(keep - 1)
    kth = negated[keep - 1]
    if np.isnan(kth) or (keep < negated.size and np.fmin.reduce(negated[keep:]) == kth):
        return None
    return float(kth)  # exact: the dtypes _threshold admits are at most float64


def _selected(block: np.ndarray, kth: float) -> np.ndarray:
    """Elements of ``block`` whose −|value| is ≤ ``kth`` (the same −|value| ``_negated_kth`` partitioned)."""
    negated = np.abs(block)
    np.negative(negated, out=negated)
    return negated <= kth


def _top_k_by_index(values: np.ndarray, keep: int) -> np.ndarray:
    """The selection by ``np.argpartition`` (the original ``top_k``): five full-size arrays at its peak, used only
    where the threshold cannot reproduce it (ties at the k-th magnitude, NaN, non-float dtypes)."""
    out = np.zeros_like(values)
    flat = np.abs(values).ravel()
    index = np.argpartition(-flat, keep - 1)[:keep]
    out.ravel()[index] = values.ravel()[index]
    return out


# Dtypes whose k-th magnitude a Python float holds exactly (the others, integers included, take the argpartition).
_THRESHOLD_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _threshold(values: np.ndarray, keep: int) -> float | None:
    """``_negated_kth`` of ``values`` (None also for a dtype outside ``_THRESHOLD_DTYPES``: an integer's negation
    may wrap, a long double's k-th is not a Python float)."""
    if values.dtype not in _THRESHOLD_DTYPES:
        return None
    negated = np.abs(values).ravel()  # one full-size copy, partitioned in place and dropped on return
    np.negative(negated, out=negated)
    return _negated_kth(negated, keep)


# Sample of the candidate bound: about this many evenly strided elements. [choice] 2^15: the sampled quantile of a
# fraction f is off by ~sqrt(f(1-f)/2^15) ≤ 0.3 %, so the 6-sigma margin below adds ≤ 1.7 % of the size in
# candidates, and a sample is read in well under 1 % of a candidate pass.
_SAMPLE = 1 << 15
# Margin of the candidate bound, in standard deviations of the sampled count. [choice] 6: a bound that admits
# fewer than k candidates (then the partition path runs: the same result, one pass slower) is a > 6-sigma event
# for any order-free (exchangeable) layout of the magnitudes.
_SAMPLE_SIGMAS = 6.0
# The candidate path serves fractions up to this and sizes from this many elements. [choice] Above half the
# elements the candidates are no fewer than the partition's copy; below 2^16 the sample is the array.
_CANDIDATE_MAX_FRACTION = 0.5
_CANDIDATE_MIN_SIZE = 1 << 16


@dataclass(frozen=True)
class _Magnitudes:
    """``|values| × gain`` (``gain`` None: ``|values|``) over a C-contiguous ``(N, C, L)`` view, with ``gain``
    of shape ``(1 or N, 1 or C, 1 or L)``, read a block of whole rows at a time. Every element is the same float
    operation as in ``np.abs(values) * gain`` (same dtypes, same promotion), whichever block or sample holds it."""

    values: np.ndarray
    gain: np.ndarray | None

    @classmethod
    def of(cls, values: np.ndarray, gain: np.ndarray | None = None) -> _Magnitudes:
        """Of a whole array (``gain`` None) or of an ``(N, C, …)`` array and a gain broadcast over it whose
        trailing axes are either all 1 or all full (``(N, 1, H, W)`` over ``(N, C, H, W)``, ``(1, M, 1)`` …)."""
        if gain is None:
            return cls(values.reshape(1, -1, 1), None)
        n, c = values.shape[:2]
        trailing = math.prod(gain.shape[2:]) if gain.ndim > 2 else 1
        return cls(values.reshape(n, c, -1), gain.reshape(gain.shape[0], gain.shape[1], trailing))

    @property
    def size(self) -> int:
        return self.values.size

    def blocks(self) -> Iterator[tuple[int, np.ndarray]]:
        """(flat index of the first element, flat magnitudes) of consecutive blocks of about ``_CHUNK``."""
        n, c, length = self.values.shape
        rows = max(1, _CHUNK // max(length, 1))
        for image in range(n):
            for row in range(0, c, rows):
                block = np.abs(self.values[image, row:row + rows])
                if self.gain is not None:
                    gain = self.gain[image if self.gain.shape[0] > 1 else 0]
                    block = block * (gain[row:row + rows] if gain.shape[0] > 1 else gain)
                yield (image * c + row) * length, block.reshape(-1)

    def at(self, flat: np.ndarray) -> np.ndarray:
        """The magnitudes at flat indices ``flat``."""
        magnitudes = np.abs(self.values.reshape(-1)[flat])
        if self.gain is None:
            return magnitudes
        n, c, length = self.values.shape
        index = tuple(np.zeros_like(flat) if size == 1 else coord
                      for size, coord in zip(self.gain.shape, (flat // (c * length), flat // length % c,
                                                                flat % length), strict=True))
        return magnitudes * self.gain[index]


def _candidate_bound(magnitudes: _Magnitudes, keep: int) -> float:
    """A magnitude that, by a strided sample, about ``keep`` + 6 sigma elements reach (NaN if the sample's is)."""
    step = max(1, magnitudes.size // _SAMPLE)
    sample = magnitudes.at(np.arange(0, magnitudes.size, step))
    fraction = keep / magnitudes.size
    reach = sample.size * fraction + _SAMPLE_SIGMAS * math.sqrt(sample.size * fraction * (1 - fraction))
    rank = min(sample.size, math.ceil(reach) + 1)
    return float(np.partition(sample, sample.size - rank)[sample.size - rank])


def _top_positions(magnitudes: _Magnitudes, keep: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Flat indices (ascending) and magnitudes of the ``keep`` largest magnitudes, or None where the partition
    path must decide: a small array, a large fraction, too few candidates, a tie at the k-th, a NaN k-th.

    Why it selects what ``_negated_kth`` + ``_selected`` select: every element below the bound is below the k-th
    (at least ``keep`` candidates reach the bound), so the k-th largest of the candidates is the k-th largest of
    all, and "more than ``keep`` elements at or above it" (a tie across the k-th) happens among candidates only.
    NaN is never a candidate (``>=`` is False), as ``_selected`` never takes a NaN while the k-th is a number.
    """
    if magnitudes.size < _CANDIDATE_MIN_SIZE or keep > _CANDIDATE_MAX_FRACTION * magnitudes.size:
        return None
    bound = _candidate_bound(magnitudes, keep)
    positions, parts = [], []
    for start, block in magnitudes.blocks():
        hit = np.flatnonzero(block >= bound)
        parts.append(block[hit])
        positions.append(hit + start)
    if sum(part.size for part in parts) < keep:
        return None
    candidates, values = np.concatenate(positions), np.concatenate(parts)
    del positions, parts
    below = candidates.size - keep
    ordered = np.partition(values, below)
    kth = ordered[below]
    if below and ordered[:below].max() == kth:
        return None
    chosen = values >= kth
    return candidates[chosen], values[chosen]


def top_k(values: np.ndarray, density: float, dtype: np.dtype | type | None = None) -> np.ndarray:
    """Keep the ``round(density·size)`` largest magnitudes of ``values`` (C order; ties at the k-th magnitude
    resolved as ``np.argpartition`` resolves them), the rest 0; ``dtype``: of the output (default ``values``'s),
    the values of ``top_k(values, density).astype(dtype)`` without the intermediate.

    Up to half the elements (of float values, from 2^16 on), one pass finds the candidates above a sampled bound
    and a partition of those the k-th (``_top_positions``); otherwise the k-th largest magnitude comes from one
    partitioned copy and the output is filled block by block with the elements at or above it. When elements tie
    at the k-th magnitude the argpartition itself decides (identical results, the old peak).
    """
    keep = int(round(density * values.size))
    dtype = values.dtype if dtype is None else np.dtype(dtype)
    if keep == 0:
        return np.zeros(values.shape, dtype)
    if keep >= values.size:
        return values.astype(dtype)
    found = _top_positions(_Magnitudes.of(values), keep) if values.dtype in _THRESHOLD_DTYPES else None
    if found is not None:
        positions, found = found[0], None  # the magnitudes dropped before the output is allocated
        out = np.zeros(values.shape, dtype)
        out.reshape(-1)[positions] = values.reshape(-1)[positions]
        return out
    kth = _threshold(values, keep)
    if kth is None:
        return _top_k_by_index(values, keep).astype(dtype, copy=False)
    out = np.zeros(values.shape, dtype)
    flat_values, flat_out = values.reshape(-1), out.reshape(-1)
    for start in range(0, values.size, _TOP_K_BLOCK):
        block = flat_values[start:start + _TOP_K_BLOCK]
        np.copyto(flat_out[start:start + _TOP_K_BLOCK], block, casting="unsafe", where=_selected(block, kth))
    return out


def _mask_at(shape: tuple[int, ...], found: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Bool of ``shape``: True at the found positions whose magnitude is non-zero (``top_k(...) != 0``)."""
    mask = np.zeros(shape, bool)
    positions, magnitudes = found
    mask.reshape(-1)[positions[magnitudes != 0]] = True
    return mask


def top_k_mask(values: np.ndarray, density: float) -> np.ndarray:
    """``top_k(values, density) != 0`` without the float output (bool, the shape of ``values``)."""
    keep = int(round(density * values.size))
    if keep == 0 or keep >= values.size:
        return top_k(values, density) != 0
    found = _top_positions(_Magnitudes.of(values), keep) if values.dtype in _THRESHOLD_DTYPES else None
    if found is not None:
        return _mask_at(values.shape, found)
    kth = _threshold(values, keep)
    if kth is None:
        return _top_k_by_index(values, keep) != 0
    mask = np.empty(values.shape, bool)
    flat_values, flat_mask = values.reshape(-1), mask.reshape(-1)
    for start in range(0, values.size, _TOP_K_BLOCK):
        block = flat_values[start:start + _TOP_K_BLOCK]
        np.logical_and(_selected(block, kth), block != 0, out=flat_mask[start:start + _TOP_K_BLOCK])
    return mask


def top_k_mask_of_gain(field: np.ndarray, gain: np.ndarray, density: float) -> np.ndarray:
    """``top_k_mask(np.abs(field) * gain, density)`` for an ``(N, C, …)`` ``field`` and a gain broadcast over it
    (trailing axes all 1 or all full: ``(N, 1, H, W)``, ``(1, M, 1)``), without the full-size product.

    A non-negative gain takes the candidate pass of ``_top_positions`` (the product formed a block at a time);
    otherwise (or where that path declines) the product is formed once whole for the threshold and then again
    one image at a time (the same float operations, hence the same values).
    """
    keep = int(round(density * field.size))
    dtype = np.result_type(field, gain)
    if 0 < keep < field.size and dtype in _THRESHOLD_DTYPES and bool((gain >= 0).all()):
        found = _top_positions(_Magnitudes.of(field, gain), keep)
        if found is not None:
            return _mask_at(field.shape, found)
    product = np.abs(field) * gain
    if keep == 0 or keep >= field.size or product.dtype not in _THRESHOLD_DTYPES:
        return top_k_mask(product, density)
    negated = product.reshape(-1)
    np.negative(np.abs(negated, out=negated), out=negated)  # the −|product| that _selected recomputes
    kth = _negated_kth(negated, keep)
    del negated, product
    if kth is None:
        return top_k_mask(np.abs(field) * gain, density)
    mask = np.empty(field.shape, bool)
    image_gain = np.broadcast_to(gain, field.shape)
    for n in range(field.shape[0]):
        block = np.abs(field[n]) * image_gain[n]
        np.logical_and(_selected(block, kth), block != 0, out=mask[n])
    return mask


@_register("topk_field")
def _topk_field(shape: tuple[int, ...], density: float, rng: np.random.Generator, params: FieldParams) -> np.ndarray:
    field = _smooth_field(shape, rng, params)
    field[field == 0] = 1e-12  # in place: np.where(field == 0, 1e-12, field) without a second copy
    keep_all = int(round(density * field.size)) >= field.size
    return field if keep_all else top_k(field, density, np.float32)  # keeping all: top_k's copy, not needed


@_register("channel")
def _channel(shape: tuple[int, ...], density: float, rng: np.random.Generator, params: FieldParams) -> np.ndarray:
    return _channel_and_mask(shape, density, rng)[0]


def _channel_and_mask(shape: tuple[int, ...], density: float, rng: np.random.Generator
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The ``channel`` operand and its non-zero mask (the chosen channels: a non-zero normal stays non-zero)."""
    channels = shape[1]
    keep = int(round(density * channels))
    if density > 0:
        keep = max(keep, 1)
    chosen = rng.permutation(channels)[:keep]
    mask = np.zeros(shape, dtype=bool)
    mask[:, chosen] = True
    return _masked_normals(mask, rng), mask


def make_operand(shape: tuple[int, ...], density: float, model: str, rng: np.random.Generator,
                 params: FieldParams | None = None) -> np.ndarray:
    """One 4-D operand at ``density`` under ``model`` (float32).

    Raises:
        AntsimError: unknown model; DensityError: a density outside (0, 1] (``antsim.sparsity.densities``).
    """
    if model not in _MODELS:
        known = ", ".join(sorted(_MODELS))
        raise AntsimError(f"unknown sparsity model {model!r}; known: {known} (and swat, via make_tensors)")
    check_density("density", density, "the operand")
    return _MODELS[model](shape, density, rng, params or FieldParams()).astype(np.float32, copy=False)


@dataclass(frozen=True)
class SwatParams:
    """Parameters of the ``swat`` model, fitted on two captures of ResNet-18 CIFAR trained on natural-photo
    crops (batch 4, 400 SWAT steps, loss 2.60 → 1.50-1.59; dY dense and dY top-k 0.1) by
    ``scripts/calibrate_sparsity.py`` (grid fit per operand, then one joint choice; BENCHMARKS.md "capture",
    reports/calibration.md).

    Attributes:
        weights, activations, grad_output: smooth-field shape per operand. Captured weights look like
            top-k of i.i.d. values (channel CV 0.08, clustering 1.01) → no smoothing, no channel scale;
            activations (1.25, 0.15) is the best A fit summed over both captures, dY (0.5, 0.15) the dY
            fit of the top-k-dY capture.
        envelope_sigma: std of the log-gain of the spatial envelope of A's top-k copy (0.1: captured
            saved-A spatial CV 0.25-0.28; the digits captures had wanted 0.25).
        envelope_length: smoothing length of the envelope as a fraction of the plane's side (0.5).
        image_sigma: std of A's per-image log-gain (0.1: saved-A per-image CV 0.28-0.33).
        grad_envelope_sigma, grad_image_sigma: the same two for the top-k dY (0.25 and 0.5: captured dY
            spatial CV 0.54, per-image CV 0.74 — the gradient top-k keeps mostly one or two images);
            ``None`` → A's values.
    """

    weights: FieldParams = FieldParams(0.0, 0.0)
    activations: FieldParams = FieldParams(1.25, 0.15)
    grad_output: FieldParams = FieldParams(0.5, 0.15)
    envelope_sigma: float = 0.1
    envelope_length: float = 0.5
    image_sigma: float = 0.1
    grad_envelope_sigma: float | None = 0.25
    grad_image_sigma: float | None = 0.5

    def for_grad(self) -> SwatParams:
        """These parameters with dY's envelope in the ``envelope_sigma`` / ``image_sigma`` slots."""
        return replace(self,
                       envelope_sigma=self.envelope_sigma if self.grad_envelope_sigma is None
                       else self.grad_envelope_sigma,
                       image_sigma=self.image_sigma if self.grad_image_sigma is None else self.grad_image_sigma)


def envelope(shape: tuple[int, int, int, int], rng: np.random.Generator, params: SwatParams) -> np.ndarray:
    """Positive gain, shape (N, 1, H, W): a smooth spatial log-normal field shared by the batch × a per-image gain."""
    n, _, h, w = shape
    log_gain = np.zeros((1, 1, h, w))
    if h * w > 1 and params.envelope_sigma > 0:
        from scipy.ndimage import gaussian_filter  # here: see _smooth_field

        noise = rng.standard_normal((1, 1, h, w))
        smooth = gaussian_filter(noise, sigma=(0, 0, params.envelope_length * h, params.envelope_length * w),
                                 mode="reflect")
        log_gain = params.envelope_sigma * (smooth - smooth.mean()) / (smooth.std() or 1.0)
    per_image = params.image_sigma * rng.standard_normal((n, 1, 1, 1))
    return np.exp(log_gain + per_image)


def _top_k_of_envelope(shape: tuple[int, int, int, int], density: float, rng_field: np.random.Generator,
                       rng_envelope: np.random.Generator, field_params: FieldParams, params: SwatParams) -> np.ndarray:
    field = make_operand(shape, 1.0, "topk_field", rng_field, field_params)
    if density >= 1.0:
        return field
    chosen = top_k_mask_of_gain(field, envelope(shape, rng_envelope, params), density)
    field[~chosen] = 0  # in place (the field is this call's own): the values of np.where(chosen, field, 0)
    return field


def swat_tensors(layer: Layer, density_w: float, density_a: float, density_g: float, seed: int = 0,
                 density_a_saved: float | None = None, params: SwatParams | None = None) -> Tensors:
    """The ``swat`` model (see the module docstring). Without a ``density_a_saved`` below ``density_a``, A is
    SWAT's top-k copy used by both passes; with one, A is a stationary ReLU-like mask (the forward pass) and
    the saved copy its enveloped top-k."""
    params = params or SwatParams()
    rng_w, rng_a, rng_g, rng_ea, rng_eg = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5))
    a_shape, g_shape = (layer.N, layer.C, layer.H, layer.W), (layer.N, layer.K, layer.P, layer.Q)
    weights = make_operand((layer.K, layer.C, layer.R, layer.S), density_w, "topk_field", rng_w, params.weights)
    saved = None
    if density_a_saved is None or density_a_saved >= density_a:
        # no separate saved copy: A itself is SWAT's top-k copy, read by fprop and wgrad alike
        activations = _top_k_of_envelope(a_shape, density_a, rng_a, rng_ea, params.activations, params)
    else:
        activations = make_operand(a_shape, density_a, "topk_field", rng_a, params.activations)
        chosen = top_k_mask_of_gain(activations, envelope(a_shape, rng_ea, params), density_a_saved)
        saved = np.zeros(a_shape, np.float32)
        np.copyto(saved, activations, where=chosen)
    grad = _top_k_of_envelope(g_shape, density_g, rng_g, rng_eg, params.grad_output, params.for_grad())
    return Tensors(weights, activations, grad, saved)


# Models whose operands hold only zeros and standard normals (``_masked_normals``), whatever their params: finite,
# so ``Tensors.of_normals`` skips the finite check (topk_field is not one: a large ``channel_sigma`` overflows);
# each with its non-zero mask, which it makes anyway (the Bernoulli compare, the chosen channels): ``make_tensors``
# hands it to ``Tensors.with_masks`` so the mapping reads it instead of comparing every element again (W of a
# ResNet-18 CIFAR step: 11 M elements, ~7 ms a compare, two phases).
_WITH_MASK: dict[str, Callable[[tuple[int, ...], float, np.random.Generator], tuple[np.ndarray, np.ndarray]]] = {
    "uniform": bernoulli_normals_and_mask, "channel": _channel_and_mask}


def sparsity_models() -> list[str]:
    """Every model ``make_tensors`` knows."""
    return sorted([*_MODELS, "swat"])


def make_tensors(layer: Layer, density_w: float = 0.1, density_a: float = 0.1, density_g: float = 0.1,
                 model: str = "swat", seed: int = 0, density_a_saved: float | None = None,
                 params: FieldParams | SwatParams | None = None) -> Tensors:
    """Synthetic W, A, dY (and the SWAT-saved A) for ``layer``; same arguments → identical arrays.

    Args:
        density_w, density_a, density_g: fraction of non-zeros of W, forward A and dY.
        model: ``swat`` (default, calibrated on captured SWAT operands), ``topk_field``, ``uniform``, ``channel``.
        density_a_saved: density of the top-k copy of A kept for wgrad (SWAT); ``None`` → wgrad uses A.
        params: ``SwatParams`` for ``swat``; ``FieldParams`` (shared by all operands) for the others.

    Raises:
        AntsimError: unknown model, a density outside (0, 1] (the ``Densities`` rule; the message names the
            argument: ``"density_a: density of activations must be in (0, 1]; got 0"``), or params of the
            wrong kind.
    """
    try:
        Densities(w=density_w, a=density_a, g=density_g, a_saved=density_a_saved)
    except DensityError as exc:
        raise AntsimError(f"density_{exc.key}: {exc}") from None
    if model not in sparsity_models():
        raise AntsimError(f"unknown sparsity model {model!r}; known: {', '.join(sparsity_models())}")
    if model == "swat":
        if params is not None and not isinstance(params, SwatParams):
            raise AntsimError("the swat model takes SwatParams")
        return swat_tensors(layer, density_w, density_a, density_g, seed, density_a_saved, params)
    if isinstance(params, SwatParams):
        raise AntsimError(f"the {model} model takes FieldParams, not SwatParams")
    rng_w, rng_a, rng_g = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    shapes = ((layer.K, layer.C, layer.R, layer.S), (layer.N, layer.C, layer.H, layer.W),
              (layer.N, layer.K, layer.P, layer.Q))
    draws = list(zip(shapes, (density_w, density_a, density_g), (rng_w, rng_a, rng_g), strict=True))
    with_mask = _WITH_MASK.get(model)
    if with_mask is None:
        w, a, g = (make_operand(shape, density, model, rng, params) for shape, density, rng in draws)
        return Tensors(w, a, g, _saved(a, density_a, density_a_saved))
    (w, w_mask), (a, a_mask), (g, g_mask) = (with_mask(*draw) for draw in draws)
    saved = _saved(a, density_a, density_a_saved)
    masks = Tensors.of_masks(w_mask, a_mask, g_mask, None if saved is None else saved != 0)
    return Tensors.of_normals(w, a, g, saved).with_masks(masks)


def _saved(activations: np.ndarray, density_a: float, density_a_saved: float | None) -> np.ndarray | None:
    """The SWAT-saved top-k copy of A, when its density is below A's; else None (wgrad uses A)."""
    if density_a_saved is None or density_a_saved >= density_a:
        return None
    return top_k(activations, density_a_saved)
