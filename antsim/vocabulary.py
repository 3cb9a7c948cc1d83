"""The closed vocabularies antsim's stages exchange, as literal types with their runtime tuples.

Each vocabulary is one ``Literal`` type; its tuple of values is derived from it with ``typing.get_args``,
so the values a runtime check accepts and the values the type checker allows cannot drift apart. A
``parse_*`` function turns a string from a user (CLI flag, CSV cell, YAML value) into the literal type, or
refuses it with one line that lists the known values; the caller names where the value came from.

| type | values | meaning |
|---|---|---|
| ``Phase`` | fprop, dgrad, wgrad | the three training convolutions (``antsim.phases``) |
| ``Policy`` | none, ant, oracle | RCP anticipation (``antsim.dataflow.anticipation``) |
| ``Fidelity`` | fast, exact | vector-level counts or every product enumerated (``antsim.dataflow.mapper``) |
| ``Precision`` | fp32, tf32, fp16, bf16, fp16_pseudo | GPU model arithmetic (``antsim.gpu.spec.PRECISIONS``) |
| ``Selection`` | timed, heuristic | how the GPU model picks a kernel (``antsim.gpu.menus``) |
| ``Library`` | cudnn5 … cudnn8 | the cuDNN generation whose kernel menu the GPU model uses (cudnn7.6: 7.4.1+) |
| ``TimingModel`` | events, closed_form | discrete-event timing or its recurrence (``antsim.sim``) |
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, TypeVar, get_args

from antsim.errors import AntsimError

Phase = Literal["fprop", "dgrad", "wgrad"]
Policy = Literal["none", "ant", "oracle"]
Fidelity = Literal["fast", "exact"]
# DeepBench's "pseudo fp16" (fp16 storage, fp32 arithmetic: cuDNN's PSEUDO_HALF_CONFIG) is fp16_pseudo.
Precision = Literal["fp32", "tf32", "fp16", "bf16", "fp16_pseudo"]
Selection = Literal["timed", "heuristic"]
Library = Literal["cudnn5", "cudnn6", "cudnn7", "cudnn7.6", "cudnn8"]
TimingModel = Literal["events", "closed_form"]
# The framework's tensor layout around a GPU training step's convolutions (``antsim.gpu.step``).
TensorLayout = Literal["nchw", "nhwc"]
# How the framework runs a GPU training step's memory-bound kernels: one per op, or XLA-fused (``antsim.gpu.step``).
StepFusion = Literal["eager", "xla"]

#: The values of each vocabulary, in the order of its type (``PHASES`` is also the canonical run order).
PHASES: tuple[Phase, ...] = get_args(Phase)
POLICIES: tuple[Policy, ...] = get_args(Policy)
FIDELITIES: tuple[Fidelity, ...] = get_args(Fidelity)
PRECISION_NAMES: tuple[Precision, ...] = get_args(Precision)
SELECTIONS: tuple[Selection, ...] = get_args(Selection)
LIBRARIES: tuple[Library, ...] = get_args(Library)
TIMING_MODELS: tuple[TimingModel, ...] = get_args(TimingModel)
LAYOUTS: tuple[TensorLayout, ...] = get_args(TensorLayout)
STEP_FUSIONS: tuple[StepFusion, ...] = get_args(StepFusion)

_Word = TypeVar("_Word", bound=str)


def parse_word(what: str, value: object, known: tuple[_Word, ...]) -> _Word:
    """``value`` as a word of the vocabulary ``known``.

    Raises:
        AntsimError: ``"<what>: unknown 'x'; known: a, b, c"``.
    """
    if not isinstance(value, str) or value not in known:
        raise AntsimError(f"{what}: unknown {value!r}; known: {', '.join(known)}")
    return known[known.index(value)]  # the tuple's own element: typed as the literal, no cast


def parse_phase(value: object, what: str = "phase") -> Phase:
    """``value`` as a ``Phase`` (AntsimError naming ``what`` and the known phases otherwise)."""
    return parse_word(what, value, PHASES)


def parse_policy(value: object, what: str = "anticipation.policy") -> Policy:
    """``value`` as a ``Policy`` (AntsimError naming ``what`` and the known policies otherwise)."""
    return parse_word(what, value, POLICIES)


def parse_fidelity(value: object, what: str = "fidelity") -> Fidelity:
    """``value`` as a ``Fidelity`` (AntsimError naming ``what`` and the known fidelities otherwise)."""
    return parse_word(what, value, FIDELITIES)


def parse_timing(value: object, what: str = "timing") -> TimingModel:
    """``value`` as a ``TimingModel`` (AntsimError naming ``what`` and the known timing models otherwise)."""
    return parse_word(what, value, TIMING_MODELS)


def parse_phases(values: object, what: str = "phases") -> tuple[Phase, ...]:
    """The phases named in ``values`` (an iterable of names), in canonical ``PHASES`` order.

    Raises:
        AntsimError: a name that is not a phase (``what`` names the argument).
    """
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise AntsimError(f"{what}: must be a sequence of phase names; got {values!r}")
    given = {parse_phase(value, what) for value in values}
    return tuple(phase for phase in PHASES if phase in given)


__all__ = [
    "FIDELITIES", "LAYOUTS", "LIBRARIES", "PHASES", "POLICIES", "PRECISION_NAMES", "SELECTIONS", "STEP_FUSIONS",
    "TIMING_MODELS", "Fidelity", "Library", "Phase", "Policy", "Precision", "Selection", "StepFusion",
    "TensorLayout", "TimingModel",
    "parse_fidelity", "parse_phase",
    "parse_phases", "parse_policy", "parse_timing", "parse_word",
]
