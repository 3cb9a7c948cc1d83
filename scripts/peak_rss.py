"""Peak RSS of one whole training step per zoo network and design, each in a fresh subprocess.

Every run is ``antsim simulate --arch A --network N --batch B [--batch-sample K] --no-progress --out <tmp>``
(fprop, dgrad and wgrad of every layer, ``fast`` fidelity, default densities) in its own process; its peak
resident set is the ``ru_maxrss`` that ``os.wait4`` returns for that child (Linux: the largest RSS of the
child and of any process it waited for, not their sum). One BLAS thread per run. A run that fails, is
refused by the resource guard (exit 2) or times out is listed with that status, never dropped.

Batches: ``1`` and ``train``, the network's training batch (``TRAINING_BATCH``): BERT-base 8 and the LSTM
20 (the batches of the GEMM accelerator results, docs/gemm.md), 16 for every CNN and the ViT; at a batch
above ``--batch-sample`` the run maps that many images and estimates the others (antsim.dataflow.sampling;
GEMM layers are mapped whole, and the dense design maps one image and repeats it, exactly, whatever the flag).

Usage: .venv/bin/python scripts/peak_rss.py [--networks a,b] [--archs scnn,ant,dense] [--batch 1,train]
       [--batch-sample 2] [--timeout 1800] [--jobs 1] [--force] [--skip NETWORK:DESIGN,...] [--json out.json]
Writes a markdown table (network, design, batch, sample, status, peak RSS MiB, wall s) and the largest peak.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# The batch a network trains at when `--batch train` is asked for. BERT-base 8 and LSTM-medium 20 are the
# batches of the GEMM accelerator results (docs/gemm.md; 20 is the batch of Zaremba et al., arXiv:1409.2329);
# every other zoo network (the CNNs and the CIFAR ViT) gets 16, the batch of issue 16's batch-16 target.
TRAINING_BATCH = {"bert-base": 8, "lstm-lm-medium": 20}
DEFAULT_TRAINING_BATCH = 16
LIMIT_MB = 2048.0  # issue 16's done-criterion: peak RSS of every zoo step < 2 GB, read as 2 GiB (ru_maxrss counts KiB)


@dataclass(frozen=True)
class Run:
    """One training step to measure: network, design (arch_configs/<design>.yaml), batch, sampled images
    (0 = every image)."""
    network: str
    design: str
    batch: int
    batch_sample: int


@dataclass(frozen=True)
class Measured:
    """What one run gave: status ``ok`` | ``failed (rc N)`` | ``refused by the guard`` | ``timeout``, peak RSS in
    MiB (also for a failed run: what it held until it stopped), wall seconds, the last stderr line."""
    run: Run
    status: str
    peak_rss_mb: float
    wall_s: float
    message: str


def training_batch(network: str) -> int:
    return TRAINING_BATCH.get(network, DEFAULT_TRAINING_BATCH)


def parse_batches(text: str) -> list[str]:
    """``1,train`` → ``["1", "train"]``; each item a positive int or ``train``."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    bad = [item for item in items if item != "train" and not (item.isdigit() and int(item) > 0)]
    if not items or bad:
        raise SystemExit(f"peak_rss.py: --batch wants positive ints or 'train', comma-separated; got {text!r}")
    return items


def plan_runs(networks: Sequence[str], designs: Sequence[str], batches: Sequence[str],
              batch_sample: int) -> list[Run]:
    """Every (network, batch, design) in that order, duplicates dropped; a batch above ``batch_sample``
    samples that many images (``batch_sample`` 0: every image)."""
    runs: list[Run] = []
    for network in networks:
        sizes = [training_batch(network) if item == "train" else int(item) for item in batches]
        for batch in dict.fromkeys(sizes):
            sample = batch_sample if 0 < batch_sample < batch else 0
            runs.extend(Run(network, design, batch, sample) for design in designs)
    return runs


def command(run: Run, out: Path, force: bool) -> list[str]:
    cmd = [sys.executable, "-m", "antsim", "simulate", "--arch", str(ROOT / "arch_configs" / f"{run.design}.yaml"),
           "--network", run.network, "--batch", str(run.batch), "--no-progress", "--out", str(out)]
    if run.batch_sample:
        cmd += ["--batch-sample", str(run.batch_sample)]
    return cmd + (["--force"] if force else [])


def status_of(returncode: int, timed_out: bool, message: str) -> str:
    """A wait status as the table's status; the resource guard's refusal is a user error (exit 2) whose
    message offers ``--force`` (antsim.guard)."""
    if timed_out:
        return "timeout"
    if returncode == 0:
        return "ok"
    if returncode == 2 and "--force" in message:
        return "refused by the guard"
    return f"failed (rc {returncode})"


