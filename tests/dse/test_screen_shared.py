"""The analytic screen's reuse across designs (antsim.dse.screen): the parts kept on a phase's operands
(stride classes, fetch sets and their membership table) and the prices made once per design give, design
after design, exactly what a cold run of the same design gives; ``priced`` is ``antsim.energy.price``."""

from __future__ import annotations

from dataclasses import asdict

import pytest
from sweep_helpers import ANT, REPO

from antsim.dse.screen import PhaseOperands, design_prices, estimate_phase, phase_operands, priced
from antsim.energy import price
from antsim.sparsity.generators import make_tensors
from antsim.spec.arch import ArchSpec, arch_from_dict, load_arch
from antsim.workloads.layers import Layer

LAYERS = [
    Layer(name="s1", N=1, C=4, K=6, H=9, W=8, R=3, S=3, stride=1, pad=1),
    Layer(name="s2", N=1, C=4, K=6, H=9, W=8, R=3, S=3, stride=2, pad=1),  # stride classes
]


def _arch(**changes: object) -> ArchSpec:
    """ant.yaml with dotted-key changes (``pe_array.rows=3``)."""
    data = load_arch(ANT).to_dict()
    for dotted, value in changes.items():
        section, key = dotted.split("__")
        data[section][key] = value
    return arch_from_dict(data)


# Each design changes one parameter of the one before it, each key of the kept parts among them (grid rows,
# columns, stride phases, the fetch filter through the policy) and ones they must not depend on (Kc, F, I,
# banks, the input buffer); the last returns to the first design.
SEQUENCE = [
    {"pe_array__rows": 2, "pe_array__cols": 3, "mapping__output_channel_group": 2},
    {"pe_array__rows": 3, "pe_array__cols": 3, "mapping__output_channel_group": 2},
    {"pe_array__rows": 3, "pe_array__cols": 2, "mapping__output_channel_group": 2},
    {"pe_array__rows": 3, "pe_array__cols": 2, "mapping__output_channel_group": 4},
    {"pe_array__rows": 3, "pe_array__cols": 2, "mapping__output_channel_group": 4, "mapping__stride_phases": False},
    {"pe_array__rows": 3, "pe_array__cols": 2, "mapping__output_channel_group": 4, "anticipation__policy": "none"},
    {"pe_array__rows": 3, "pe_array__cols": 2, "mapping__output_channel_group": 4, "pe_array__F": 2,
     "pe_array__I": 8},
    {"pe_array__rows": 3, "pe_array__cols": 2, "mapping__output_channel_group": 4, "accumulators__banks": 8,
     "buffers__input_kb": 1.0},
    {"pe_array__rows": 2, "pe_array__cols": 3, "mapping__output_channel_group": 2},
]


def _cold(layer: Layer, phase: str) -> PhaseOperands:
    tensors = make_tensors(layer, 0.4, 0.35, 0.3, model="uniform", seed=3)
    return phase_operands(layer, phase, tensors)  # type: ignore[arg-type]


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", ["fprop", "dgrad", "wgrad"])
def test_kept_parts_give_a_cold_runs_estimate(layer: Layer, phase: str) -> None:
    warm = _cold(layer, phase)
    for changes in SEQUENCE:
        arch = _arch(**changes)
        assert asdict(estimate_phase(arch, warm)) == asdict(estimate_phase(arch, _cold(layer, phase))), changes
    grids = {key[1:3] for key in warm.shared if key[0] == "fetch_sets"}
    assert grids == {(2, 3), (3, 3), (3, 2)}  # kept per grid, not recomputed per design
    assert {key for key in warm.shared if key[0] == "stride_classes"} == {("stride_classes", True),
                                                                          ("stride_classes", False)}


@pytest.mark.parametrize("arch_file", ["ant.yaml", "scnn.yaml", "dense.yaml"])
def test_priced_is_price_to_the_last_bit(arch_file: str) -> None:
    arch = load_arch(REPO / "arch_configs" / arch_file)
    layer = LAYERS[1]
    tensors = make_tensors(layer, 0.4, 0.35, 0.3, model="uniform", seed=3)
    prices = design_prices(arch)
    for phase in ("fprop", "dgrad", "wgrad"):
        est = estimate_phase(arch, phase_operands(layer, phase, tensors, not arch.sparsity_support))  # type: ignore[arg-type]
        assert est.time_s > 0
        assert priced(est.actions, prices, est.time_s) == price(est.actions, arch, est.time_s)


def test_kept_parts_are_bounded_and_made_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    from antsim.dse import screen

    monkeypatch.setattr(screen, "SHARED_ENTRIES", 2)
    layer, warm = LAYERS[0], _cold(LAYERS[0], "fprop")
    for changes in SEQUENCE:
        arch = _arch(**changes)
        assert asdict(estimate_phase(arch, warm)) == asdict(estimate_phase(arch, _cold(layer, "fprop"))), changes
        assert len(warm.shared) <= 2


