"""Accelerator architecture spec: YAML → frozen, validated ``ArchSpec``.

One model class per YAML section (timeloopfe style). Ranges are declared once, here, with pydantic
``Field`` constraints; the sweep code validates sampled points and range bounds by building an
``ArchSpec`` through ``arch_from_dict`` — the same code path as a file.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from antsim.errors import SpecError
from antsim.spec.yamlio import load_yaml, validate_model
from antsim.vocabulary import Policy


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class Technology(_Section):
    """Process node, clock and the energy/area tables that price actions."""

    node_nm: int = Field(16, ge=5, le=180, description="process node (nm); informational, tables are per node")
    clock_ghz: float = Field(1.0, gt=0, le=10, description="core clock (GHz)")
    energy_table: str = Field("default_16nm", min_length=1,
                              description="builtin table name (antsim/energy/tables/NAME.yaml) or YAML path")
    area_table: str = Field("default_16nm", min_length=1,
                            description="builtin table name (antsim/energy/tables/NAME.yaml) or YAML path")


class PEArray(_Section):
    """A rows × cols grid of PEs, each an F × I multiplier array (all F·I pairs per cycle)."""

    rows: int = Field(8, ge=1, le=64, description="PE rows (tiles along the plane's height)")
    cols: int = Field(8, ge=1, le=64, description="PE columns (tiles along the plane's width)")
    F: int = Field(4, ge=1, le=64, description="streamed-operand vector width (weights in fprop)")
    I: int = Field(4, ge=1, le=64, description="stationary-operand vector width (activations in fprop)")
    multiplier_bits: int = Field(16, ge=4, le=32, description="operand width (bits)")

    @property
    def n_pes(self) -> int:
        return self.rows * self.cols

    @property
    def multipliers(self) -> int:
        return self.rows * self.cols * self.F * self.I


class Accumulators(_Section):
    """Banked accumulator buffer behind the F·I × banks scatter crossbar, per PE."""

    banks: int = Field(32, ge=1, le=1024, description="accumulator banks per PE")
    entries_per_bank: int = Field(32, ge=1, le=65536, description="entries per bank (per buffer half)")
    value_bits: int = Field(24, ge=8, le=64, description="partial-sum width (bits)")
    double_buffered: bool = Field(True, description="drain one half while the other accumulates")
    bank_hash: Literal["sliced", "xor", "mod"] = Field(
        "sliced",
        description="accumulator bank of an output entry: sliced (F bank groups, one per output channel mod F;"
                    " the entry's index within its channel mod banks/F picks the bank: a streamed vector's F"
                    " channels never collide; banks a multiple of F), xor (the region index's log2(banks)-bit"
                    " slices XORed; banks a power of two) or mod (region index mod banks)")
    drop_invalid: Literal["before_crossbar", "at_bank"] = Field(
        "before_crossbar",
        description="where a product whose output coordinate is out of range (an RCP) is dropped: before the"
                    " scatter crossbar (its coordinate is computed beside the multiply, so its request is"
                    " simply not raised) or at the accumulator bank (it is routed, then discarded)")
    queue_depth: int = Field(
        0, ge=0, le=1024,
        description="products buffered in a FIFO in front of each accumulator bank (docs/accumulator_banks.md)."
                    " 0 (default; no source gives SCNN a queue, DNNsim models none): the array stalls until"
                    " every product of a pair is written, max(1, largest bank load) cycles; Q > 0: it stalls"
                    " only while a bank's backlog exceeds Q (scatter-network FIFOs as in Kim, Park & Park,"
                    " IEEE Access 2022)")


class Buffers(_Section):
    """Per-PE on-chip buffers (SCNN: 10 KB IARAM + 10 KB OARAM, 50-entry weight FIFO)."""

    input_kb: float = Field(10.0, gt=0, le=4096, description="stationary-operand buffer per PE (KB)")
    output_kb: float = Field(10.0, gt=0, le=4096, description="output buffer per PE (KB)")
    weight_fifo_entries: int = Field(50, ge=1, le=65536, description="streamed-operand FIFO entries per PE")


class Mapping(_Section):
    """How a phase is laid onto the PE array."""

    output_channel_group: int = Field(
        8, ge=0, le=4096,
        description="Kc: output channels per group (barrier unit); 0 = per layer and phase, as many as one"
                    " accumulator half (banks x entries_per_bank) holds for a PE's output window, halo included"
                    " (wgrad: C x R x S partial sums per channel) — SCNN's and DNNsim's rule")
    stride_phases: bool = Field(False, description="split strided operands into stride phases (fewer RCPs)")
    streamed_order: Literal["channel_inner", "spatial_inner"] = Field(
        "channel_inner",
        description="order of a streamed block's non-zeros: output channel innermost (an F-vector spans"
                    " channels, so its products land on distinct outputs) or spatial innermost (raster order"
                    " within a channel: neighbouring taps send products to the same output → bank conflicts)")
    wgrad_partition: Literal["planar", "output"] = Field(
        "planar",
        description="wgrad work split: planar (SCNN: each PE a spatial tile, partial sums of every dW entry"
                    " reduced across PEs) or output (dense designs only: each PE owns a block of dW entries,"
                    " no cross-PE reduction)")
    pe_sync: Literal["fifo", "free"] = Field(
        "fifo",
        description="how far the PEs of a chunk may drift apart: fifo (a PE runs at most"
                    " buffers.weight_fifo_entries F-vectors of the streamed operand ahead of the slowest, as"
                    " SCNN's broadcast weight FIFO allows) or free (unbounded until the chunk barrier)")
    dense_packing: Literal["ideal", "cartesian"] = Field(
        "ideal",
        description="dense designs only: ideal (only the element pairs that meet at an output are formed and"
                    " packed into full F*I cycles: a lower bound on dense time) or cartesian (SCNN's DCNN: the"
                    " same planar tiling and F x I Cartesian pairing as SCNN over every element, zeros and"
                    " border pairs included, so small tiles fragment the multipliers as SCNN's do)")
    batch_tile: int = Field(
        0, ge=0, le=4096,
        description="images whose stationary tiles the input buffer holds at once; the loop order is batch"
                    " tile > output-channel group > image, so a tile streams each weight group from DRAM once and"
                    " accumulates dW over its images before one cross-PE reduction and write-back. 0 (default):"
                    " as many images as buffers.input_kb holds; 1: one image at a time (weights re-read and dW"
                    " reduced per image)")
    wgrad_dy: Literal["broadcast", "tiled"] = Field(
        "broadcast",
        description="how wgrad's streamed operand (dY, a plane as large as the activations) reaches the PEs:"
                    " broadcast (default: every PE receives the image's whole dY block, as SCNN broadcasts its"
                    " weight blocks; the reading under which the ANT paper's RCP shares hold, docs/model.md) or"
                    " tiled (each PE receives only the dY non-zeros within the kernel's reach of its activation"
                    " tile; those never delivered are not candidate pairs). Designs with"
                    " anticipation.fetch_filter deliver by reach in every phase")
    gemm: Literal["auto", "scnn", "cartesian"] = Field(
        "auto",
        description="GEMM layers (antsim.dataflow.gemm): scnn (SCNN's FC mapping, a 1x1 conv on an N x 1 plane),"
                    " cartesian (vectors along the reduction dimension k; mismatched k are RCPs) or auto (scnn"
                    " on a sparse design with policy none, cartesian otherwise)")


class Anticipation(_Section):
    """The RCP anticipation unit (ANT) in front of each PE's multiplier array."""

    policy: Policy = Field("none", description="none | ant | oracle")
    pairs_per_cycle: float = Field(4.0, gt=0, le=1024, description="candidate vector pairs screened per cycle")
    fetch_filter: bool = Field(True, description="fetch only streamed rows that can reach the stationary tile")


