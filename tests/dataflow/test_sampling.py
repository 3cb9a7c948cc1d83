"""The batch estimate from a sample of images (``batch_sample``) against the full mapping."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from antsim.dataflow import map_phase
from antsim.dataflow.sampling import plan_sample
from antsim.dataflow.work import PER_CHUNK_FIELDS, PER_PE_FIELDS
from antsim.errors import MappingError
from antsim.sim import simulate_phase
from antsim.simulate import stream_densities
from antsim.sparsity.generators import make_tensors
from antsim.sparsity.tensors import Tensors
from antsim.spec.arch import load_arch
from antsim.workloads.layers import PHASES, Layer

LAYER = Layer("l", N=6, C=16, K=24, H=12, W=12, R=3, S=3, stride=1, pad=1)
SMALL = Layer("s", N=4, C=8, K=12, H=8, W=8, R=3, S=3, stride=2, pad=1)


def _assert_same_work(estimate, full):
    for name in (*PER_PE_FIELDS, *PER_CHUNK_FIELDS, "stationary_values", "stationary_resident"):
        np.testing.assert_array_equal(getattr(estimate, name), getattr(full, name), err_msg=name)
    assert estimate.products == full.products


def _repeated(tensors: Tensors, n: int) -> Tensors:
    """A batch of ``n`` copies of image 0."""
    pick = np.zeros(n, np.int64)
    saved = tensors.saved_activations
    return Tensors(tensors.weights, tensors.activations[pick], tensors.grad_output[pick],
                   None if saved is None else saved[pick])


@pytest.mark.parametrize("config", ["scnn", "ant", "ant_oracle"])
@pytest.mark.parametrize("phase", PHASES)
def test_identical_images_are_estimated_exactly(config, phase):
    arch = load_arch(f"arch_configs/{config}.yaml")
    tensors = _repeated(make_tensors(SMALL, 0.3, 0.3, 0.3, seed=3), SMALL.N)
    full = map_phase(arch, SMALL, phase, tensors)
    assert any("conflict_cycles exact" in note for note in full.notes)  # no conflict sampling to differ
    estimate = map_phase(arch, SMALL, phase, tensors, batch_sample=1)
    _assert_same_work(estimate, full)
    assert estimate.tiling["batch_sample"] == 1 and "batch_sample" not in full.tiling


@pytest.mark.parametrize("config", ["dense", "dcnn"])
@pytest.mark.parametrize("phase", PHASES)
def test_a_dense_design_maps_one_image_for_the_batch_exactly(config, phase):
    arch = load_arch(f"arch_configs/{config}.yaml")
    tensors = make_tensors(SMALL, 0.2, 0.5, 0.1, seed=4)  # different images: a dense design ignores values
    every_image = map_phase(arch, SMALL, phase, tensors, fidelity="exact")  # exact maps each image
    for k in (0, 2):
        fast = map_phase(arch, SMALL, phase, tensors, batch_sample=k)
        assert "batch_sample" not in fast.tiling and any("mapped on one image" in n for n in fast.notes)
        for name in (*PER_PE_FIELDS, *PER_CHUNK_FIELDS, "stationary_values", "stationary_resident"):
            np.testing.assert_array_equal(getattr(fast, name), getattr(every_image, name), err_msg=name)
        assert fast.products == every_image.products


def test_a_sample_as_large_as_the_batch_is_the_full_mapping():
    arch = load_arch("arch_configs/ant.yaml")
    tensors = make_tensors(LAYER, 0.2, 0.2, 0.2, seed=1)
    for k in (LAYER.N, LAYER.N + 3):
        _assert_same_work(map_phase(arch, LAYER, "wgrad", tensors, batch_sample=k),
                          map_phase(arch, LAYER, "wgrad", tensors))


def test_exact_fidelity_and_bad_samples_are_refused():
    arch = load_arch("arch_configs/scnn.yaml")
    tensors = make_tensors(LAYER, 0.2, 0.2, 0.2, seed=1)
    with pytest.raises(MappingError, match="needs fidelity fast"):
        map_phase(arch, LAYER, "fprop", tensors, fidelity="exact", batch_sample=2)
    for bad in (-1, 1.5, True):
        with pytest.raises(MappingError, match="batch_sample"):
            map_phase(arch, LAYER, "fprop", tensors, batch_sample=bad)


def test_plan_sample_spans_the_proxy_and_scales_by_the_nearest():
    nnz = np.array([10, 400, 20, 30, 200, 100, 60, 50])
    plan = plan_sample(nnz, None, 4)
    ranks = np.argsort(np.argsort(nnz))
    assert sorted(ranks[plan.images]) == [1, 3, 5, 7]  # evenly spaced ranks (0.5 + j)·N/k
    nearest = plan.images[plan.source]
    assert all(abs(nnz[i] - nnz[s]) == np.abs(nnz[i] - nnz[plan.images]).min() for i, s in enumerate(nearest))
    np.testing.assert_allclose(plan.pair_scale, nnz / nnz[nearest])
    assert plan.proxy_ratio == pytest.approx(nnz.sum() / nnz[plan.images].sum())
    wgrad = plan_sample(nnz, np.arange(1, 9), 2)
    np.testing.assert_allclose(wgrad.streamed_scale, np.arange(1, 9) / (wgrad.images[wgrad.source] + 1))


@pytest.mark.parametrize("phase", PHASES)
def test_a_four_image_sample_of_a_heterogeneous_batch_stays_close(phase):
    # SWAT's batch-wide top-k gives images of very different density; the proxy scaling has to absorb it.
    arch = load_arch("arch_configs/ant.yaml")
    layer = Layer("l", N=16, C=32, K=32, H=16, W=16, R=3, S=3, stride=1, pad=1)
    tensors = make_tensors(layer, 0.1, 0.1, 0.1, seed=0)
    per_image = (tensors.grad_output != 0).mean(axis=(1, 2, 3))
    assert per_image.max() > 3 * per_image.min()  # the batch is heterogeneous
    cycles, works = {}, {}
    for k in (0, 4):
        works[k] = map_phase(arch, layer, phase, tensors, batch_sample=k)
        cycles[k] = simulate_phase(arch, works[k], stream_densities(arch, works[k], tensors, phase)).cycles
    assert cycles[4] == pytest.approx(cycles[0], rel=0.15)
    if phase == "wgrad":  # a tile's held dW is the union over all its images: counted on the whole batch
        for name in ("valid_products", "partial_outputs", "output_values", "output_readback_values"):
            np.testing.assert_array_equal(getattr(works[4], name), getattr(works[0], name), err_msg=name)


def test_every_phasework_field_is_considered():
    # A new PhaseWork field must be given an estimate rule (or listed here as carried unchanged).
    from antsim.dataflow.work import PhaseWork

    carried = {"layer_name", "phase", "n_pes", "stationary_operand", "streamed_operand", "needs_reduction",
               "products", "output", "tiling", "notes", "stationary_values", "stationary_resident"}
    assert {f.name for f in fields(PhaseWork)} == set(PER_PE_FIELDS) | set(PER_CHUNK_FIELDS) | carried


def test_the_result_echoes_the_sample_only_where_it_was_used():
    from antsim.simulate import simulate_network

    arch = load_arch("arch_configs/scnn.yaml")
    densities = {"w": 0.3, "a": 0.3, "g": 0.3}
    sampled = simulate_network(arch, [SMALL], densities=densities, batch_sample=2)
    assert sampled.workload["batch_sample"] == 2
    assert all(r.details["batch_sample"] == 2 for r in sampled.records)
    whole = simulate_network(arch, [SMALL], densities=densities, batch_sample=SMALL.N)  # no image left out
    assert "batch_sample" not in whole.workload and all("batch_sample" not in r.details for r in whole.records)
    dense = simulate_network(load_arch("arch_configs/dense.yaml"), [SMALL], densities=densities, batch_sample=2)
    assert "batch_sample" not in dense.workload  # a dense design's batch is exact: nothing was estimated
