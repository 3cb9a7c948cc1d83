"""Result files of every backend, written through the public entry points (CLI and library).

``tests/data/results/golden/`` holds these files as written by the code before the typed result records
(commit 0ab16c6); ``tests/test_results.py`` writes them again and compares the bytes. Regenerate only for
an intended format change: ``.venv/bin/python tests/results_golden.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "results" / "golden"
# Inputs by paths relative to the repository (the cases run there), so the files echo no machine's path.
DATA = Path("tests/data/results")
LAYERS_CSV = DATA / "tiny_layers.csv"
ARCH = Path("arch_configs")


def _cli(argv: list[str]) -> None:
    from antsim.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        status = main(argv)
    if status != 0:
        raise RuntimeError(f"antsim {' '.join(argv)} exited with {status}")


def _sim_cli_fast(out: Path) -> None:
    _cli(["simulate", "--arch", str(ARCH / "ant.yaml"), "--layers-csv", str(LAYERS_CSV), "--fidelity", "fast",
          "--batch-sample", "1", "--seed", "3", "--no-progress", "--out", str(out)])


def _sim_cli_exact_csv(out: Path) -> None:
    _cli(["simulate", "--arch", str(ARCH / "scnn.yaml"), "--layers-csv", str(LAYERS_CSV), "--fidelity", "exact",
          "--phases", "fprop,wgrad", "--regime", "swat", "--no-progress", "--out", str(out)])


def _sim_lib_tensors(out: Path) -> None:
    from antsim.simulate import simulate_network
    from antsim.sparsity.gemm import make_gemm_tensors
    from antsim.sparsity.generators import make_tensors
    from antsim.spec.arch import load_arch
    from antsim.workloads.gemm import Gemm
    from antsim.workloads.layers import read_layers_csv

    conv = read_layers_csv(LAYERS_CSV)[0]
    gemm = Gemm("g1", M=8, N=16, K=8, batch=2)
    tensors = {conv.name: make_tensors(conv, 0.3, 0.4, 0.5, model="swat", seed=1),
               gemm.name: make_gemm_tensors(gemm, {"w": 0.3, "a": 0.4, "g": 0.5}, "swat", 2)}
    simulate_network(load_arch(ARCH / "ant.yaml"), [conv, gemm], tensors=tensors, fidelity="exact",
                     seed=5).write_json(out)


def _gpu_cli(out: Path) -> None:
    _cli(["gpu", "--gpu", "v100", "--layers-csv", str(LAYERS_CSV), "--no-progress", "--out", str(out)])


def _gpu_cli_step(out: Path) -> None:
    _cli(["gpu", "--gpu", "a100", "--precision", "fp16", "--layers-csv", str(LAYERS_CSV), "--step",
          "--no-progress", "--out", str(out)])


def _gpu_lib(out: Path) -> None:
    from antsim.gpu import estimate_gpu
    from antsim.workloads.gemm import Gemm
    from antsim.workloads.layers import read_layers_csv

    layers = [*read_layers_csv(LAYERS_CSV), Gemm("g1", M=64, N=32, K=16, batch=2)]
    estimate_gpu("t4", layers, phases=("fprop", "wgrad")).write_json(out)


def _measured(out: Path) -> None:
    from antsim.measure.external import read_results_csv
    from antsim.workloads.layers import read_layers_csv

    result = read_results_csv(DATA / "measured.csv", read_layers_csv(LAYERS_CSV))
    result.write_json(out)
    result.write_csv(out.with_suffix(".csv"))


def _deepbench(out: Path) -> None:
    from antsim.measure.external import read_deepbench_layers, read_results_csv

    path = DATA / "deepbench_tiny.csv"
    read_results_csv(path, read_deepbench_layers(path), backend="external").write_json(out)


CASES: dict[str, Callable[[Path], None]] = {
    "sim_cli_fast.json": _sim_cli_fast, "sim_cli_exact.csv": _sim_cli_exact_csv,
    "sim_lib_tensors.json": _sim_lib_tensors, "gpu_cli.json": _gpu_cli, "gpu_cli_step.json": _gpu_cli_step,
    "gpu_lib.json": _gpu_lib, "measured.json": _measured, "deepbench.json": _deepbench,
}


def write_case(name: str, folder: Path) -> list[Path]:
    """Write case ``name`` into ``folder``; the files it wrote (a case may write a CSV beside its JSON)."""
    folder = folder.resolve()
    before = set(folder.iterdir())
    with contextlib.chdir(ROOT):
        CASES[name](folder / name)
    return sorted(set(folder.iterdir()) - before)


def normalised(path: Path) -> bytes:
    """The file's bytes with the antsim version blanked (a version bump is not a format change)."""
    text = path.read_bytes()
    if path.suffix == ".json":
        version = json.loads(text).get("antsim_version", "")
        text = text.replace(f'"antsim_version": "{version}"'.encode(), b'"antsim_version": "*"')
    return text


if __name__ == "__main__":
    GOLDEN.mkdir(parents=True, exist_ok=True)
    # Each case writes into an empty folder (``write_case`` returns the files that appeared), then the
    # normalised bytes replace the golden ones.
    with tempfile.TemporaryDirectory() as scratch:
        for case in CASES:
            for written in write_case(case, Path(scratch)):
                target = GOLDEN / written.name
                target.write_bytes(normalised(written))
                print(f"wrote {target.relative_to(ROOT)}")
