"""Worker processes that share the machine's cores: one BLAS thread each.

numpy's OpenBLAS starts one thread per core in every process. A sweep or a comparison that runs one worker
per core then holds cores × cores BLAS threads, which oversubscribe the machine: measured on the 2-core
dev machine, `resnet18_cifar_pareto`-like sweeps ran 12.8 designs/min with 2 workers against 16.0 with
one; with one BLAS thread per worker, 19.6 (BENCHMARKS.md, session 5, "Sweeps"). OpenBLAS reads its
thread count when it loads, so the setting must be in a worker's environment before it starts: workers are
started with the ``spawn`` method inside ``one_blas_thread_per_worker``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

# The thread-count variables of the BLAS builds numpy and scipy ship with (OpenBLAS, and OpenMP / MKL ones).
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@contextmanager
def one_blas_thread_per_worker() -> Iterator[None]:
    """Processes started inside this block begin with one BLAS thread; the caller's environment is restored
    on exit, and a variable the user set is left as the user set it."""
    unset = [name for name in BLAS_THREAD_VARIABLES if name not in os.environ]
    for name in unset:
        os.environ[name] = "1"
    try:
        yield
    finally:
        for name in unset:
            os.environ.pop(name, None)
