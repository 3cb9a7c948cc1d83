"""Operands made once per sweep, shared by its worker processes through files (docs/sweep_screening.md, "Start-up").

Every worker process of a sweep evaluates on the same generated tensors of each layer
(``antsim.dse.evaluators``), made once per process and kept. Made by each worker alone, they cost every
worker the whole generation (~0.4 s of CPU for ResNet-18 CIFAR, SWAT) before its first trial. Here the workers
divide the layers instead: each claims the next unclaimed layer (an exclusively created claim file, locked
while the layer is made), makes it, writes its arrays to the sweep's operand folder (``.npy``, renamed into
place when complete), and loads the layers the others made. A layer whose claimer died before writing it is
made by the worker that waits for it. The arrays are written and read back bit for bit, so a trial sees the
operands it would have made itself (tests/dse/test_operand_share.py compares every array).

The analytic screen's per-(layer, phase) operands are not shared: they are ~4× the tensors' bytes (int64
coordinates: ~150 MB for ResNet-18 CIFAR) and writing and reading them back cost about as much CPU as making
them (~0.4 s; measured in fresh processes, docs/sweep_screening.md).
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import numpy as np

from antsim.dse.evaluators import generated_tensors, install_generated
from antsim.dse.workload import Workload
from antsim.sparsity.tensors import OPERANDS, Tensors
from antsim.workloads.gemm import Gemm

# How often a worker looks again for a layer another worker is making. [choice] 10 ms: a layer takes
# 5-50 ms to make (ResNet-18 CIFAR: ~0.4 s for 20 layers), so a look costs little and waits little.
POLL_S = 0.01


def shareable(workload: Workload) -> bool:
    """Whether the workload's operands are generated (conv layers, no tensors file): a tensors file is read by
    each worker as it is; GEMM operands are made per worker (a GEMM layer's tensors are another type)."""
    return workload.tensors_path is None and not any(isinstance(layer, Gemm) for layer in workload.layers)


def share_operands(workload: Workload, seed: int, folder: Path) -> None:
    """Fill this process's tensor cache for ``workload`` (``seed``: the spec's) with the other workers' help:
    claim and make layers until none is left unclaimed, then load the layers the others made (or make those
    whose claimer died)."""
    pending = []
    for position in range(len(workload.layers)):
        claim = _claim(folder, position)
        if claim is None:
            pending.append(position)
            continue
        try:
            _write(folder, position, generated_tensors(workload, position, seed))
        finally:
            os.close(claim)  # its lock goes with it
    for position in pending:
        made = _wait_for(folder, position)
        if made is None:  # its claimer died before writing it
            generated_tensors(workload, position, seed)
        else:
            install_generated(workload, position, seed, _read(made))


def _read(folder: Path) -> Tensors:
    """A layer's tensors as another worker wrote them to ``folder``."""
    def load(name: str) -> np.ndarray:
        return np.load(folder / f"{name}.npy", allow_pickle=False)

    saved = load("saved_activations") if (folder / "saved_activations.npy").exists() else None
    return Tensors(load("weights"), load("activations"), load("grad_output"), saved)


def _write(folder: Path, position: int, tensors: Tensors) -> None:
    """Write layer ``position``'s arrays to ``folder/<position>.tmp``, then rename it ``folder/<position>``."""
    out = folder / f"{position}.tmp"
    out.mkdir()
    for name in OPERANDS:
        array = getattr(tensors, name)
        if array is not None:
            np.save(out / f"{name}.npy", array, allow_pickle=False)
    out.rename(folder / str(position))


def _claim(folder: Path, position: int) -> int | None:
    """Claim layer ``position``: its claim file created here (exclusively) and locked until the returned
    descriptor is closed (a process that dies lets go of the lock); None when another process claimed it."""
    try:
        handle = os.open(folder / f"{position}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return None
    fcntl.flock(handle, fcntl.LOCK_EX)
    os.write(handle, b"claimed")  # from here an unlocked claim file means a claimer gone
    return handle


def _wait_for(folder: Path, position: int) -> Path | None:
    """The folder another worker wrote layer ``position`` to, once it is there; None if its claimer died first
    (its claim file unlocked, written, and no folder)."""
    done, claim = folder / str(position), folder / f"{position}.claim"
    while not done.is_dir():
        if _claimer_gone(claim):
            return done if done.is_dir() else None
        time.sleep(POLL_S)
    return done


def _claimer_gone(claim: Path) -> bool:
    """Whether the claim file's lock is free although the claimer wrote its mark (so it no longer runs, or
    has finished: the caller looks for the folder again). A claim not marked yet is still being taken."""
    with open(claim, "rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        marked = bool(handle.read())
        fcntl.flock(handle, fcntl.LOCK_UN)
    return marked
