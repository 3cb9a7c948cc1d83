"""Training data that needs no download, or a user's own CIFAR-10 folder.

Sources (``training_data(name, seed, data_dir)``), all 32×32×3 so the zoo's CIFAR shapes hold:

* ``natural`` — random 32×32 crops (with random horizontal flips, seeded) of the photos scikit-learn
  ships (``load_sample_images``: china.jpg, flower.jpg) and, when scikit-image is installed, of its
  bundled colour photos (``skimage.data``: astronaut, coffee, chelsea, rocket). Each photo is halved
  (2×2 box average) so a crop holds object-scale structure rather than texture, then cut into
  ``STRIPS`` vertical strips; the class of a crop is *which strip of which photo it lies in* (every crop
  lies wholly inside its strip). That target is learnable from content alone — each strip has its own
  colours and shapes, flips do not move a crop out of its strip — and with scikit-learn's two photos it
  has 10 classes, like CIFAR-10.
* ``cifar10`` — the ``data_batch_1`` … ``data_batch_5`` pickles of CIFAR-10's python version in
  ``data_dir`` (Krizhevsky 2009, https://www.cs.toronto.edu/~kriz/cifar.html: each a dict with
  ``b"data"``, uint8 10000×3072, channel-major 32×32 planes, and ``b"labels"``, 10000 ints in 0..9),
  read with an unpickler that only rebuilds numpy arrays.
* ``digits`` — scikit-learn's bundled 8×8 digits, bilinearly upsampled to 32×32 and replicated to 3
  channels; ``synthetic`` — seeded 8×8 class prototypes plus noise in the digits' layout.

Images are normalised to zero mean and unit variance (per channel for ``natural`` and ``cifar10``, over
the whole set for ``digits`` / ``synthetic``), so the first conv's input is dense like a normalised
CIFAR image.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from antsim.errors import MissingExtraError, WorkloadError

DATA_SOURCES = ("natural", "cifar10", "digits", "synthetic")
IMAGE_SIZE = 32
STRIPS = 5  # vertical strips per photo: 2 scikit-learn photos × 5 = CIFAR-10's 10 classes
PHOTO_SHRINK = 2  # box-average factor applied to every photo before cropping (see the module doc)
SKIMAGE_PHOTOS = ("astronaut", "coffee", "chelsea", "rocket")  # the RGB photos of skimage.data
CIFAR_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR_ROW = 3 * IMAGE_SIZE * IMAGE_SIZE  # 3072 bytes per image in a CIFAR-10 batch

Batch = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class TrainingData:
    """A source of training mini-batches.

    Attributes:
        name: The ``--data`` name.
        classes: Number of classes (labels are ``0 … classes-1``).
        description: One line saying what the images and labels are (goes into capture reports).
        draw: ``draw(batch, steps, seed)`` → an iterator of ``steps`` (images float32 (batch, 3, 32, 32)
            normalised, labels int64 (batch,)) pairs; same arguments → same batches.
    """

    name: str
    classes: int
    description: str
    draw: Callable[[int, int, int], Iterator[Batch]]

    def batches(self, batch: int, steps: int, seed: int) -> Iterator[Batch]:
        return self.draw(batch, steps, seed)


# --- digits / synthetic (the original sources) -------------------------------------------------------------


def _digits() -> tuple[np.ndarray, np.ndarray]:
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise MissingExtraError(
            "data source 'digits' needs scikit-learn; install it with: pip install 'antsim[capture]' "
            "(or use the 'synthetic' source)", subject="data") from None
    digits = load_digits()
    return digits.images.astype(np.float32), digits.target.astype(np.int64)


def _synthetic(seed: int, count: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Ten smooth 8×8 class prototypes plus per-sample noise (a stand-in with the digits' layout)."""
    rng = np.random.default_rng([seed, 8])
    prototypes = rng.random((10, 8, 8)).astype(np.float32) * 16
    labels = rng.integers(0, 10, size=count)
    images = prototypes[labels] + rng.normal(0, 4, size=(count, 8, 8)).astype(np.float32)
    return np.clip(images, 0, 16).astype(np.float32), labels.astype(np.int64)


