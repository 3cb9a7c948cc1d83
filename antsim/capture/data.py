"""Training images that need no download: scikit-learn's bundled digits, or a seeded synthetic set.

Both give 32×32, 3-channel, 10-class images normalised to zero mean and unit variance (per the whole set),
so the first conv's input is dense like a normalised CIFAR image.
"""

from __future__ import annotations

import numpy as np

from antsim.errors import MissingExtraError, WorkloadError

DATA_SOURCES = ("digits", "synthetic")
IMAGE_SIZE = 32


def _digits() -> tuple[np.ndarray, np.ndarray]:
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise MissingExtraError(
            "--data digits needs scikit-learn; install it with: pip install 'antsim[capture]' "
            "(or use --data synthetic)") from None
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
    """All images ``(count, 3, 32, 32)`` float32 (normalised) and labels ``(count,)`` int64.

    Raises:
        WorkloadError: unknown source. MissingExtraError: ``digits`` without scikit-learn.
    """
    if source not in DATA_SOURCES:
        raise WorkloadError(f"--data {source!r}: known sources: {', '.join(DATA_SOURCES)}")
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
