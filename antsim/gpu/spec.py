"""GPU spec: YAML (``kind: gpu``) → frozen, validated ``GpuSpec``; builtin GPUs by name.

Builtin specs live in ``antsim/gpu/specs/NAME.yaml`` (shipped with the package) and are mirrored
in the repository's ``arch_configs/gpus/NAME.yaml`` (a test keeps the two identical). Every number
in them carries its source (``docs/gpu_specs.md`` tags ``[C#]``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from antsim.errors import AntsimError, SpecError
from antsim.spec.yamlio import load_yaml, validate_model
from antsim.vocabulary import Precision

SPEC_DIR = Path(__file__).with_name("specs")

# Model precisions: bytes per operand element, the peak they run at, and whether the GEMM main loop
# uses tensor-core MMA tiles (when the GPU has tensor cores). ``fp16_pseudo``: fp16 storage, fp32
# arithmetic (cuDNN's PSEUDO_HALF_CONFIG). ``fp16`` on a GPU without tensor cores is TRUE_HALF_CONFIG:
# half2 arithmetic at the ``fp16`` peak (``GpuSpec.true_half``; docs/gpu_precision.md).
PRECISIONS: dict[Precision, tuple[int, str]] = {
    "fp32": (4, "fp32"),
    "tf32": (4, "tf32"),
    "fp16": (2, "fp16"),
    "bf16": (2, "bf16"),
    "fp16_pseudo": (2, "fp32"),
}


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


def _peak(description: str) -> Any:
    return Field(None, gt=0, le=100000, description=description)


class Peaks(_Section):
    """Dense peak throughput per precision (TFLOP/s, 1 FMA = 2 FLOP). Absent = the GPU lacks it."""

    fp32: float = Field(gt=0, le=100000, description="FP32 SIMT peak (TFLOP/s)")
    tf32: float | None = _peak("TF32 tensor-core dense peak (TFLOP/s)")
    fp16: float | None = _peak("FP16 peak (TFLOP/s): tensor cores if present, else SIMT half2")
    bf16: float | None = _peak("BF16 tensor-core dense peak (TFLOP/s)")


class Dram(_Section):
    """Off-chip memory."""

    type: Literal["gddr5", "gddr5x", "gddr6", "gddr6x", "hbm2", "hbm2e", "hbm3", "hbm3e"] = Field(
        description="memory technology")
    bandwidth_gbs: float = Field(gt=0, le=100000, description="datasheet bandwidth (GB/s)")
    achievable_gbs: float | None = Field(None, gt=0, le=100000,
                                         description="measured achievable bandwidth (GB/s); default 0.9 x datasheet")
    pj_per_bit: float = Field(gt=0, le=100, description="access energy (pJ/bit)")


class L2(_Section):
    """Last-level on-chip cache."""

    size_mb: float = Field(gt=0, le=1024, description="capacity (MB, 2^20 bytes)")
    bandwidth_gbs: float = Field(gt=0, le=1000000, description="achievable bandwidth (GB/s)")


class Power(_Section):
    """Board power envelope (see antsim/gpu/energy.py for the power model)."""

    tdp_w: float = Field(gt=0, le=5000, description="thermal design power (W)")
    static_w: float = Field(ge=0, le=5000, description="static + idle power while a kernel runs (W)")

    @model_validator(mode="after")
    def _static_below_tdp(self) -> Power:
        # The dynamic budget is tdp_w - static_w (antsim/gpu/energy.py); at or below zero every FLOP would
        # be free and the core energy 0 J, a silently wrong answer.
        if self.static_w >= self.tdp_w:
            raise ValueError(f"static_w ({self.static_w} W) must be below tdp_w ({self.tdp_w} W)")
        return self


class GpuSpec(_Section):
    """One GPU."""

    kind: Literal["gpu"] = "gpu"
    version: Literal[1] = 1
    name: str = Field(min_length=1)
    description: str = ""
    sms: int = Field(ge=1, le=1024, description="streaming multiprocessors")
    clock_mhz: float = Field(gt=0, le=5000, description="boost clock (MHz)")
    sustained_clock_mhz: float | None = Field(
        None, gt=0, le=5000,
        description="SM clock the GPU runs a kernel at under the measured conditions (MHz), when a source reports"
                    " it: a GeForce card below its power and temperature limits runs at the top of its V/F curve"
                    " (nvidia-smi 'Max Clocks'), above the rated boost clock; a power-capped card runs below it."
                    " Default: clock_mhz")
    tensor_cores: bool = Field(description="true: fp16/bf16/tf32 GEMMs run on tensor-core MMA tiles")
    sparse_tensor_cores: bool = Field(False, description="true: tensor cores run 2:4 structured-sparse MMA at"
                                                         " twice the dense rate (Ampere and later)")
    smem_per_sm_kb: float = Field(gt=0, le=4096, description="max shared memory per SM (KB)")
    regs_per_sm: int = Field(65536, ge=1024, le=1048576, description="32-bit registers per SM")
    max_ctas_per_sm: int = Field(32, ge=1, le=128, description="resident CTAs per SM limit")
    max_threads_per_sm: int = Field(2048, ge=32, le=4096, description="resident threads per SM limit (2048 on"
                                    " cc 5.x-9.0 except Turing's 1024, CUDA programming guide)")
    architecture: Literal["maxwell", "pascal", "volta", "turing", "ampere", "hopper"] | None = Field(
        None, description="GPU generation (tensor-core tile menu); default inferred from the other keys")
    peak_tflops: Peaks
    dram: Dram
    l2: L2
    power: Power

    @model_validator(mode="after")
    def _sparse_needs_tensor_cores(self) -> GpuSpec:
        if self.sparse_tensor_cores and not self.tensor_cores:
            raise ValueError("sparse_tensor_cores: true needs tensor_cores: true")
        return self

    def peak(self, precision: Precision) -> float:
        """Dense peak of ``precision`` in FLOP/s.

        Raises:
            AntsimError: unknown precision, or one this GPU lacks (one line).
        """
        key = precision_key(precision)
        value = getattr(self.peak_tflops, key)
        if value is None:
            have = [p for p in PRECISIONS if getattr(self.peak_tflops, PRECISIONS[p][1]) is not None]
            raise AntsimError(f"gpu {self.name}: precision {precision!r} not available; has {', '.join(have)}")
        return value * 1e12

    def uses_tensor_cores(self, precision: Precision) -> bool:
        """True when ``precision`` runs on tensor-core MMA tiles on this GPU."""
        return self.tensor_cores and PRECISIONS[precision][1] != "fp32"

    def true_half(self, precision: Precision) -> bool:
        """True when ``precision`` computes in fp16 on the SIMT lanes (half2, no tensor cores): cuDNN's
        TRUE_HALF_CONFIG (fp16 tensors and an fp16 convolution compute type), e.g. fp16 on a P100."""
        return PRECISIONS[precision][1] == "fp16" and not self.tensor_cores

    @property
    def fp32_lanes_per_sm(self) -> float:
        """FP32 FMA lanes per SM, from FP32 peak = 2 × lanes × SMs × clock (docs/gpu_specs.md [I])."""
        return self.peak_tflops.fp32 * 1e12 / (2 * self.sms * self.clock_mhz * 1e6)

    @property
    def sm_clock_hz(self) -> float:
        """The clock the SMs run kernels at (Hz): ``sustained_clock_mhz`` if given, else the boost clock."""
        return (self.sustained_clock_mhz or self.clock_mhz) * 1e6

    @property
    def clock_scale(self) -> float:
        """SM clock over the boost clock the datasheet peaks are quoted at: scales every SM pipe's rate
        (FMA, INT32, shared memory); DRAM runs on its own clock and is not scaled."""
        return self.sm_clock_hz / (self.clock_mhz * 1e6)

    def sustained_peak(self, precision: Precision) -> float:
        """``peak(precision)`` at the SM clock kernels run at (``clock_scale``): what the SM pipes deliver;
        ``peak`` stays the datasheet figure, quoted at the boost clock."""
        return self.peak(precision) * self.clock_scale

    @property
    def dram_bytes_per_s(self) -> float:
        """Achievable DRAM bandwidth (B/s): measured if given, else 0.9 of the datasheet figure."""
        measured = self.dram.achievable_gbs
        return (measured if measured is not None else DRAM_EFFICIENCY * self.dram.bandwidth_gbs) * 1e9

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# Achievable fraction of datasheet DRAM bandwidth: Lin et al. measured V100 817/900 = 0.91 and
# A100 1391/1555 = 0.89 (docs/gpu_specs.md §4.3, docs/sources.md §1.6 "DRAM ≈ 0.9 of spec").
DRAM_EFFICIENCY = 0.9


def precision_key(precision: str) -> str:
    """The ``peak_tflops`` key a model precision runs at.

    Raises:
        AntsimError: unknown precision.
    """
    if precision not in PRECISIONS:
        raise AntsimError(f"precision: unknown {precision!r}; known: {', '.join(PRECISIONS)}")
    return PRECISIONS[precision][1]


def gpu_names() -> list[str]:
    """Names of the builtin GPUs."""
    return sorted(p.stem for p in SPEC_DIR.glob("*.yaml"))


def gpu_from_dict(data: dict[str, Any], source: str = "<dict>") -> GpuSpec:
    """Validate a plain dict as a ``GpuSpec``.

    Raises:
        SpecError: naming ``source``, the dotted key path and the value.
    """
    return validate_model(GpuSpec, data, source)


def load_gpu(name_or_path: str | Path) -> GpuSpec:
    """A builtin GPU by name (``p100``, ``a100``, …) or a GPU YAML file.

    Raises:
        SpecError: unknown name, missing file, malformed YAML, missing/negative/unknown keys.
    """
    text = str(name_or_path)
    path = Path(text)
    if not (path.suffix in (".yaml", ".yml") or "/" in text or path.is_file()):
        builtin = SPEC_DIR / f"{text.lower()}.yaml"
        if not builtin.is_file():
            raise SpecError(text, "", f"unknown GPU; known: {', '.join(gpu_names())} (or a YAML path)")
        path = builtin
    data = load_yaml(path, kind="gpu")
    return gpu_from_dict(data, source=str(path))


__all__ = ["PRECISIONS", "GpuSpec", "gpu_from_dict", "gpu_names", "load_gpu", "precision_key"]
