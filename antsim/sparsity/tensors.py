"""Sparse operand tensors of one layer and the ``.npz`` tensors file format.

File format (DESIGN.md §3.2), one ``.npz`` holding, for each layer name ``L`` and each operand
``X`` in ``weights`` (K,C,R,S), ``activations`` (N,C,H,W), ``grad_output`` (N,K,P,Q) and the
optional ``saved_activations`` (N,C,H,W, the SWAT top-k copy that wgrad uses):

* dense: ``L/X`` — a float array; zeros are sparsity;
* packed: ``L/X/shape`` (int64), ``L/X/bitmap`` (``np.packbits`` of the non-zero mask, C order),
  ``L/X/values`` (float16 of the non-zeros divided by ``L/X/scale``), ``L/X/scale`` (float32;
  the largest non-zero magnitude, so small gradients keep their precision in float16).

``antsim.load_tensors`` reads both, in any mix, and returns ``{layer name: Tensors}``.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from antsim.errors import WorkloadError
from antsim.workloads.layers import Layer

OPERANDS = ("weights", "activations", "grad_output", "saved_activations")


@dataclass(frozen=True)
class Tensors:
    """The operands of one layer's training step. Zeros are sparsity.

    Attributes:
        weights: W, shape (K, C, R, S).
        activations: forward input A, shape (N, C, H, W) — fprop's operand.
        grad_output: dY, shape (N, K, P, Q) — dgrad's and wgrad's operand.
        saved_activations: the copy of A kept for wgrad (SWAT keeps a top-k copy); ``None`` means
            wgrad uses ``activations``.
    """

    weights: np.ndarray
    activations: np.ndarray
    grad_output: np.ndarray
    saved_activations: np.ndarray | None = None

    @property
    def wgrad_activations(self) -> np.ndarray:
        return self.activations if self.saved_activations is None else self.saved_activations

    def check_shapes(self, layer: Layer) -> None:
        """Raise ``WorkloadError`` if an operand's shape does not match ``layer``."""
        expected = {
            "weights": (layer.K, layer.C, layer.R, layer.S),
            "activations": (layer.N, layer.C, layer.H, layer.W),
            "grad_output": (layer.N, layer.K, layer.P, layer.Q),
            "saved_activations": (layer.N, layer.C, layer.H, layer.W),
        }
        for name, shape in expected.items():
            array = getattr(self, name)
            if array is not None and tuple(array.shape) != shape:
                raise WorkloadError(
                    f"layer {layer.name!r}: {name} has shape {tuple(array.shape)}, expected {shape}"
                )

    def densities(self) -> dict[str, float]:
        """Fraction of non-zeros per operand present."""
        return {name: float(np.count_nonzero(a)) / a.size
                for name in OPERANDS if (a := getattr(self, name)) is not None}


def _pack(prefix: str, array: np.ndarray) -> dict[str, np.ndarray]:
    mask = array != 0
    values = array[mask].astype(np.float64)
    scale = float(np.abs(values).max()) if values.size else 1.0
    scaled = (values / scale).astype(np.float16)
    # Real gradients can span more than float16's range below the scale; keep such values non-zero (at the
    # smallest subnormal, sign kept) so the bitmap and the loaded array agree on the sparsity pattern.
    flushed = scaled == 0
    scaled[flushed] = np.copysign(np.float16(2.0**-24), values[flushed]).astype(np.float16)
    return {
        f"{prefix}/shape": np.asarray(array.shape, dtype=np.int64),
        f"{prefix}/bitmap": np.packbits(mask.ravel()),
        f"{prefix}/values": scaled,
        f"{prefix}/scale": np.float32(scale),
    }


def save_tensors(path: str | Path, tensors: Mapping[str, Tensors], packed: bool = True) -> None:
    """Write ``{layer name: Tensors}`` to an ``.npz`` file (packed by default; see the module doc)."""
    arrays: dict[str, np.ndarray] = {}
    for layer_name, t in tensors.items():
        if "/" in layer_name:
            raise WorkloadError(f"layer name {layer_name!r} must not contain '/'")
        for operand in OPERANDS:
            array = getattr(t, operand)
            if array is None:
                continue
            prefix = f"{layer_name}/{operand}"
            arrays.update(_pack(prefix, array) if packed else {prefix: np.asarray(array)})
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)


def _unpack(store: Mapping[str, np.ndarray], prefix: str) -> np.ndarray:
    shape = tuple(int(s) for s in store[f"{prefix}/shape"])
    size = int(np.prod(shape))
    mask = np.unpackbits(store[f"{prefix}/bitmap"], count=size).astype(bool)
    out = np.zeros(size, dtype=np.float32)
    out[mask] = store[f"{prefix}/values"].astype(np.float32) * np.float32(store[f"{prefix}/scale"])
    return out.reshape(shape)


def load_tensors(path: str | Path) -> dict[str, Tensors]:
    """Read a tensors file into ``{layer name: Tensors}``, in the order the layers were stored.

    Raises:
        WorkloadError: missing or unreadable file, or a layer lacking weights/activations/grad_output.
    """
    path = Path(path)
    if not path.is_file():
        raise WorkloadError(f"{path}: tensors file not found")
    try:
        with np.load(path, allow_pickle=False) as npz:
            store = {key: npz[key] for key in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise WorkloadError(f"{path}: not a readable .npz tensors file ({exc})") from None
    layers: dict[str, dict[str, np.ndarray]] = {}
    for key in store:
        parts = key.split("/")
        if len(parts) < 2 or parts[1] not in OPERANDS:
            raise WorkloadError(f"{path}: unexpected entry {key!r} (expected LAYER/OPERAND[/part])")
        layers.setdefault(parts[0], {})
        if parts[1] not in layers[parts[0]]:
            dense = len(parts) == 2
            layers[parts[0]][parts[1]] = store[key] if dense else _unpack(store, "/".join(parts[:2]))
    out: dict[str, Tensors] = {}
    for name, ops in layers.items():
        missing = [o for o in OPERANDS[:3] if o not in ops]
        if missing:
            raise WorkloadError(f"{path}: layer {name!r} lacks {', '.join(missing)}")
        out[name] = Tensors(**ops)
    return out
