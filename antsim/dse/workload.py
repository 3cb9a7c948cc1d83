"""The workload a sweep evaluates every design on, and its cheap proxy for multi-fidelity screening."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from antsim.errors import AntsimError, SpecError
from antsim.simulate import overall_densities
from antsim.sparsity.densities import Densities
from antsim.sparsity.tensors import load_tensors
from antsim.vocabulary import PHASES, Phase
from antsim.workloads.gemm import Gemm
from antsim.workloads.layers import Layer, read_layers_csv
from antsim.workloads.zoo import network

if TYPE_CHECKING:
    from antsim.dse.spec import SweepSpec


@dataclass(frozen=True)
class Workload:
    """Layers (at the sweep's batch) and how their operands are made.

    Attributes:
        layers: Conv layers in network order.
        phases: Training phases evaluated per layer.
        densities: ``{"w", "a", "g"[, "a_saved"]}`` non-zero fractions for the sparsity model.
        sparsity: Sparsity model name (``antsim.sparsity.generators``).
        tensors_path: Captured tensors file (``.npz``) used instead of the sparsity model, or None.
        name: Network name or layers-file stem (echoed in results).
        indices: Position of each layer in the sweep's full workload (operand seeds derive from it).
        batch_sample: Images of each batch mapped (the rest estimated, ``antsim.dataflow.sampling``); 0 = all.
    """

    layers: tuple[Layer, ...]
    phases: tuple[Phase, ...] = PHASES
    densities: dict[str, float] = field(default_factory=lambda: Densities().to_dict())  # w, a, g at 0.1
    sparsity: str = "swat"
    tensors_path: str | None = None
    name: str = "workload"
    indices: tuple[int, ...] = ()
    batch_sample: int = 0

    def __post_init__(self) -> None:
        if not self.indices:
            object.__setattr__(self, "indices", tuple(range(len(self.layers))))

    def subset(self, names: tuple[str, ...], phases: tuple[Phase, ...] | None = None) -> Workload:
        """The same workload restricted to the named layers (and phases)."""
        keep = [(layer, i) for layer, i in zip(self.layers, self.indices, strict=True) if layer.name in names]
        return Workload(tuple(layer for layer, _ in keep), phases or self.phases, self.densities, self.sparsity,
                        self.tensors_path, f"{self.name}[proxy]", tuple(i for _, i in keep), self.batch_sample)


def resolve_workload(spec: SweepSpec) -> Workload:
    """Build the sweep's workload from its ``workload`` section.

    Raises:
        SpecError: unknown network, unreadable layers CSV, bad inline layer or unknown ``select`` name.
    """
    w = spec.workload
    try:
        layers, name = _layers(spec)
    except SpecError:
        raise
    except AntsimError as exc:
        raise SpecError(spec.source, "workload", str(exc)) from None
    if w.select is not None:
        known = {layer.name for layer in layers}
        for i, wanted in enumerate(w.select):
            if wanted not in known:
                raise SpecError(spec.source, f"workload.select[{i}]", "no such layer in the workload", wanted)
        layers = [layer for layer in layers if layer.name in set(w.select)]
    densities = dict(w.densities)
    batch: int | None
    if w.tensors is not None:
        tensors = _load_tensors(spec)
        batch = _tensors_batch(spec, tensors)
        densities = _tensor_densities(tensors, layers)
    else:
        tensors, batch = None, w.batch
    if batch is not None:  # given (or a tensors file's): it replaces the layers' own N
        layers = [layer.with_batch(batch) for layer in layers]
    elif len({_batch_of(layer) for layer in layers}) > 1:
        raise SpecError(spec.source, "workload", "the layers differ in N; give workload.batch",
                        sorted({_batch_of(layer) for layer in layers}))
    if tensors is not None:
        _check_tensors(spec, tensors, layers)
    if w.batch_sample and spec.fidelity != "fast":
        raise SpecError(spec.source, "workload.batch_sample", "needs fidelity: fast (exact maps every image)",
                        w.batch_sample)
    return Workload(tuple(layers), tuple(w.phases), densities, w.sparsity, w.tensors, name,
                    batch_sample=w.batch_sample)


def _batch_of(layer: Layer | Gemm) -> int:
    """A layer's training batch: a conv layer's N, a GEMM layer's ``batch`` (its N is columns)."""
    return layer.batch if isinstance(layer, Gemm) else layer.N


def _load_tensors(spec: SweepSpec) -> dict[str, Any]:
    try:
        return load_tensors(spec.workload.tensors)  # type: ignore[arg-type]
    except AntsimError as exc:
        raise SpecError(spec.source, "workload.tensors", str(exc)) from None


def _tensors_batch(spec: SweepSpec, tensors: dict[str, Any]) -> int:
    """The tensors file's batch; a ``workload.batch`` that disagrees is an error (the operands set it)."""
    batches = sorted({int(t.activations.shape[0]) for t in tensors.values()})
    if len(batches) != 1:
        raise SpecError(spec.source, "workload.tensors", "activations differ in batch", batches)
    if spec.workload.batch is not None and spec.workload.batch != batches[0]:
        raise SpecError(spec.source, "workload.batch", f"the tensors file holds batch {batches[0]}",
                        spec.workload.batch)
    return batches[0]


def _tensor_densities(tensors: dict[str, Any], layers: list[Layer]) -> dict[str, float]:
    """Measured densities of the operands the workload's layers use (echoed instead of the defaults)."""
    return overall_densities([tensors[layer.name] for layer in layers if layer.name in tensors])


def _check_tensors(spec: SweepSpec, tensors: dict[str, Any], layers: list[Layer]) -> None:
    """Every workload layer has operands in the tensors file, of its shape (checked before any trial)."""
    for layer in layers:
        if layer.name not in tensors:
            raise SpecError(spec.source, "workload.tensors", f"no tensors for layer {layer.name!r}",
                            spec.workload.tensors)
        try:
            tensors[layer.name].check_shapes(layer)
        except AntsimError as exc:
            raise SpecError(spec.source, "workload.tensors", str(exc)) from None


def _layers(spec: SweepSpec) -> tuple[list[Layer], str]:
    w = spec.workload
    if w.network is not None:
        return network(w.network), w.network
    if w.layers_csv is not None:
        return read_layers_csv(w.layers_csv), Path(w.layers_csv).stem
    layers = []
    for i, entry in enumerate(w.layers or ()):
        try:
            layers.append(Layer.from_dict(dict(entry)))
        except (TypeError, AntsimError) as exc:
            raise SpecError(spec.source, f"workload.layers[{i}]", str(exc)) from None
    return layers, spec.stem


def proxy_layer_names(workload: Workload, count: int) -> tuple[str, ...]:
    """``count`` cheap, representative layers: one per output-plane size, spread over the network.

    Layers are grouped by output plane (P, Q) in network order — the plane sets the RCP behaviour
    (wgrad's valid fraction ≈ R·S/(H·W)) — and ``count`` groups spread evenly from the first to the last
    are taken. Within a group the layer with the network's most common kernel and the fewest weights is
    picked: simulation cost grows with the channel counts (measured: ResNet-18's 512×512 conv costs ~9×
    its stage-2 convs), so this keeps the proxy cheap without leaving the plane sizes the network has.
    """
    groups: dict[tuple[int, int], list[Layer]] = {}
    for layer in workload.layers:
        groups.setdefault((layer.P, layer.Q), []).append(layer)
    ordered = list(groups.values())
    if count >= len(ordered):
        picks = list(range(len(ordered)))
    elif count == 1:
        picks = [len(ordered) // 2]
    else:
        picks = sorted({round(i * (len(ordered) - 1) / (count - 1)) for i in range(count)})
    kernels = [(layer.R, layer.S) for layer in workload.layers]
    common = max(set(kernels), key=kernels.count)

    def cost(layer: Layer) -> tuple[bool, int]:
        return ((layer.R, layer.S) != common, layer.K * layer.C * layer.R * layer.S)

    return tuple(min(ordered[i], key=cost).name for i in picks)


def proxy_workload(spec: SweepSpec, workload: Workload) -> Workload | None:
    """The cheap first-look workload of ``spec.multi_fidelity`` (None when multi-fidelity is off or its
    screen is not ``proxy_layers``).

    Raises:
        SpecError: a ``proxy_select`` name that is not in the workload.
    """
    mf = spec.multi_fidelity
    if mf is None or not mf.enabled or mf.screen != "proxy_layers":
        return None
    if mf.proxy_select is not None:
        known = {layer.name for layer in workload.layers}
        for i, wanted in enumerate(mf.proxy_select):
            if wanted not in known:
                raise SpecError(spec.source, f"multi_fidelity.proxy_select[{i}]", "no such layer", wanted)
        names = tuple(mf.proxy_select)
    else:
        names = proxy_layer_names(workload, mf.proxy_layers)
    return workload.subset(names, tuple(mf.proxy_phases) if mf.proxy_phases else None)


def export_echo(workload: Workload) -> dict[str, Any]:
    """What a sweep export's ``summary.json`` says the trials ran on (``antsim report --sweep`` checks it
    against the report's own workload): the workload's name, phases and layers."""
    return {"name": workload.name, "phases": list(workload.phases),
            "layers": [layer.to_dict() for layer in workload.layers]}
