"""Synthetic PhaseWork builders for the timing-model tests (no dataflow needed)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from antsim.dataflow.work import PhaseWork
from antsim.results import ProductCounts
from antsim.sim import PhaseTiming, SimParams
from antsim.spec.arch import ArchSpec, arch_from_dict


def _grid(value: Any, shape: tuple[int, int]) -> np.ndarray:
    if np.isscalar(value):
        return np.full(shape, value, dtype=np.int64)
    array = np.asarray(value, dtype=np.int64)
    assert array.shape == shape
    return array


def build_work(n_chunks: int, n_pes: int, issued: Any, candidates: Any = None, conflicts: Any = 0,
               halo: Any = 0, partial: Any = 0, streamed: Any = 0, outputs: Any = 0, stationary: Any = 0,
               needs_reduction: bool = False) -> PhaseWork:
    """A PhaseWork whose per-PE arrays are given (scalars broadcast); 16 products per issued pair."""
    shape = (n_chunks, n_pes)
    iss = _grid(issued, shape)
    cand = iss if candidates is None else _grid(candidates, shape)

    def chunk(value: Any) -> np.ndarray:
        return np.broadcast_to(np.asarray(value, dtype=np.int64), (n_chunks,)).copy()

    return PhaseWork(
        layer_name="synthetic", phase="fprop", n_pes=n_pes, candidate_pairs=cand, issued_pairs=iss,
        conflict_cycles=_grid(conflicts, shape), issued_products=iss * 16, valid_products=iss * 12,
        stationary_reads=iss * 4, streamed_delivered=iss * 4, halo_outputs=_grid(halo, shape),
        partial_outputs=_grid(partial, shape), streamed_dram_values=chunk(streamed),
        output_values=chunk(outputs),
        # One batch tile of one image: the whole stationary operand loaded before the first chunk.
        stationary_dram_values=chunk(0) + np.eye(1, n_chunks, dtype=np.int64)[0] * np.broadcast_to(
            np.asarray(stationary, dtype=np.int64), (n_pes,)).sum(),
        output_readback_values=chunk(0), drains=np.ones(n_chunks, bool), chunk_tile=chunk(0),
        chunk_group=np.arange(n_chunks), chunk_image=chunk(0), lockstep_pairs=chunk(0),
        stationary_values=np.broadcast_to(np.asarray(stationary, dtype=np.int64), (n_pes,)).copy(),
        stationary_resident=np.broadcast_to(np.asarray(stationary, dtype=np.int64), (n_pes,)).copy(),
        stationary_operand="activations", streamed_operand="weights", needs_reduction=needs_reduction,
        products=ProductCounts(int(cand.sum() * 16), int(iss.sum() * 12), int((cand - iss).sum() * 16)),
    )


def build_arch(**sections: Any) -> ArchSpec:
    """An arch with ``sections`` overriding the defaults (name 'test'); DRAM effectively unlimited."""
    data: dict[str, Any] = {"name": "test", "dram": {"bandwidth_gbps": 100000.0}}
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return arch_from_dict(data)


@pytest.fixture
def make_work() -> Callable[..., PhaseWork]:
    return build_work


@pytest.fixture
def make_arch() -> Callable[..., ArchSpec]:
    return build_arch


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture
def every_stall_phase(make_work: Callable[..., PhaseWork], make_arch: Callable[..., ArchSpec],
                      rng: np.random.Generator) -> tuple[ArchSpec, PhaseWork]:
    """A 4×4-PE ANT design and 10 chunks of random work that meet every stall kind: screening slower than
    issue, bank conflicts, halo, a slow DRAM, single-buffered accumulators and a cross-PE reduction."""
    issued = rng.integers(0, 200, size=(10, 16))
    arch = make_arch(pe_array={"rows": 4, "cols": 4}, anticipation={"policy": "ant", "pairs_per_cycle": 2.0},
                     dram={"bandwidth_gbps": 4.0}, accumulators={"double_buffered": False})
    work = make_work(10, 16, issued, candidates=issued * 3, conflicts=rng.integers(0, 9, size=(10, 16)),
                     halo=rng.integers(0, 50, size=(10, 16)), partial=40, outputs=600, streamed=900,
                     stationary=300, needs_reduction=True)
    return arch, work


def random_case(seed: int, policy: str, bandwidths: tuple[float, ...] = (4.0, 8.0, 25.6, 64.0, 1e5)
                ) -> tuple[ArchSpec, PhaseWork, SimParams]:
    """A random (arch, work, params) of the timing tests: random work per chunk and PE, DRAM from narrow to
    unlimited, random staging depth and lookahead (test_array.py and test_closed_form.py share it)."""
    rng = np.random.default_rng(seed)
    chunks, pes = int(rng.integers(1, 30)), int(rng.choice([1, 4, 16]))
    issued = rng.integers(0, 400, size=(chunks, pes))
    work = build_work(chunks, pes, issued, candidates=issued + rng.integers(0, 900, size=(chunks, pes)),
                      conflicts=rng.integers(0, 40, size=(chunks, pes)), halo=rng.integers(0, 60, (chunks, pes)),
                      partial=rng.integers(0, 300, (chunks, pes)), streamed=rng.integers(0, 4000, chunks),
                      outputs=rng.integers(0, 3000, chunks), stationary=rng.integers(0, 500, pes),
                      needs_reduction=bool(seed % 2))
    work = replace(work, lockstep_pairs=rng.integers(0, 300, chunks))
    side = int(np.sqrt(pes))
    arch = build_arch(pe_array={"rows": side, "cols": pes // side},
                      anticipation={"policy": policy, "pairs_per_cycle": float(rng.choice([2, 8, 64]))},
                      dram={"bandwidth_gbps": float(rng.choice(bandwidths))},
                      accumulators={"double_buffered": bool(seed % 3)})
    params = SimParams(staging_chunks=int(rng.integers(1, 4)), anticipation_lookahead=int(rng.integers(0, 3)))
    return arch, work, params


def _sparse_ints(rng: np.random.Generator, high: int, shape, zero_share: float) -> np.ndarray:
    return np.where(rng.random(shape) < zero_share, 0, rng.integers(0, high, size=shape))


def tie_case(seed: int, policy: str):
    """Small integer work on a DRAM that moves one 16-bit value per 1–4 cycles: transfers, multiplies and
    drains end on the same cycles, and a third of the steps have no work at all."""
    rng = np.random.default_rng(1000 + seed)
    chunks, pes = int(rng.integers(1, 40)), int(rng.choice([1, 4]))
    issued = _sparse_ints(rng, 6, (chunks, pes), 0.4)
    tiles = np.unique(np.sort(rng.integers(0, 3, chunks)), return_inverse=True)[1]
    work = build_work(chunks, pes, issued, candidates=issued + _sparse_ints(rng, 6, (chunks, pes), 0.5),
                      conflicts=_sparse_ints(rng, 3, (chunks, pes), 0.7),
                      halo=_sparse_ints(rng, 4, (chunks, pes), 0.7), partial=_sparse_ints(rng, 4, (chunks, pes), 0.5),
                      streamed=_sparse_ints(rng, 6, chunks, 0.3), outputs=_sparse_ints(rng, 6, chunks, 0.3),
                      stationary=_sparse_ints(rng, 5, pes, 0.3), needs_reduction=bool(seed % 2))
    new_tile = np.r_[True, tiles[1:] != tiles[:-1]]
    work = replace(work, lockstep_pairs=_sparse_ints(rng, 4, chunks, 0.6), chunk_tile=tiles,
                   stationary_dram_values=np.where(new_tile, rng.integers(0, 8, chunks), 0),
                   output_readback_values=_sparse_ints(rng, 5, chunks, 0.5),
                   drains=np.r_[rng.random(chunks - 1) < 0.6, True], chunk_group=rng.integers(0, 3, chunks),
                   streamed_operand=str(rng.choice(["weights", "activations"])))
    arch = build_arch(pe_array={"rows": 1 if pes == 1 else 2, "cols": 1 if pes == 1 else 2},
                      anticipation={"policy": policy, "pairs_per_cycle": float(rng.choice([1, 2]))},
                      compression={"format": "dense", "index_bits": 0},
                      dram={"bandwidth_gbps": float(rng.choice([1.0, 2.0, 4.0]))},
                      accumulators={"double_buffered": bool(seed % 3)})
    params = SimParams(staging_chunks=int(rng.integers(1, 4)), anticipation_lookahead=int(rng.integers(0, 3)),
                       halo_values_per_cycle=1.0, reduction_values_per_cycle=1.0)
    return arch, work, params


def assert_same_timing(got: PhaseTiming, want: PhaseTiming) -> None:
    """Two timings of one schedule agree: cycles exactly, times, stalls and details to rounding, actions exactly."""
    assert got.cycles == want.cycles
    assert got.end_cycle == pytest.approx(want.end_cycle, rel=1e-12, abs=1e-9)
    assert got.stalls == pytest.approx(want.stalls, rel=1e-9, abs=1e-6)
    assert got.actions == want.actions
    assert got.details == pytest.approx(want.details, rel=1e-9, abs=1e-6)
