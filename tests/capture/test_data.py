"""Training data sources: natural-photo crops (labels = strip of photo, checked by locating every crop in its
photo), the optional scikit-image photos, a CIFAR-10 folder in its exact format, and their refusals."""

from __future__ import annotations

import pickle
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from antsim.capture.data import (
    IMAGE_SIZE,
    PHOTO_SHRINK,
    STRIPS,
    natural_data,
    shrink,
    training_data,
)
from antsim.errors import MissingExtraError, WorkloadError


def _photos(count: int = 2, seed: int = 0) -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(f"p{i}", rng.integers(0, 256, size=(90, 2 * STRIPS * IMAGE_SIZE + 7, 3), dtype=np.uint8))
            for i in range(count)]


def _normalised_planes(photos: list[tuple[str, np.ndarray]]) -> list[np.ndarray]:
    """Reference: box-average by a loop over the block, per-channel statistics pooled over all photos."""
    planes = []
    for _, photo in photos:
        h, w = photo.shape[0] // PHOTO_SHRINK, photo.shape[1] // PHOTO_SHRINK
        acc = np.zeros((h, w, 3))
        for i in range(PHOTO_SHRINK):
            for j in range(PHOTO_SHRINK):
                acc += photo[i:h * PHOTO_SHRINK:PHOTO_SHRINK, j:w * PHOTO_SHRINK:PHOTO_SHRINK]
        planes.append((acc / PHOTO_SHRINK ** 2).transpose(2, 0, 1))
    pixels = np.concatenate([p.reshape(3, -1) for p in planes], axis=1)
    mean, std = pixels.mean(axis=1), pixels.std(axis=1)
    return [(p - mean[:, None, None]) / std[:, None, None] for p in planes]


def _locate(image: np.ndarray, planes: list[np.ndarray]) -> tuple[int, int, int, bool]:
    """(photo, top, left, flipped) of the crop ``image`` by exhaustive search over every position."""
    for k, plane in enumerate(planes):
        _, h, w = plane.shape
        for flipped, candidate in ((False, image), (True, image[:, :, ::-1])):
            corner = candidate[:, 0, 0]
            hits = np.argwhere(np.all(np.abs(plane - corner[:, None, None]) < 1e-4, axis=0))
            for top, left in hits:
                if top + IMAGE_SIZE <= h and left + IMAGE_SIZE <= w and np.allclose(
                        plane[:, top:top + IMAGE_SIZE, left:left + IMAGE_SIZE], candidate, atol=1e-4):
                    return k, int(top), int(left), flipped
    raise AssertionError("crop not found in any photo")


def test_shrink_is_a_box_average() -> None:
    photo = np.arange(5 * 7 * 3, dtype=np.uint8).reshape(5, 7, 3)
    out = shrink(photo, 2)
    assert out.shape == (3, 2, 3)
    np.testing.assert_allclose(out[1, 1, 2], photo[2:4, 4:6, 1].mean())


def test_natural_crops_lie_in_the_strip_their_label_names() -> None:
    photos = _photos()
    data = natural_data(photos)
    planes = _normalised_planes(photos)
    assert data.classes == STRIPS * len(photos)
    images, labels = next(data.batches(64, 1, seed=4))
    assert images.shape == (64, 3, IMAGE_SIZE, IMAGE_SIZE) and images.dtype == np.float32
    assert labels.dtype == np.int64 and set(labels.tolist()) <= set(range(data.classes))
    flips = 0
    for image, label in zip(images, labels, strict=True):
        photo, _, left, flipped = _locate(image, planes)
        width = planes[photo].shape[2] // STRIPS
        assert photo == label // STRIPS
        assert label % STRIPS * width <= left and left + IMAGE_SIZE <= (label % STRIPS + 1) * width
        flips += flipped
    assert 16 <= flips <= 48  # p = 1/2 of 64 (binomial: outside [16, 48] has probability < 1e-4)


def test_natural_batches_are_seeded_and_normalised_per_channel() -> None:
    data = natural_data(_photos())
    a = list(data.batches(8, 3, seed=1))
    b = list(data.batches(8, 3, seed=1))
    c = list(data.batches(8, 3, seed=2))
    assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x[0], y[0]) for x, y in zip(a, c, strict=True))
    big = np.concatenate([x for x, _ in data.batches(256, 4, seed=0)])
    # crops sample the photos nearly uniformly, so per-channel moments approach the photos' (0, 1)
    assert np.all(np.abs(big.mean(axis=(0, 2, 3))) < 0.1) and np.all(np.abs(big.std(axis=(0, 2, 3)) - 1) < 0.1)


def test_sklearn_photos_give_ten_classes() -> None:
    pytest.importorskip("sklearn")
    if "skimage" in sys.modules or _has_skimage():
        pytest.skip("scikit-image adds its photos")
    data = training_data("natural")
    assert data.classes == 10 and "china.jpg" in data.description and "flower.jpg" in data.description


def _has_skimage() -> bool:
    import importlib.util

    return importlib.util.find_spec("skimage") is not None


