"""antsim.compare.compare_designs: the library behind ``antsim compare``, checked against its parts run one by one;
library errors in domain terms (the CLI adds the flag); library calls change no global state."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import optuna
import pytest

from antsim.capture.schedule import LrSchedule
from antsim.cli import main, with_flag
from antsim.compare import ArchDesign, GpuDesign, GpuOptions, SimulationOptions, compare_designs
from antsim.dse.export import check_export_target
from antsim.dse.storage import normalise_url
from antsim.errors import AntsimError, MissingExtraError
from antsim.gpu import estimate_gpu, load_gpu
from antsim.guard import Estimate, check_resources
from antsim.report.build import check_report_target
from antsim.report.compare import compare_results
from antsim.report.sweep import _get_sweep_info
from antsim.results import NetworkResult
from antsim.simulate import simulate_network
from antsim.spec.arch import load_arch
from antsim.workloads.layers import PHASES, Layer

REPO = Path(__file__).resolve().parents[1]
LAYERS = [Layer(name="l1", N=2, C=16, K=32, H=16, W=16, R=3, S=3, stride=1, pad=1),
          Layer(name="l2", N=2, C=32, K=32, H=16, W=16, R=3, S=3, stride=2, pad=1)]
WORKLOAD = {"network": "two-layers", "batch": 2, "phases": list(PHASES), "layers": [l.to_dict() for l in LAYERS]}
DENSITIES = {"w": 0.2, "a": 0.5, "g": 0.3}
SIMULATION = SimulationOptions(densities=DENSITIES, sparsity="uniform", seed=7, echo={"regime": "test"})


def _json(result: NetworkResult) -> str:
    return json.dumps(result.to_dict())


def _archs() -> list[ArchDesign]:
    return [ArchDesign(load_arch(REPO / "arch_configs" / f"{name}.yaml"), label=f"{name}.yaml",
                       source=f"arch {name}") for name in ("scnn", "ant")]


@pytest.fixture(scope="module")
def serial() -> object:
    notes: list[str] = []
    seen: list[object] = []

    def progress(items):  # the caller's hook: sees every (index, layer) the simulation walks
        for item in items:
            seen.append(item)
            yield item

    done = compare_designs(LAYERS, WORKLOAD, archs=_archs(), gpus=[GpuDesign(load_gpu("v100"), "v100", "fp16")],
                           simulation=SIMULATION, jobs=1, progress=progress, note=notes.append)
    return done, notes, seen


def test_each_design_is_what_its_backend_gives_alone(serial) -> None:
    done, _notes, _seen = serial
    expected = [simulate_network(d.arch, LAYERS, phases=PHASES, densities=DENSITIES, sparsity="uniform", seed=7,
                                 workload={**WORKLOAD, "regime": "test"}) for d in _archs()]
    expected.append(estimate_gpu(load_gpu("v100"), LAYERS, phases=PHASES, precision="fp16", workload=WORKLOAD))
    assert [_json(r) for r in done.results] == [_json(r) for r in expected]
    assert done.sources == ("arch scnn", "arch ant", "v100")
    # the ratios are compare_results' on those results, and the speedup is the ratio of the summed times
    assert done.comparison.to_json() == compare_results(expected, done.sources).to_json()
    ant = next(d for d in done.comparison.designs if d.design == "ant")
    assert ant.speedup == pytest.approx(sum(r.time_s for r in expected[0].records) /
                                        sum(r.time_s for r in expected[1].records), rel=1e-12)
    assert done.comparison.baseline == "scnn"


def test_progress_and_notes_go_to_the_callers_callables(serial) -> None:
    _done, notes, seen = serial
    assert len(seen) == 2 * len(LAYERS)  # both designs' layers, through the hook
    assert notes == ["simulating scnn.yaml on two-layers (batch 2)", "simulating ant.yaml on two-layers (batch 2)",
                     "GPU model v100 (fp16)"]


def test_worker_processes_give_the_same_comparison(serial) -> None:
    done, _notes, _seen = serial
    notes: list[str] = []
    pooled = compare_designs(LAYERS, WORKLOAD, archs=_archs(), gpus=[GpuDesign(load_gpu("v100"), "v100", "fp16")],
                             simulation=SIMULATION, jobs=2, note=notes.append)
    assert pooled.comparison.to_json() == done.comparison.to_json()
    assert [_json(r) for r in pooled.results] == [_json(r) for r in done.results]
    assert notes[0] == "simulating 2 designs on two-layers (batch 2), 2 at a time"


def test_given_results_alone_are_compared_as_compare_results_does(serial) -> None:
    done, _notes, _seen = serial
    again = compare_designs(results=done.results, sources=done.sources, baseline="ant")
    assert again.comparison.to_json() == compare_results(done.results, done.sources, baseline="ant").to_json()


def test_a_given_result_of_another_workload_fails_before_any_simulation(serial) -> None:
    done, _notes, _seen = serial
    other = [Layer(name="l1", N=2, C=16, K=32, H=8, W=8, R=3, S=3, stride=1, pad=1), LAYERS[1]]
    notes: list[str] = []
    with pytest.raises(AntsimError, match="ant.json: workload.layers: layer 'l1' is .* in my workload"):
        compare_designs(other, {**WORKLOAD, "layers": [l.to_dict() for l in other]}, results=done.results[1:2],
                        sources=["ant.json"], archs=_archs()[:1], note=notes.append, workload_source="my workload")
    assert notes == []


def test_a_gpu_option_the_gpu_lacks_fails_before_any_simulation() -> None:
    notes: list[str] = []
    with pytest.raises(AntsimError, match="2:4"):
        compare_designs(LAYERS, WORKLOAD, archs=_archs(), gpus=[GpuDesign(load_gpu("v100"), "v100", "fp16")],
                        gpu_options=GpuOptions(structured="2:4"), note=notes.append)
    assert notes == []


def test_designs_need_the_workload() -> None:
    with pytest.raises(ValueError, match="layers"):
        compare_designs(archs=_archs())


# --- no global state ------------------------------------------------------------------------------------------

def test_a_comparison_leaves_optuna_and_the_warning_filters_as_they_were() -> None:
    before = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.DEBUG)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            filters = list(warnings.filters)
            compare_designs(LAYERS, WORKLOAD, archs=_archs()[:1], simulation=SIMULATION, jobs=1)
            assert warnings.filters == filters
        assert optuna.logging.get_verbosity() == optuna.logging.DEBUG
    finally:
        optuna.logging.set_verbosity(before)


def test_the_capture_curve_leaves_the_matplotlib_backend_as_the_caller_set_it(tmp_path: Path) -> None:
    script = (  # a fresh interpreter: this process's backend is not the one under test
        "import matplotlib, sys\n"
        "matplotlib.use('svg')\n"
        "from antsim.capture.report import draw_curve\n"
        f"draw_curve(__import__('pathlib').Path({str(tmp_path / 'c.png')!r}), [2.3, 2.0], [0.1, 0.3],"
        " [0.1, 0.05], 10, 't')\n"
        "assert matplotlib.get_backend() == 'svg', matplotlib.get_backend()\n"
        "assert 'matplotlib.pyplot' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --- errors in domain terms -----------------------------------------------------------------------------------

FLAG = re.compile(r"(?<![\w-])--[a-z]")


def _raised_texts(source: str) -> list[tuple[int, str]]:
    """Every string literal (f-string parts included) inside a ``raise`` statement of ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and node.exc is not None:
            found += [(sub.lineno, sub.value) for sub in ast.walk(node.exc)
                      if isinstance(sub, ast.Constant) and isinstance(sub.value, str)]
    return found


