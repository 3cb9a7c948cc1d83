"""Bad inputs over every command and file format: exit 2, one stderr line naming the culprit, nothing written.

Each case runs ``antsim.cli.main`` in-process in a fresh copy of a small workspace (a 2-layer CSV of small
convs, arch / GPU / sweep YAMLs, simulate and GPU results of that CSV, a measurement CSV, a tensors file)
plus the case's own bad file, and asserts:

* exit status 2;
* exactly one line on stderr, with no ``Traceback``, holding every expected fragment (the file, key, value);
* every file of the workspace byte-identical afterwards and no new file or folder (no output, no ``.tmp``).
"""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from antsim.cli import main
from antsim.sparsity.generators import make_tensors
from antsim.sparsity.tensors import save_tensors
from antsim.workloads.layers import Layer

REPO = Path(__file__).resolve().parents[1]
TINY_CSV = "name,N,C,K,H,W,R,S,stride,pad\nl1,1,4,8,8,8,3,3,1,1\nl2,1,8,8,8,8,3,3,2,1\n"
ANT = yaml.safe_load((REPO / "arch_configs" / "ant.yaml").read_text())
V100 = yaml.safe_load((REPO / "antsim" / "gpu" / "specs" / "v100.yaml").read_text())
SWEEP = {
    "kind": "sweep", "version": 1, "base_arch": "ant.yaml",
    "evaluator": {"name": "analytic"},
    "space": {"pe_array.rows": {"low": 2, "high": 8}, "anticipation.policy": {"choices": ["none", "ant"]}},
    "workload": {"layers_csv": "tiny.csv"},
    "objectives": {"time_s": "min", "area_mm2": "min"},
    "n_trials": 2, "seed": 0,
}
BOMB = "".join(f"{a}: &{a} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['x'] * 9)}]\n"
               for p, a in zip(["", *"abcdefgh"], "abcdefghi", strict=True))
NOT_ROOT = pytest.mark.skipif(os.geteuid() == 0, reason="root may write into any folder")

FileMaker = Callable[[Path], bytes]


# ---------------------------------------------------------------- file builders
def _set(data: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``data`` with ``dotted`` set (``_DELETE`` removes it)."""
    out = copy.deepcopy(data)
    node = out
    *parents, leaf = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    if value is _DELETE:
        del node[leaf]
    else:
        node[leaf] = value
    return out


_DELETE = object()


def yaml_with(base: dict[str, Any], **changes: Any) -> bytes:
    data = base
    for dotted, value in changes.items():
        data = _set(data, dotted.replace("__", "."), value)
    return yaml.safe_dump(data, sort_keys=False).encode()


def arch(**changes: Any) -> bytes:
    return yaml_with(ANT, **changes)


def gpu(**changes: Any) -> bytes:
    return yaml_with(V100, **changes)


def sweep(**changes: Any) -> bytes:
    return yaml_with(SWEEP, **changes)


def result_with(name: str, **changes: Any) -> FileMaker:
    """A copy of the workspace's result ``name`` with dotted keys changed (``__`` separates levels)."""
    def make(root: Path) -> bytes:
        data = json.loads((root / name).read_text())
        for dotted, value in changes.items():
            data = _set(data, dotted.replace("__", "."), value)
        return json.dumps(data).encode()
    return make


TINY_LAYERS = [Layer("l1", 1, 4, 8, 8, 8, 3, 3, 1, 1), Layer("l2", 1, 8, 8, 8, 8, 3, 3, 2, 1)]  # = TINY_CSV


def _tiny_tensors(batch: int = 1) -> dict[str, Any]:
    layers = [layer.with_batch(batch) for layer in TINY_LAYERS]
    return {layer.name: make_tensors(layer, 0.3, 0.3, 0.3, model="uniform", seed=i) for i, layer in enumerate(layers)}


def npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def dense_arrays(batch: int = 1) -> dict[str, np.ndarray]:
    return {f"{name}/{op}": getattr(t, op) for name, t in _tiny_tensors(batch).items()
            for op in ("weights", "activations", "grad_output")}


def dense_with(key: str, edit: Callable[[np.ndarray], np.ndarray]) -> bytes:
    arrays = dense_arrays()
    arrays[key] = edit(arrays[key])
    return npz(arrays)


def _poison(value: complex | float) -> Callable[[np.ndarray], np.ndarray]:
    def edit(array: np.ndarray) -> np.ndarray:
        out = array.astype(np.complex64 if isinstance(value, complex) else array.dtype).copy()
        out.flat[3] = value
        return out
    return edit


def packed_with(edit: Callable[[dict[str, np.ndarray]], None]) -> FileMaker:
    def make(root: Path) -> bytes:
        with np.load(root / "t.npz") as data:
            arrays = {k: data[k] for k in data.files}
        edit(arrays)
        return npz(arrays)
    return make


def _huge_shape(arrays: dict[str, np.ndarray]) -> None:
    arrays["l1/weights/shape"] = np.array([10**7, 10**7, 3, 3], dtype=np.int64)  # ~ 3.6 PB of float32


def _short_bitmap(arrays: dict[str, np.ndarray]) -> None:
    arrays["l1/activations/bitmap"] = arrays["l1/activations/bitmap"][:-2]


def _extra_value(arrays: dict[str, np.ndarray]) -> None:
    arrays["l2/grad_output/values"] = np.append(arrays["l2/grad_output/values"], np.float16(0.5))


def _no_scale(arrays: dict[str, np.ndarray]) -> None:
    del arrays["l1/weights/scale"]


def _negative_shape(arrays: dict[str, np.ndarray]) -> None:
    arrays["l1/weights/shape"] = np.array([8, -4, 3, 3], dtype=np.int64)


def _nan_scale(arrays: dict[str, np.ndarray]) -> None:
    arrays["l2/weights/scale"] = np.float32("nan")


def _lying_header() -> bytes:
    """An .npz whose member's .npy header declares 10^12 float32 but stores 16 bytes."""
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(member, {"descr": "<f4", "fortran_order": False, "shape": (10**6, 10**6)})
    member.write(b"\0" * 16)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("l1/weights.npy", member.getvalue())
    return out.getvalue()


def _npy_bytes() -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ones(4))
    return buffer.getvalue()


