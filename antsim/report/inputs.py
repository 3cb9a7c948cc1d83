"""Loading result files for compare/report, and checking that they describe the same workload.

Results come as ``antsim.result/1`` JSON (``antsim simulate``, ``antsim gpu``) or as CSV measurements /
external-model outputs (read by ``antsim.measure.external.read_results_csv``; dispatched on the ``.csv``
suffix). Comparing designs only makes sense on one workload, so ``check_same_workload`` rejects inputs
whose layers, batch, (layer, phase) records or — between accelerator results — sparsity differ.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from antsim.errors import AntsimError, WorkloadError
from antsim.results import NetworkResult
from antsim.workloads.layers import Layer, layer_from_dict

# Workload keys that must agree between accelerator results: they change the operands themselves.
_SPARSITY_KEYS = ("densities", "sparsity", "tensors")


def load_result(path: str | Path, layers: Sequence[Layer] | None = None) -> NetworkResult:
    """Read one result file: ``antsim.result/1`` JSON, or a CSV of measurements / external outputs.

    Args:
        path: A ``.json`` result or a ``.csv`` of measured / external per-(layer, phase) results.
        layers: The workload's layers; needed to read a CSV (it names layers, the shapes come from here).

    Raises:
        AntsimError: missing or malformed file, unsupported suffix, or a CSV without known layers.
    """
    path = Path(path)
    if not path.is_file():
        raise AntsimError(f"{path}: result file not found")
    suffix = path.suffix.lower()
    if suffix == ".json":
        return NetworkResult.read_json(path)
    if suffix == ".csv":
        return _load_csv(path, layers)
    raise AntsimError(f"{path}: result files must end in .json or .csv; got {suffix or 'no suffix'!r}")


def _load_csv(path: Path, layers: Sequence[Layer] | None) -> NetworkResult:
    if layers is None:
        raise AntsimError(f"{path}: a CSV result needs the workload's layers: give a JSON result of the same"
                          " workload too, or the layers")
    try:
        from antsim.measure.external import read_results_csv
    except ModuleNotFoundError as exc:
        raise AntsimError(f"{path}: reading CSV results needs antsim.measure.external ({exc.name} missing)") from None
    return read_results_csv(path, list(layers), design=None, backend="measured")


def layers_of(result: NetworkResult, source: str = "<result>") -> list[Layer] | None:
    """The layers echoed in ``result.workload["layers"]`` (None when the result does not echo them)."""
    echoed = result.workload.get("layers")
    if not echoed:
        return None
    try:
        return [layer_from_dict(dict(d)) for d in echoed]  # conv Layers and Gemm layers
    except (TypeError, ValueError, WorkloadError) as exc:
        raise AntsimError(f"{source}: workload.layers: not a list of layers ({exc})") from None


def check_same_workload(results: Sequence[NetworkResult], sources: Sequence[str]) -> None:
    """Raise unless every result describes the same workload under a distinct design name.

    Checks, against the first result: the layers echoed (names and shapes), the batch, the set of
    (layer, phase) records; between accelerator results also densities, sparsity model and tensors file.

    Raises:
        AntsimError: one line naming the offending file and what differs.
    """
    if not results:
        raise AntsimError("nothing to compare: no results given")
    _check_unique_designs(results, sources)
    ref, ref_src = results[0], sources[0]
    ref_layers = layers_of(ref, ref_src)
    for result, source in zip(results[1:], sources[1:], strict=True):
        check_layers(ref_layers, layers_of(result, source), ref_src, source)
        _check_batch(ref, result, ref_src, source)
        _check_keys(ref, result, ref_src, source)
    accelerators = [(r, s) for r, s in zip(results, sources, strict=True) if r.backend == "accelerator"]
    for result, source in accelerators[1:]:
        for key in _SPARSITY_KEYS:
            mine, theirs = result.workload.get(key), accelerators[0][0].workload.get(key)
            if _norm(mine) != _norm(theirs):
                raise AntsimError(f"{source}: workload.{key} is {mine!r} but {accelerators[0][1]} has {theirs!r};"
                                  " accelerator results must share one sparsity regime")


def _check_unique_designs(results: Sequence[NetworkResult], sources: Sequence[str]) -> None:
    seen: dict[str, str] = {}
    for result, source in zip(results, sources, strict=True):
        if result.design in seen:
            raise AntsimError(f"{source}: design name {result.design!r} also comes from {seen[result.design]};"
                              " design names must be unique")
        seen[result.design] = source


def check_layers(ref: list[Layer] | None, mine: list[Layer] | None, ref_src: str, source: str) -> None:
    """Raise unless ``mine`` holds the same layers (names and shapes, batch included) as ``ref``."""
    if ref is None or mine is None:
        return  # a backend that does not echo layers is checked through its records instead
    ref_by_name = {layer.name: layer for layer in ref}
    for layer in mine:
        other = ref_by_name.get(layer.name)
        if other is None:
            raise AntsimError(f"{source}: workload.layers: layer {layer.name!r} is not in {ref_src}")
        if other != layer:
            raise AntsimError(f"{source}: workload.layers: layer {layer.name!r} is {_shape(layer)}"
                              f" but {_shape(other)} in {ref_src}")
    missing = [name for name in ref_by_name if name not in {layer.name for layer in mine}]
    if missing:
        raise AntsimError(f"{source}: workload.layers: lacks layer {missing[0]!r} of {ref_src}")


def _check_batch(ref: NetworkResult, mine: NetworkResult, ref_src: str, source: str) -> None:
    a, b = ref.workload.get("batch"), mine.workload.get("batch")
    if a is not None and b is not None and int(a) != int(b):
        raise AntsimError(f"{source}: workload.batch is {b} but {a} in {ref_src}")


def _check_keys(ref: NetworkResult, mine: NetworkResult, ref_src: str, source: str) -> None:
    ref_keys, my_keys = ref.keys(), mine.keys()
    if len(set(my_keys)) != len(my_keys):
        dup = next(k for k in my_keys if my_keys.count(k) > 1)
        raise AntsimError(f"{source}: records: (layer, phase) {dup} appears twice")
    extra = [k for k in my_keys if k not in set(ref_keys)]
    if extra:
        raise AntsimError(f"{source}: records: (layer, phase) {extra[0]} is not in {ref_src}")
    lacking = [k for k in ref_keys if k not in set(my_keys)]
    if lacking:
        raise AntsimError(f"{source}: records: lacks (layer, phase) {lacking[0]} of {ref_src}")


def _shape(layer: Layer) -> str:
    return (f"N{layer.N} C{layer.C} K{layer.K} H{layer.H} W{layer.W} R{layer.R} S{layer.S}"
            f" stride{layer.stride} pad{layer.pad}")


def _norm(value: Any) -> Any:
    """Make echoed values comparable (tuples vs lists, ints vs floats)."""
    if isinstance(value, Mapping):
        return {str(k): _norm(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


def load_results(paths: Sequence[str | Path],
                 fallback_layers: Callable[[], list[Layer]] | None = None) -> tuple[list[NetworkResult], list[str]]:
    """Read result files in the order given; CSVs take their layers from the first JSON result.

    Args:
        paths: ``.json`` / ``.csv`` result files.
        fallback_layers: Called for the layers when CSVs are given without any JSON result that echoes them.

    Returns:
        The results and their sources (the paths as given).

    Raises:
        AntsimError: a missing, malformed or unsupported file.
    """
    loaded: dict[int, NetworkResult] = {}
    layers: list[Layer] | None = None
    for i, path in enumerate(paths):
        if Path(path).suffix.lower() != ".csv":
            loaded[i] = load_result(path)
            layers = layers or layers_of(loaded[i], str(path))
    for i, path in enumerate(paths):
        if i not in loaded:
            if layers is None and fallback_layers is not None:
                layers = fallback_layers()
            loaded[i] = load_result(path, layers)
    return [loaded[i] for i in range(len(paths))], [str(p) for p in paths]
