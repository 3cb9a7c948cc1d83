"""GEMM mappings (``antsim.dataflow.gemm``): functional outputs against numpy matmul, product counts and
the ANT k-range screen against an independent brute force (vectors rebuilt here, every pair tested)."""

from __future__ import annotations

import numpy as np
import pytest
from dataflow_helpers import arch_from_dict, load_arch

from antsim.dataflow.gemm import map_gemm_phase, resolve_mapping
from antsim.sparsity.gemm import GemmTensors
from antsim.workloads.gemm import Gemm, gemm_phase, reference

POLICIES = ("none", "ant", "oracle")
AWKWARD = [  # 1xK, Mx1, K not a multiple of F or I, count > 1 with a shared and with a dynamic left operand
    Gemm("row", M=1, N=5, K=13),
    Gemm("col", M=6, N=1, K=7),
    Gemm("odd", M=7, N=6, K=11, count=2),
    Gemm("att", M=5, N=4, K=9, count=3, a="activations"),
    Gemm("blk", M=6, N=5, K=100, count=2),  # cartesian k blocks of 25 on the 2x3-PE, 4x4 test array
]


def _arch(policy: str, mapping: str, rows: int = 2, cols: int = 3, kc: int = 2, dense: bool = False):  # type: ignore[no-untyped-def]
    data = {"name": "small", "pe_array": {"rows": rows, "cols": cols, "F": 4, "I": 4},
            "mapping": {"output_channel_group": kc, "gemm": mapping},
            "anticipation": {"policy": policy, "fetch_filter": policy != "none"}}
    if dense:
        data["sparsity_support"] = False
    return arch_from_dict(data)


def _sparse(rng: np.random.Generator, shape: tuple[int, ...], density: float) -> np.ndarray:
    values = rng.standard_normal(shape) * (rng.random(shape) < density)
    if len(shape) == 3 and shape[1] > 2:
        values[:, 1, :] = 0.0  # an empty row
    if len(shape) == 3 and shape[2] > 2:
        values[:, :, -1] = 0.0  # an empty column
    return values


def _tensors(g: Gemm, seed: int, density: float = 0.4) -> GemmTensors:
    rng = np.random.default_rng(seed)
    return GemmTensors(_sparse(rng, (1 if g.weight_shared else g.count, g.M, g.K), density),
                       _sparse(rng, (g.count, g.K, g.N), density), _sparse(rng, (g.count, g.M, g.N), density),
                       _sparse(rng, (g.count, g.K, g.N), density / 2))


@pytest.mark.parametrize("mapping", ["scnn", "cartesian"])
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("phase", ["fprop", "dgrad", "wgrad"])
def test_exact_output_is_numpy_matmul(mapping: str, policy: str, phase: str) -> None:
    arch = _arch(policy, mapping)
    for i, g in enumerate(AWKWARD):
        t = _tensors(g, seed=i)
        work = map_gemm_phase(arch, g, phase, t, "exact")
        assert work.output.shape == reference(g, phase, t).shape
        np.testing.assert_allclose(work.output, reference(g, phase, t), atol=1e-12)
        assert (work.layer_name, work.phase, work.tiling["gemm_mapping"]) == (g.name, phase, mapping)


def _runs(elements: list[tuple[int, int]], width: int) -> list[list[tuple[int, int]]]:
    """Consecutive runs of ``width`` elements (vectors) of one fiber."""
    return [elements[i:i + width] for i in range(0, len(elements), width)]


def _k_block(K: int, cols: int, F: int = 4, I: int = 4) -> int:
    """The mapping's k block, restated: the largest divisor of K up to cols·F·I, else all of K."""
    divisors = [d for d in range(1, K + 1) if K % d == 0 and d <= cols * F * I]
    return max(divisors) if max(divisors) >= cols else K