def meas_csv(rows: list[str], header: str = "name,phase,time_s") -> bytes:
    return (header + "\n" + "\n".join(rows) + "\n").encode()


GOOD_MEAS = [f"{name},{phase},1e-5" for name in ("l1", "l2") for phase in ("fprop", "dgrad", "wgrad")]


# ---------------------------------------------------------------- the workspace
@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The good files every case starts from (results simulated once)."""
    root = tmp_path_factory.mktemp("bad-inputs-base")
    (root / "tiny.csv").write_text(TINY_CSV)
    (root / "ant.yaml").write_bytes(arch())
    (root / "scnn.yaml").write_bytes(arch(name="scnn", anticipation__policy="none"))
    (root / "gpu.yaml").write_bytes(gpu(name="myv100"))
    (root / "sweep.yaml").write_bytes(sweep())
    (root / "meas.csv").write_bytes(meas_csv(GOOD_MEAS))
    save_tensors(root / "t.npz", _tiny_tensors(), packed=True)
    sim = ["--layers-csv", str(root / "tiny.csv"), "--no-progress"]
    assert main(["simulate", "--arch", str(root / "ant.yaml"), *sim, "--out", str(root / "ant.json")]) == 0
    assert main(["simulate", "--arch", str(root / "scnn.yaml"), *sim, "--out", str(root / "scnn.json")]) == 0
    assert main(["gpu", "--gpu", "v100", "--layers-csv", str(root / "tiny.csv"), "--no-progress",
                 "--out", str(root / "v100.json")]) == 0
    return root


def _snapshot(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


# ---------------------------------------------------------------- the cases
Case = tuple[str, list[str], dict[str, bytes | FileMaker], tuple[str, ...]]


def c(case_id: str, argv: str | list[str], expect: str | tuple[str, ...], files: dict | None = None,
      marks: Any = ()) -> Any:
    args = argv.split() if isinstance(argv, str) else argv
    return pytest.param(args, files or {}, (expect,) if isinstance(expect, str) else expect, id=case_id,
                        marks=marks)


SIM = "simulate --arch {d}/ant.yaml --layers-csv {d}/tiny.csv --no-progress"
SIM_OUT = SIM + " --out {d}/r.json"
GPU = "gpu --gpu v100 --layers-csv {d}/tiny.csv --no-progress"
CMP = "compare {d}/scnn.json {d}/ant.json --out {d}/c.json"
SWP = "sweep {d}/bad.yaml"

ZOO_CASES = [
    c("zoo-unknown-network", "zoo nonet", "nonet"),
    c("zoo-batch-0", "zoo --batch 0", "--batch must be >= 1; got 0"),
    c("zoo-batch-not-int", "zoo --batch two", ("--batch", "'two'")),
    c("zoo-csv-bad-suffix", "zoo resnet18-cifar --csv {d}/o.txt", ("--csv", "o.txt", ".csv")),
    c("zoo-csv-is-folder", "zoo resnet18-cifar --csv {d}/dir.csv", ("dir.csv", "is a folder"),
      {"dir.csv/keep": b"x"}),
    c("zoo-csv-parent-is-file", "zoo resnet18-cifar --csv {d}/tiny.csv/o.csv", ("tiny.csv", "not a folder")),
    c("zoo-csv-without-name", "zoo --csv {d}/o.csv", ("--csv", "NAME")),
    c("zoo-unknown-flag", "zoo --bogus", "--bogus"),
]

ARCH_FILES = [
    ("unknown-top-key", arch(colour="red"), ("colour", "unknown key")),
    ("unknown-nested-key", arch(pe_array__depth=3), ("pe_array.depth", "unknown key")),
    ("rows-zero", arch(pe_array__rows=0), ("pe_array.rows", "0")),
    ("rows-negative", arch(pe_array__rows=-8), ("pe_array.rows", "-8")),
    ("rows-string", arch(pe_array__rows="eight"), ("pe_array.rows", "eight")),
    ("rows-float", arch(pe_array__rows=2.5), ("pe_array.rows", "2.5")),
    ("name-missing", arch(name=_DELETE), ("name", "missing")),
    ("clock-negative", arch(technology__clock_ghz=-1.0), ("technology.clock_ghz", "-1")),
    ("input-kb-negative", arch(buffers__input_kb=-10), ("buffers.input_kb", "-10")),
    ("policy-unknown", arch(anticipation__policy="psychic"), ("anticipation.policy", "psychic")),
    ("format-unknown", arch(compression__format="zip"), ("compression.format", "zip")),
    ("dram-technology-unknown", arch(dram__technology="ddr1"), ("dram.technology", "ddr1")),
    ("wgrad-dy-unknown", arch(mapping__wgrad_dy="sideways"), ("mapping.wgrad_dy", "sideways")),
    ("kc-negative", arch(mapping__output_channel_group=-1), ("mapping.output_channel_group", "-1")),
    ("kc-float", arch(mapping__output_channel_group=2.5), ("mapping.output_channel_group", "2.5")),
    ("kind-gpu", arch(kind="gpu"), ("kind", "gpu")),
    ("version-2", arch(version=2), ("version", "2")),
    ("malformed", b"kind: arch\npe_array: [1, 2\n", ("malformed YAML", "line")),
    ("a-list", b"- 1\n- 2\n", ("mapping", "list")),
    ("empty", b"", ("mapping", "NoneType")),
    ("not-utf8", b"kind: arch\nname: \xff\xfe\n", ("not UTF-8", "0xff")),
    ("alias-bomb", BOMB.encode(), ("alias bomb",)),
    ("recursive-alias", b"kind: arch\nx: &a [*a]\n", ("recursive alias",)),
]

SIMULATE_CASES = [
    c("simulate-no-arch", "simulate --layers-csv {d}/tiny.csv --out {d}/r.json", "--arch"),
    c("simulate-no-out", "simulate --arch {d}/ant.yaml --layers-csv {d}/tiny.csv", "--out"),
    c("simulate-arch-missing", "simulate --arch {d}/nope.yaml --layers-csv {d}/tiny.csv --out {d}/r.json",
      ("nope.yaml", "file not found")),
    *[c(f"simulate-arch-{name}", "simulate --arch {d}/bad.yaml --layers-csv {d}/tiny.csv --out {d}/r.json",
        ("bad.yaml", *expect), {"bad.yaml": content}) for name, content, expect in ARCH_FILES],
    c("simulate-network-unknown", "simulate --arch {d}/ant.yaml --network nonet --out {d}/r.json", "nonet"),
    c("simulate-network-and-csv", SIM_OUT + " --network resnet18-cifar", ("--network", "--layers-csv")),
    c("simulate-batch-0", SIM_OUT + " --batch 0", "--batch must be >= 1; got 0"),
    c("simulate-batch-negative", SIM_OUT + " --batch -4", "got -4"),
    c("simulate-phases-unknown", SIM_OUT + " --phases fprop,bprop", ("--phases", "bprop")),
    c("simulate-phases-empty", SIM_OUT + " --phases ,", "--phases"),
    c("simulate-density-w-above-1", SIM_OUT + " --density-w 1.5", ("--density-w", "1.5")),
    c("simulate-density-a-negative", SIM_OUT + " --density-a -0.1", ("--density-a", "-0.1")),
    c("simulate-density-g-nan", SIM_OUT + " --density-g nan", ("--density-g", "nan")),
    c("simulate-density-a-saved", SIM_OUT + " --density-a-saved 2", ("--density-a-saved", "2")),
    c("simulate-density-not-number", SIM_OUT + " --density-w lots", ("--density-w", "lots")),
    c("simulate-sparsity-unknown", SIM_OUT + " --sparsity magic", ("--sparsity", "magic")),
    c("simulate-fidelity-unknown", SIM_OUT + " --fidelity medium", ("--fidelity", "medium")),
    c("simulate-seed-negative", SIM_OUT + " --seed -1", ("--seed", "-1")),
    c("simulate-seed-not-int", SIM_OUT + " --seed abc", ("--seed", "abc")),
    c("simulate-seed-too-big", SIM_OUT + f" --seed {2**32}", ("--seed", str(2**32))),
    c("simulate-out-suffix", SIM + " --out {d}/r.txt", ("--out", "r.txt", ".json")),
    c("simulate-out-is-folder", SIM + " --out {d}/r.json", ("r.json", "is a folder"), {"r.json/keep": b"x"}),
    c("simulate-out-parent-is-file", SIM + " --out {d}/tiny.csv/r.json", ("tiny.csv", "not a folder")),
    c("simulate-out-unwritable", SIM + " --out {d}/ro/r.json", ("ro", "not writable"), {"ro/keep": b"x"},
      marks=NOT_ROOT),
    c("simulate-tensors-and-density", SIM_OUT + " --tensors {d}/t.npz --density-w 0.5",
      ("--density-w", "0.5", "--tensors", "t.npz")),
    c("simulate-tensors-and-density-a-saved", SIM_OUT + " --tensors {d}/t.npz --density-a-saved 0.2",
      ("--density-a-saved", "--tensors")),
    c("simulate-tensors-and-sparsity", SIM_OUT + " --tensors {d}/t.npz --sparsity uniform",
      ("--tensors", "--sparsity")),
    c("simulate-tensors-batch-disagrees", SIM_OUT + " --tensors {d}/t.npz --batch 2",
      ("--batch 2", "t.npz", "batch 1")),
    c("simulate-tensors-csv-batch-disagrees", SIM_OUT.replace("tiny.csv", "tiny8.csv") + " --tensors {d}/t.npz",
      ("tiny8.csv", "column N", "8", "t.npz"),
      {"tiny8.csv": TINY_CSV.replace("l1,1,", "l1,8,").replace("l2,1,", "l2,8,").encode()}),
    c("simulate-tensors-missing", SIM_OUT + " --tensors {d}/nope.npz", ("nope.npz", "not found")),
    c("simulate-unknown-flag", SIM_OUT + " --turbo", "--turbo"),
]

CSV_FILES = [
    ("missing-column", b"name,N,C,K,H,W,R,S,stride\nl1,1,4,8,8,8,3,3,1\n", ("bad.csv", "missing ['pad']")),
    ("unknown-column", TINY_CSV.replace("pad\n", "pad,colour\n").replace(",1\n", ",1,red\n").encode(),
     ("bad.csv", "unknown ['colour']")),
    ("duplicate-column", b"name,N,C,K,H,W,R,S,stride,pad,K\nl1,1,4,8,8,8,3,3,1,1,16\n",
     ("bad.csv", "column 'K' appears twice")),
    ("not-integer", TINY_CSV.replace("l1,1,4,8", "l1,1,four,8").encode(), ("bad.csv", "line 2", "column C", "four")),
    ("float-value", TINY_CSV.replace("l1,1,4,8", "l1,1,4.5,8").encode(), ("bad.csv", "column C", "4.5")),
    ("zero-K", TINY_CSV.replace("l1,1,4,8", "l1,1,4,0").encode(), ("bad.csv", "line 2", "K", "0")),
    ("negative-pad", TINY_CSV.replace("3,3,1,1\nl2", "3,3,1,-1\nl2").encode(), ("bad.csv", "line 2", "pad")),
    ("zero-stride", TINY_CSV.replace("3,3,2,1", "3,3,0,1").encode(), ("bad.csv", "line 3", "stride")),
    ("kernel-too-big", TINY_CSV.replace("8,8,3,3,1,1\nl2", "8,8,11,11,1,0\nl2").encode(), ("bad.csv", "line 2")),
    ("empty-name", TINY_CSV.replace("l2,", ",").encode(), ("bad.csv", "line 3", "name")),
    ("duplicate-name", TINY_CSV.replace("l2,", "l1,").encode(), ("bad.csv", "duplicate", "l1")),
    ("no-rows", b"name,N,C,K,H,W,R,S,stride,pad\n", ("bad.csv", "no layers")),
    ("empty-file", b"", ("bad.csv",)),
    ("extra-cells", TINY_CSV.replace("3,3,2,1", "3,3,2,1,9").encode(), ("bad.csv", "line 3", "more cells")),
    ("not-utf8", b"name,N,C,K,H,W,R,S,stride,pad\nl\xe91,1,4,8,8,8,3,3,1,1\n", ("bad.csv", "not UTF-8", "0xe9")),
    ("mixed-batch", TINY_CSV.replace("l2,1,", "l2,4,").encode(), ("bad.csv", "column N", "--batch")),
]

LAYERS_CSV_CASES = [
    c(f"simulate-csv-{name}", "simulate --arch {d}/ant.yaml --layers-csv {d}/bad.csv --out {d}/r.json",
      expect, {"bad.csv": content}) for name, content, expect in CSV_FILES
] + [c("simulate-csv-missing", "simulate --arch {d}/ant.yaml --layers-csv {d}/nope.csv --out {d}/r.json",
       ("nope.csv", "not found"))]

TENSORS_FILES: list[tuple[str, bytes | FileMaker, tuple[str, ...]]] = [
    ("nan-weights", dense_with("l1/weights", _poison(float("nan"))), ("l1", "weights", "NaN")),
    ("inf-grad", dense_with("l2/grad_output", _poison(float("inf"))), ("l2", "grad_output", "inf")),
    ("neg-inf-activations", dense_with("l1/activations", _poison(float("-inf"))), ("l1", "activations", "inf")),
    ("complex-activations", dense_with("l2/activations", _poison(1 + 2j)), ("l2", "activations", "complex")),
    ("string-weights", dense_with("l1/weights", lambda a: a.astype(str)), ("l1", "weights", "dtype")),
    ("huge-shape", packed_with(_huge_shape), ("l1/weights/bitmap", "shape")),
    ("short-bitmap", packed_with(_short_bitmap), ("l1/activations/bitmap",)),
    ("extra-value", packed_with(_extra_value), ("l2/grad_output/values", "non-zeros")),
    ("missing-scale", packed_with(_no_scale), ("l1/weights", "scale")),
    ("negative-shape", packed_with(_negative_shape), ("l1/weights/shape", "-4")),
    ("nan-scale", packed_with(_nan_scale), ("l2/weights/scale",)),
    ("lying-npy-header", _lying_header(), ("l1/weights.npy", "header declares")),
    ("not-a-zip", b"this is not an npz file", ("not a readable .npz",)),
    ("single-npy", _npy_bytes(), ("not a readable .npz",)),
    ("unexpected-entry", npz({**dense_arrays(), "l1/bias": np.ones(3)}), ("unexpected entry", "l1/bias")),
    ("lacks-grad", npz({k: v for k, v in dense_arrays().items() if k != "l2/grad_output"}),
     ("l2", "lacks grad_output")),
    ("lacks-layer", npz({k: v for k, v in dense_arrays().items() if k.startswith("l1/")}),
     ("no tensors for layer 'l2'",)),
    ("wrong-shape", dense_with("l2/weights", lambda a: a[:, :4]), ("l2", "weights", "shape")),
    ("mixed-batch", npz({**dense_arrays(), **{k: v for k, v in dense_arrays(2).items() if k.startswith("l2/")}}),
     ("batch",)),
]

TENSORS_CASES = [
    c(f"simulate-tensors-{name}", SIM_OUT + " --tensors {d}/bad.npz", ("bad.npz", *expect), {"bad.npz": content})
    for name, content, expect in TENSORS_FILES
]

GPU_FILES = [
    ("static-above-tdp", gpu(power__static_w=400), ("power", "static_w", "tdp_w")),
    ("static-equals-tdp", gpu(power__static_w=300), ("power", "static_w", "tdp_w")),
    ("sms-zero", gpu(sms=0), ("sms", "0")),
    ("unknown-key", gpu(fans=3), ("fans", "unknown key")),
    ("power-missing", gpu(power=_DELETE), ("power", "missing")),
    ("kind-arch", gpu(kind="arch"), ("kind", "arch")),
    ("dram-type", gpu(dram__type="sram"), ("dram.type", "sram")),
    ("fp32-peak-zero", gpu(peak_tflops__fp32=0), ("peak_tflops.fp32", "0")),
    ("sparse-without-tensor-cores", gpu(tensor_cores=False, sparse_tensor_cores=True), ("sparse_tensor_cores",)),
    ("clock-string", gpu(clock_mhz="fast"), ("clock_mhz", "fast")),
    ("not-utf8", b"kind: gpu\nname: \xc3\x28\n", ("not UTF-8",)),
    ("alias-bomb", BOMB.encode(), ("alias bomb",)),
]

MEAS_FILES = [
    ("duplicate-column", meas_csv(["l1,fprop,1e-5,2e-5"], "name,phase,time_s,time_s"),
     ("bad.csv", "'time_s' appears twice")),
    ("not-utf8", b"name,phase,time_s\nl1,fprop,1\xff\n", ("bad.csv", "not a readable CSV")),
    ("phase-unknown", meas_csv([*GOOD_MEAS, "l1,bprop,1e-5"]), ("bad.csv", "column phase", "bprop")),
    ("time-negative", meas_csv([r.replace("1e-5", "-1") if i == 0 else r for i, r in enumerate(GOOD_MEAS)]),
     ("bad.csv", "line 2", "time_s", "-1")),
    ("time-text", meas_csv([r.replace("1e-5", "soon") if i == 1 else r for i, r in enumerate(GOOD_MEAS)]),
     ("bad.csv", "line 3", "time_s", "soon")),
    ("time-inf", meas_csv([r.replace("1e-5", "inf") if i == 2 else r for i, r in enumerate(GOOD_MEAS)]),
     ("bad.csv", "line 4", "time_s", "inf")),
    ("lacks-layer", meas_csv([r for r in GOOD_MEAS if r.startswith("l1")]), ("bad.csv", "'l2'", "not found")),
    ("lacks-phase", meas_csv([r for r in GOOD_MEAS if r != "l2,wgrad,1e-5"]), ("bad.csv", "'l2'", "wgrad")),
    ("no-time-column", meas_csv(["l1,fprop"], "name,phase"), ("bad.csv", "time_s")),
    ("extra-cells", meas_csv([*GOOD_MEAS[:-1], "l2,wgrad,1e-5,oops"]), ("bad.csv", "line 7", "more cells")),
    ("no-rows", meas_csv([]).rstrip(b"\n") + b"\n", ("bad.csv", "no data rows")),
    ("other-batch", meas_csv([f"{r},8,4,8,8,8,3,3,1,1" if r.startswith("l1") else f"{r},8,8,8,8,8,3,3,2,1"
                              for r in GOOD_MEAS], "name,phase,time_s,N,C,K,H,W,R,S,stride,pad"),
     ("bad.csv", "'l1'", "N=8", "N=1")),
]

GPU_CASES = [
    *[c(f"gpu-yaml-{name}", "gpu --gpu {d}/bad.yaml --layers-csv {d}/tiny.csv --out {d}/g.json",
        ("bad.yaml", *expect), {"bad.yaml": content}) for name, content, expect in GPU_FILES],
    c("gpu-unknown-name", GPU + " --gpu v200 --out {d}/g.json", ("v200", "unknown GPU")),
    c("gpu-yaml-missing", "gpu --gpu {d}/nope.yaml --layers-csv {d}/tiny.csv --out {d}/g.json",
      ("nope.yaml", "not found")),
    c("gpu-precision-unknown", GPU + " --precision fp8 --out {d}/g.json", ("precision", "fp8")),
    c("gpu-precision-unavailable", GPU + " --precision tf32 --out {d}/g.json", ("v100", "tf32", "not available")),
    c("gpu-structured-on-v100", GPU + " --precision fp16 --structured 2:4 --out {d}/g.json", ("2:4", "v100")),
    c("gpu-structured-unknown", "gpu --gpu a100 --layers-csv {d}/tiny.csv --precision fp16 --structured 1:3"
      " --out {d}/g.json", "1:3"),
    c("gpu-no-out", GPU, ("--out", "required")),
    c("gpu-out-suffix", GPU + " --out {d}/g.yaml", ("--out", "g.yaml")),
    c("gpu-out-is-folder", GPU + " --out {d}/g.csv", ("g.csv", "is a folder"), {"g.csv/keep": b"x"}),
    c("gpu-floor-without-check", GPU + " --floor --out {d}/g.json", ("--floor", "--check")),
    c("gpu-batch-0", GPU + " --batch 0 --out {d}/g.json", "--batch must be >= 1"),
    c("gpu-check-missing", GPU + " --check {d}/nope.csv", ("nope.csv", "not found")),
    c("gpu-check-out-suffix", GPU + " --check {d}/meas.csv --out {d}/e.json", ("--out", "e.json", ".csv")),
    *[c(f"gpu-check-{name}", GPU + " --check {d}/bad.csv", expect, {"bad.csv": content})
      for name, content, expect in MEAS_FILES],
]

JSON_FILES: list[tuple[str, bytes | FileMaker, tuple[str, ...]]] = [
    ("a-list", b"[1, 2, 3]", ("not an antsim.result/1 result", "list")),
    ("a-number", b"42", ("not an antsim.result/1 result", "int")),
    ("invalid-json", b'{"schema": ', ("not valid JSON",)),
    ("not-utf8", b'{"schema": "\xff"}', ("not UTF-8", "0xff")),
    ("wrong-schema", b'{"schema": "antsim.compare/1"}', ("schema", "antsim.compare/1")),
    ("no-records", result_with("ant.json", records=_DELETE, design="ant2"), ("malformed", "records")),
    ("records-not-list", result_with("ant.json", records=7, design="ant2"), ("malformed",)),
    ("record-without-time", lambda root: json.dumps({**json.loads((root / "ant.json").read_text()), "design": "a2",
                                                     "records": [{"layer": "l1", "phase": "fprop"}]}).encode(),
     ("malformed", "time_s")),
    ("deeply-nested", b"[" * 100000 + b"]" * 100000, ("JSON",)),
]

COMPARE_CASES = [
    c("compare-nothing", "compare --out {d}/c.json", "nothing to compare"),
    c("compare-missing-file", "compare {d}/scnn.json {d}/nope.json --out {d}/c.json", ("nope.json", "not found")),
    c("compare-bad-suffix", "compare {d}/scnn.json {d}/tiny.yaml --out {d}/c.json", ("tiny.yaml", ".json or .csv"),
      {"tiny.yaml": b"x: 1\n"}),
    *[c(f"compare-json-{name}", "compare {d}/scnn.json {d}/bad.json --out {d}/c.json", ("bad.json", *expect),
        {"bad.json": content}) for name, content, expect in JSON_FILES],
    c("compare-seed-differs", CMP.replace("ant.json", "bad.json"), ("bad.json", "scnn.json", "workload.seed", "7"),
      {"bad.json": result_with("ant.json", workload__seed=7)}),
    c("compare-fidelity-differs", CMP.replace("ant.json", "bad.json"),
      ("bad.json", "scnn.json", "workload.fidelity", "exact"), {"bad.json": result_with("ant.json",
                                                                                         workload__fidelity="exact")}),
    c("compare-sparsity-differs", CMP.replace("ant.json", "bad.json"),
      ("bad.json", "scnn.json", "workload.sparsity", "uniform"),
      {"bad.json": result_with("ant.json", workload__sparsity="uniform")}),
    c("compare-tensors-differs", CMP.replace("ant.json", "bad.json"), ("bad.json", "scnn.json", "workload.tensors"),
      {"bad.json": result_with("ant.json", workload__tensors="capture.npz")}),
    c("compare-densities-differ", CMP.replace("ant.json", "bad.json"), ("bad.json", "workload.densities"),
      {"bad.json": result_with("ant.json", workload__densities={"w": 0.5, "a": 0.1, "g": 0.1})}),
    c("compare-batch-differs", "compare {d}/scnn.json {d}/bad.json --out {d}/c.json", ("bad.json", "batch"),
      {"bad.json": result_with("v100.json", workload__batch=8)}),
    c("compare-same-design-twice", "compare {d}/ant.json {d}/ant.json --out {d}/c.json", ("design name", "'ant'")),
    c("compare-baseline-unknown", CMP + " --baseline tpu", ("--baseline", "tpu")),
    c("compare-out-suffix", "compare {d}/scnn.json {d}/ant.json --out {d}/c.txt", ("--out", "c.txt")),
    c("compare-out-is-folder", "compare {d}/scnn.json {d}/ant.json --out {d}/c.json", ("c.json", "is a folder"),
      {"c.json/keep": b"x"}),
    c("compare-report-out-user-folder", CMP + " --report-out {d}/thesis", ("--report-out", "thesis",
                                                                          ".antsim-report.json"),
      {"thesis/thesis.tex": b"keep me"}),
    c("compare-out-inside-report", "compare {d}/scnn.json {d}/ant.json --report-out {d}/rep --out {d}/rep/c.json",
      ("--out", "inside --report-out")),
    c("compare-sweep-without-report", CMP + " --sweep {d}", ("--sweep", "--report-out")),
    c("compare-gpu-precision-without-gpu", CMP + " --gpu-precision fp16", ("--gpu-precision", "--gpu")),
    c("compare-arch-bad", CMP + " --arch {d}/bad.yaml", ("bad.yaml", "pe_array.rows"),
      {"bad.yaml": arch(pe_array__rows=0)}),
    c("compare-gpu-unknown", CMP + " --gpu v200", ("v200", "unknown GPU")),
    c("compare-arch-tensors-and-density", "compare --arch {d}/ant.yaml --layers-csv {d}/tiny.csv --tensors {d}/t.npz"
      " --density-g 0.3 --out {d}/c.json", ("--density-g", "--tensors")),
    c("compare-arch-seed-negative", "compare --arch {d}/ant.yaml --layers-csv {d}/tiny.csv --seed -1"
      " --out {d}/c.json", ("--seed", "-1")),
    c("compare-arch-other-layers", "compare {d}/scnn.json --arch {d}/ant.yaml --network resnet18-cifar"
      " --out {d}/c.json", ("scnn.json", "layer")),
    c("compare-csv-result-bad", "compare {d}/ant.json {d}/bad.csv --out {d}/c.json", ("bad.csv", "'time_s' appears"),
      {"bad.csv": MEAS_FILES[0][1]}),
]

REPORT_CASES = [
    c("report-missing-result", "report {d}/scnn.json {d}/nope.json --out {d}/rep", ("nope.json", "not found")),
    c("report-out-is-file", "report {d}/scnn.json {d}/ant.json --out {d}/tiny.csv", ("tiny.csv", "not a folder")),
    c("report-out-user-folder", "report {d}/scnn.json {d}/ant.json --out {d}/thesis",
      ("thesis", ".antsim-report.json", "refusing"), {"thesis/thesis.tex": b"keep me"}),
    c("report-out-lookalike", "report {d}/scnn.json {d}/ant.json --out {d}/thesis",
      ("thesis", ".antsim-report.json"),
      {"thesis/index.html": b"mine", "thesis/report.md": b"mine", "thesis/thesis.tex": b"keep me"}),
    c("report-out-forged-manifest", "report {d}/scnn.json {d}/ant.json --out {d}/thesis",
      ("thesis", "thesis.tex", "did not write"),
      {"thesis/.antsim-report.json": b'{"schema": "antsim.report-manifest/1", "files": ["index.html"]}',
       "thesis/thesis.tex": b"keep me"}),
    c("report-out-parent-is-file", "report {d}/scnn.json {d}/ant.json --out {d}/tiny.csv/rep",
      ("tiny.csv", "not a folder")),
    c("report-sweep-not-folder", "report {d}/scnn.json {d}/ant.json --sweep {d}/tiny.csv --out {d}/rep",
      ("--sweep", "tiny.csv", "not a folder")),
    c("report-json-list", "report {d}/scnn.json {d}/bad.json --out {d}/rep", ("bad.json", "not an antsim.result/1"),
      {"bad.json": b"[]"}),
    c("report-baseline-unknown", "report {d}/scnn.json {d}/ant.json --baseline tpu --out {d}/rep", "tpu"),
    c("report-seed-differs", "report {d}/scnn.json {d}/bad.json --out {d}/rep", ("bad.json", "workload.seed"),
      {"bad.json": result_with("ant.json", workload__seed=3)}),
    c("report-csv-other-workload", "report {d}/meas.csv --network resnet18-cifar --out {d}/rep",
      ("meas.csv", "not found")),
    c("report-no-results", "report --out {d}/rep", "RESULTS"),
]

SWEEP_FILES = [
    ("phases-empty", sweep(workload__phases=[]), ("workload.phases", "[]")),
    ("phases-twice", sweep(workload__phases=["fprop", "fprop"]), ("workload.phases", "twice")),
    ("phase-unknown", sweep(workload__phases=["bprop"]), ("workload.phases", "bprop")),
    ("sparsity-unknown", sweep(workload__sparsity="magic"), ("workload.sparsity", "magic")),
    ("tensors-missing", sweep(workload__tensors="nope.npz"), ("workload.tensors", "nope.npz")),
    ("tensors-corrupt", sweep(workload__tensors="bad.npz"), ("workload.tensors", "bad.npz", "not a readable")),
    ("tensors-and-densities", sweep(workload__tensors="t.npz", workload__densities={"w": 0.2}),
     ("workload.densities", "workload.tensors")),
    ("tensors-batch-disagrees", sweep(workload__tensors="t.npz", workload__batch=4),
     ("workload.batch", "batch 1", "4")),
    ("tensors-lack-layer", sweep(workload__tensors="t.npz", workload__layers_csv="big.csv"),
     ("workload.tensors", "l3")),
    ("batch-zero", sweep(workload__batch=0), ("workload.batch", "0")),
    ("density-zero", sweep(workload__densities={"w": 0.0, "a": 0.1, "g": 0.1}), ("workload.densities.w", "0")),
    ("density-key", sweep(workload__densities={"x": 0.1}), ("workload.densities", "x")),
    ("network-and-csv", sweep(workload__network="resnet18-cifar"), ("workload", "exactly one")),
    ("csv-missing", sweep(workload__layers_csv="nope.csv"), ("workload", "nope.csv")),
    ("network-unknown", sweep(workload__layers_csv=_DELETE, workload__network="nonet"), ("workload", "nonet")),
    ("select-unknown", sweep(workload__select=["l9"]), ("workload.select[0]", "l9")),
    ("inline-layer-bad", sweep(workload__layers_csv=_DELETE, workload__layers=[{"name": "x", "N": 1}]),
     ("workload.layers[0]",)),
    ("mixed-batch-layers", sweep(workload__layers_csv=_DELETE, workload__layers=[
        {"name": "a", "N": 1, "C": 4, "K": 4, "H": 4, "W": 4, "R": 3, "S": 3, "stride": 1, "pad": 1},
        {"name": "b", "N": 2, "C": 4, "K": 4, "H": 4, "W": 4, "R": 3, "S": 3, "stride": 1, "pad": 1}]),
     ("workload", "N", "workload.batch")),
    ("n-trials-zero", sweep(n_trials=0), ("n_trials", "0")),
    ("seed-negative", sweep(seed=-1), ("seed", "-1")),
    ("sampler-unknown", sweep(sampler="bogo"), ("sampler.name", "bogo")),
    ("objective-unknown", sweep(objectives={"speed": "max"}), ("objectives.speed", "unknown")),
    ("direction-unknown", sweep(objectives={"time_s": "lowest"}), ("objectives.time_s", "lowest")),
    ("no-objectives", sweep(objectives={}), ("objectives",)),
    ("space-empty", sweep(space={}), ("space",)),
    ("space-unknown-param", sweep(space={"pe_array.depth": {"low": 1, "high": 2}}), ("space.pe_array.depth",)),
    ("space-low-above-high", sweep(space={"pe_array.rows": {"low": 9, "high": 2}}), ("space.pe_array.rows", "low")),
    ("space-low-equals-high", sweep(space={"pe_array.rows": {"low": 4, "high": 4}}),
     ("space.pe_array.rows", "empty range")),
    ("space-bound-arch-rejects", sweep(space={"pe_array.rows": {"low": 0, "high": 4}}), ("space.pe_array.rows.low",)),
    ("space-choices-empty", sweep(space={"anticipation.policy": {"choices": []}}), ("space.anticipation.policy",)),
    ("constraint-unknown", sweep(constraints={"beauty": {"max": 1}}), ("constraints.beauty", "unknown")),
    ("constraint-empty", sweep(constraints={"area_mm2": {}}), ("constraints.area_mm2", "max")),
    ("base-arch-missing", sweep(base_arch="nope.yaml"), ("nope.yaml", "not found")),
    ("base-arch-bad", sweep(base_arch="badarch.yaml"), ("badarch.yaml", "pe_array.rows")),
    ("evaluator-unknown", sweep(evaluator={"name": "oracle"}), ("evaluator", "oracle")),
    ("unknown-key", sweep(budget=3), ("budget", "unknown key")),
    ("kind-arch", sweep(kind="arch"), ("kind", "arch")),
    ("alias-bomb", BOMB.encode(), ("alias bomb",)),
    ("not-utf8", b"kind: sweep\ndescription: \xff\n", ("not UTF-8",)),
]

SWEEP_CASES = [
    *[c(f"sweep-spec-{name}", SWP, ("bad.yaml", *expect),
        {"bad.yaml": content, "bad.npz": b"garbage", "badarch.yaml": arch(pe_array__rows=0),
         "big.csv": (TINY_CSV + "l3,1,8,8,8,8,3,3,1,1\n").encode()})
      for name, content, expect in SWEEP_FILES],
    c("sweep-spec-missing", "sweep {d}/nope.yaml", ("nope.yaml", "not found")),
    c("sweep-n-trials-zero", "sweep {d}/sweep.yaml --n-trials 0", ("--n-trials", "0")),
    c("sweep-workers-zero", "sweep {d}/sweep.yaml --workers 0", ("--workers", "0")),
    c("sweep-heartbeat-zero", "sweep {d}/sweep.yaml --heartbeat 0", ("--heartbeat", "0")),
    c("sweep-timeout-zero", "sweep {d}/sweep.yaml --timeout 0", ("--timeout", "0")),
    c("sweep-seed-negative", "sweep {d}/sweep.yaml --seed -1", ("--seed", "-1")),
    c("sweep-export-only-without-export", "sweep {d}/sweep.yaml --export-only", ("--export-only", "--export")),
    c("sweep-export-is-file", "sweep {d}/sweep.yaml --export {d}/tiny.csv", ("--export", "tiny.csv")),
    c("sweep-export-user-folder", "sweep {d}/sweep.yaml --export {d}/mine", ("--export", "mine", ".antsim-export"),
      {"mine/thesis.tex": b"keep me"}),
    c("sweep-storage-unknown", "sweep {d}/sweep.yaml --storage mongodb://x/y", ("mongodb",)),
]

MEASURE_CASES = [
    c("measure-no-workload", "measure --out {d}/m.csv", ("--network", "--layers-csv")),
    c("measure-no-out", "measure --layers-csv {d}/tiny.csv", "--out"),
    c("measure-out-suffix", "measure --layers-csv {d}/tiny.csv --out {d}/m.json", ("--out", "m.json", ".csv")),
    c("measure-out-is-folder", "measure --layers-csv {d}/tiny.csv --out {d}/m.csv", ("m.csv", "is a folder"),
      {"m.csv/keep": b"x"}),
    c("measure-threads-zero", "measure --layers-csv {d}/tiny.csv --threads 0 --out {d}/m.csv", ("--threads", "0")),
    c("measure-repeats-zero", "measure --layers-csv {d}/tiny.csv --repeats 0 --out {d}/m.csv", ("--repeats", "0")),
    c("measure-warmup-negative", "measure --layers-csv {d}/tiny.csv --warmup -1 --out {d}/m.csv",
      ("--warmup", "-1")),
    c("measure-seed-negative", "measure --layers-csv {d}/tiny.csv --seed -1 --out {d}/m.csv", ("--seed", "-1")),
    c("measure-device-unknown", "measure --layers-csv {d}/tiny.csv --device tpu --out {d}/m.csv",
      ("--device", "tpu")),
    c("measure-precision-unknown", "measure --layers-csv {d}/tiny.csv --precision fp8 --out {d}/m.csv",
      ("--precision", "fp8")),
    c("measure-batch-zero", "measure --layers-csv {d}/tiny.csv --batch 0 --out {d}/m.csv", "--batch"),
    c("measure-csv-bad", "measure --layers-csv {d}/bad.csv --out {d}/m.csv", ("bad.csv", "appears twice"),
      {"bad.csv": CSV_FILES[2][1]}),
]

CAPTURE_CASES = [
    c("capture-network-unknown", "capture --network alexnet --out {d}/c.npz", ("--network", "alexnet")),
    c("capture-data-unknown", "capture --network resnet18-cifar --data imagenet --out {d}/c.npz",
      ("--data", "imagenet")),
    c("capture-no-out", "capture --network resnet18-cifar", "--out"),
    c("capture-steps-not-int", "capture --network resnet18-cifar --steps many --out {d}/c.npz", ("--steps", "many")),
]

OTHER_CASES = [
    c("unknown-command", "frobnicate", "frobnicate"),
]

ALL_CASES = (ZOO_CASES + SIMULATE_CASES + LAYERS_CSV_CASES + TENSORS_CASES + GPU_CASES + COMPARE_CASES
             + REPORT_CASES + SWEEP_CASES + MEASURE_CASES + CAPTURE_CASES + OTHER_CASES)


def test_the_suite_is_large_and_ids_unique() -> None:
    ids = [p.id for p in ALL_CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 150


@pytest.mark.parametrize("argv, files, expect", ALL_CASES)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(base: Path, tmp_path: Path, capsys: pytest.CaptureFixture,
                                                         argv: list[str], files: dict, expect: tuple[str, ...]) -> None:
    work = tmp_path / "w"
    shutil.copytree(base, work)
    for rel, content in files.items():
        target = work / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content(work) if callable(content) else content)
    if "ro/keep" in files:
        (work / "ro").chmod(0o555)
    before = _snapshot(work)
    capsys.readouterr()
    try:
        status = main([a.format(d=work) for a in argv])
    except SystemExit as exc:  # argparse usage errors
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for fragment in expect:
        assert fragment.format(d=work) in lines[0], (fragment, lines[0])
    assert _snapshot(work) == before  # no output, no .tmp, inputs untouched
