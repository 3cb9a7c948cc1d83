"""Synthetic PhaseWork builders for the timing-model tests (no dataflow needed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from antsim.dataflow.work import PhaseWork
from antsim.results import ProductCounts
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
