"""``antsim.dse.operand_share``: worker processes divide the layers' tensors through files; every process ends up
with the arrays it would have made itself, bit for bit, also when a claimer died."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from pathlib import Path

import numpy as np
import pytest

from antsim.dse import evaluators
from antsim.dse.operand_share import _claim, _claimer_gone, share_operands, shareable
from antsim.dse.workload import Workload
from antsim.workloads.gemm import Gemm
from antsim.workloads.layers import Layer

LAYERS = (  # strides, padding, a 1 × 1 and a rectangular kernel: every phase's geometry differs
    Layer(name="a", N=1, C=8, K=16, H=10, W=9, R=3, S=3, stride=1, pad=1),
    Layer(name="b", N=1, C=16, K=8, H=9, W=9, R=3, S=3, stride=2, pad=1),
    Layer(name="c", N=1, C=8, K=12, H=5, W=5, R=1, S=1, stride=1, pad=0),
    Layer(name="d", N=1, C=6, K=4, H=8, W=7, R=3, S=2, stride=(2, 1), pad=(0, 1)),
)
# swat with a saved-activation density: the optional operand (``saved_activations``) is shared too
WORKLOAD = Workload(LAYERS, densities={"w": 0.3, "a": 0.4, "g": 0.35, "a_saved": 0.2}, sparsity="swat")
SEED = 17


def _clear() -> None:
    evaluators._GENERATED.clear()


def _fingerprint() -> dict[str, str]:
    """Every cached array (dtype, shape, bytes) of this process, by cache key and field."""
    out = {}

    def add(name: str, value: object) -> None:
        if isinstance(value, np.ndarray):
            value = (value.dtype.str, value.shape, hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest())
        out[name] = repr(value)

    for key, tensors in evaluators._GENERATED.items():
        for field in ("weights", "activations", "grad_output", "saved_activations"):
            add(f"{key}/{field}", getattr(tensors, field))
    return out


def _made_here() -> dict[str, str]:
    """The reference: every layer made in this process, as a worker without the folder makes them."""
    _clear()
    evaluators.workload_tensors(WORKLOAD, SEED)
    out = _fingerprint()
    _clear()
    return out


def test_operands_loaded_from_the_folder_are_the_ones_made_here(tmp_path: Path) -> None:
    reference = _made_here()
    assert len(reference) == 4 * 4 and "None" not in "".join(reference.values())
    share_operands(WORKLOAD, SEED, tmp_path)  # first worker: claims and writes every layer
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["0", "1", "2", "3"]
    assert _fingerprint() == reference
    _clear()
    share_operands(WORKLOAD, SEED, tmp_path)  # a later worker: every layer claimed, all loaded
    assert _fingerprint() == reference
    _clear()


def test_a_layer_whose_claimer_died_is_made_by_the_worker_waiting_for_it(tmp_path: Path) -> None:
    reference = _made_here()
    (tmp_path / "2.claim").write_bytes(b"claimed")  # marked, unlocked, no folder: its claimer is gone
    share_operands(WORKLOAD, SEED, tmp_path)
    assert not (tmp_path / "2").exists() and _fingerprint() == reference
    _clear()


def test_a_claim_is_held_while_its_descriptor_is_open(tmp_path: Path) -> None:
    handle = _claim(tmp_path, 0)
    assert handle is not None and _claim(tmp_path, 0) is None
    assert not _claimer_gone(tmp_path / "0.claim")  # locked: still making it
    os.close(handle)
    assert _claimer_gone(tmp_path / "0.claim")
    (tmp_path / "1.claim").write_bytes(b"")  # created, not yet locked and marked: being taken, not gone
    assert not _claimer_gone(tmp_path / "1.claim")


def test_only_generated_conv_operands_are_shared() -> None:
    assert shareable(WORKLOAD)
    assert not shareable(Workload(LAYERS, tensors_path="captured.npz"))
    assert not shareable(Workload((*LAYERS, Gemm(name="g", M=8, K=16, N=4)), sparsity="uniform"))


def _worker(folder: Path, out: multiprocessing.SimpleQueue) -> None:
    share_operands(WORKLOAD, SEED, folder)
    out.put(_fingerprint())


@pytest.mark.parametrize("workers", [2, 3])
def test_worker_processes_dividing_the_layers_each_end_with_every_layer_as_made_alone(tmp_path: Path,
                                                                                       workers: int) -> None:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.SimpleQueue()
    procs = [ctx.Process(target=_worker, args=(tmp_path, out)) for _ in range(workers)]
    for p in procs:
        p.start()
    got = [out.get() for _ in range(workers)]  # read before joining: a child blocks on a full pipe
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * workers
    assert got == [_made_here()] * workers
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == len(LAYERS)  # each layer made once
