"""Fixtures of the capture tests: no PyTorch, and a tiny CIFAR-10 folder in the dataset's exact layout."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture
def no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import torch`` fail as if PyTorch were not installed."""
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)



LABEL_NAMES = [b"airplane", b"automobile", b"bird", b"cat", b"deer", b"dog", b"frog", b"horse", b"ship", b"truck"]


def write_cifar10(folder: Path, per_batch: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``data_batch_1..5``, ``test_batch`` and ``batches.meta`` as in cifar-10-python.tar.gz: each batch a
    pickled dict with bytes keys ``batch_label``, ``labels`` (list of int), ``data`` (uint8 N×3072: 1024
    red, then green, then blue values, row-major 32×32) and ``filenames``. Returns the training images
    ``(5·per_batch, 3, 32, 32)`` uint8 and labels, in file order."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    images, labels = [], []
    for name in [*(f"data_batch_{i}" for i in range(1, 6)), "test_batch"]:
        data = rng.integers(0, 256, size=(per_batch, 3072), dtype=np.uint8)
        ys = [int(y) for y in rng.integers(0, 10, size=per_batch)]
        entry = {b"batch_label": f"fake {name}".encode(), b"labels": ys, b"data": data,
                 b"filenames": [f"img_{i}.png".encode() for i in range(per_batch)]}
        with (folder / name).open("wb") as fh:
            pickle.dump(entry, fh, protocol=2)
        if name != "test_batch":
            images.append(data.reshape(per_batch, 3, 32, 32))
            labels += ys
    meta = {b"num_cases_per_batch": per_batch, b"label_names": LABEL_NAMES, b"num_vis": 3072}
    with (folder / "batches.meta").open("wb") as fh:
        pickle.dump(meta, fh, protocol=2)
    return np.concatenate(images), np.array(labels, dtype=np.int64)


@pytest.fixture
def cifar_folder(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    """(folder, training images uint8 (30, 3, 32, 32), labels) of a fake cifar-10-batches-py folder."""
    folder = tmp_path / "cifar-10-batches-py"
    images, labels = write_cifar10(folder)
    return folder, images, labels