def test_the_scan_finds_a_flag_in_an_error_and_only_there() -> None:
    source = ('def f(x):\n    """Run with --force."""\n    y = "--quiet"\n'
              '    raise ValueError(f"--storage {x}: bad")\n')
    assert [t for _line, t in _raised_texts(source) if FLAG.search(t)] == ["--storage "]
    assert not FLAG.search("a--b, 'x' -- y, 2--3")


def test_no_library_error_names_a_flag() -> None:
    library = [p for p in sorted((REPO / "antsim").rglob("*.py")) if p.relative_to(REPO / "antsim").parts[0] != "cli"]
    offenders = [f"{p.relative_to(REPO)}:{line}: {text!r}" for p in library
                 for line, text in _raised_texts(p.read_text()) if FLAG.search(text)]
    assert offenders == []


def _error(call, *args, **kwargs) -> AntsimError:
    with pytest.raises(AntsimError) as info:
        call(*args, **kwargs)
    return info.value


def test_library_errors_carry_the_subject_the_cli_maps_to_its_flag(tmp_path: Path, serial) -> None:
    done, _notes, _seen = serial
    (tmp_path / "file").write_text("x")
    estimate = Estimate(design="d", passes=10**9, passes_where="l1 fprop", steps=1, run_pe_steps=1, peak_bytes=0,
                        memory_layer="l1")
    cases = [
        (_error(normalise_url, "nonsense"), "storage", "storage URL 'nonsense': not an RDB URL"),
        (_error(check_export_target, tmp_path / "file"), "export", "export folder"),
        (_error(compare_results, done.results, baseline="tpu"), "baseline", "unknown baseline design 'tpu'"),
        (_error(_get_sweep_info, tmp_path), "sweep", "no trials.csv"),
        (_error(LrSchedule, "cosine", -1.0, 10, 1), "lr", "learning rate"),
        (_error(check_resources, [estimate], max_passes=10), "force", "force the run"),
    ]
    for exc, subject, text in cases:
        assert exc.subject == subject and text in str(exc) and not FLAG.search(str(exc)), str(exc)
    plain = _error(check_report_target, tmp_path / "file")  # named by its caller's word, not a flag
    assert str(plain).startswith("report folder ") and plain.subject is None


def test_the_onnx_extra_is_named_as_a_package(monkeypatch: pytest.MonkeyPatch) -> None:
    from antsim.workloads.onnx_import import _onnx

    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx now raises ModuleNotFoundError
    exc = _error(_onnx)
    assert isinstance(exc, MissingExtraError) and exc.subject == "onnx" and "--" not in str(exc)


def test_the_cli_puts_the_flag_in_front_or_fills_its_template() -> None:
    exc = AntsimError("storage URL 'x': not an RDB URL", subject="storage")
    assert with_flag(str(exc), exc, {"storage": "--storage"}) == "--storage: storage URL 'x': not an RDB URL"
    assert with_flag("d: too big; or force the run", AntsimError("", subject="force"),
                     {"force": "{message} (--force)"}) == "d: too big; or force the run (--force)"
    assert with_flag("m", AntsimError("m"), {"storage": "--storage"}) == "m"  # no subject: unchanged
    assert with_flag("m", AntsimError("m", subject="lr"), {}) == "m"  # a subject this command has no flag for


def test_a_user_sees_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["sweep", str(REPO / "sweeps" / "smoke.yaml"), "--storage", "nonsense"])
    err = capsys.readouterr().err
    assert status == 2 and err == "antsim sweep: error: --storage: storage URL 'nonsense': not an RDB URL" \
                                  " (sqlite:///file.db or postgresql://user@host/db)\n"
