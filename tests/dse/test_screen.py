"""The analytic screen (antsim.dse.screen): its pair counts against a brute-force loop over the fibers and
against the mapper's own PhaseWork, its valid products, passes and area against the full model."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from sweep_helpers import ANT

from antsim.dataflow import map_phase
from antsim.dataflow.options import MappingOptions
from antsim.dataflow.tiling import make_tiling, stride_classes
from antsim.dse.evaluators import _generated, network_metrics
from antsim.dse.screen import (
    analytic_screen,
    count_phase,
    estimate_phase,
    expected_max_load,
    phase_operands,
    touched,
)
from antsim.dse.workload import Workload
from antsim.phases import phase_problem
from antsim.simulate import design_area_mm2, simulate_layer, simulate_network
from antsim.sparsity.generators import make_tensors
from antsim.spec.arch import ArchSpec, arch_from_dict, load_arch
from antsim.workloads.layers import Layer

LAYERS = [
    Layer(name="s1", N=1, C=3, K=5, H=7, W=6, R=3, S=3, stride=1, pad=1),
    Layer(name="s2", N=1, C=4, K=6, H=9, W=8, R=3, S=3, stride=2, pad=1),
    Layer(name="pw", N=2, C=5, K=4, H=5, W=5, R=1, S=1, stride=2, pad=0),
]
DESIGNS = [  # (rows, cols, F, I, Kc, policy): grids that do and do not divide the planes, both policies
    (2, 3, 2, 3, 2, "none"),
    (3, 2, 4, 3, 4, "ant"),
    (4, 4, 2, 2, 3, "ant"),
]


def _arch(rows: int, cols: int, F: int, I: int, kc: int, policy: str, **buffers: float) -> ArchSpec:
    data = load_arch(ANT).to_dict()
    data["pe_array"].update(rows=rows, cols=cols, F=F, I=I)
    data["mapping"]["output_channel_group"] = kc
    data["anticipation"]["policy"] = policy
    data["buffers"].update(buffers)
    return arch_from_dict(data)


def _tensors(layer: Layer, seed: int = 5):  # type: ignore[no-untyped-def]
    return make_tensors(layer, 0.4, 0.35, 0.3, model="uniform", seed=seed)


def _reaches(problem, rows: range, cols: range, u: int, v: int) -> bool:  # type: ignore[no-untyped-def]
    """The fetcher's interval test: streamed (u, v) can land a valid output from the tile rows × cols."""
    lo, hi = problem.dims[0].reach(rows[0], rows[-1], u, u)
    lo2, hi2 = problem.dims[1].reach(cols[0], cols[-1], v, v)
    return int(lo) <= int(hi) and int(lo2) <= int(hi2)


def brute_candidates(arch: ArchSpec, layer: Layer, phase: str, tensors) -> np.ndarray:  # type: ignore[no-untyped-def]
    """SCNN candidate pairs per (chunk, PE) by looping over every PE, stationary fiber and streamed fiber:
    ⌈stationary fiber nnz / I⌉ · ⌈reaching streamed fiber nnz / F⌉."""
    problem = phase_problem(layer, phase)  # type: ignore[arg-type]
    pe = arch.pe_array
    tiling = make_tiling(problem, pe.rows, pe.cols, arch.mapping.output_channel_group, 0)
    classes = stride_classes(problem, arch.mapping.stride_phases)
    fetch = MappingOptions.from_arch(arch, "fast", phase).fetch_filter  # type: ignore[arg-type]
    st, tr = problem.stationary(tensors) != 0, problem.streamed(tensors) != 0
    n_img, n_ch, ys, xs = st.shape
    nt_n, ct_n, ko_n, n_u, n_v = tr.shape
    out = np.zeros((n_img * tiling.n_groups, tiling.n_pes))
    for n in range(n_img):
        for g in range(tiling.n_groups):
            kos = range(g * tiling.kc, min((g + 1) * tiling.kc, ko_n))
            for p in range(tiling.n_pes):
                i, j = divmod(p, pe.cols)
                rows = range(i * tiling.tile_h, min((i + 1) * tiling.tile_h, ys))
                cols = range(j * tiling.tile_w, min((j + 1) * tiling.tile_w, xs))
                if not rows or not cols:
                    continue

                for chs in ([[c] for c in range(n_ch)] if problem.channel_matched else [list(range(n_ch))]):
                    for a, b in classes.groups:
                        s_nnz = sum(int(st[n, c, y, x]) for c in chs for y in rows for x in cols
                                    if classes.stationary_class(np.int64(y), np.int64(x)) == a)
                        nt, ct = (n if nt_n > 1 else 0), (chs[0] if ct_n > 1 else 0)
                        t_nnz = sum(int(tr[nt, ct, ko, u, v]) for ko in kos for u in range(n_u) for v in range(n_v)
                                    if classes.streamed_class(np.int64(u), np.int64(v)) == b
                                    and (not fetch or _reaches(problem, rows, cols, u, v)))
                        out[n * tiling.n_groups + g, p] += math.ceil(s_nnz / pe.I) * math.ceil(t_nnz / pe.F)
    return out


