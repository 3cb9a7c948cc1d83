"""Named sparsity regimes of sparse training: which operand densities a training method produces.

A regime fixes the densities of the four operands the three training convolutions read — W, the
forward activations A, the copy of A saved for wgrad, and the output gradient dY — and the generator
that lays the non-zeros out. They replace ad-hoc density triples, so a study says which training
method its numbers stand for.

| regime | W | A (fprop) | saved A (wgrad) | dY | generator |
|---|---|---|---|---|---|
| ``swat`` | 0.1 | 0.5 | 0.1 | 1.0 | swat |
| ``swat-gs`` | 0.1 | 0.5 | 0.1 | 0.1 | swat |
| ``uniform`` | 0.1 | 0.1 | 0.1 | 0.1 | uniform |

* ``swat``: SWAT at 90 % sparsity — top-k W in fprop and dgrad, top-k A saved for wgrad; the forward A
  is the ReLU output (about half zeros); dY reaching a conv after BatchNorm is dense.
* ``swat-gs``: SWAT plus top-k gradient sparsification of dY at 90 % (the ANT paper's sparse-dY setting).
* ``uniform``: every operand a Bernoulli mask at 10 %: the unstructured stress case (no clustering).

Sources: SWAT — Raihan & Aamodt, "Sparse Weight Activation Training", NeurIPS 2020 (top-k of W in the
forward pass, top-k of the activations kept for the weight gradient, at 90 % sparsity in its main
results). The ReLU density of 0.5 is [assumption]: the fraction of positive pre-activations after
BatchNorm, whose output is zero-mean by construction; antsim's own captures (``antsim capture``)
measure it per layer. The dense dY under SWAT is measured by ``antsim capture`` (BN networks: dY of
every conv is dense). ANT (Sarma et al., ISCA 2022) evaluates SWAT with and without dY sparsity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from antsim.errors import AntsimError
from antsim.sparsity.densities import Densities


@dataclass(frozen=True)
class Regime:
    """A named training regime: operand densities (``w``, ``a``, ``g``, ``a_saved``; validated by the
    ``Densities`` rule when the regime is built) and generator."""

    name: str
    densities: Densities
    sparsity: str
    summary: str = field(default="", compare=False)


REGIMES: Mapping[str, Regime] = MappingProxyType({
    "swat": Regime("swat", Densities(w=0.1, a=0.5, g=1.0, a_saved=0.1), "swat",
                   "SWAT at 90% sparsity: top-k W and saved A, forward A at ReLU density, dense dY"),
    "swat-gs": Regime("swat-gs", Densities(w=0.1, a=0.5, g=0.1, a_saved=0.1), "swat",
                      "SWAT plus top-k dY gradient sparsification at 90%"),
    "uniform": Regime("uniform", Densities(w=0.1, a=0.1, g=0.1), "uniform",
                      "Bernoulli masks at 10% for every operand"),
})


def regime(name: str) -> Regime:
    """The regime called ``name``.

    Raises:
        AntsimError: an unknown name, listing the known ones.
    """
    if name not in REGIMES:
        raise AntsimError(f"regime: unknown name {name!r}; known: {', '.join(REGIMES)}")
    return REGIMES[name]


__all__ = ["REGIMES", "Regime", "regime"]
