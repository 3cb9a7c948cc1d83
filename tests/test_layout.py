"""The tests mirror the package, so that the tests of a module are found where its path says.

The tests of ``antsim/<package>/<module>.py`` live in ``tests/<package>/test_<module>.py`` (a leading
underscore of the module dropped: ``_csv.py`` → ``test_csv.py``), optionally with more files
``test_<module>_<topic>.py``; those of a top-level module ``antsim/<module>.py`` in ``tests/test_<module>.py``.
Every module has its mirrored file unless the allow-list below says why not; every file under ``tests/`` is a
mirror, a helper (``conftest.py``, ``*_helpers.py`` or a listed reference implementation) or one of the listed
cross-module test files. The lists only shrink: an entry that no longer applies fails too.
"""

from __future__ import annotations

from pathlib import Path

import antsim

PACKAGE = Path(antsim.__file__).parent
TESTS = Path(__file__).resolve().parent

# Modules without a mirrored test file, with the reason. Only trivial modules belong here (constants only, a
# re-export, an entry point); anything with behaviour gets its own test file.
NO_MIRROR: dict[str, str] = {
    "dataflow/context.py": "a frozen record of what the pair-level stages read (two products of its fields); "
                           "tests/dataflow/test_exact.py builds one",
}

# Modules whose mirrored tests are still spread over the files of PENDING_FILES (their folders were being
# edited while the layout was moved): the debt, listed so that it is paid and cannot grow.
PENDING_MODULES: dict[str, str] = {}

# Test files that are not the mirror of one module, each with what it checks across modules.
CROSS_MODULE: dict[str, str] = {
    "test_bad_inputs.py": "every command's user errors: one line, exit status 2, nothing written",
    "test_citations.py": "every source cited in code, configs, tables and docs is a file of the repository",
    "test_code_shape.py": "function length and parameter counts over the whole package",
    "test_imports.py": "the import graph: no cycle, no function-level import but of optional dependencies",
    "test_layout.py": "this file: the tests mirror the package",
    "test_no_silent_answers.py": "inputs that once gave a wrong answer without complaint, across commands",
    "test_readme_examples.py": "the README's examples run as written",
    "gpu/test_validate_all.py": "scripts/validate_gpu.py over every measured file of tests/data",
    "cli/test_cli_main.py": "the console entry point (antsim.cli's __init__: main) and a closed pipe",
    "measure/test_device_script.py": "scripts/device_gpu_check.py, the GPU measurement script",
    "workloads/test_scnn_density_sweep.py": "scripts/scnn_density_sweep.py, the SCNN density sweep script",
}

# Test files still to be renamed or split into mirrors (see PENDING_MODULES).
PENDING_FILES: dict[str, str] = {}

# Non-test modules under tests/ besides conftest.py and *_helpers.py: reference implementations and builders.
HELPERS: dict[str, str] = {
    "results_golden.py": "the golden result records tests/test_results.py compares against",
    "dataflow/streamed_reference.py": "a brute-force streamed-operand reference of the dataflow tests",
    "report/report_factories.py": "schema-true synthetic results of the compare/report tests",
}


def _module_names(folder: Path) -> dict[str, str]:
    """The name each module of ``antsim/<folder>`` goes by in test file names (a leading underscore dropped) →
    its file stem."""
    return {p.stem.lstrip("_"): p.stem for p in folder.glob("*.py") if p.name not in ("__init__.py", "__main__.py")}


def _module_of(rel: str) -> str | None:
    """The module ``<dir>/test_<module>[_<topic>].py`` mirrors (the longest module name that fits), if any."""
    path = Path(rel)
    if not path.name.startswith("test_"):
        return None
    stem = path.stem[len("test_"):]
    names = _module_names(PACKAGE / path.parent)
    fits = [name for name in names if stem == name or stem.startswith(f"{name}_")]
    return (path.parent / names[max(fits, key=len)]).as_posix() if fits else None


def _modules() -> dict[str, Path]:
    """Module path relative to antsim/ (``dse/spec.py``) → its mirrored test file ``tests/dse/test_spec.py``."""
    mirrors = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        rel = path.relative_to(PACKAGE)
        mirrors[rel.as_posix()] = TESTS / rel.parent / f"test_{path.stem.lstrip('_')}.py"
    return mirrors


def _test_files() -> list[str]:
    return sorted(p.relative_to(TESTS).as_posix() for p in TESTS.rglob("*.py"))


def _mirrored() -> set[str]:
    """Modules (``dse/spec.py``) with a mirrored test file: ``test_spec.py`` or a ``test_spec_<topic>.py``."""
    found = {_module_of(rel) for rel in _test_files()}
    return {f"{m}.py" for m in found if m is not None}


def test_every_module_has_its_mirrored_test_file() -> None:
    mirrored = _mirrored()
    missing = [f"antsim/{module} -> {test.relative_to(TESTS.parent)}" for module, test in _modules().items()
               if module not in mirrored and module not in NO_MIRROR and module not in PENDING_MODULES]
    assert not missing, "write (or move) the tests of these modules into their mirrored files:\n" + "\n".join(missing)


def test_the_allow_lists_name_only_modules_still_without_a_mirror() -> None:
    modules, mirrored = _modules(), _mirrored()
    stale = [m for m in (*NO_MIRROR, *PENDING_MODULES) if m not in modules or m in mirrored]
    assert not stale, f"these modules have a mirrored test file now (or are gone): drop them from the list: {stale}"


def test_every_test_file_is_a_mirror_a_helper_or_listed() -> None:
    listed = {**CROSS_MODULE, **PENDING_FILES}
    unplaced = []
    for rel in _test_files():
        name = Path(rel).name
        helper = name == "conftest.py" or name.endswith("_helpers.py") or rel in HELPERS
        if not (helper or rel in listed or _module_of(rel) is not None):
            unplaced.append(rel)
    assert not unplaced, ("name each test file after the module it tests (test_<module>[_<topic>].py), or list a "
                          "cross-module one in CROSS_MODULE with what it checks:\n" + "\n".join(unplaced))


def test_the_file_lists_name_existing_files_that_need_listing() -> None:
    listed = {**CROSS_MODULE, **PENDING_FILES, **HELPERS}
    stale = [rel for rel in listed
             if not (TESTS / rel).is_file() or (rel not in HELPERS and _module_of(rel) is not None)]
    assert not stale, f"these listed files are gone or now mirror a module: drop them from the list: {stale}"
