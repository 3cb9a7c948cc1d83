"""The values of the ``uniform`` and ``channel`` operands (one normal per non-zero, docs/operand_draws.md): one
value per non-zero of the mask and never 0, i.i.d. N(0, 1) by tests whose tolerance comes from the sample size,
seeded; and scipy.ndimage loaded only by the models that smooth a field."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from antsim.sparsity import generators
from antsim.sparsity.generators import bernoulli_normals, make_operand

# The asymptotic Kolmogorov-Smirnov critical value at a 0.1 % level: sqrt(-ln(0.001 / 2) / 2) / sqrt(n)
# (Kolmogorov's limit distribution; e.g. NIST/SEMATECH e-Handbook of Statistical Methods, section 1.3.5.16).
KS_COEFFICIENT_0_1_PERCENT = math.sqrt(-math.log(0.001 / 2) / 2)  # 1.949
# Moments within 4.5 standard errors: a false failure at most ~7e-6 per check (normal approximation).
SIGMAS = 4.5


def _values(model: str, shape: tuple[int, ...], density: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    operand = make_operand(shape, density, model, np.random.default_rng(seed))
    mask = operand != 0
    return operand[mask].astype(np.float64), mask


@pytest.mark.parametrize("model, density", [("uniform", 0.1), ("uniform", 0.5), ("channel", 0.25)])
def test_values_are_iid_standard_normals(model: str, density: float) -> None:
    values, _ = _values(model, (4, 64, 32, 32), density, seed=7)  # 26 k to 131 k values
    n = values.size
    assert stats.kstest(values, "norm").statistic < KS_COEFFICIENT_0_1_PERCENT / math.sqrt(n)
    assert abs(values.mean()) < SIGMAS / math.sqrt(n)  # standard error of the mean of N(0, 1): 1 / sqrt(n)
    assert abs(values.var() - 1) < SIGMAS * math.sqrt(2 / n)  # of the variance: sqrt(2 / n)
    lag_one = float(np.corrcoef(values[:-1], values[1:])[0, 1])  # consecutive non-zeros, C order
    assert abs(lag_one) < SIGMAS / math.sqrt(n)


def test_values_do_not_depend_on_where_the_mask_lies() -> None:
    """The non-zeros of the first and the last channels: two samples of the same N(0, 1) (two-sample KS)."""
    operand = make_operand((8, 64, 32, 32), 0.2, "uniform", np.random.default_rng(3))
    first, last = operand[:, :32], operand[:, 32:]
    first, last = first[first != 0], last[last != 0]
    n = first.size * last.size / (first.size + last.size)
    assert stats.ks_2samp(first, last).statistic < KS_COEFFICIENT_0_1_PERCENT / math.sqrt(n)


@pytest.mark.parametrize("chunk", [5, 1 << 18])
def test_one_value_per_non_zero_of_the_mask_and_the_draws_counted(monkeypatch: pytest.MonkeyPatch,
                                                                  chunk: int) -> None:
    monkeypatch.setattr(generators, "_CHUNK", chunk)
    for seed, shape, density in ((0, (3, 5, 7, 2), 0.1), (1, (2, 40, 6, 6), 0.02), (2, (4, 4), 1.0)):
        rng = np.random.default_rng(seed)
        out = bernoulli_normals(shape, density, rng)
        replay = np.random.default_rng(seed)
        mask = replay.random(shape) < density
        assert out.dtype == np.float32 and np.array_equal(out != 0, mask)  # every non-zero has its value
        replay.standard_normal(int(mask.sum()))  # exactly the uniforms and one normal per non-zero
        assert replay.bit_generator.state == rng.bit_generator.state


def test_a_drawn_zero_is_never_a_zero_value() -> None:
    class ZeroNormals:
        """Standard normals that are all 0 (a real generator draws 0 with probability ~1e-16 per draw)."""

        def standard_normal(self, size: object = None, out: np.ndarray | None = None) -> np.ndarray:
            assert out is not None
            out[...] = 0.0
            return out

    mask = np.random.default_rng(0).random((6, 50)) < 0.3
    out = generators._masked_normals(mask, ZeroNormals())  # type: ignore[arg-type]
    assert np.array_equal(out != 0, mask) and set(np.unique(out[mask])) == {1.0}


@pytest.mark.parametrize("model", ["uniform", "channel"])
def test_the_same_seed_gives_the_same_bytes_another_seed_other_values(model: str) -> None:
    shape = (2, 16, 12, 12)
    a, b = (make_operand(shape, 0.3, model, np.random.default_rng(5)) for _ in range(2))
    c = make_operand(shape, 0.3, model, np.random.default_rng(6))
    assert a.tobytes() == b.tobytes() and a.tobytes() != c.tobytes()


def test_bernoulli_normals_of_a_dense_operand_draw_every_value() -> None:
    out = bernoulli_normals((3, 7, 11), 1.0, np.random.default_rng(2))
    assert np.count_nonzero(out) == out.size


def _loaded_after(code: str) -> bool:
    probe = f"import sys\n{code}\nprint('scipy.ndimage' in sys.modules)"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                          timeout=120).stdout.strip() == "True"


def test_scipy_ndimage_loads_only_for_the_smoothed_fields() -> None:
    setup = ("from antsim import Layer\nfrom antsim.sparsity.generators import make_tensors\n"
             "layer = Layer(name='l', N=1, C=4, K=4, H=6, W=6, R=3, S=3, stride=1, pad=1)\n")
    assert not _loaded_after(setup + "make_tensors(layer, model='uniform')\nmake_tensors(layer, model='channel')")
    assert _loaded_after(setup + "make_tensors(layer, model='swat')")
