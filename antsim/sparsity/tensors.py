"""Sparse operand tensors of one layer and the ``.npz`` tensors file format.

File format (docs/formats.md), one ``.npz`` holding, for each layer name ``L`` and each operand
``X`` in ``weights`` (K,C,R,S), ``activations`` (N,C,H,W), ``grad_output`` (N,K,P,Q) and the
optional ``saved_activations`` (N,C,H,W, the SWAT top-k copy that wgrad uses):

* dense: ``L/X`` — a float array; zeros are sparsity;
* packed: ``L/X/shape`` (int64), ``L/X/bitmap`` (``np.packbits`` of the non-zero mask, C order),
  ``L/X/values`` (float16 of the non-zeros divided by ``L/X/scale``), ``L/X/scale`` (float32;
  the largest non-zero magnitude, so small gradients keep their precision in float16).

``antsim.load_tensors`` reads both, in any mix, and returns ``{layer name: Tensors}``.
"""

from __future__ import annotations

import math
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

    def __post_init__(self) -> None:
        for name in OPERANDS:
            array = getattr(self, name)
            if array is None and name == "saved_activations":
                continue
            check_operand(array, name)

    @classmethod
    def of_normals(cls, weights: np.ndarray, activations: np.ndarray, grad_output: np.ndarray,
                   saved_activations: np.ndarray | None = None) -> Tensors:
        """Tensors of float32 operands whose every value is 0 or a drawn standard normal (the ``uniform`` and
        ``channel`` generators, and a top-k copy of one): finite by construction, so without ``check_operand``'s
        pass over every element (≈ 5 ms of a ResNet-18 step's 12.4 M; docs/operand_speed.md).

        Raises:
            WorkloadError: an operand that is not a float32 numpy array (the guarantee holds for those only).
        """
        arrays = (weights, activations, grad_output, saved_activations)
        for name, array in zip(OPERANDS, arrays, strict=True):
            if array is not None and not (isinstance(array, np.ndarray) and array.dtype == np.float32):
                raise WorkloadError(f"{name}: Tensors.of_normals takes float32 arrays; got {type(array).__name__}"
                                    f"{'' if not isinstance(array, np.ndarray) else f' of {array.dtype}'}")
        return cls._unchecked(arrays)

    @classmethod
    def of_masks(cls, weights: np.ndarray, activations: np.ndarray, grad_output: np.ndarray,
                 saved_activations: np.ndarray | None = None) -> Tensors:
        """Tensors of bool non-zero masks (``with_masks``), without ``check_operand``'s pass (a bool is finite).

        Raises:
            WorkloadError: a mask that is not a bool numpy array.
        """
        arrays = (weights, activations, grad_output, saved_activations)
        for name, array in zip(OPERANDS, arrays, strict=True):
            if array is not None and not (isinstance(array, np.ndarray) and array.dtype == bool):
                raise WorkloadError(f"{name}: Tensors.of_masks takes bool arrays; got {type(array).__name__}"
                                    f"{'' if not isinstance(array, np.ndarray) else f' of {array.dtype}'}")
        return cls._unchecked(arrays)

    @classmethod
    def _unchecked(cls, arrays: tuple[np.ndarray | None, ...]) -> Tensors:
        tensors = object.__new__(cls)  # the dataclass's __init__ would run __post_init__'s full pass
        for name, array in zip(OPERANDS, arrays, strict=True):
            object.__setattr__(tensors, name, array)  # frozen: the way dataclasses set fields
        return tensors

    def with_masks(self, masks: Tensors) -> Tensors:
        """These operands, carrying ``masks``: the bool Tensors of their non-zeros (``masks.X == (self.X != 0)``,
        which the caller guarantees: the generators, which make the masks anyway, and ``select_images``), so the
        mapping reads them instead of comparing every element again (``nonzero_masks``). Every array of both is made
        read-only: an operand changed in place after this would leave its mask stale, so the write raises instead.

        Raises:
            WorkloadError: a mask that is not bool, or whose shape is not its operand's, or a saved mask without
                saved activations (or the other way round).
        """
        for name in OPERANDS:
            array, mask = getattr(self, name), getattr(masks, name)
            if (array is None) != (mask is None):
                raise WorkloadError(f"{name}: a non-zero mask needs its operand and the operand its mask")
            if mask is not None and (mask.dtype != bool or mask.shape != array.shape):
                raise WorkloadError(f"{name}: the non-zero mask must be bool of the operand's shape {array.shape};"
                                    f" got {mask.dtype} {mask.shape}")
        for name in OPERANDS:
            for array in (getattr(self, name), getattr(masks, name)):
                if array is not None:
                    array.flags.writeable = False
        object.__setattr__(self, "_masks", masks)  # frozen: the way dataclasses set attributes
        return self

    def nonzero_masks(self) -> Tensors | None:
        """The bool Tensors of the operands' non-zeros when they came with them (``with_masks``), else None."""
        masks: Tensors | None = self.__dict__.get("_masks")
        return masks

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


def check_operand(array: object, name: str) -> None:
    """Raise ``WorkloadError`` unless ``array`` is a real, finite numeric numpy array.

    NaN and inf would count as non-zeros (so as sparsity they are silently wrong); complex values have no
    place in a real-valued training step; bool is a 0/1 mask and is accepted.
    """
    if not isinstance(array, np.ndarray):
        raise WorkloadError(f"{name}: must be a numpy array; got {type(array).__name__}")
    if array.dtype.kind not in "biuf":
        raise WorkloadError(f"{name}: must hold real numbers; got dtype {array.dtype}")
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        bad = "NaN" if np.isnan(array).any() else "inf"
        count = int(np.count_nonzero(~np.isfinite(array)))
        raise WorkloadError(f"{name}: holds {count} non-finite value(s) ({bad}); operands must be finite")


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
    # Numeric arrays only: nothing to pickle (and load_tensors refuses pickles).
    np.savez_compressed(tmp, allow_pickle=False, **arrays)
    tmp.replace(path)