class Compression(_Section):
    """Compressed operand format: values plus indices."""

    format: Literal["zero_run", "bitmap", "coordinate", "dense"] = Field("zero_run", description="index format")
    value_bits: int = Field(16, ge=4, le=32, description="bits per stored value")
    index_bits: int = Field(4, ge=0, le=32, description="bits per index (zero-run length, coordinate, …)")


class Dram(_Section):
    """Off-chip memory channel shared by all PEs."""

    bandwidth_gbps: float = Field(25.6, gt=0, le=100000, description="bandwidth (GB/s)")
    technology: str = Field("lpddr4", min_length=1, description="energy-table key for DRAM pJ/bit")


class ArchSpec(_Section):
    """A whole accelerator design."""

    kind: Literal["arch"] = "arch"
    version: Literal[1] = 1
    name: str = Field(min_length=1)
    description: str = ""
    sparsity_support: bool = Field(True, description="false: a dense design that multiplies zeros too")
    technology: Technology = Technology()
    pe_array: PEArray = PEArray()
    accumulators: Accumulators = Accumulators()
    buffers: Buffers = Buffers()
    mapping: Mapping = Mapping()
    anticipation: Anticipation = Anticipation()
    compression: Compression = Compression()
    dram: Dram = Dram()

    @property
    def screens_pairs(self) -> bool:
        """Whether each PE has an RCP anticipation unit screening its pairs (a sparse design whose policy is
        not ``none``)."""
        return self.sparsity_support and self.anticipation.policy != "none"

    def to_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        if data["mapping"]["gemm"] == "auto":  # the default is left out: conv-only results echo the spec as before
            del data["mapping"]["gemm"]
        return data


_TABLE_KEYS = ("energy_table", "area_table")


