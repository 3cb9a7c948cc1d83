"""Sampled bank conflicts (``antsim.dataflow.exact``): exact when every pair fits the sample, else within tolerance."""

from __future__ import annotations

import numpy as np
import pytest
from dataflow_helpers import load_arch, random_tensors, small_arch

from antsim.dataflow import map_phase
from antsim.sparsity.generators import make_tensors
from antsim.workloads.layers import Layer


@pytest.mark.parametrize("policy", ["none", "ant", "oracle"])
def test_fast_conflicts_are_exact_when_every_pair_fits_the_sample(policy: str) -> None:
    layer = Layer("c", N=1, C=4, K=8, H=16, W=16, R=3, S=3, stride=1, pad=1)
    t = random_tensors(layer, 0.2, seed=13)
    arch = small_arch(policy, 4, 4, 4)
    for phase in ("fprop", "dgrad", "wgrad"):
        fast = map_phase(arch, layer, phase, t)
        exact = map_phase(arch, layer, phase, t, fidelity="exact")
        assert np.array_equal(fast.conflict_cycles, exact.conflict_cycles), phase


def _banks(arch):  # type: ignore[no-untyped-def]
    from antsim.dataflow.banks import BankMap

    return BankMap(arch.accumulators.banks, arch.accumulators.bank_hash, arch.pe_array.F)


def test_fast_conflict_estimates_stay_close_to_exact() -> None:
    """Stated tolerance: the sampled estimates (none/ant, and the oracle's sampled runs of packed
    pairs) within 15 % of exact in total."""
    from antsim.dataflow import exact as exact_mod

    layer = Layer("c", N=1, C=8, K=8, H=16, W=16, R=3, S=3, stride=1, pad=1)
    t = random_tensors(layer, 0.4, seed=14)
    arch = small_arch("none", 4, 4, 4)
    work = map_phase(arch, layer, "wgrad", t, fidelity="exact")
    exact = work.conflict_cycles.sum()
    context = _context(arch, layer, "wgrad", t)
    scaled, step = exact_mod.sampled_conflicts(context, "none", budget=2000)
    shrunk, _ = exact_mod.sampled_conflicts(context, "none", budget=2000, issued_pairs=work.issued_pairs.ravel())
    assert step > 10
    assert scaled.sum() == pytest.approx(exact, rel=0.15)
    assert shrunk.sum() == pytest.approx(exact, rel=0.15)
    # Per PE the shrunk estimate tracks the exact cycles better than the raw scaled sample.
    err = lambda est: np.abs(est - work.conflict_cycles.ravel()).sum()  # noqa: E731
    assert err(shrunk) < err(scaled)
    oracle = small_arch("oracle", 4, 4, 4)
    for phase in ("fprop", "dgrad", "wgrad"):
        work = map_phase(oracle, layer, phase, t, fidelity="exact")
        est, step = exact_mod.sampled_oracle_conflicts(_context(oracle, layer, phase, t, fetch_filter=True),
                                                       work.issued_pairs.ravel(), budget=500)
        assert step > 2, phase
        assert est.sum() == pytest.approx(work.conflict_cycles.sum(), rel=0.15), phase


def _context(arch, layer, phase, t, fetch_filter: bool = False):
    from antsim.dataflow.context import MappingContext
    from antsim.dataflow.fibers import StreamedInput, stationary_vectors, streamed_vectors
    from antsim.dataflow.options import MappingOptions
    from antsim.dataflow.pairing import make_cells
    from antsim.dataflow.tiling import make_tiling, stride_classes
    from antsim.phases import phase_problem

    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, arch.pe_array.rows, arch.pe_array.cols, arch.mapping.output_channel_group)
    classes = stride_classes(problem, False)
    stat = stationary_vectors(problem, tiling, classes, problem.stationary(t), False, arch.pe_array.I)
    streamed = streamed_vectors(problem, tiling, classes, StreamedInput(problem.streamed(t), arch.pe_array.F),
                                MappingOptions(fetch_filter=fetch_filter))
    cells = make_cells(problem, tiling, classes, stat, streamed)
    return MappingContext(problem, tiling, classes, stat, streamed, cells, _banks(arch), arch.pe_array.F,
                          arch.pe_array.I)


def test_oracle_fast_conflicts_on_dense_operands_follow_exact_per_pe() -> None:
    """Dense operands with padding: border pairs hold half groups, so where exact's group boundaries fall
    depends on every earlier pair of the slot. The estimate enumerates slots from their first pair, one
    per geometry class (interior, edge, corner), so the busiest PE's conflicts — which set the phase's
    cycles — match exact's; the earlier run-sampled estimate read 3× exact's busiest PE here (+25 % cycles)."""
    layer = Layer("d", N=1, C=16, K=16, H=16, W=16, R=3, S=3, stride=1, pad=1)
    t = make_tensors(layer, 1.0, 1.0, 1.0, model="uniform", seed=0)
    arch = load_arch("arch_configs/ant_oracle.yaml")
    for phase in ("fprop", "dgrad", "wgrad"):
        fast = map_phase(arch, layer, phase, t)
        exact = map_phase(arch, layer, phase, t, fidelity="exact")
        assert any(n.startswith("conflict_cycles estimated") for n in fast.notes), phase  # a real sample
        assert fast.conflict_cycles.sum() == pytest.approx(exact.conflict_cycles.sum(), rel=0.05), phase
        assert fast.conflict_cycles.max() == pytest.approx(exact.conflict_cycles.max(), rel=0.05), phase
        fast_critical = (fast.issued_pairs + fast.conflict_cycles).max(axis=1).sum()
        exact_critical = (exact.issued_pairs + exact.conflict_cycles).max(axis=1).sum()
        assert fast_critical == pytest.approx(exact_critical, rel=0.02), phase