def _upsample(images: np.ndarray) -> np.ndarray:
    """8×8 → 32×32 by bilinear interpolation (cell-centred, edge-clamped), replicated to 3 channels."""
    src = images.shape[-1]
    coords = (np.arange(IMAGE_SIZE) + 0.5) * src / IMAGE_SIZE - 0.5
    lo = np.clip(np.floor(coords).astype(int), 0, src - 1)
    hi = np.clip(lo + 1, 0, src - 1)
    frac = np.clip(coords - lo, 0, 1).astype(np.float32)
    rows = images[:, lo, :] * (1 - frac)[None, :, None] + images[:, hi, :] * frac[None, :, None]
    out = rows[:, :, lo] * (1 - frac)[None, None, :] + rows[:, :, hi] * frac[None, None, :]
    return np.repeat(out[:, None], 3, axis=1)


def load_images(source: str = "digits", seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The ``digits`` or ``synthetic`` images ``(count, 3, 32, 32)`` float32 (normalised) and labels.

    Raises:
        WorkloadError: a source other than these two. MissingExtraError: ``digits`` without scikit-learn.
    """
    if source not in ("digits", "synthetic"):
        raise WorkloadError(f"data source {source!r}: load_images knows digits, synthetic (see training_data)",
                            subject="data")
    images, labels = _digits() if source == "digits" else _synthetic(seed)
    big = _upsample(images)
    big = (big - big.mean()) / (big.std() or 1.0)
    return big.astype(np.float32), labels


def batch_indices(count: int, batch: int, steps: int, seed: int) -> list[np.ndarray]:
    """Indices of each step's mini-batch: a seeded permutation read in order, reshuffled per epoch."""
    rng = np.random.default_rng([seed, 1])
    order = rng.permutation(count)
    out, cursor = [], 0
    for _ in range(steps):
        if cursor + batch > count:
            order, cursor = rng.permutation(count), 0
        out.append(order[cursor:cursor + batch])
        cursor += batch
    return out


def _array_data(name: str, images: np.ndarray, labels: np.ndarray, description: str,
                mean: np.ndarray | None = None, std: np.ndarray | None = None) -> TrainingData:
    # every array source here has 10 classes (digits 0-9, the synthetic prototypes, CIFAR-10)
    """Mini-batches of a fixed image array (epochs of a seeded permutation); uint8 images are normalised
    per batch with the per-channel ``mean`` / ``std`` (so a CIFAR-10 folder stays 150 MB, not 600)."""

    def draw(batch: int, steps: int, seed: int) -> Iterator[Batch]:
        for index in batch_indices(len(labels), batch, steps, seed):
            x = images[index]
            if mean is not None and std is not None:
                x = (x.astype(np.float32) - mean[None, :, None, None]) / std[None, :, None, None]
            yield x.astype(np.float32, copy=False), labels[index]

    return TrainingData(name, 10, description, draw)


# --- natural photos ----------------------------------------------------------------------------------------


def _sklearn_photos() -> list[tuple[str, np.ndarray]]:
    try:
        from sklearn.datasets import load_sample_images
    except ImportError:
        raise MissingExtraError(
            "data source 'natural' needs scikit-learn's sample photos; install it with: pip install"
            " 'antsim[capture]' (or use the 'synthetic' source)", subject="data") from None
    bunch = load_sample_images()
    return [(f"sklearn:{Path(f).name}", img) for f, img in zip(bunch.filenames, bunch.images, strict=True)]


def _skimage_photos() -> list[tuple[str, np.ndarray]]:
    """scikit-image's bundled RGB photos, if scikit-image is installed (an optional extra source)."""
    try:
        from skimage import data as skdata
    except ImportError:
        return []
    out = []
    for name in SKIMAGE_PHOTOS:
        loader = getattr(skdata, name, None)  # older releases lack some (rocket arrived in 0.18)
        if loader is None:
            continue
        image = np.asarray(loader())
        if image.ndim == 3 and image.shape[2] == 3:
            out.append((f"skimage:{name}", image))
    return out


def shrink(photo: np.ndarray, factor: int = PHOTO_SHRINK) -> np.ndarray:
    """``(H, W, 3)`` uint8 → ``(3, H//f, W//f)`` float32 by averaging f×f blocks (the ragged edge dropped)."""
    h, w = photo.shape[0] // factor * factor, photo.shape[1] // factor * factor
    blocks = photo[:h, :w].astype(np.float32).reshape(h // factor, factor, w // factor, factor, 3)
    return np.ascontiguousarray(blocks.mean(axis=(1, 3)).transpose(2, 0, 1))


def natural_data(photos: list[tuple[str, np.ndarray]] | None = None) -> TrainingData:
    """Random crops of natural photos, labelled by (photo, strip); see the module doc.

    Args:
        photos: ``[(name, (H, W, 3) uint8)]``; default scikit-learn's two photos + scikit-image's, if any.

    Raises:
        MissingExtraError: scikit-learn is not installed (and no photos were given).
        WorkloadError: a photo too small for ``STRIPS`` strips of one crop's width.
    """
    if photos is None:
        photos = _sklearn_photos() + _skimage_photos()
    planes = []
    for name, photo in photos:
        plane = shrink(np.asarray(photo))
        if plane.shape[1] < IMAGE_SIZE or plane.shape[2] < STRIPS * IMAGE_SIZE:
            raise WorkloadError(f"photo {name}: {photo.shape} is too small for {STRIPS} strips of "
                                f"{IMAGE_SIZE}-pixel crops after {PHOTO_SHRINK}x shrinking")
        planes.append(plane)
    pixels = np.concatenate([p.reshape(3, -1) for p in planes], axis=1)
    mean, std = pixels.mean(axis=1), pixels.std(axis=1)
    planes = [((p - mean[:, None, None]) / std[:, None, None]).astype(np.float32) for p in planes]
    classes = STRIPS * len(planes)

    def draw(batch: int, steps: int, seed: int) -> Iterator[Batch]:
        rng = np.random.default_rng([seed, 2])
        for _ in range(steps):
            labels = rng.integers(0, classes, size=batch)
            images = np.empty((batch, 3, IMAGE_SIZE, IMAGE_SIZE), dtype=np.float32)
            for i, label in enumerate(labels):
                images[i] = crop(planes[label // STRIPS], int(label % STRIPS), rng)
            yield images, labels.astype(np.int64)

    names = ", ".join(name for name, _ in photos)
    description = (f"natural: random {IMAGE_SIZE}x{IMAGE_SIZE} crops + flips of {len(planes)} photos ({names}), "
                   f"halved; class = which of {STRIPS} vertical strips of which photo ({classes} classes)")
    return TrainingData("natural", classes, description, draw)


def crop(plane: np.ndarray, strip: int, rng: np.random.Generator) -> np.ndarray:
    """A random ``(3, 32, 32)`` crop lying wholly inside vertical strip ``strip`` of ``plane``, flipped
    left-right with probability 1/2."""
    _, h, w = plane.shape
    width = w // STRIPS
    top = int(rng.integers(0, h - IMAGE_SIZE + 1))
    left = strip * width + int(rng.integers(0, width - IMAGE_SIZE + 1))
    out = plane[:, top:top + IMAGE_SIZE, left:left + IMAGE_SIZE]
    return out[:, :, ::-1] if rng.random() < 0.5 else out


# --- a user's CIFAR-10 folder ------------------------------------------------------------------------------


class _ArrayUnpickler(pickle.Unpickler):
    """Rebuilds only what CIFAR-10's pickles hold (dicts, lists, bytes, numpy arrays): a pickle asking
    for any other class is refused instead of run."""

    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
                ("numpy._core.multiarray", "scalar"), ("copyreg", "_reconstructor"),
                ("_codecs", "encode")}  # how protocol-2 pickles written by Python 3 spell bytes

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}")
        return super().find_class(module, name)


def _cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    if not path.is_file():
        raise WorkloadError(f"data folder {path.parent}: {path.name} is missing (a CIFAR-10 python-version "
                            f"folder holds {', '.join(CIFAR_BATCHES)})", subject="data_dir")
    try:
        with path.open("rb") as fh:
            entry = _ArrayUnpickler(fh, encoding="bytes").load()
    except Exception as exc:  # any unreadable pickle is the user's file at fault
        raise WorkloadError(f"{path}: not a CIFAR-10 batch pickle ({type(exc).__name__}: {exc})") from None
    if not isinstance(entry, dict):
        raise WorkloadError(f"{path}: expected a dict with b'data' and b'labels'; got {type(entry).__name__}")
    for key in (b"data", b"labels"):
        if key not in entry:
            raise WorkloadError(f"{path}: key {key!r} is missing; keys: {sorted(entry)}")
    data = np.asarray(entry[b"data"])
    labels = np.asarray(entry[b"labels"])
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != CIFAR_ROW:
        raise WorkloadError(f"{path}: b'data' must be uint8 of shape (count, {CIFAR_ROW}); "
                            f"got {data.dtype} {data.shape}")
    if labels.shape != (data.shape[0],) or labels.size == 0 or labels.min() < 0 or labels.max() > 9:
        raise WorkloadError(f"{path}: b'labels' must be {data.shape[0]} integers in 0..9; "
                            f"got shape {labels.shape}, range {labels.min() if labels.size else None}.."
                            f"{labels.max() if labels.size else None}")
    return data.reshape(-1, 3, IMAGE_SIZE, IMAGE_SIZE), labels.astype(np.int64)


def cifar10_data(data_dir: Path) -> TrainingData:
    """The training half (``data_batch_1..5``) of a CIFAR-10 python-version folder, normalised per channel.

    Raises:
        WorkloadError: the folder, a batch file or a key is missing, or a batch has the wrong shape.
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise WorkloadError(f"data folder {data_dir}: not a folder (give the cifar-10-batches-py folder)",
                            subject="data_dir")
    parts = [_cifar_batch(data_dir / name) for name in CIFAR_BATCHES]
    images = np.concatenate([p[0] for p in parts])
    labels = np.concatenate([p[1] for p in parts])
    # per-channel statistics in float64: a float32 running sum over 51 M pixels would drift
    mean = images.mean(axis=(0, 2, 3), dtype=np.float64)
    std = np.sqrt(((images - mean[None, :, None, None]) ** 2).mean(axis=(0, 2, 3)))
    description = f"cifar10: {len(labels)} training images of {data_dir} ({', '.join(CIFAR_BATCHES)})"
    return _array_data("cifar10", images, labels, description, mean.astype(np.float32), std.astype(np.float32))


def training_data(source: str, seed: int = 0, data_dir: Path | None = None) -> TrainingData:
    """The training set named by ``--data``.

    Raises:
        WorkloadError: unknown source, ``cifar10`` without ``data_dir`` (or a bad folder), ``data_dir``
            with another source. MissingExtraError: ``natural`` / ``digits`` without scikit-learn.
    """
    if source not in DATA_SOURCES:
        raise WorkloadError(f"data source {source!r}: known sources: {', '.join(DATA_SOURCES)}", subject="data")
    if source == "cifar10":
        if data_dir is None:
            raise WorkloadError("data source 'cifar10' needs its data folder (the cifar-10-batches-py folder)",
                                subject="data_dir")
        return cifar10_data(data_dir)
    if data_dir is not None:
        raise WorkloadError(f"data folder {data_dir}: only data source 'cifar10' reads a folder; got data source"
                            f" {source!r}", subject="data_dir")
    if source == "natural":
        return natural_data()
    images, labels = load_images(source, seed)
    what = ("digits: scikit-learn's 8x8 digits, bilinearly upsampled to 32x32x3" if source == "digits"
            else "synthetic: seeded 8x8 class prototypes + noise, upsampled to 32x32x3")
    return _array_data(source, images, labels, f"{what} ({len(labels)} images, 10 classes)")
