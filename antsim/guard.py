"""Resource guard: estimate a run's peak memory and timing-model steps before it starts, refuse the hopeless.

A run that cannot fit the machine, or whose buffers make the timing model step through millions of
passes (a ``buffers.input_kb`` of a few bits grew to 1.8 GB on one 8 x 8 layer and never ended, issue 15),
is refused up front with the estimate and the layer, exit 2, unless the user passes ``--force``.

Both estimates are closed forms of the workload and the spec (no operand is looked at):

* memory = interpreter + libraries + the largest layer's share: its operands (float32 A, saved A, W, dY) plus
  the larger of what generating them holds (the previous layer's operands and the generator's full-size
  float64 temporaries) and what the dataflow holds. A sparse design's dataflow is charged per non-zero (more
  with anticipation) of
  ``N·C·H·W`` A, ``N·K·C·R·S`` W (the streamed weights are held per image) and ``N·K·P·Q`` dY; a dense design
  at ``fast`` maps one image and repeats it (``antsim.dataflow.mapper``), so it is charged per element of one
  image's A, W and dY, per pairing cell of that image (a closed-form bound on ``make_cells``' count) and per
  (chunk, PE) slot of the whole batch (the repeated work). The constants below were measured with
  ``ru_maxrss`` / ``VmHWM`` on ResNet-18 CIFAR and ResNet-50 ImageNet layers (docs/memory.md "The guard");
* steps (one per pass x chunk, the timing model's unit of work) of each (layer, phase):
  ``chunks = N · ⌈Ko / Kc⌉`` exactly (``antsim.dataflow.tiling``) times ``passes = ⌈stationary bits of
  the mean PE's tile / input buffer bits⌉`` (``antsim.sim.schedule.stationary_passes`` on the mean PE).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path

import numpy as np

from antsim.dataflow.gemm import guard_layer
from antsim.dataflow.tiling import make_tiling, stride_classes
from antsim.errors import AntsimError
from antsim.phases import phase_problem
from antsim.simulate import overall_densities
from antsim.spec.arch import ArchSpec
from antsim.spec.encoding import bits_per_value
from antsim.vocabulary import Fidelity, Phase
from antsim.workloads import Layer

# Peak RSS of `import antsim` + numpy/simpy/pydantic and one simulated layer's bookkeeping (measured
# 121-178 MiB on the dev machine, scripts in the issue-15 report); the larger value, rounded up.
BASE_BYTES = 200 * 2**20
# Bytes a sparse design's dataflow holds per non-zero (each operand's elements x its density) at fidelity fast,
# measured as peak RSS minus the RSS after generating the operands over fprop + dgrad + wgrad of resnet18-cifar
# layer1.0.conv1, layer4.0.conv1 and layer4.1.conv2 at batch 1-16 (W/A/dY density 0.1): 116-452 B, also
# with the swat regime's densities (W 0.1, A 0.5, saved A 0.1, dY 1.0: 166-363 B). The largest, rounded.
SPARSE_BYTES_PER_NONZERO = 450.0
# The same for a design with anticipation (policy ant or oracle): its streamed fibers are laid out once per
# fetch set (antsim/dataflow/fibers.py). Measured (docs/memory.md "The guard") while that layout held three
# int64 arrays per replicated element: resnet18-cifar layer1.0.conv1 at batch 16 930 B, resnet50-imagenet
# layer1.0.conv2 640 B at batch 1 and 940 B at batch 16, above the SCNN constant. The largest, rounded up; since
# session 8 the layout works in blocks (less held, docs/memory.md), so the constant stays an upper bound.
ANTICIPATION_BYTES_PER_NONZERO = 1000.0
# A dense design at fast maps one image (every element a non-zero): bytes its dataflow holds per element of
# that image's A + W + dY and per pairing cell, measured as VmHWM minus the RSS after generating the operands
# (fprop + dgrad + wgrad, batch 1): resnet18-cifar layer1.0.conv1 67 B/element (33 k cells), layer4.0.conv1
# 136 B/element (1.0 M cells), layer4.1.conv2 36 B/element; resnet50-imagenet layer1.0.conv2 71 B/element,
# layer4.0.downsample 352 B/element, which is 63 B per cell of its 12.8 M. Each constant is the largest
# measured value of its kind alone (so the sum bounds every layer above, by up to ~2x).
DENSE_BYTES_PER_IMAGE_ELEMENT = 140.0
DENSE_BYTES_PER_CELL = 64.0
# Bytes per (chunk, PE) slot of the whole batch that the repeated image work adds: resnet18-cifar layer4.1.conv2
# dense held 102 MiB more at batch 256 (1.05 M slots) than at batch 1, beyond the larger operands. Rounded up.
DENSE_BYTES_PER_SLOT = 128.0
# Exact fidelity, and a dense design at exact (which maps every image), keep the old per-element form: every
# image's elements at the dense constant measured before the one-image mapping (103-256 B, resnet18-cifar).
DENSE_BYTES_PER_ELEMENT = 260.0
# Fidelity exact enumerates every valid product: 100-135 B per valid product measured on layer1.0.conv1
# (scnn, ant; batch 1 and 4).
EXACT_BYTES_PER_PRODUCT = 140.0
# The operands themselves: float32 A, saved A, W and dY (what antsim.sparsity.generators and a tensors file's
# decoder return).
OPERAND_BYTES_PER_ELEMENT = 4.0
# What generating one operand holds beside the finished ones, per element of the largest operand. Since
# session 8 (docs/operand_speed.md, tracemalloc) the most of any generator is swat's smoothed field: the
# float64 field filtered in place plus numpy's `std` temporary, 16.0 B; swat W and the GEMM operands 13-13.6 B;
# uniform and channel 5.6 B. Before it (float64 normals + np.where copy + mask) 16.2 B were measured for the
# 102.8 M weights of vgg16-imagenet-full classifier.0 (1,727 MiB ru_maxrss for that call); 17 B stays a bound.
GENERATION_BYTES_PER_ELEMENT = 17.0
# Stationary passes of one (layer, phase). Each pass re-streams the whole streamed operand; SCNN sizes its
# buffers so a layer takes one pass, and sweeps constrain `stationary_passes: {max: 1}`. A 8 mbit input
# buffer on one 64-channel 8 x 8 layer needed ~19,000 passes (estimate) and ran 9 minutes for three phases on
# the dev machine (issue 15's "never ends"); 1024 passes is far past any design worth simulating.
MAX_PASSES = 1024
# Timing-model cost: 4.7 µs per PE-step at 58-1157 passes (scnn, resnet18-cifar layer1.0.conv1 fprop:
# 0.28 ms per 64-PE step) and 18 µs per estimated PE-step on the 19,000-pass layer above. 2·10^8 PE-steps
# over a run is 15 minutes to an hour; ResNet-50 ImageNet at batch 256 (K/Kc groups x images x 64 PEs per
# layer and phase) stays below it.
MAX_RUN_PE_STEPS = 2 * 10**8


@dataclass(frozen=True)
class Estimate:
    """What a run of one design on a workload is expected to need.

    Attributes:
        design: The arch name.
        peak_bytes: Estimated peak resident memory of the process.
        memory_layer: The layer that sets it.
        passes: Most stationary passes of one (layer, phase).
        passes_where: ``layer/phase`` of those passes.
        steps: Timing-model steps (passes x chunks) of that (layer, phase).
        run_pe_steps: Steps x PEs summed over the run, the measure of its time.
    """

    design: str
    peak_bytes: float
    memory_layer: str
    passes: int
    passes_where: str
    steps: int
    run_pe_steps: int


def _density_of(densities: Mapping[str, float], operand: str, phase: Phase) -> float:
    key = {"weights": "w", "activations": "a", "grad_output": "g"}[operand]
    if operand == "activations" and phase == "wgrad" and densities.get("a_saved") is not None:
        key = "a_saved"  # wgrad's stationary operand is SWAT's saved top-k copy when there is one
    return float(densities.get(key, 1.0))


def phase_steps(arch: ArchSpec, layer: Layer, phase: Phase, densities: Mapping[str, float]) -> tuple[int, int]:
    """(steps, passes) of one (layer, phase): chunks x passes of the mean PE (see the module docstring)."""
    problem = phase_problem(layer, phase)
    pe = arch.pe_array
    n, cs, ys, xs = problem.stationary_shape
    acc = arch.accumulators
    groups = make_tiling(problem, pe.rows, pe.cols, arch.mapping.output_channel_group,
                         acc.banks * acc.entries_per_bank).n_groups
    chunks = n * groups
    dense = not arch.sparsity_support
    density = 1.0 if dense else _density_of(densities, problem.stationary_operand, phase)
    values = cs * math.ceil(ys / pe.rows) * math.ceil(xs / pe.cols) * density  # one image's tile, mean PE
    bits = values * bits_per_value(arch.compression, max(density, 1e-12))
    passes = max(1, math.ceil(bits / (arch.buffers.input_kb * 8192.0) - 1e-9))
    return chunks * passes, passes


def operand_bytes(layer: Layer) -> float:
    """Bytes the finished operands of ``layer`` hold: A, the saved A (at most A's size), W and dY."""
    a, w, g = _elements(layer)
    return (2 * a + w + g) * OPERAND_BYTES_PER_ELEMENT


def generation_bytes(layer: Layer) -> float:
    """Bytes generating ``layer``'s operands holds beside the finished ones (the generator's temporaries)."""
    return max(_elements(layer)) * GENERATION_BYTES_PER_ELEMENT


def _elements(layer: Layer) -> tuple[int, int, int]:
    """Elements of A, W and dY."""
    return (layer.N * layer.C * layer.H * layer.W, layer.K * layer.C * layer.R * layer.S,
            layer.N * layer.K * layer.P * layer.Q)


def _cells_bound(arch: ArchSpec, layer: Layer, phase: Phase) -> int:
    """At most the pairing cells ``antsim.dataflow.pairing.make_cells`` builds for a dense (layer, phase): one per
    stationary fiber (image, channel, PE whose tile is not empty) x stride pair x output-channel group."""
    problem = phase_problem(layer, phase)
    pe, acc = arch.pe_array, arch.accumulators
    tiling = make_tiling(problem, pe.rows, pe.cols, arch.mapping.output_channel_group,
                         acc.banks * acc.entries_per_bank)
    n, cs, ys, xs = problem.stationary_shape
    used_pes = min(tiling.n_pes, math.ceil(ys / max(tiling.tile_h, 1)) * math.ceil(xs / max(tiling.tile_w, 1)))
    pairs = len(stride_classes(problem, arch.mapping.stride_phases).groups)
    return n * cs * used_pes * pairs * tiling.n_groups


def _slots(arch: ArchSpec, layer: Layer, phase: Phase) -> int:
    """(chunk, PE) slots of the whole batch: N · groups · PEs."""
    steps, passes = phase_steps(arch, layer, phase, {})
    return steps // passes * arch.pe_array.n_pes


def dense_bookkeeping(arch: ArchSpec, layer: Layer, phases: Sequence[Phase], fidelity: Fidelity) -> float:
    """Bytes a dense design's dataflow holds for ``layer`` at its peak (see the module docstring)."""
    a, w, g = _elements(layer)
    if fidelity == "exact":  # every image mapped
        return (a + layer.N * w + g) * DENSE_BYTES_PER_ELEMENT
    image = layer.with_batch(1)  # fast: one image mapped and repeated (antsim.dataflow.mapper._map_dense_batch)
    a1, _, g1 = _elements(image)
    cells = max((_cells_bound(arch, image, p) for p in phases), default=0)
    slots = max((_slots(arch, layer, p) for p in phases), default=0)
    return (a1 + w + g1) * DENSE_BYTES_PER_IMAGE_ELEMENT + cells * DENSE_BYTES_PER_CELL + slots * DENSE_BYTES_PER_SLOT


def layer_memory(arch: ArchSpec, layer: Layer, phases: Sequence[Phase], densities: Mapping[str, float],
                 fidelity: Fidelity, previous: Layer | None = None, generated: bool = True) -> float:
    """Bytes one layer adds to the process at its peak: its operands plus the larger of generating them (with
    the ``previous`` layer's operands still alive; nothing when ``generated`` is false: a tensors file's
    arrays are counted apart) and the dataflow's bookkeeping."""
    a, w, g = _elements(layer)
    if arch.sparsity_support:
        d_a = max(densities.get("a", 1.0), densities.get("a_saved") or 0.0)
        nonzeros = a * d_a + layer.N * w * densities.get("w", 1.0) + g * densities.get("g", 1.0)
        per_nonzero = SPARSE_BYTES_PER_NONZERO if arch.anticipation.policy == "none" else ANTICIPATION_BYTES_PER_NONZERO
        bookkeeping = nonzeros * per_nonzero
    else:
        bookkeeping = dense_bookkeeping(arch, layer, phases, fidelity)
    if fidelity == "exact":
        macs = layer.N * layer.K * layer.C * layer.R * layer.S * layer.P * layer.Q
        worst = 1.0 if not arch.sparsity_support else max(
            _density_of(densities, phase_problem(layer, p).stationary_operand, p)
            * _density_of(densities, phase_problem(layer, p).streamed_operand, p) for p in phases)
        bookkeeping += macs * worst * EXACT_BYTES_PER_PRODUCT
    generating = 0.0
    if generated:
        generating = generation_bytes(layer) + (operand_bytes(previous) if previous is not None else 0.0)
    return operand_bytes(layer) + max(generating, bookkeeping)


def estimate_run(arch: ArchSpec, layers: Sequence[Layer], phases: Sequence[Phase],
                 densities: Mapping[str, float], fidelity: Fidelity = "fast", resident_bytes: float = 0.0
                 ) -> Estimate:
    """Peak memory and the worst (layer, phase) step count of simulating ``layers`` on ``arch``.

    ``resident_bytes``: operands already in memory for the whole run (a tensors file's arrays); when it is
    given (> 0) no operand is generated.
    """
    memory, memory_layer = 0.0, ""
    passes, where, steps, total = 0, "", 0, 0
    previous: Layer | None = None
    for layer in (guard_layer(arch, item) for item in layers):  # a GEMM layer as the conv it is mapped as
        m = layer_memory(arch, layer, phases, densities, fidelity, previous, generated=resident_bytes <= 0)
        previous = layer
        if m > memory:
            memory, memory_layer = m, layer.name
        for phase in phases:
            s, p = phase_steps(arch, layer, phase, densities)
            total += s * arch.pe_array.n_pes
            if p > passes:
                passes, where, steps = p, f"{layer.name}/{phase}", s
    return Estimate(arch.name, BASE_BYTES + resident_bytes + memory, memory_layer, passes, where, steps, total)


def available_memory_bytes(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """Memory the kernel says a new process can use (MemAvailable), else free physical pages; None if unknown."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _gib(value: float) -> str:
    return f"{value / 2**30:.1f} GiB"


def check_resources(estimates: Sequence[Estimate], *, concurrent: int = 1, available: int | None = None,
                    max_passes: int = MAX_PASSES, max_run_pe_steps: int = MAX_RUN_PE_STEPS,
                    force: bool = False) -> None:
    """Refuse a run above the machine's memory or the pass / step limits (one line, exit 2), unless ``force``.

    Args:
        estimates: One per design to simulate.
        concurrent: Designs simulated at once (``compare --jobs``, ``sweep --workers``): their peaks add up.
        available: Bytes available (default: ``available_memory_bytes()``; None = unknown, not checked).
        max_passes: Stationary passes of one (layer, phase).
        max_run_pe_steps: Timing-model steps x PEs of one design's run.
        force: Run anyway.

    Raises:
        AntsimError: naming the design, the layer, the estimate and the limit (subject ``force``: the CLI
            names its ``--force`` flag as the way to run anyway).
    """
    if force or not estimates:
        return
    for e in estimates:
        if e.passes > max_passes:
            raise AntsimError(
                f"{e.design}: {e.passes_where} would take {e.passes:,} stationary passes (buffers.input_kb too"
                f" small for one PE's tile; {e.steps:,} timing steps), above the limit {max_passes:,};"
                " enlarge buffers.input_kb or force the run", subject="force")
        if e.run_pe_steps > max_run_pe_steps:
            raise AntsimError(
                f"{e.design}: the run would take {e.run_pe_steps:.3g} timing PE-steps (15 minutes to hours),"
                f" above the limit {max_run_pe_steps:.3g}; use fewer layers or a smaller batch, or force the run",
                subject="force")
    available = available_memory_bytes() if available is None else available
    if available is None:
        return
    biggest = sorted(estimates, key=lambda e: e.peak_bytes, reverse=True)[:max(concurrent, 1)]
    need = sum(e.peak_bytes for e in biggest)
    if need > available:
        top = biggest[0]
        together = f" ({len(biggest)} at once)" if len(biggest) > 1 else ""
        raise AntsimError(
            f"{top.design}: estimated peak memory {_gib(need)}{together} (largest layer {top.memory_layer}) is"
            f" above the {_gib(available)} available; use a smaller batch or fewer jobs, or force the run",
            subject="force")


def _array_bytes(operands: object) -> int:
    """Bytes of the numpy arrays among the fields of one layer's operands (``Tensors``, ``GemmTensors``)."""
    values = (getattr(operands, f.name) for f in fields(operands)) if is_dataclass(operands) else ()
    return sum(v.nbytes for v in values if isinstance(v, np.ndarray))


def guard_run(archs: Sequence[ArchSpec], layers: Sequence[Layer], phases: Sequence[Phase],
              densities: Mapping[str, float], tensors: Mapping[str, object] | None = None, fidelity: Fidelity = "fast",
              *, concurrent: int = 1, force: bool = False) -> list[Estimate]:
    """Estimate every design (densities measured on ``tensors`` when given) and ``check_resources``."""
    resident = 0.0
    if tensors is not None:
        densities = overall_densities(list(tensors.values()))  # type: ignore[arg-type]
        resident = float(sum(_array_bytes(t) for t in tensors.values()))
    estimates = [estimate_run(arch, layers, phases, densities, fidelity, resident) for arch in archs]
    check_resources(estimates, concurrent=concurrent, force=force)
    return estimates


__all__ = ["MAX_PASSES", "MAX_RUN_PE_STEPS", "Estimate", "available_memory_bytes", "check_resources",
           "dense_bookkeeping", "estimate_run", "generation_bytes", "guard_run", "layer_memory", "operand_bytes",
           "phase_steps"]
