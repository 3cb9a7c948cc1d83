"""Resource guard: estimate a run's peak memory and timing-model steps before it starts, refuse the hopeless.

A run that cannot fit the machine, or whose buffers make the timing model step through millions of
passes (a ``buffers.input_kb`` of a few bits grew to 1.8 GB on one 8 x 8 layer and never ended, issue 15),
is refused up front with the estimate and the layer, exit 2, unless the user passes ``--force``.

Both estimates are closed forms of the workload and the spec (no operand is looked at):

* memory = interpreter + libraries + the operands of the largest layer + what the dataflow holds per
  element (dense design) or per non-zero (sparse design) of ``N·C·H·W`` A, ``N·K·C·R·S`` W (the streamed
  weights are held per image) and ``N·K·P·Q`` dY, at the constants below, measured with ``ru_maxrss`` on
  ResNet-18 CIFAR layers (the estimate came out 1.2-8× the measured peak, never below);
* steps (one per pass x chunk, the timing model's unit of work) of each (layer, phase):
  ``chunks = N · ⌈Ko / Kc⌉`` exactly (``antsim.dataflow.tiling``) times ``passes = ⌈stationary bits of
  the mean PE's tile / input buffer bits⌉`` (``antsim.sim.schedule.stationary_passes`` on the mean PE).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from antsim.dataflow.gemm import guard_layer
from antsim.dataflow.tiling import make_tiling
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
# Bytes the dataflow holds per element N·(C·H·W + K·C·R·S + K·P·Q) of a layer at fidelity fast, measured
# as peak RSS minus the RSS after generating the operands over fprop + dgrad + wgrad of resnet18-cifar
# layer1.0.conv1, layer4.0.conv1 and layer4.1.conv2 at batch 1-16 (W/A/dY density 0.1): a dense design
# (every element a non-zero) held 103-256 B; a sparse design 116-452 B per non-zero (each operand's elements
# x its density), also with the swat regime's densities (W 0.1, A 0.5, saved A 0.1, dY 1.0: 166-363 B).
# The largest measured value of each is the constant.
DENSE_BYTES_PER_ELEMENT = 260.0
SPARSE_BYTES_PER_NONZERO = 450.0
# Fidelity exact enumerates every valid product: 100-135 B per valid product measured on layer1.0.conv1
# (scnn, ant; batch 1 and 4).
EXACT_BYTES_PER_PRODUCT = 140.0
# The operands themselves: float64 A, saved A, W and dY (the generators' dtype; an upper bound for files).
OPERAND_BYTES_PER_ELEMENT = 8.0
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


def layer_memory(arch: ArchSpec, layer: Layer, phases: Sequence[Phase], densities: Mapping[str, float],
                 fidelity: Fidelity) -> float:
    """Bytes one layer adds to the process at its peak (operands + the dataflow's bookkeeping)."""
    a, w, g = layer.N * layer.C * layer.H * layer.W, layer.K * layer.C * layer.R * layer.S, \
        layer.N * layer.K * layer.P * layer.Q
    if arch.sparsity_support:
        d_a = max(densities.get("a", 1.0), densities.get("a_saved") or 0.0)
        nonzeros = a * d_a + layer.N * w * densities.get("w", 1.0) + g * densities.get("g", 1.0)
        bookkeeping = nonzeros * SPARSE_BYTES_PER_NONZERO
    else:
        bookkeeping = (a + layer.N * w + g) * DENSE_BYTES_PER_ELEMENT
    if fidelity == "exact":
        macs = layer.N * layer.K * layer.C * layer.R * layer.S * layer.P * layer.Q
        worst = 1.0 if not arch.sparsity_support else max(
            _density_of(densities, phase_problem(layer, p).stationary_operand, p)
            * _density_of(densities, phase_problem(layer, p).streamed_operand, p) for p in phases)
        bookkeeping += macs * worst * EXACT_BYTES_PER_PRODUCT
    return (2 * a + w + g) * OPERAND_BYTES_PER_ELEMENT + bookkeeping


def estimate_run(arch: ArchSpec, layers: Sequence[Layer], phases: Sequence[Phase],
                 densities: Mapping[str, float], fidelity: Fidelity = "fast") -> Estimate:
    """Peak memory and the worst (layer, phase) step count of simulating ``layers`` on ``arch``."""
    memory, memory_layer = 0.0, ""
    passes, where, steps, total = 0, "", 0, 0
    for layer in (guard_layer(arch, item) for item in layers):  # a GEMM layer as the conv it is mapped as
        m = layer_memory(arch, layer, phases, densities, fidelity)
        if m > memory:
            memory, memory_layer = m, layer.name
        for phase in phases:
            s, p = phase_steps(arch, layer, phase, densities)
            total += s * arch.pe_array.n_pes
            if p > passes:
                passes, where, steps = p, f"{layer.name}/{phase}", s
    return Estimate(arch.name, BASE_BYTES + memory, memory_layer, passes, where, steps, total)


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


def guard_run(archs: Sequence[ArchSpec], layers: Sequence[Layer], phases: Sequence[Phase],
              densities: Mapping[str, float], tensors: Mapping[str, object] | None = None, fidelity: Fidelity = "fast",
              *, concurrent: int = 1, force: bool = False) -> list[Estimate]:
    """Estimate every design (densities measured on ``tensors`` when given) and ``check_resources``."""
    if tensors is not None:
        densities = overall_densities(list(tensors.values()))  # type: ignore[arg-type]
    estimates = [estimate_run(arch, layers, phases, densities, fidelity) for arch in archs]
    check_resources(estimates, concurrent=concurrent, force=force)
    return estimates


__all__ = ["MAX_PASSES", "MAX_RUN_PE_STEPS", "Estimate", "available_memory_bytes", "check_resources", "estimate_run",
           "guard_run", "layer_memory", "phase_steps"]
