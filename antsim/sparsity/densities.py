"""Operand densities of one training step, validated by one rule in one place.

A density is the fraction of an operand's elements that are non-zero. The operands a training step's
convolutions and GEMMs read are keyed as everywhere in antsim (CLI flags ``--density-*``, the sweep spec's
``workload.densities``, the regimes and the result's ``workload.densities`` echo):

| key | operand | read by |
|---|---|---|
| ``w`` | weights W | fprop, dgrad |
| ``a`` | forward activations A | fprop (and wgrad when no saved copy is given) |
| ``g`` | output gradients dY | dgrad, wgrad |
| ``a_saved`` | the copy of A saved for wgrad (SWAT's top-k copy) | wgrad |
| ``attn`` | attention matrices (softmax P) of GEMM layers | ``antsim.sparsity.gemm`` |

**The rule: a density lies in (0, 1].** 1 is a dense operand. 0 is refused: an operand with no non-zero
at all makes the step it enters compute nothing (every product is zero), so speedups, energy per product
and RCP fractions of that step are 0/0, and the compressed-size formulas are defined on (0, 1] only
(``antsim.spec.encoding.bits_per_value``; ``antsim.simulate`` clamps the one density it derives itself,
the outputs', to 1e-6 for that reason). A density measured from given tensors may be 0 (an all-zero captured operand)
and is echoed as measured; this rule is for densities a user asks the generators for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Literal, get_args

from antsim.errors import AntsimError

DensityKey = Literal["w", "a", "g", "a_saved", "attn"]
DENSITY_KEYS: tuple[DensityKey, ...] = get_args(DensityKey)
#: What each key holds, in the words of the error messages.
OPERAND_NAMES: Mapping[str, str] = {
    "w": "weights", "a": "activations", "g": "output gradients", "a_saved": "saved activations",
    "attn": "attention matrices",
}
RULE = "must be in (0, 1]"
_REQUIRED: tuple[DensityKey, ...] = ("w", "a", "g")
# The default density of generated W, A and dY: the ANT paper's 90 % sparse regime (Sarma et al., ISCA
# 2022, "ANT": W, A and dY at 90 % sparsity), as ``antsim simulate`` has always used.
DEFAULT_DENSITY = 0.1


class DensityError(AntsimError):
    """A density that breaks the rule, or an unknown density key, in domain terms.

    ``key`` is the density key (``"a"``), ``rule`` the rule broken, ``value`` the value received (``None``
    for an unknown key, which the message names itself). Callers that know where the densities came from
    (a CLI flag, a spec key) re-raise with ``at(prefix)`` in front: ``"densities.a"``, or ``"densities"``
    for an unknown key.
    """

    def __init__(self, key: str, rule: str, value: object = None, *, unknown_key: bool = False) -> None:
        self.key, self.rule, self.value, self.unknown_key = key, rule, value, unknown_key
        super().__init__(rule if unknown_key else f"{rule}; got {value!r}")

    def at(self, prefix: str) -> str:
        """Where the error lies under ``prefix``: ``prefix.key`` for a bad value, ``prefix`` for a bad key."""
        return prefix if self.unknown_key else f"{prefix}.{self.key}"


def check_density(key: str, value: object, name: str | None = None) -> float:
    """``value`` as the float density of operand ``key``, by THE rule: a real number in (0, 1].

    ``name`` is the operand's name in the message (default: ``OPERAND_NAMES[key]``, else ``key``).

    Raises:
        DensityError: ``"density of activations must be in (0, 1]; got 0"`` (also for nan, bools, text).
    """
    name = name or OPERAND_NAMES.get(key, key)
    # nan fails the comparison too; a bool is an int to Python but never a fraction of non-zeros
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value <= 1.0:
        raise DensityError(key, f"density of {name} {RULE}", value)
    return float(value)


def density_key(key: object) -> DensityKey:
    """``key`` as a density key.

    Raises:
        DensityError: an unknown key, listing the known ones.
    """
    if not isinstance(key, str) or key not in DENSITY_KEYS:
        raise DensityError(str(key), f"unknown key {key!r}; known: {', '.join(DENSITY_KEYS)}", unknown_key=True)
    return DENSITY_KEYS[DENSITY_KEYS.index(key)]


@dataclass(frozen=True, slots=True, eq=False)
class Densities(Mapping[str, float]):
    """The requested density of each operand (``w``, ``a``, ``g`` always; ``a_saved``, ``attn`` optional).

    Built only through the rule: every value given is checked by ``check_density`` at construction, so a
    ``Densities`` in hand is valid. It is a read-only mapping of the keys present (``None`` ones are left
    out), so it stands where a ``{"w": …, "a": …, "g": …}`` dict stood; ``to_dict`` is the JSON echo.
    """

    w: float = DEFAULT_DENSITY
    a: float = DEFAULT_DENSITY
    g: float = DEFAULT_DENSITY
    a_saved: float | None = None
    attn: float | None = None

    def __post_init__(self) -> None:
        for key in DENSITY_KEYS:
            value = getattr(self, key)
            if value is not None or key in _REQUIRED:
                object.__setattr__(self, key, check_density(key, value))

    @classmethod
    def from_mapping(cls, values: Mapping[str, object] | None) -> Densities:
        """Densities from ``{key: value}`` (missing ``w``/``a``/``g`` take the 0.1 default).

        Raises:
            DensityError: an unknown key or a value that breaks the rule (the first, in key order given).
        """
        checked: dict[DensityKey, float] = {}
        for name, value in (values or {}).items():
            key = density_key(name)
            if value is not None or key in _REQUIRED:  # an optional operand given as None is absent
                checked[key] = check_density(key, value)
        return cls(**checked)

    def to_dict(self) -> dict[str, float]:
        """The densities present, ``{key: float}`` (the result's ``workload.densities`` echo)."""
        return dict(self.items())

    def __getitem__(self, key: str) -> float:
        value = getattr(self, key, None) if key in DENSITY_KEYS else None
        if value is None:
            raise KeyError(key)
        return float(value)

    def __iter__(self) -> Iterator[str]:
        return (f.name for f in fields(self) if getattr(self, f.name) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    # Equal to any mapping with the same items (a dict included), as ``Mapping`` defines it; hashable.
    def __hash__(self) -> int:
        return hash(tuple(self.items()))


__all__ = ["DEFAULT_DENSITY", "DENSITY_KEYS", "OPERAND_NAMES", "RULE", "Densities", "DensityError", "DensityKey",
           "check_density", "density_key"]