def measure(run: Run, timeout_s: float, force: bool) -> Measured:
    """Run one step in a fresh process group; kill the group at ``timeout_s``; its own ``ru_maxrss``."""
    with tempfile.TemporaryDirectory(prefix="peak_rss_") as tmp:
        stderr_path = Path(tmp) / "stderr.txt"
        with stderr_path.open("w") as stderr:
            start = time.perf_counter()
            child = subprocess.Popen(command(run, Path(tmp) / "result.json", force), cwd=ROOT,
                                     env={**os.environ, **ONE_THREAD}, stdout=subprocess.DEVNULL,
                                     stderr=stderr, start_new_session=True)
            fired = threading.Event()

            def kill() -> None:
                fired.set()
                try:
                    os.killpg(child.pid, signal.SIGKILL)
                except ProcessLookupError:  # it ended between the timer firing and the kill
                    pass

            timer = threading.Timer(timeout_s, kill)
            timer.start()
            _, wait_status, usage = os.wait4(child.pid, 0)
            timer.cancel()
            child.returncode = os.waitstatus_to_exitcode(wait_status)  # reaped here; keep Popen from waiting
            wall = time.perf_counter() - start
        lines = stderr_path.read_text(errors="replace").strip().splitlines()
    message = lines[-1][:300] if lines else ""
    # ru_maxrss is in KiB on Linux
    return Measured(run, status_of(child.returncode, fired.is_set(), message), usage.ru_maxrss / 1024.0, wall,
                    message)


def table(rows: Sequence[Measured]) -> str:
    head = ["| network | design | batch | sample | status | peak RSS (MiB) | wall (s) |",
            "|---|---|---:|---:|---|---:|---:|"]
    body = [f"| {m.run.network} | {m.run.design} | {m.run.batch} | {m.run.batch_sample or 'all'} | {m.status} | "
            f"{m.peak_rss_mb:,.0f} | {m.wall_s:,.1f} |" for m in rows]
    return "\n".join(head + body)


def largest(rows: Sequence[Measured]) -> str:
    if not rows:
        return "no runs"
    top = max(rows, key=lambda m: m.peak_rss_mb)
    over = [m for m in rows if m.peak_rss_mb >= LIMIT_MB]
    not_ok = [m for m in rows if m.status != "ok"]
    return (f"largest: {top.peak_rss_mb:,.0f} MiB ({top.run.network}, {top.run.design}, batch {top.run.batch}, "
            f"{top.status}); {len(over)} of {len(rows)} runs at or above {LIMIT_MB:,.0f} MiB; "
            f"{len(not_ok)} not ok")


# --where: which arrays are alive when the process is at its largest. A thread samples the RSS every
# WHERE_INTERVAL_S; at each new peak it lists the numpy arrays the main thread's frames hold (locals, and one
# level into their lists, tuples, dicts and dataclass fields), so the report names file:line, variable, shape
# and dtype. Arrays held only by C code (a sort's scratch buffer) are not seen; the RSS at the peak says how
# much that leaves.
WHERE_INTERVAL_S = 0.02
WHERE_MIN_BYTES = 8 * 2**20  # arrays smaller than 8 MiB are summed, not listed


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _arrays_in(name: str, value: object) -> list[tuple[str, object]]:
    """(name, array) for ``value`` and one level into its containers or dataclass fields."""
    import dataclasses

    import numpy as np

    if isinstance(value, np.ndarray):
        return [(name, value)]
    if isinstance(value, dict):
        items = [(f"{name}[{k!r}]", v) for k, v in list(value.items())[:64]]
    elif isinstance(value, (list, tuple)):
        items = [(f"{name}[{i}]", v) for i, v in enumerate(value[:64])]
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(f"{name}.{f.name}", getattr(value, f.name, None)) for f in dataclasses.fields(value)]
    else:
        return []
    return [(n, v) for n, v in items if isinstance(v, np.ndarray)]


def frame_arrays(frame: FrameType | None) -> list[str]:
    """One line per array of at least WHERE_MIN_BYTES the frames from ``frame`` outwards hold, largest first
    (an array held by several frames is counted once, at its innermost holder)."""
    import numpy as np

    seen: dict[int, tuple[int, str]] = {}
    while frame is not None:
        where = f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno} {frame.f_code.co_name}"
        for name, value in list(frame.f_locals.items()):
            for label, array in _arrays_in(name, value):
                assert isinstance(array, np.ndarray)
                base = array.base if isinstance(array.base, np.ndarray) else array
                if id(base) not in seen and base.nbytes >= WHERE_MIN_BYTES:
                    seen[id(base)] = (base.nbytes, f"{base.nbytes / 2**20:8.1f} MiB  {where}  {label} "
                                                   f"{array.shape} {array.dtype}")
        frame = frame.f_back
    return [line for _, line in sorted(seen.values(), reverse=True)]


@dataclass
class _Peak:
    """The largest RSS the sampler saw, the arrays alive then and (with tracemalloc on) the bytes Python's
    allocators and numpy had handed out then with their largest allocation sites."""
    rss: int = 0
    arrays: tuple[str, ...] = ()
    traced: int = 0
    sites: tuple[str, ...] = ()


