"""``antsim.parallel``: workers started in the block get one BLAS thread; the caller's environment is kept."""

from __future__ import annotations

import multiprocessing
import os

import pytest

from antsim.parallel import BLAS_THREAD_VARIABLES, one_blas_thread_per_worker


def _child_environment(queue: multiprocessing.SimpleQueue) -> None:
    queue.put({name: os.environ.get(name) for name in BLAS_THREAD_VARIABLES})


def test_a_spawned_worker_starts_with_one_blas_thread_and_the_parent_is_restored(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in BLAS_THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")  # a user's own setting is left alone
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.SimpleQueue()
    with one_blas_thread_per_worker():
        child = ctx.Process(target=_child_environment, args=(queue,))
        child.start()
    child.join(60)
    assert child.exitcode == 0
    assert queue.get() == {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "3"}
    assert "OPENBLAS_NUM_THREADS" not in os.environ and "OMP_NUM_THREADS" not in os.environ
    assert os.environ["MKL_NUM_THREADS"] == "3"


def test_the_environment_is_restored_when_the_block_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    with pytest.raises(RuntimeError), one_blas_thread_per_worker():
        assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
        raise RuntimeError("a worker failed to start")
    assert "OPENBLAS_NUM_THREADS" not in os.environ
