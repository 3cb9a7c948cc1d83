"""The ``gemm`` layer kind: validation, batch scaling, dict/CSV round trips and the three phase GEMMs."""

from __future__ import annotations

import numpy as np
import pytest

from antsim.errors import WorkloadError
from antsim.sparsity.gemm import GemmTensors
from antsim.workloads import gemm as gemm_mod
from antsim.workloads.gemm import Gemm, gemm_phase, layer_kind, reference
from antsim.workloads.layers import PHASES, Layer, read_layers_csv, write_layers_csv


def test_phases_match_the_conv_phases() -> None:
    assert gemm_mod.PHASES == PHASES


@pytest.mark.parametrize("kwargs", [{"M": 0}, {"K": -1}, {"count": 1.5}, {"a": "bias"}, {"batch_dim": "M"},
                                    {"N": 10, "batch": 4}, {"M": True}])
def test_bad_gemm_refused(kwargs: dict) -> None:
    base = {"name": "g", "M": 4, "N": 8, "K": 3}
    with pytest.raises(WorkloadError, match="gemm 'g'"):
        Gemm(**{**base, **kwargs})


def test_macs_parameters_and_batch() -> None:
    g = Gemm("fc", M=1000, N=16, K=4096, batch=16)
    assert g.macs == 1000 * 16 * 4096 and g.parameters == 1000 * 4096
    assert g.with_batch(1).N == 1 and g.with_batch(8).N == 8 and g.with_batch(8).batch == 8
    att = Gemm("qk", M=128, N=128, K=64, count=12 * 8, a="activations", batch=8, batch_dim="count")
    assert att.parameters == 0 and att.with_batch(2).count == 24 and att.with_batch(2).N == 128
    assert layer_kind(att) == "gemm" and layer_kind(Layer("c", 1, 3, 8, 4, 4, 3, 3)) == "conv"
    assert Gemm.from_dict(att.to_dict()) == att and att.to_dict()["kind"] == "gemm"


def test_from_dict_refuses_unknown_keys() -> None:
    with pytest.raises(WorkloadError, match="gemm 'g'"):
        Gemm.from_dict({"name": "g", "M": 1, "N": 1, "K": 1, "rows": 3})


def test_mixed_csv_round_trip(tmp_path) -> None:
    layers = [Layer("conv1", 2, 3, 16, 8, 8, 3, 3, (2, 1), (1, 0)), Gemm("fc", 10, 4, 512, batch=2),
              Gemm("att", 16, 16, 8, count=6, a="activations", batch=2, batch_dim="count")]
    path = tmp_path / "mixed.csv"
    write_layers_csv(layers, path)
    assert read_layers_csv(path) == layers


def test_conv_only_csv_has_no_kind_column(tmp_path) -> None:
    path = tmp_path / "conv.csv"
    write_layers_csv([Layer("c", 1, 3, 8, 4, 4, 3, 3)], path)
    assert "kind" not in path.read_text().splitlines()[0]


def test_kind_csv_errors_name_line_and_column(tmp_path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("name,kind,M,N,K,count\nfc,gemm,10,x,4,1\n")
    with pytest.raises(WorkloadError, match=r"bad.csv: line 2: column N must be an integer"):
        read_layers_csv(path)
    path.write_text("name,kind,M,N,K,count\nfc,lstm,10,2,4,1\n")
    with pytest.raises(WorkloadError, match=r"line 2: column kind must be one of conv, gemm; got 'lstm'"):
        read_layers_csv(path)
    path.write_text("name,kind,M,N,K,count\nc,conv,10,2,4,1\n")
    with pytest.raises(WorkloadError, match=r"line 2: a conv row needs columns"):
        read_layers_csv(path)
    path.write_text("name,kind,M,N,K,count,rows\nfc,gemm,10,2,4,1,3\n")
    with pytest.raises(WorkloadError, match=r"unknown columns \['rows'\]"):
        read_layers_csv(path)
    path.write_text("name,kind,M,N,K,count\nfc,gemm,10,2,4,1\nfc,gemm,1,2,4,1\n")
    with pytest.raises(WorkloadError, match=r"duplicate layer names \['fc'\]"):
        read_layers_csv(path)


def _tensors(g: Gemm, rng: np.random.Generator, saved: bool = False) -> GemmTensors:
    a = rng.standard_normal((1 if g.weight_shared else g.count, g.M, g.K))
    b = rng.standard_normal((g.count, g.K, g.N))
    dy = rng.standard_normal((g.count, g.M, g.N))
    return GemmTensors(a, b, dy, b * (rng.random(b.shape) < 0.5) if saved else None)


@pytest.mark.parametrize("a", ["weights", "activations"])
def test_phase_gemms_are_the_gradients(a: str) -> None:
    """fprop/dgrad/wgrad equal the forward product and its two operand gradients (finite differences of
    the scalar <Y, dY>, which is linear in each operand: the gradient is exact)."""
    rng = np.random.default_rng(0)
    g = Gemm("g", M=3, N=5, K=4, count=2, a=a)
    t = _tensors(g, rng)
    y = reference(g, "fprop", t)
    assert np.allclose(y, np.matmul(np.broadcast_to(t.a, (2, 3, 4)), t.b))
    loss = lambda a_, b_: float(np.sum(np.matmul(a_, b_) * t.grad_output))  # noqa: E731
    d_b = np.zeros_like(t.b)
    for idx in np.ndindex(t.b.shape):
        e = np.zeros_like(t.b)
        e[idx] = 1.0
        d_b[idx] = loss(t.a, t.b + e) - loss(t.a, t.b)
    assert np.allclose(reference(g, "dgrad", t), d_b)
    d_a = reference(g, "wgrad", t)
    if g.weight_shared:  # the shared weight's gradient sums over the count products
        d_a = d_a.sum(axis=0, keepdims=True)
    full = np.zeros_like(t.a)
    for idx in np.ndindex(t.a.shape):
        e = np.zeros_like(t.a)
        e[idx] = 1.0
        full[idx] = loss(t.a + e, t.b) - loss(t.a, t.b)
    assert np.allclose(d_a, full)


def test_wgrad_reads_the_saved_copy_and_shapes_are_checked() -> None:
    rng = np.random.default_rng(1)
    g = Gemm("g", M=3, N=5, K=4)
    t = _tensors(g, rng, saved=True)
    assert np.allclose(reference(g, "wgrad", t), np.matmul(t.grad_output, t.saved_b.transpose(0, 2, 1)))
    p = gemm_phase(g, "dgrad")
    assert (p.M, p.N, p.K, p.left_kind, p.right_kind) == (4, 5, 3, "weights", "grad_output")
    with pytest.raises(WorkloadError, match="b has shape"):
        GemmTensors(t.a, t.b[:, :2], t.grad_output).check_shapes(g)
    with pytest.raises(WorkloadError, match="phase must be one of"):
        gemm_phase(g, "bprop")