@pytest.mark.parametrize("design", DESIGNS, ids=lambda d: "x".join(map(str, d)))
@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", ["fprop", "dgrad", "wgrad"])
def test_candidate_pairs_match_brute_force_and_the_mapper(design: tuple, layer: Layer, phase: str) -> None:
    arch = _arch(*design)
    tensors = _tensors(layer)
    counts = count_phase(arch, phase_operands(layer, phase, tensors))  # type: ignore[arg-type]
    brute = brute_candidates(arch, layer, phase, tensors)
    assert counts.candidate_pairs.sum() > 0
    np.testing.assert_array_equal(counts.candidate_pairs, brute)
    work = map_phase(arch, layer, phase, tensors, "fast")  # type: ignore[arg-type]
    # The mapper orders chunks batch tile > group > image; the screen image > group (a max per chunk either way).
    n_groups = len(np.unique(work.chunk_group)) if work.n_chunks else 1
    np.testing.assert_array_equal(counts.candidate_pairs[work.chunk_image * n_groups + work.chunk_group],
                                  work.candidate_pairs)
    chunk = work.chunk_image * n_groups + work.chunk_group
    if design[-1] == "none":  # the PEs' drift bound (the mapper counts it from the pairs each cell issues)
        np.testing.assert_array_equal(counts.lockstep[chunk], work.lockstep_pairs)
    assert counts.streamed_delivered == work.streamed_delivered.sum()
    assert counts.streamed_fetched == work.streamed_dram_values.sum()
    if layer.N == 1:  # one image per batch tile: a PE holds its tile's non-zeros
        np.testing.assert_array_equal(counts.resident, work.stationary_resident)
    if design[-1] == "none":  # without anticipation every candidate pair is issued: the mapper's own totals
        assert counts.products == work.issued_products.sum()
        assert counts.stationary_reads == work.stationary_reads.sum()


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("phase", ["fprop", "dgrad", "wgrad"])
def test_valid_products_equal_the_mappers(layer: Layer, phase: str) -> None:
    tensors = _tensors(layer, seed=9)
    work = map_phase(_arch(*DESIGNS[0]), layer, phase, tensors, "fast")  # type: ignore[arg-type]
    assert phase_operands(layer, phase, tensors).valid_products == work.products.valid  # type: ignore[arg-type]


def test_touched_is_poisson_coverage() -> None:
    assert touched(100.0, 0.0) == 0.0
    assert touched(100.0, 100.0) == pytest.approx(100.0 * (1 - math.exp(-1.0)))
    assert touched(100.0, 1e6) == pytest.approx(100.0)
    # Monte Carlo: 300 products thrown uniformly at 200 entries touch ≈ the formula's count.
    rng = np.random.default_rng(0)
    hits = [len(np.unique(rng.integers(0, 200, 300))) for _ in range(2000)]
    assert np.mean(hits) == pytest.approx(touched(200.0, 300.0), rel=0.01)


@pytest.mark.parametrize(("products", "banks"), [(8.0, 4), (2.5, 16), (31.6, 16), (0.3, 32)])
def test_expected_max_load_is_the_mean_busiest_poisson_bank(products: float, banks: int) -> None:
    rng = np.random.default_rng(1)
    loads = rng.poisson(products / banks, size=(200_000, banks)).max(axis=1)
    assert expected_max_load(products, banks) == pytest.approx(loads.mean(), rel=0.01)
    assert expected_max_load(0.0, banks) == 0.0


def _workload(layers: list[Layer]) -> Workload:
    return Workload(tuple(layers), densities={"w": 0.3, "a": 0.3, "g": 0.3}, sparsity="uniform", name="tiny")


def test_area_is_the_full_models_and_passes_match(tmp_path: Path) -> None:
    layers = [Layer(name="big", N=1, C=32, K=8, H=16, W=16, R=3, S=3, stride=1, pad=1)]
    workload = _workload(layers)
    for input_kb in (64.0, 0.05):  # one pass; several (a buffer too small for a tile)
        arch = _arch(2, 2, 2, 2, 4, "ant", input_kb=input_kb)
        screen = analytic_screen(arch, workload, seed=1)
        full = network_metrics(simulate_network(arch, layers, densities=workload.densities, sparsity="uniform",
                                                tensors=_generated(workload, 1), seed=1))
        assert screen["area_mm2"] == full["area_mm2"] == design_area_mm2(arch)
        assert screen["stationary_passes"] == full["stationary_passes"]
        assert (screen["stationary_passes"] > 1) == (input_kb < 1)


@pytest.mark.parametrize("phase", ["fprop", "dgrad", "wgrad"])
def test_compute_cycles_are_the_busiest_pes_and_bound_the_full_model(phase: str) -> None:
    """Policy none issues every candidate pair: the screen's multiplier cycles are exactly Σ over chunks of
    max(busiest PE's issued pairs, lock-step bound), a lower bound of the discrete-event model's cycles
    (which adds conflicts, drains and memory stalls)."""
    layer = Layer(name="l", N=1, C=16, K=16, H=16, W=16, R=3, S=3, stride=1, pad=1)
    tensors = _tensors(layer)
    arch = _arch(4, 4, 4, 4, 8, "none")
    est = estimate_phase(arch, phase_operands(layer, phase, tensors))  # type: ignore[arg-type]
    work = map_phase(arch, layer, phase, tensors, "fast")  # type: ignore[arg-type]
    assert est.compute_cycles == np.maximum(work.issued_pairs.max(axis=1), work.lockstep_pairs).sum()
    assert est.compute_cycles <= simulate_layer(arch, layer, phase, tensors, "fast").cycles  # type: ignore[arg-type]