def test_scikit_image_photos_are_added_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(0)
    fake = types.ModuleType("skimage.data")
    fake.astronaut = lambda: rng.integers(0, 256, size=(512, 512, 3), dtype=np.uint8)
    fake.coffee = lambda: rng.integers(0, 256, size=(400, 600, 3), dtype=np.uint8)
    fake.chelsea = lambda: rng.integers(0, 256, size=(300, 451), dtype=np.uint8)  # not RGB: skipped
    package = types.ModuleType("skimage")
    package.data = fake
    monkeypatch.setitem(sys.modules, "skimage", package)
    monkeypatch.setitem(sys.modules, "skimage.data", fake)
    data = training_data("natural")
    assert data.classes == STRIPS * 4
    assert "skimage:astronaut" in data.description and "skimage:coffee" in data.description
    assert "chelsea" not in data.description and "rocket" not in data.description
    _, labels = next(data.batches(200, 1, seed=0))
    assert labels.max() >= 10  # the new photos' strips are drawn too


def test_natural_refuses_a_photo_too_small_and_missing_scikit_learn(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(WorkloadError, match="photo tiny"):
        natural_data([("tiny", np.zeros((200, 2 * STRIPS * IMAGE_SIZE - 2, 3), dtype=np.uint8))])
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(MissingExtraError, match="antsim\\[capture\\]"):
        training_data("natural")


def test_cifar10_folder_is_read_in_its_exact_format(cifar_folder) -> None:
    folder, images, labels = cifar_folder
    data = training_data("cifar10", data_dir=folder)
    assert data.classes == 10 and str(folder) in data.description
    mean = images.reshape(len(images), 3, -1).transpose(1, 0, 2).reshape(3, -1).astype(np.float64).mean(axis=1)
    std = images.reshape(len(images), 3, -1).transpose(1, 0, 2).reshape(3, -1).astype(np.float64).std(axis=1)
    seen = []
    for x, y in data.batches(5, 6, seed=0):  # 30 images: one epoch exactly
        for image, label in zip(x, y, strict=True):
            raw = image * std[:, None, None] + mean[:, None, None]
            index = int(np.argmin(np.abs(images.astype(np.float64) - raw).reshape(len(images), -1).max(axis=1)))
            np.testing.assert_allclose(raw, images[index], atol=1e-3)
            assert label == labels[index]
            seen.append(index)
    assert sorted(seen) == list(range(len(images)))  # each training image once per epoch, test_batch never
    # a red-channel byte lands in channel 0 at its row-major position
    with (folder / "data_batch_1").open("rb") as fh:
        first = pickle.load(fh, encoding="bytes")[b"data"][0]
    np.testing.assert_array_equal(images[0, 0].ravel(), first[:1024])


def test_cifar10_folder_errors_name_file_and_key(cifar_folder, tmp_path: Path) -> None:
    folder, _, _ = cifar_folder
    with pytest.raises(WorkloadError, match="needs its data folder") as info:
        training_data("cifar10")
    assert info.value.subject == "data_dir"  # the CLI names its --data-dir flag
    with pytest.raises(WorkloadError, match="not a folder"):
        training_data("cifar10", data_dir=tmp_path / "nowhere")
    with pytest.raises(WorkloadError, match="only data source 'cifar10' reads a folder"):
        training_data("natural", data_dir=folder)
    (folder / "data_batch_3").unlink()
    with pytest.raises(WorkloadError, match="data_batch_3 is missing"):
        training_data("cifar10", data_dir=folder)
    with (folder / "data_batch_3").open("wb") as fh:
        pickle.dump({b"data": np.zeros((2, 3072), np.uint8)}, fh, protocol=2)
    with pytest.raises(WorkloadError, match="data_batch_3: key b'labels' is missing"):
        training_data("cifar10", data_dir=folder)
    with (folder / "data_batch_3").open("wb") as fh:
        pickle.dump({b"data": np.zeros((2, 3000), np.uint8), b"labels": [0, 1]}, fh, protocol=2)
    with pytest.raises(WorkloadError, match=r"data_batch_3: b'data' must be uint8 of shape \(count, 3072\)"):
        training_data("cifar10", data_dir=folder)
    with (folder / "data_batch_3").open("wb") as fh:
        pickle.dump({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 10]}, fh, protocol=2)
    with pytest.raises(WorkloadError, match="labels' must be 2 integers in 0..9"):
        training_data("cifar10", data_dir=folder)


class _Boom:
    def __reduce__(self):  # noqa: ANN204 - a pickle that would run a function when loaded
        return (print, ("should not run",))


def test_cifar10_pickles_cannot_run_code(cifar_folder, capsys: pytest.CaptureFixture[str]) -> None:
    folder, _, _ = cifar_folder
    with (folder / "data_batch_2").open("wb") as fh:
        pickle.dump({b"data": _Boom(), b"labels": [0]}, fh, protocol=2)
    with pytest.raises(WorkloadError, match="data_batch_2: not a CIFAR-10 batch pickle.*refusing to load .*print"):
        training_data("cifar10", data_dir=folder)
    assert "should not run" not in capsys.readouterr().out


def test_unknown_source_is_refused() -> None:
    with pytest.raises(WorkloadError, match="data source 'imagenet'") as info:
        training_data("imagenet")
    assert info.value.subject == "data"