def traced_sites(limit: int = 12) -> tuple[int, tuple[str, ...]]:
    """(bytes traced, the ``limit`` largest allocation sites by file:line) of one snapshot — tracemalloc must
    be on. The total is the snapshot's own: the main thread keeps allocating while the statistics are sorted."""
    import tracemalloc

    stats = tracemalloc.take_snapshot().statistics("lineno")
    return sum(s.size for s in stats), tuple(
        f"{s.size / 2**20:8.1f} MiB in {s.count} blocks  {s.traceback[0].filename.split('site-packages/')[-1]}:"
        f"{s.traceback[0].lineno}" for s in stats[:limit])


def where_peak(cli_args: Sequence[str], trace: bool) -> int:
    """Run ``antsim <cli_args>`` in this process and print the arrays alive at its peak RSS (``trace``: and
    what tracemalloc counts then, which tells held arrays from memory the allocator kept)."""
    import tracemalloc

    from antsim.cli import main as antsim_main

    if trace:
        tracemalloc.start()

    main_id = threading.main_thread().ident
    peak, done = _Peak(), threading.Event()

    def sample() -> None:
        while not done.wait(WHERE_INTERVAL_S):
            rss = rss_bytes()
            if rss > peak.rss * 1.02:  # a new peak by 2 %: worth walking the frames again
                frame = sys._current_frames().get(main_id) if main_id is not None else None
                peak.rss, peak.arrays = rss, tuple(frame_arrays(frame))
                if trace:
                    peak.traced, peak.sites = traced_sites()

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    status = antsim_main(list(cli_args))
    done.set()
    sampler.join()
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"antsim {' '.join(cli_args)}: exit {status}; sampled peak RSS {peak.rss / 2**20:,.0f} MiB "
          f"(ru_maxrss {maxrss:,.0f} MiB)")
    print("\n".join(peak.arrays) or "no array of 8 MiB or more in the main thread's frames")
    if trace:
        print(f"tracemalloc at that peak: {peak.traced / 2**20:,.0f} MiB traced; largest sites:")
        print("\n".join(peak.sites))
    return status


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--networks", default="", help="comma-separated zoo networks (default: all of `antsim zoo`)")
    parser.add_argument("--archs", default="scnn,ant,dense", help="designs of arch_configs/, comma-separated")
    parser.add_argument("--batch", default="1,train", help="batches: ints and/or 'train' (default 1,train)")
    parser.add_argument("--batch-sample", type=int, default=2, help="images mapped at a larger batch (0 = all)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run before it is killed")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (default 1: memory is the point)")
    parser.add_argument("--force", action="store_true", help="pass --force (run past the resource guard)")
    parser.add_argument("--skip", default="", help="NETWORK:DESIGN pairs not to run, comma-separated")
    parser.add_argument("--json", type=Path, default=None,
                        help="also write every row as JSON (rewritten after each run: a stopped table keeps its rows)")
    parser.add_argument("--trace", action="store_true", help="with --where: also tracemalloc's count at the peak")
    parser.add_argument("--where", nargs=argparse.REMAINDER, default=None, metavar="SIMULATE_ARGS",
                        help="instead: run `antsim simulate SIMULATE_ARGS` here and list the arrays alive at its "
                             "peak RSS (last option)")
    args = parser.parse_args(argv)
    if args.batch_sample < 0 or args.jobs < 1 or args.timeout <= 0:
        parser.error("--batch-sample must be >= 0, --jobs >= 1 and --timeout > 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    from antsim.workloads.zoo import networks as zoo_networks

    args = parse_args(argv)
    if args.where is not None:
        return where_peak(["simulate", *args.where], args.trace)
    names = [n for n in args.networks.split(",") if n] or zoo_networks()
    unknown = sorted(set(names) - set(zoo_networks()))
    designs = [d for d in args.archs.split(",") if d]
    missing = [d for d in designs if not (ROOT / "arch_configs" / f"{d}.yaml").is_file()]
    if unknown or missing or not designs:
        raise SystemExit(f"peak_rss.py: unknown networks {unknown} or designs {missing or designs}")
    skip = {tuple(pair.split(":", 1)) for pair in args.skip.split(",") if pair}
    runs = [run for run in plan_runs(names, designs, parse_batches(args.batch), args.batch_sample)
            if (run.network, run.design) not in skip]
    done: list[Measured] = []
    lock = threading.Lock()

    def one(run: Run) -> Measured:
        measured = measure(run, args.timeout, args.force)
        print(f"{run.network} {run.design} batch {run.batch}: {measured.status}, {measured.peak_rss_mb:,.0f} MiB, "
              f"{measured.wall_s:,.1f} s", file=sys.stderr, flush=True)
        with lock:
            done.append(measured)
            if args.json:
                write_json(args.json, done)
        return measured

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(one, runs))
    print(table(rows))
    print(largest(rows))
    if args.json:
        write_json(args.json, rows)
    return 0


def write_json(path: Path, rows: Sequence[Measured]) -> None:
    path.write_text(json.dumps([{**asdict(m.run), **{k: v for k, v in asdict(m).items() if k != "run"}}
                                for m in rows], indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