def _brute_cartesian(left: np.ndarray, right: np.ndarray, policy: str, rows: int, cols: int, kc: int,
                     F: int = 4, I: int = 4) -> tuple[int, int, int]:
    """(total, valid, issued) of C = left (M×K) · right (K×N) under the cartesian mapping: the sum over
    k blocks (``_k_block``; pairs never cross blocks) of ``_brute_block``."""
    kb = _k_block(left.shape[1], cols, F, I)
    parts = [_brute_block(left[:, b:b + kb], right[b:b + kb], policy, rows, cols, kc, F, I)
             for b in range(0, left.shape[1], kb)]
    return tuple(int(sum(x)) for x in zip(*parts, strict=True))  # type: ignore[return-value]


def _brute_block(left: np.ndarray, right: np.ndarray, policy: str, rows: int, cols: int, kc: int,
                 F: int, I: int) -> tuple[int, int, int]:
    """(total, valid, issued) of one k block, rebuilt from the mapping's definition: PE (i, j) holds
    columns n of block i and reductions k of block j of ``right``, walked column by column in k order and
    cut into I-vectors; each group of ``kc`` rows of ``left`` is walked row by row in k order (only the
    PE's k range with the fetch filter) and cut into F-vectors; ANT issues a pair iff the k ranges of its
    vectors overlap."""
    M, K = left.shape
    N = right.shape[1]
    th, tw = -(-N // rows), -(-K // cols)
    total = valid = issued = valid_issued = 0
    for i in range(rows):
        for j in range(cols):
            ks = range(j * tw, min(K, (j + 1) * tw))
            stat = [(n, k) for n in range(i * th, min(N, (i + 1) * th)) for k in ks if right[k, n] != 0]
            for g0 in range(0, M, kc):
                group = range(g0, min(M, g0 + kc))
                streamed_all = [(m, k) for m in group for k in range(K) if left[m, k] != 0]
                total += len(stat) * len(streamed_all)
                valid += sum(1 for (_, k1) in stat for (_, k2) in streamed_all if k1 == k2)
                if policy == "none":
                    issued += len(stat) * len(streamed_all)
                    continue
                streamed = [(m, k) for (m, k) in streamed_all if k in ks]  # fetch filter
                for vi in _runs(stat, I):
                    lo_i, hi_i = min(k for _, k in vi), max(k for _, k in vi)
                    for vf in _runs(streamed, F):
                        lo_f, hi_f = min(k for _, k in vf), max(k for _, k in vf)
                        if lo_i <= hi_f and lo_f <= hi_i:
                            issued += len(vi) * len(vf)
                            valid_issued += sum(1 for (_, k1) in vi for (_, k2) in vf if k1 == k2)
    if policy != "none":
        assert valid_issued == valid, "the k-range screen or the fetch filter dropped a valid product"
    if policy == "oracle":
        issued = valid
    return total, valid, issued


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("phase", ["fprop", "dgrad", "wgrad"])
@pytest.mark.parametrize("fidelity", ["fast", "exact"])
def test_cartesian_counts_equal_brute_force(policy: str, phase: str, fidelity: str) -> None:
    arch = _arch(policy, "cartesian")
    for i, g in enumerate(AWKWARD):
        t = _tensors(g, seed=10 + i)
        p = gemm_phase(g, phase)
        left, right = p.left(t), p.right(t)
        want = np.zeros(3, np.int64)
        for c in range(p.count):
            want += _brute_cartesian(left[0 if p.left_shared else c], right[c], policy, 2, 3, 2)
        products = map_gemm_phase(arch, g, phase, t, fidelity).products
        assert (products.total, products.valid, products.issued) == tuple(want), (g.name, phase)
        assert products.skipped <= products.rcp


def test_ant_never_skips_a_valid_pair_and_removes_rcps() -> None:
    """The k-range screen is conservative (valid products all issued) and removes most RCPs of a larger GEMM."""
    g = Gemm("fc", M=16, N=24, K=96)
    t = _tensors(g, seed=3, density=0.2)
    none = map_gemm_phase(_arch("none", "cartesian"), g, "fprop", t, "exact")
    ant = map_gemm_phase(_arch("ant", "cartesian"), g, "fprop", t, "exact")
    triples = int(((t.a[0] != 0).astype(int) @ (t.b[0] != 0).astype(int)).sum())
    assert ant.products.valid == none.products.valid == triples
    assert ant.products.issued >= ant.products.valid
    assert ant.products.skipped > 0.5 * ant.products.rcp
    np.testing.assert_allclose(ant.output, none.output)


@pytest.mark.parametrize("policy", POLICIES)
def test_scnn_mapping_forms_no_rcps(policy: str) -> None:
    """SCNN's 1x1-conv mapping pairs weight column k with activation row k only: total = valid = the
    non-zero triples (m, k, n), on every policy."""
    for i, g in enumerate(AWKWARD):
        t = _tensors(g, seed=20 + i)
        for phase in ("fprop", "dgrad", "wgrad"):
            p = gemm_phase(g, phase)
            left, right = p.left(t), p.right(t)
            triples = sum(int(((left[0 if p.left_shared else c] != 0).astype(int)
                               @ (right[c] != 0).astype(int)).sum()) for c in range(p.count))
            products = map_gemm_phase(_arch(policy, "scnn"), g, phase, t, "fast").products
            assert (products.total, products.valid, products.skipped) == (triples, triples, 0)


@pytest.mark.parametrize("mapping", ["scnn", "cartesian"])
def test_dense_design_counts_every_element_pair(mapping: str) -> None:
    g = Gemm("odd", M=7, N=6, K=11, count=2)
    t = _tensors(g, seed=5)
    work = map_gemm_phase(_arch("none", mapping, dense=True), g, "dgrad", t, "exact")
    assert work.products.total == work.products.valid == g.macs
    np.testing.assert_allclose(work.output, reference(g, "dgrad", t), atol=1e-12)


def test_plain_mapping_of_one_column_uses_a_quarter_of_a_pe() -> None:
    """SCNN's FC figure: at one column (batch 1) every I-vector holds one activation, so a dense 4x4
    PE does 4 useful products per issued pair — 25 % of its multipliers."""
    g = Gemm("fc", M=64, N=1, K=32)
    rng = np.random.default_rng(0)
    t = GemmTensors(rng.standard_normal((1, 64, 32)), rng.standard_normal((1, 32, 1)), np.ones((1, 64, 1)))
    work = map_gemm_phase(_arch("none", "scnn", rows=1, cols=1, kc=64), g, "fprop", t, "fast")
    assert int(work.issued_products.sum()) / (16 * int(work.issued_pairs.sum())) == pytest.approx(0.25)


def test_auto_mapping_and_operands() -> None:
    assert resolve_mapping(load_arch("arch_configs/scnn.yaml")) == "scnn"
    assert resolve_mapping(load_arch("arch_configs/ant.yaml")) == "cartesian"
    assert resolve_mapping(load_arch("arch_configs/dense.yaml")) == "cartesian"
    assert "gemm" not in load_arch("arch_configs/ant.yaml").to_dict()["mapping"]
    g = Gemm("fc", M=4, N=3, K=5)
    work = map_gemm_phase(_arch("ant", "auto"), g, "wgrad", _tensors(g, 1), "fast")
    assert (work.stationary_operand, work.streamed_operand) == ("activations", "grad_output")


def test_cartesian_k_blocks() -> None:
    """k blocks: a divisor of K up to cols·F·I, one block when no divisor leaves every PE column a k."""
    from antsim.dataflow.gemm import k_block

    scnn = load_arch("arch_configs/scnn.yaml")  # 8 PE columns, F = I = 4: blocks of at most 128
    assert [k_block(scnn, K) for K in (768, 3072, 650, 64, 100, 7, 131)] == [128, 128, 65, 64, 100, 7, 131]
    small = _arch("ant", "cartesian")
    g = AWKWARD[-1]
    work = map_gemm_phase(small, g, "fprop", _tensors(g, 0), "fast")
    assert work.tiling["k_block"] == k_block(small, 100) == _k_block(100, 3) == 25