def _resolve_table_paths(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """Make table paths that look like files relative to the arch file's folder."""
    tech = data.get("technology")
    if not isinstance(tech, dict):
        return data
    data = copy.deepcopy(data)
    for key in _TABLE_KEYS:
        value = data["technology"].get(key)
        if isinstance(value, str) and (value.endswith((".yaml", ".yml")) or "/" in value):
            path = Path(value)
            data["technology"][key] = str(path if path.is_absolute() else (base / path).resolve())
    return data


def arch_from_dict(data: dict[str, Any], source: str = "<dict>") -> ArchSpec:
    """Validate a plain dict as an ``ArchSpec``.

    Raises:
        SpecError: naming ``source``, the dotted key path and the value.
    """
    arch = validate_model(ArchSpec, data, source)
    if not arch.sparsity_support and arch.anticipation.policy != "none":
        raise SpecError(source, "anticipation.policy", "must be 'none' in a dense design (sparsity_support: false)",
                        arch.anticipation.policy)
    banks, bank_hash = arch.accumulators.banks, arch.accumulators.bank_hash
    if bank_hash == "xor" and banks & (banks - 1):
        raise SpecError(source, "accumulators.banks", "must be a power of two with bank_hash 'xor' (or use"
                        " bank_hash 'mod')", banks)
    if bank_hash == "sliced" and banks % arch.pe_array.F:
        raise SpecError(source, "accumulators.banks", f"must be a multiple of pe_array.F = {arch.pe_array.F} with"
                        " bank_hash 'sliced' (or use bank_hash 'mod')", banks)
    if arch.sparsity_support and arch.mapping.dense_packing != "ideal":
        raise SpecError(source, "mapping.dense_packing", "applies to dense designs only (sparsity_support: false)",
                        arch.mapping.dense_packing)
    if arch.sparsity_support and arch.mapping.wgrad_partition != "planar":
        raise SpecError(source, "mapping.wgrad_partition",
                        "must be 'planar' in a sparse design (only a dense engine keeps its products within a"
                        " block of outputs)", arch.mapping.wgrad_partition)
    _check_physical_minimums(arch, source)
    return arch


def _check_physical_minimums(arch: ArchSpec, source: str) -> None:
    """Refuse a priced capacity or width below what the modelled function needs (issue 15: a 0-bit index,
    a 2.6-byte output buffer or a 1-entry FIFO cost less area yet ran exactly as fast)."""
    comp = arch.compression
    if arch.sparsity_support and comp.format in ("zero_run", "coordinate") and comp.index_bits < 1:
        # a 0-bit run length cannot encode a zero run (every zero would need a placeholder the size
        # model prices at zero), and a 0-bit coordinate names one position only
        raise SpecError(source, "compression.index_bits", f"must be >= 1 with format '{comp.format}' (a 0-bit"
                        " index cannot locate a non-zero)", comp.index_bits)
    if arch.sparsity_support and comp.format == "bitmap" and comp.index_bits != 0:
        # bitmap sizes are values + one mask bit per position (spec/encoding.py): a per-value index would be
        # priced in every stored word (energy/geometry.word_bits) and never used
        raise SpecError(source, "compression.index_bits", "must be 0 with format 'bitmap' (the mask, one bit per"
                        " position, replaces the per-value index)", comp.index_bits)
    fifo = arch.buffers.weight_fifo_entries
    if fifo < 2:
        # an entry holds one F-vector (energy/geometry.weight_fifo_bits); the PE takes one F-vector per
        # cycle, so issuing at one F x I pair per cycle needs one entry read while the next is written
        raise SpecError(source, "buffers.weight_fifo_entries", "must be >= 2 (one F-vector read by the"
                        " multipliers while the next is written)", fifo)
    acc = arch.accumulators
    drained_bytes = acc.banks * acc.entries_per_bank * acc.value_bits / 8
    if arch.buffers.output_kb * 1024 < drained_bytes:
        # the drain moves a whole accumulator half into the output buffer before write-back
        raise SpecError(source, "buffers.output_kb", f"must hold one drained accumulator half: >= banks x"
                        f" entries_per_bank x value_bits / 8 = {drained_bytes:g} B ="
                        f" {drained_bytes / 1024:g} KB", arch.buffers.output_kb)


def load_arch(path: str | Path) -> ArchSpec:
    """Load and validate an arch YAML file (``kind: arch``).

    Raises:
        SpecError: missing file, malformed YAML, unknown key, wrong type or out-of-range value.
    """
    path = Path(path)
    data = load_yaml(path, kind="arch")
    return arch_from_dict(_resolve_table_paths(data, path.parent), source=str(path))


def arch_field_paths() -> dict[str, Any]:
    """Every tunable leaf of ``ArchSpec`` as ``dotted.path → pydantic FieldInfo`` (for sweeps and docs)."""
    out: dict[str, Any] = {}
    for section, info in ArchSpec.model_fields.items():
        ann = info.annotation
        if isinstance(ann, type) and issubclass(ann, _Section):
            for leaf, leaf_info in ann.model_fields.items():
                out[f"{section}.{leaf}"] = leaf_info
        elif section not in ("kind", "version", "name", "description"):
            out[section] = info
    return out


__all__ = ["ArchSpec", "SpecError", "arch_field_paths", "arch_from_dict", "load_arch"]
