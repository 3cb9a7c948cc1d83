"""map_phase: functional output, exact product accounting, fast == exact, PhaseWork fields."""

from __future__ import annotations

import numpy as np
import pytest
from dataflow_helpers import MAPPING_CASES as CASES
from dataflow_helpers import arch_from_dict, random_tensors, small_arch
from test_phases import scipy_phase

from antsim.dataflow import map_phase
from antsim.dataflow.work import PER_CHUNK_FIELDS, PER_PE_FIELDS
from antsim.errors import MappingError, WorkloadError
from antsim.phases import reference
from antsim.workloads.layers import Layer

FIELDS_EQUAL = [f for f in PER_PE_FIELDS if f != "conflict_cycles"]


def brute_force_valid(layer: Layer, phase: str, t, dense: bool = False) -> int:
    """Contributing pairs, counted by looping over the stationary non-zeros (vectorised over the other)."""
    (sh, sw), (ph, pw) = layer.stride, layer.pad
    nz = (lambda x: np.ones(x.shape, bool)) if dense else (lambda x: x != 0)
    count = 0
    if phase == "fprop":
        w = np.argwhere(nz(t.weights))
        for _n, c, h, x in np.argwhere(nz(t.activations)):
            k = w[w[:, 1] == c]
            p, q = h + ph - k[:, 2], x + pw - k[:, 3]
            count += np.sum((p % sh == 0) & (q % sw == 0) & (p >= 0) & (q >= 0)
                            & (p // sh < layer.P) & (q // sw < layer.Q))
    elif phase == "dgrad":
        w = np.argwhere(nz(t.weights))
        for _n, k, p, q in np.argwhere(nz(t.grad_output)):
            c = w[w[:, 0] == k]
            h, x = p * sh + c[:, 2] - ph, q * sw + c[:, 3] - pw
            count += np.sum((h >= 0) & (h < layer.H) & (x >= 0) & (x < layer.W))
    else:
        g = np.argwhere(nz(t.grad_output))
        for n, _c, h, x in np.argwhere(nz(t.wgrad_activations)):
            d = g[g[:, 0] == n]
            r, s = h - d[:, 2] * sh + ph, x - d[:, 3] * sw + pw
            count += np.sum((r >= 0) & (r < layer.R) & (s >= 0) & (s < layer.S))
    return int(count)


def output_support(layer: Layer, phase: str, t, batch_tile: int = 1) -> int:
    """Distinct outputs written back, summed: dense results of the masks; for wgrad, batch tile by batch
    tile (dW accumulates over a tile's images before it is written)."""
    masks = type(t)(*(None if a is None else (a != 0).astype(float)
                      for a in (t.weights, t.activations, t.grad_output, t.saved_activations)))
    if phase != "wgrad":
        return int(np.count_nonzero(reference(layer, phase, masks)))
    total = 0
    for n in range(0, layer.N, batch_tile):
        images = slice(n, min(layer.N, n + batch_tile))
        tile = layer.with_batch(images.stop - images.start)
        total += int(np.count_nonzero(reference(tile, phase, type(t)(
            masks.weights, masks.wgrad_activations[images], masks.grad_output[images]))))
    return total


@pytest.mark.parametrize("case", range(len(CASES)), ids=[c[0].name for c in CASES])
@pytest.mark.parametrize("phase", ["fprop", "dgrad", "wgrad"])
def test_every_policy_is_exact_and_fast_agrees(case: int, phase: str) -> None:
    layer, density, rows, cols, kc = CASES[case]
    t = random_tensors(layer, density, seed=case)
    ref = reference(layer, phase, t)
    np.testing.assert_allclose(ref, scipy_phase(layer, phase, t), atol=1e-10)
    valid = brute_force_valid(layer, phase, t)
    totals = {}
    for stride_phases in (False, True):
        for policy in ("none", "ant", "oracle"):
            arch = small_arch(policy, rows, cols, kc, stride_phases)
            exact = map_phase(arch, layer, phase, t, fidelity="exact")
            fast = map_phase(arch, layer, phase, t, fidelity="fast")
            what = f"{policy} stride_phases={stride_phases}"
            np.testing.assert_allclose(exact.output, ref, atol=1e-9, err_msg=what)
            assert exact.products.valid == valid, what
            assert int(exact.valid_products.sum()) == valid, what
            assert fast.products == exact.products, what
            assert 0 <= exact.products.skipped <= exact.products.rcp, what
            for field in FIELDS_EQUAL + list(PER_CHUNK_FIELDS):
                assert np.array_equal(getattr(fast, field), getattr(exact, field)), f"{what}: {field}"
            assert int(exact.output_values.sum()) == output_support(layer, phase, t, exact.tiling["batch_tile"]), what
            assert fast.output is None
            totals[(stride_phases, policy)] = exact.products
        assert totals[(stride_phases, "none")].skipped == 0
        assert totals[(stride_phases, "oracle")].skipped == totals[(stride_phases, "oracle")].rcp
        assert len({p.total for (sp, _), p in totals.items() if sp == stride_phases}) == 1  # same total
    assert totals[(True, "none")].total <= totals[(False, "none")].total


def test_stride_phases_remove_non_integer_pairs_in_strided_fprop() -> None:
    layer, density, rows, cols, kc = CASES[1]
    t = random_tensors(layer, density, seed=7)
    off = map_phase(small_arch("none", rows, cols, kc, False), layer, "fprop", t).products
    on = map_phase(small_arch("none", rows, cols, kc, True), layer, "fprop", t).products
    assert on.valid == off.valid
    # Stride 2 in both dims: only 1/4 of the (A, W) class pairs can give integer coordinates.
    assert on.total == pytest.approx(off.total / 4, rel=0.15)
    assert on.rcp < 0.2 * on.total < off.rcp


def test_dense_design_multiplies_zeros_and_stays_exact() -> None:
    layer, _, rows, cols, kc = CASES[0]
    t = random_tensors(layer, 0.3, seed=3)
    arch = arch_from_dict({"name": "dense", "sparsity_support": False, "pe_array": {"rows": rows, "cols": cols},
                           "mapping": {"output_channel_group": kc}})
    for phase in ("fprop", "dgrad", "wgrad"):
        exact = map_phase(arch, layer, phase, t, fidelity="exact")
        fast = map_phase(arch, layer, phase, t)
        np.testing.assert_allclose(exact.output, reference(layer, phase, t), atol=1e-9)
        assert exact.products.valid == brute_force_valid(layer, phase, t, dense=True)
        assert fast.products == exact.products
        # A dense engine forms only pairs that meet at an output (no RCPs), zeros included, packed
        # into full F*I multiplier cycles, with no scatter-crossbar bank conflicts.
        assert fast.products.total == fast.products.valid and fast.products.skipped == 0
        assert fast.issued_pairs.sum() >= -(-fast.products.valid // (arch.pe_array.F * arch.pe_array.I))
        assert fast.conflict_cycles.sum() == 0
    # Without padding every one of the N*K*P*Q*C*R*S dense MACs is a contributing element pair.
    unpadded = Layer(name="u", N=1, C=3, K=4, H=6, W=5, R=3, S=3)
    t = random_tensors(unpadded, 0.3, seed=5)
    for phase in ("fprop", "dgrad", "wgrad"):
        assert map_phase(arch, unpadded, phase, t).products.total == unpadded.macs


def test_bad_fidelity_and_shapes_are_user_errors() -> None:
    layer, density, rows, cols, kc = CASES[0]
    t = random_tensors(layer, density, seed=5)
    with pytest.raises(MappingError, match="fidelity"):
        map_phase(small_arch(), layer, "fprop", t, fidelity="slow")
    with pytest.raises(WorkloadError, match="weights"):
        map_phase(small_arch(), layer, "fprop", type(t)(t.weights[:, :1], t.activations, t.grad_output))


@pytest.mark.parametrize("phase", ["fprop", "dgrad"])
def test_sparse_and_dense_footprints_agree_with_exact(phase: str) -> None:
    """Both fast footprint paths (chosen by mask density) give the exact path's numbers."""
    from antsim.dataflow.footprint import plane_footprint_dense, plane_footprint_sparse
    from antsim.dataflow.tiling import make_tiling
    from antsim.phases import phase_problem

    layer, _, rows, cols, kc = CASES[2]
    t = random_tensors(layer, 0.1, seed=21)
    exact = map_phase(small_arch("ant", rows, cols, kc), layer, phase, t, fidelity="exact")
    problem = phase_problem(layer, phase)
    tiling = make_tiling(problem, rows, cols, kc)
    S, T = problem.stationary(t) != 0, problem.streamed(t) != 0
    order = exact.chunk_image * tiling.n_groups + exact.chunk_group  # footprints are image-major
    for footprint in (plane_footprint_dense(problem, tiling, S, T), plane_footprint_sparse(problem, tiling, S, T)):
        def executed(per_slot: np.ndarray) -> np.ndarray:
            return per_slot.reshape(tiling.n_chunks, -1)[order]

        assert np.array_equal(executed(footprint.valid_products), exact.valid_products)
        assert np.array_equal(executed(footprint.partial_outputs), exact.partial_outputs)
        assert np.array_equal(executed(footprint.halo_outputs), exact.halo_outputs)
        assert np.array_equal(footprint.output_values[order], exact.output_values)


@pytest.mark.parametrize("phase", ["fprop", "dgrad", "wgrad"])
def test_ant_without_fetch_filter_and_edge_cases(phase: str) -> None:
    """ANT's pair screen alone (no fetch filter); a plane smaller than the PE grid; all-zero operands."""
    layer = Layer("tiny", N=2, C=2, K=3, H=3, W=5, R=3, S=3, stride=(1, 2), pad=1)
    t = random_tensors(layer, 0.7, seed=31)
    no_filter = small_arch("ant", 4, 4, 2, anticipation={"fetch_filter": False})
    exact = map_phase(no_filter, layer, phase, t, fidelity="exact")
    np.testing.assert_allclose(exact.output, reference(layer, phase, t), atol=1e-9)
    assert exact.products.valid == brute_force_valid(layer, phase, t)
    assert map_phase(no_filter, layer, phase, t).products == exact.products
    filtered = map_phase(small_arch("ant", 4, 4, 2), layer, phase, t).products
    assert filtered.total == exact.products.total and filtered.skipped >= exact.products.skipped
    zeros = type(t)(np.zeros_like(t.weights), np.zeros_like(t.activations), np.zeros_like(t.grad_output))
    for fidelity in ("fast", "exact"):
        work = map_phase(small_arch("ant", 4, 4, 2), layer, phase, zeros, fidelity=fidelity)
        assert work.products.total == 0 and work.issued_pairs.sum() == 0


@pytest.mark.parametrize("policy", ["none", "ant", "oracle"])
@pytest.mark.parametrize("batch_tile", [0, 1, 2])
def test_wgrad_batch_sample_reads_its_footprint_off_the_batch(policy, batch_tile, monkeypatch):
    """A wgrad batch sample takes its valid products from the batch's footprint (``_sample_footprint``) instead of
    counting its own: every field of the work equals the mapping that counts the sample's own footprint."""
    from antsim.dataflow import mapper

    layer = Layer("w", N=5, C=6, K=7, H=8, W=8, R=3, S=3, stride=1, pad=1)
    arch = small_arch(policy, 2, 2, 3, mapping={"batch_tile": batch_tile})
    t = random_tensors(layer, 0.3, seed=4)
    got = map_phase(arch, layer, "wgrad", t, batch_sample=2)
    monkeypatch.setattr(mapper, "_sample_footprint", lambda *args: None)  # the sample maps its own footprint
    want = map_phase(arch, layer, "wgrad", t, batch_sample=2)
    _assert_same_work(got, want)
    assert got.valid_products.sum() > 0


@pytest.mark.parametrize("phase", ["fprop", "dgrad", "wgrad"])
@pytest.mark.parametrize("batch_sample", [0, 2])
def test_operands_with_their_masks_map_as_without(phase, batch_sample):
    """The masks a generator hands over (``Tensors.nonzero_masks``; read off by the footprints, carried through a batch
    sample's ``select_images``) give the work of the same operands without them, field for field."""
    from antsim.sparsity.generators import make_tensors
    from antsim.sparsity.tensors import Tensors

    layer = Layer("m", N=4, C=6, K=7, H=8, W=8, R=3, S=3, stride=2, pad=1)
    arch = small_arch("ant", 2, 2, 3)
    for saved in (None, 0.2):
        t = make_tensors(layer, 0.3, 0.4, 0.3, model="uniform", seed=2, density_a_saved=saved)
        assert t.nonzero_masks() is not None
        plain = Tensors(t.weights, t.activations, t.grad_output, t.saved_activations)
        got = map_phase(arch, layer, phase, t, batch_sample=batch_sample)
        want = map_phase(arch, layer, phase, plain, batch_sample=batch_sample)
        _assert_same_work(got, want)


def _assert_same_work(got, want) -> None:
    """Every per-PE and per-chunk field, the products, tiling, notes and stationary values equal."""
    for name in (*PER_PE_FIELDS, *PER_CHUNK_FIELDS, "products", "tiling", "notes", "stationary_values"):
        got_value, want_value = getattr(got, name), getattr(want, name)
        if isinstance(got_value, np.ndarray):
            np.testing.assert_array_equal(got_value, want_value, err_msg=name)
        else:
            assert got_value == want_value, name
