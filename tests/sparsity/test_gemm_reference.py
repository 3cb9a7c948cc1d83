"""GEMM operands against their 2bd0d76 originals (tests/sparsity/operand_reference_helpers.py): identical bytes
for every operand kind, model, density and seed, with the candidate top-k path taken on the large ones; for the
``uniform`` model (one normal per non-zero since session 9) identical masks and the contract's values
(``reference.gemm_bernoulli_drawn``), the saved B the top-k of the new B."""

from __future__ import annotations

import numpy as np
import pytest

from antsim.sparsity import gemm
from antsim.sparsity.gemm import activation_operand, make_gemm_tensors, weight_operand
from antsim.workloads.gemm import Gemm
from tests.sparsity import operand_reference_helpers as reference


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_nonzero_normal_in_place_equals_the_np_where_copy() -> None:
    for seed in range(3):
        new = gemm._nonzero_normal((4, 50, 7), np.random.default_rng(seed))
        assert _same(new, reference.nonzero_values((4, 50, 7), np.random.default_rng(seed)))


@pytest.mark.parametrize("model", ["swat", "uniform"])
def test_weight_and_activation_operands_equal_the_originals(model: str) -> None:
    for shape in ((1, 7, 9), (2, 30, 40), (1, 300, 256), (3, 64, 400)):  # the last two above 2^16 elements
        for density in (0.01, 0.1, 0.5, 0.8, 1.0):
            for seed in (0, 5):
                for kind, make, make_reference in (("weights", weight_operand, reference.gemm_weight_operand),
                                                   ("activations", activation_operand,
                                                    reference.gemm_activation_operand)):
                    new = make(shape, density, model, np.random.default_rng(seed))
                    old = make_reference(shape, density, model, np.random.default_rng(seed))
                    drawn = make_reference(shape, density, model, np.random.default_rng(seed),
                                           reference.gemm_bernoulli_drawn)
                    assert _same(new, drawn) and _same(new != 0, old != 0), (kind, shape, density, seed)
                    if model != "uniform":
                        assert _same(new, old), (kind, shape, density, seed)


GEMMS = [Gemm("fc", M=200, N=64, K=150, count=2), Gemm("proj", M=256, N=300, K=96, count=1),
         Gemm("scores", M=128, N=64, K=128, count=4, a="attention"),
         Gemm("mix", M=64, N=96, K=80, count=3, a="activations")]
DENSITIES = [{"w": 0.1, "a": 0.5, "g": 0.3, "a_saved": 0.2},
             {"w": 0.1, "a": 1.0, "g": 1.0, "a_saved": 0.1, "attn": 0.1}, {"w": 0.3, "a": 0.1, "g": 0.1}]


@pytest.mark.parametrize("model", ["swat", "uniform", "topk_field"])
def test_make_gemm_tensors_equal_the_original(model: str) -> None:
    for layer in GEMMS:
        for densities in DENSITIES:
            new = make_gemm_tensors(layer, densities, model, seed=3)
            old = reference.make_gemm_tensors(layer, densities, model, seed=3)
            drawn = reference.make_gemm_tensors(layer, densities, model, seed=3,
                                                bernoulli=reference.gemm_bernoulli_drawn)
            for name in ("a", "b", "grad_output", "saved_b"):
                assert _same(getattr(new, name), getattr(drawn, name)), (layer.name, densities, name)
                if model != "uniform":
                    assert _same(getattr(new, name), getattr(old, name)), (layer.name, densities, name)
                elif name != "saved_b":  # the saved B is a top-k by the (new) magnitudes
                    assert _same(getattr(new, name) != 0, getattr(old, name) != 0), (layer.name, densities, name)