def _unpack(store: Mapping[str, np.ndarray], prefix: str, source: str) -> np.ndarray:
    """Rebuild a packed operand, checking every part against the others before allocating anything.

    A corrupt or hostile file may declare any shape: the shape is trusted only when its element count
    matches the bitmap's length and the number of set bits matches the stored values.
    """
    parts: dict[str, np.ndarray] = {}
    for part in ("shape", "bitmap", "values", "scale"):
        array = store.get(f"{prefix}/{part}")
        if array is None:
            raise WorkloadError(f"{source}: {prefix}: packed operand lacks {prefix}/{part}")
        parts[part] = array
    shape_array, bitmap, values, scale = parts["shape"], parts["bitmap"], parts["values"], parts["scale"]
    if shape_array.ndim != 1 or shape_array.dtype.kind not in "iu" or (shape_array < 0).any():
        raise WorkloadError(f"{source}: {prefix}/shape: must be a list of non-negative integers;"
                            f" got {shape_array.tolist()!r}")
    shape = tuple(int(s) for s in shape_array)
    size = math.prod(shape)
    if bitmap.dtype != np.uint8 or bitmap.ndim != 1 or bitmap.size != (size + 7) // 8:
        raise WorkloadError(f"{source}: {prefix}/bitmap: {bitmap.size} bytes of {bitmap.dtype} do not fit shape"
                            f" {shape} ({(size + 7) // 8} uint8 bytes expected)")
    mask = np.unpackbits(bitmap, count=size).astype(bool)
    nonzeros = int(np.count_nonzero(mask))
    if values.ndim != 1 or values.size != nonzeros or values.dtype.kind != "f":
        raise WorkloadError(f"{source}: {prefix}/values: {values.size} values of {values.dtype} but the bitmap"
                            f" marks {nonzeros} non-zeros")
    if scale.size != 1 or scale.dtype.kind != "f" or not np.isfinite(scale).all():
        raise WorkloadError(f"{source}: {prefix}/scale: must be one finite float; got {scale.tolist()!r}")
    out = np.zeros(size, dtype=np.float32)
    out[mask] = values.astype(np.float32) * np.float32(scale.reshape(()))
    return out.reshape(shape)


def _check_members(path: Path) -> None:
    """Check every array header of the ``.npz`` against its stored size before numpy allocates from it.

    numpy allocates the array a member's header declares before reading its data, so a corrupt header
    (say a shape of 10^13 elements) would try to allocate terabytes; here it is refused first.
    """
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            with archive.open(info) as member:
                version = np.lib.format.read_magic(member)
                header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                          else np.lib.format.read_array_header_2_0)
                shape, _fortran, dtype = header(member)
                if dtype.hasobject:
                    raise ValueError(f"member {info.filename}: object arrays are not operands")
                declared = math.prod(shape) * dtype.itemsize
                stored = info.file_size - member.tell()
                if declared != stored:
                    raise ValueError(f"member {info.filename}: header declares shape {shape} of {dtype}"
                                     f" ({declared} bytes) but {stored} bytes are stored")


def load_tensors(path: str | Path) -> dict[str, Tensors]:
    """Read a tensors file into ``{layer name: Tensors}``, in the order the layers were stored.

    Raises:
        WorkloadError: missing or unreadable file, or a layer lacking weights/activations/grad_output.
    """
    path = Path(path)
    if not path.is_file():
        raise WorkloadError(f"{path}: tensors file not found")
    try:
        _check_members(path)
        with np.load(path, allow_pickle=False) as npz:
            store = {key: npz[key] for key in npz.files}
    except (OSError, ValueError, EOFError, MemoryError, zipfile.BadZipFile) as exc:
        raise WorkloadError(f"{path}: not a readable .npz tensors file ({exc})".replace("\n", " ")) from None
    except AttributeError:  # np.load returned a plain array: an .npy, not an .npz
        raise WorkloadError(f"{path}: not a readable .npz tensors file (a single array, not an .npz)") from None
    layers: dict[str, dict[str, np.ndarray]] = {}
    for key in store:
        parts = key.split("/")
        packed_part = len(parts) == 3 and parts[2] in ("shape", "bitmap", "values", "scale")
        if len(parts) < 2 or parts[1] not in OPERANDS or not (len(parts) == 2 or packed_part):
            raise WorkloadError(f"{path}: unexpected entry {key!r} (expected LAYER/OPERAND[/part])")
        layers.setdefault(parts[0], {})
        if parts[1] not in layers[parts[0]]:
            dense = len(parts) == 2
            layers[parts[0]][parts[1]] = store[key] if dense else _unpack(store, "/".join(parts[:2]), str(path))
    out: dict[str, Tensors] = {}
    for name, ops in layers.items():
        missing = [o for o in OPERANDS[:3] if o not in ops]
        if missing:
            raise WorkloadError(f"{path}: layer {name!r} lacks {', '.join(missing)}")
        try:
            out[name] = Tensors(**ops)
        except WorkloadError as exc:
            raise WorkloadError(f"{path}: layer {name!r}: {exc}") from None
    return out
