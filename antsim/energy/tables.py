"""Energy/area reference tables: YAML data → frozen, validated ``EnergyTable``.

A table (``kind: energy_table``) holds, for one technology node:

- ``energy``: pJ per action for every component/action of ``antsim.energy.actions.ACTIONS`` except
  ``dram``, each quoted at the reference geometry in ``parameters`` (see tables/README.md for what each
  entry means and how it scales with the arch's sizes);
- ``parameters``: the reference geometry and the structure of the ANT anticipation unit;
- ``area``: unit areas (per multiplier, per bit, per KB, …);
- ``leakage``: static-power parameters;
- ``dram_pj_per_bit``: off-chip energy per bit, per DRAM technology.

Every number is validated once, here (unknown key, missing key, wrong type, negative value → one-line
``SpecError`` naming the file, the dotted key and the value); nothing downstream re-checks it.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from antsim.energy.actions import ACTIONS
from antsim.errors import SpecError
from antsim.spec.yamlio import load_yaml, validate_model

TABLES_DIR = Path(__file__).with_name("tables")

# Off-chip energy is per DRAM technology (``dram_pj_per_bit``), not a single ``energy`` entry.
PRICED_PER_TECHNOLOGY = ("dram",)


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


def _component_model(component: str, actions: tuple[str, ...]) -> type[_Section]:
    fields: dict[str, Any] = {a: (float, Field(ge=0, description=f"pJ per {component}.{a}")) for a in actions}
    return create_model(f"Energy_{component}", __base__=_Section, **fields)


# Built from the contract so that a table must price exactly the actions the simulator can emit.
_ENTRY_FIELDS: dict[str, Any] = {
    c: (_component_model(c, a), ...) for c, a in ACTIONS.items() if c not in PRICED_PER_TECHNOLOGY
}
EnergyEntries: type[_Section] = create_model("EnergyEntries", __base__=_Section, **_ENTRY_FIELDS)


class Parameters(_Section):
    """Reference geometry of the ``energy``/``area`` entries and the anticipation unit's structure."""

    multiplier_bits: int = Field(ge=1, description="operand width the multiplier entries are quoted at")
    crossbar_outputs: int = Field(ge=1, description="outputs of the reference crossbar port")
    crossbar_bits: int = Field(ge=1, description="word width of the reference crossbar port")
    accumulator_ref_kb: float = Field(gt=0, description="bank size the accumulator entries are quoted at")
    accumulator_add_pj_per_bit: float = Field(ge=0, description="adder energy per partial-sum bit (pJ)")
    input_buffer_ref_kb: float = Field(gt=0, description="size the input_buffer entries are quoted at")
    output_buffer_ref_kb: float = Field(gt=0, description="size the output_buffer entries are quoted at")
    weight_fifo_ref_kb: float = Field(gt=0, description="size the weight_fifo entries are quoted at")
    storage_size_exponent: float = Field(ge=0, le=1, description="access energy per bit ∝ size^exponent")
    coordinate_bits: int = Field(ge=1, description="width of a coordinate / bound (coordinate, anticipation)")
    coordinate_adders: int = Field(ge=0, description="adders per output-coordinate unit")
    anticipation_comparators_per_lane: int = Field(ge=0, description="comparators per screening lane")
    anticipation_lane_bounds: int = Field(ge=0, description="coordinate registers per screening lane")
    anticipation_shared_bounds: int = Field(ge=0, description="coordinate registers shared by the lanes")


class Area(_Section):
    """Unit areas (µm² unless the key says mm²)."""

    multiplier_um2: float = Field(ge=0, description="one multiplier at parameters.multiplier_bits")
    adder_um2_per_bit: float = Field(ge=0, description="integer adder, per bit of width")
    crossbar_um2_per_input: float = Field(ge=0, description="one input port at the reference outputs/bits")
    register_file_um2_per_bit: float = Field(ge=0, description="register-file storage (accumulators, FIFO)")
    sram_mm2_per_kb: float = Field(ge=0, description="SRAM macro (input/output buffers), mm² per KB")
    comparator_um2_per_bit: float = Field(ge=0, description="magnitude comparator, per bit of width")
    register_um2_per_bit: float = Field(ge=0, description="flip-flop register, per bit")
    other_fraction: float = Field(ge=0, le=10, description="control/other area as a fraction of the rest")


class Leakage(_Section):
    """Static-power parameters."""

    logic_fraction_per_cycle: float = Field(ge=0, le=1, description="logic leakage per cycle / dynamic energy")
    register_uw_per_bit: float = Field(ge=0, description="register/RF storage leakage (µW per bit)")
    sram_uw_per_kb: float = Field(ge=0, description="SRAM leakage (µW per KB)")


class EnergyTable(_Section):
    """One technology's energy, area and leakage reference table (frozen)."""

    kind: Literal["energy_table"]
    version: Literal[1]
    name: str = Field(min_length=1)
    node_nm: int = Field(ge=1, le=1000)
    energy: EnergyEntries
    parameters: Parameters
    area: Area
    leakage: Leakage
    dram_pj_per_bit: dict[str, Annotated[float, Field(ge=0)]] = Field(min_length=1)
    source: str = Field("", description="file the table was read from (set by load_table)")

    def action_pj(self, component: str, action: str) -> float:
        """The table's ``energy`` entry for ``component.action`` (pJ at the reference geometry)."""
        return float(getattr(getattr(self.energy, component), action))

    def dram_pj(self, technology: str) -> float:
        """Off-chip energy per bit for ``technology`` (pJ).

        Raises:
            SpecError: the technology is not in the table's ``dram_pj_per_bit``.
        """
        if technology not in self.dram_pj_per_bit:
            known = ", ".join(sorted(self.dram_pj_per_bit))
            raise SpecError(self.source, f"dram_pj_per_bit.{technology}",
                            f"unknown DRAM technology; known: {known}", technology)
        return self.dram_pj_per_bit[technology]


def builtin_tables() -> list[str]:
    """Names of the tables shipped in antsim/energy/tables/."""
    return sorted(p.stem for p in TABLES_DIR.glob("*.yaml"))


def table_path(name_or_path: str | Path) -> Path:
    """Resolve a builtin table name or a file path.

    Raises:
        SpecError: a name (no ``/``, no ``.yaml``) that is not a builtin table.
    """
    text = str(name_or_path)
    if text.endswith((".yaml", ".yml")) or "/" in text or "\\" in text:
        return Path(text)
    path = TABLES_DIR / f"{text}.yaml"
    if not path.is_file():
        raise SpecError(text, "", f"unknown builtin energy table; known: {', '.join(builtin_tables())}", text)
    return path


def load_table(name_or_path: str | Path) -> EnergyTable:
    """Load a table by builtin name (antsim/energy/tables/NAME.yaml) or path; cached per path and content.

    Raises:
        SpecError: missing file, malformed YAML, wrong ``kind``/``version``, unknown component, action or
            key, a missing entry, a negative number; the message names the file, the key and the value.
    """
    path = table_path(name_or_path).resolve()
    if not path.is_file():
        raise SpecError(str(path), "", "file not found")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return _load_cached(str(path), digest)


@lru_cache(maxsize=64)
def _load_cached(path: str, digest: str) -> EnergyTable:
    """Parse and validate ``path``; ``digest`` (of its bytes) keys the cache so edits are seen."""
    data = load_yaml(path, kind="energy_table")
    if "kind" not in data:
        raise SpecError(path, "kind", "required key is missing (expected 'energy_table')")
    data = {**data, "source": path}
    return validate_model(EnergyTable, data, path)


__all__ = ["EnergyTable", "builtin_tables", "load_table", "table_path"]
