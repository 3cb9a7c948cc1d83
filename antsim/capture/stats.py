"""Structure statistics of sparse operands, for calibrating the synthetic generators against captures.

Per layer and operand (``weights``, ``activations``, ``saved_activations``, ``grad_output``):

* ``density`` — fraction of non-zeros;
* ``channel_cv`` — coefficient of variation (population std / mean) of the per-channel density along
  axis 1 (input channel C of W and A, output channel K of dY — the axis the generators scale per channel
  and the one SCNN walks channel by channel); 0 for perfectly even channels;
* ``clustering`` — P(a 4-neighbour in the last two (spatial / kernel) axes is non-zero | non-zero)
  divided by the density: 1 for independent masks, > 1 when non-zeros clump; NaN on 1×1 planes;
* ``spatial_cv`` — CV of the density at each position of the last two axes (pooled over the first two):
  how unevenly non-zeros spread over the plane (centred objects on a flat background give a high value;
  it sets how unevenly SCNN's planar PE tiles are loaded); NaN on 1×1 planes;
* ``batch_cv`` — CV of the density along axis 0 (per image for A and dY, per output filter for W).

Per layer, for wgrad:

* ``colocation`` — Pearson correlation, over (n, p, q), of the channel occupancy of the saved A
  (fraction of its C channels non-zero, sampled at the output positions: every stride-th row/column)
  and that of dY (fraction of K channels non-zero). Positive means wgrad's two operands tend to be
  non-zero at the same places (more valid products per pair); NaN when either occupancy is constant
  (e.g. dense dY).

All statistics are NaN where undefined; ``summarize`` skips NaNs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from antsim.errors import WorkloadError
from antsim.sparsity.generators import make_operand, make_tensors, top_k
from antsim.sparsity.tensors import Tensors, load_tensors
from antsim.workloads.layers import Layer

STAT_OPERANDS = ("weights", "activations", "saved_activations", "grad_output")
OPERAND_STATS = ("density", "channel_cv", "clustering", "spatial_cv", "batch_cv")
NAN = float("nan")


def channel_cv(array: np.ndarray) -> float:
    """CV of the per-channel (axis 1) density; NaN when there is one channel or no non-zero."""
    if array.ndim < 2 or array.shape[1] < 2:
        return NAN
    per_channel = np.moveaxis(array != 0, 1, 0).reshape(array.shape[1], -1).mean(axis=1)
    mean = per_channel.mean()
    return NAN if mean == 0 else float(per_channel.std() / mean)


def _cv(values: np.ndarray) -> float:
    mean = values.mean()
    return NAN if values.size < 2 or mean == 0 else float(values.std() / mean)


def spatial_cv(array: np.ndarray) -> float:
    """CV of the per-position density over the last two axes (pooled over the others); NaN on 1×1."""
    if array.shape[-1] * array.shape[-2] < 2:
        return NAN
    return _cv((array != 0).reshape(-1, array.shape[-2] * array.shape[-1]).mean(axis=0))


def batch_cv(array: np.ndarray) -> float:
    """CV of the density along axis 0 (per image of A/dY, per output filter of W)."""
    return _cv((array != 0).reshape(array.shape[0], -1).mean(axis=1))


def clustering(array: np.ndarray) -> float:
    """P(4-neighbour non-zero | non-zero) / density over the last two axes; NaN if undefined."""
    mask = array != 0
    density = mask.mean()
    both = ordered = 0
    for axis in (-1, -2):
        if mask.shape[axis] < 2:
            continue
        head = np.take(mask, np.arange(mask.shape[axis] - 1), axis=axis)
        tail = np.take(mask, np.arange(1, mask.shape[axis]), axis=axis)
        both += 2 * int(np.count_nonzero(head & tail))      # each adjacent pair counted in both directions
        ordered += int(np.count_nonzero(head)) + int(np.count_nonzero(tail))
    if ordered == 0 or density == 0:
        return NAN
    return float(both / ordered / density)


def colocation(saved_activations: np.ndarray, grad_output: np.ndarray) -> float:
    """Correlation of saved-A and dY channel occupancy at matching output positions (see module doc)."""
    n, _, h, w = saved_activations.shape
    p, q = grad_output.shape[2:]
    stride_h, stride_w = max(1, round(h / p)), max(1, round(w / q))
    a_occ = (saved_activations != 0).mean(axis=1)[:, ::stride_h, ::stride_w]
    g_occ = (grad_output != 0).mean(axis=1)
    if a_occ.shape != g_occ.shape:
        return NAN
    a, g = a_occ.ravel(), g_occ.ravel()
    if a.std() == 0 or g.std() == 0:
        return NAN
    return float(np.corrcoef(a, g)[0, 1])


def layer_stats(name: str, tensors: Tensors) -> dict[str, float | str]:
    """One flat row: ``layer``, ``<operand>.<stat>`` for each operand present, and ``colocation``."""
    row: dict[str, float | str] = {"layer": name}
    for operand in STAT_OPERANDS:
        array = getattr(tensors, operand)
        if array is None:
            continue
        row[f"{operand}.density"] = float(np.count_nonzero(array) / array.size)
        row[f"{operand}.channel_cv"] = channel_cv(array)
        row[f"{operand}.clustering"] = clustering(array)
        row[f"{operand}.spatial_cv"] = spatial_cv(array)
        row[f"{operand}.batch_cv"] = batch_cv(array)
    row["colocation"] = colocation(tensors.wgrad_activations, tensors.grad_output)
    return row


def tensors_stats(tensors: Mapping[str, Tensors] | str | Path) -> list[dict[str, float | str]]:
    """``layer_stats`` of every layer of a ``{name: Tensors}`` mapping or of a tensors file."""
    if isinstance(tensors, (str, Path)):
        tensors = load_tensors(tensors)
    return [layer_stats(name, t) for name, t in tensors.items()]


def summarize(rows: Iterable[Mapping[str, float | str]]) -> dict[str, tuple[float, float, float, int]]:
    """Per statistic column: (median, min, max, count) over layers, NaNs skipped (all NaN → NaN, 0)."""
    rows = list(rows)
    columns = [c for c in dict.fromkeys(k for r in rows for k in r) if c != "layer"]
    out = {}
    for column in columns:
        values = [float(r[column]) for r in rows if column in r and math.isfinite(float(r[column]))]
        out[column] = ((float(np.median(values)), min(values), max(values), len(values)) if values
                       else (NAN, NAN, NAN, 0))
    return out


def synthetic_like(captured: Mapping[str, Tensors], model: str, seed: int = 0,
                   params: object | Mapping[str, object] | None = None) -> dict[str, Tensors]:
    """Generator tensors with the shapes and per-operand densities of ``captured``, layer by layer.

    Args:
        captured: ``{layer name: Tensors}`` (e.g. from ``antsim capture``).
        model: ``antsim.sparsity.generators`` model name (``swat``, ``topk_field``, ``uniform``, ``channel``).
        seed: Base seed; layer i uses ``seed + i``.
        params: ``FieldParams`` for ``topk_field`` — one for every operand (passed to ``make_tensors``), or
            a mapping ``{"weights"|"activations"|"grad_output": FieldParams}`` for per-operand fields (the
            saved A is the top-k of the generated A, as in ``make_tensors``).

    Raises:
        WorkloadError: a captured layer whose shapes are not those of a square-padded conv.
    """
    out = {}
    for i, (name, t) in enumerate(captured.items()):
        layer = layer_like(name, t)
        d = t.densities()
        if isinstance(params, Mapping):
            out[name] = _per_operand(layer, d, model, seed + i, params)
            continue
        out[name] = make_tensors(layer, density_w=d["weights"], density_a=d["activations"],
                                 density_g=d["grad_output"], model=model, seed=seed + i,
                                 density_a_saved=d.get("saved_activations"), params=params)  # type: ignore[arg-type]
    return out


def layer_like(name: str, t: Tensors) -> Layer:
    """The conv layer that ``t``'s shapes imply (square stride and padding inferred from A and dY).

    Raises:
        WorkloadError: shapes no square-padded conv produces.
    """
    n, c, h, w = t.activations.shape
    k, _, r, s = t.weights.shape
    p = t.grad_output.shape[2]
    stride = max(1, round(h / p))
    pad = max(0, ((p - 1) * stride + r - h + 1) // 2)
    layer = Layer(name=name, N=n, C=c, K=k, H=h, W=w, R=r, S=s, stride=stride, pad=pad)
    if (layer.P, layer.Q) != t.grad_output.shape[2:]:
        raise WorkloadError(f"layer {name!r}: cannot infer stride/pad from A {t.activations.shape}"
                            f" and dY {t.grad_output.shape}")
    return layer


def _per_operand(layer: Layer, densities: Mapping[str, float], model: str, seed: int,
                 params: Mapping[str, object]) -> Tensors:
    """Like ``make_tensors`` (same seed streams) but with one ``FieldParams`` per operand."""
    rng_w, rng_a, rng_g = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    shapes = {"weights": (layer.K, layer.C, layer.R, layer.S), "activations": (layer.N, layer.C, layer.H, layer.W),
              "grad_output": (layer.N, layer.K, layer.P, layer.Q)}
    rngs = {"weights": rng_w, "activations": rng_a, "grad_output": rng_g}
    arrays = {op: make_operand(shapes[op], densities[op], model, rngs[op], params.get(op))  # type: ignore[arg-type]
              for op in shapes}
    saved = densities.get("saved_activations")
    saved_array = None
    if saved is not None and saved < densities["activations"]:
        saved_array = top_k(arrays["activations"], saved)
    return Tensors(arrays["weights"], arrays["activations"], arrays["grad_output"], saved_array)
