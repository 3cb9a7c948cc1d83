"""The package's import graph, read from the source (AST), function-level imports included.

Checks: no import cycle among antsim modules; function-level imports only of optional dependencies
(or an entry of the allow-lists below, which only shrink); no library module imports ``antsim.cli``; the
modules that record the version read it from ``antsim.version`` (which tests/test_version.py checks).
"""

from __future__ import annotations

import ast
import random
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

import antsim

PACKAGE = Path(antsim.__file__).parent
# Dependencies a user may not have installed (pyproject's optional extras); importing them inside the function
# that needs them is how an optional dependency stays optional.
OPTIONAL = frozenset({"torch", "psycopg", "onnx", "sklearn", "skimage"})

# Cycles that exist today (each an SCC of the module graph). The test fails on a new one and on an entry that no
# longer exists, so this list only shrinks.
ALLOWED_CYCLES: dict[frozenset[str], str] = {}

# module -> (the modules it imports inside functions today, why). Same rule: no new ones, remove what goes.
_CLI_WHY = "each command loads the stages it runs when it runs, so `--help` and usage errors load none of them"
ALLOWED_FUNCTION_IMPORTS: dict[str, tuple[frozenset[str], str]] = {
    "antsim.cli": (frozenset({"antsim"}), _CLI_WHY),
    "antsim.cli._common": (frozenset({"antsim.sparsity.tensors", "antsim.workloads.zoo", "antsim.measure.external",
                                      "antsim.simulate", "antsim.sparsity.regimes",
                                      "antsim.sparsity.generators"}), _CLI_WHY),
    "antsim.cli.capture": (frozenset({"antsim.capture", "antsim.capture.run", "antsim.sparsity.tensors",
                                      "antsim.capture.report", "antsim.results"}), _CLI_WHY),
    "antsim.cli.compare": (frozenset({"antsim.compare", "antsim.report.compare", "antsim.report.build",
                                      "antsim.report.inputs", "antsim.spec.arch", "antsim.gpu",
                                      "antsim.cli.simulate"}), _CLI_WHY),
    "antsim.cli.gpu": (frozenset({"antsim.errors", "antsim.gpu", "antsim.gpu.estimate", "antsim.gpu.step",
                                  "antsim.gpu.check", "antsim.gpu.menus", "antsim.measure.deepbench",
                                  "antsim.measure.external"}), _CLI_WHY),
    "antsim.cli.measure": (frozenset({"antsim.capture", "antsim.errors", "antsim.measure.timing", "antsim.results"}),
                           _CLI_WHY),
    "antsim.cli.report": (frozenset({"antsim.cli.compare", "antsim.report.build", "antsim.report.compare",
                                     "antsim.report.inputs"}), _CLI_WHY),
    "antsim.cli.simulate": (frozenset({"antsim.simulate", "antsim.spec.arch", "antsim.guard"}), _CLI_WHY),
    "antsim.cli.sweep": (frozenset({"antsim.dse.runner", "antsim.dse.spec", "antsim.dse.storage",
                                    "antsim.dse.export", "antsim.cli.simulate", "antsim.dse.workload",
                                    "antsim.guard"}), _CLI_WHY),
    "antsim.cli.zoo": (frozenset({"antsim.errors", "antsim.workloads.zoo"}), _CLI_WHY),
    "antsim.capture.report": (frozenset({"matplotlib.figure"}),
                              "matplotlib loads with the first figure; a capture without --report never needs it"),
    "antsim.dse.figures": (frozenset({"matplotlib.figure"}),
                           "matplotlib loads with the first figure; a sweep exported without figures never needs it"),
    "antsim.report.figures": (frozenset({"matplotlib", "matplotlib.ticker"}),
                              "matplotlib loads with the first figure; summary-only reports never import it"),
    "antsim.sparsity.generators": (frozenset({"scipy.ndimage"}),
                                   "scipy.ndimage (0.15-0.25 s of import) serves only the smoothed fields (swat,"
                                   " topk_field): uniform and channel runs and processes that never generate"
                                   " (a sweep's parent) skip it"),
    "antsim.dse.storage": (frozenset({"sqlalchemy"}),
                           "sqlalchemy comes with optuna and only the RDB storage paths use it"),
    "antsim.report.inputs": (frozenset({"antsim.measure.external"}),
                             "guarded by a ModuleNotFoundError handler that names the missing module; nothing"
                             " optional lies behind it any more, so it can move to the top with the handler removed"),
    "antsim.simulate": (frozenset({"antsim.energy", "antsim.dataflow", "antsim.sparsity.generators",
                                   "antsim.energy.tables", "antsim.errors", "dataclasses"}),
                        "stages loaded on first use; no cycle needs it (the graph test counts these edges)"),
}
# Modules of the command-line layer: the only ones that may import antsim.cli (__main__ is `python -m antsim`).
CLI_LAYER = ("antsim.cli", "antsim.__main__")


@dataclass(frozen=True)
class Import:
    """One imported module: ``target`` is the antsim submodule when a ``from`` import names one."""

    module: str
    target: str
    line: int
    in_function: bool
    type_checking: bool  # under ``if TYPE_CHECKING:`` (never executed)


def module_paths(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _base(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    """The absolute module a ``from`` import reads from (relative imports resolved against ``module``)."""
    if not node.level:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _targets(module: str, node: ast.Import | ast.ImportFrom, known: Mapping[str, Path]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = _base(module, node, known.get(module, Path()).name == "__init__.py")
    for alias in node.names:
        yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base


def imports_of(module: str, source: str, known: Mapping[str, Path]) -> list[Import]:
    """Every import statement of ``source``, with where it sits (function body, TYPE_CHECKING block)."""
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.extend(Import(module, t, child.lineno, in_function, type_checking)
                             for t in dict.fromkeys(_targets(module, child, known)))
            elif isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), in_function, True)
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]), in_function, type_checking)
            else:
                nested = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                visit(child, in_function or nested, type_checking)

    visit(ast.parse(source), False, False)
    return found


def package_imports() -> list[Import]:
    known = module_paths()
    return [imp for name, path in known.items() for imp in imports_of(name, path.read_text(), known)]


def module_graph(imports: list[Import], known: Mapping[str, Path]) -> dict[str, set[str]]:
    """Edges module → antsim module it imports when it runs (TYPE_CHECKING imports never run)."""
    graph: dict[str, set[str]] = {name: set() for name in known}
    for imp in imports:
        if not imp.type_checking and imp.target in known and imp.target != imp.module:
            graph[imp.module].add(imp.target)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            child = next(successors, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


# --- the checker itself, on inputs whose answer is known ------------------------------------------------------

def test_cycles_finds_exactly_the_strongly_connected_components() -> None:
    # a→b→c→a and d↔e are cycles; f→a and the self-loop g→g are not (a module importing itself is no cycle here).
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d", "a"}, "f": {"a"}, "g": {"g"}}
    assert sorted(map(sorted, cycles(graph))) == [["a", "b", "c"], ["d", "e"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_brute_force_agrees_with_tarjan_on_random_graphs() -> None:
    rng = random.Random(0)
    for _ in range(50):
        nodes = [f"m{i}" for i in range(8)]
        graph = {n: {m for m in nodes if m != n and rng.random() < 0.18} for n in nodes}

        def reach(start: str, graph: dict[str, set[str]] = graph) -> set[str]:
            seen, todo = set(), [start]
            while todo:
                for nxt in graph[todo.pop()]:
                    if nxt not in seen:
                        seen.add(nxt)
                        todo.append(nxt)
            return seen

        reachable = {n: reach(n) for n in nodes}
        brute = {frozenset({n} | {m for m in nodes if m in reachable[n] and n in reachable[m]}) for n in nodes}
        assert set(cycles(graph)) == {c for c in brute if len(c) > 1}


def test_imports_of_places_and_resolves_every_kind_of_import() -> None:
    known = {name: Path(f"{name}.py") for name in ("pkg.a", "pkg.sub.b", "pkg.sub.c")}
    known["pkg"] = known["pkg.sub"] = Path("__init__.py")
    source = (
        "from typing import TYPE_CHECKING\n"
        "import pkg.a\n"
        "from pkg.sub import b, helper\n"
        "from . import c\n"
        "from .. import a\n"
        "if TYPE_CHECKING:\n    from pkg.sub.c import Thing\n"
        "class K:\n    import json\n"
        "def f():\n    import torch\n    if TYPE_CHECKING:\n        import pkg.a\n"
    )
    got = {(i.target, i.in_function, i.type_checking) for i in imports_of("pkg.sub.b", source, known)}
    assert got == {("typing", False, False), ("pkg.a", False, False), ("pkg.sub.b", False, False),
                   ("pkg.sub", False, False), ("pkg.sub.c", False, False), ("pkg.sub.c", False, True),
                   ("json", False, False), ("torch", True, False), ("pkg.a", True, True)}


# --- the package ---------------------------------------------------------------------------------------------

def test_no_import_cycle_beyond_the_allow_list() -> None:
    known = module_paths()
    found = set(cycles(module_graph(package_imports(), known)))
    assert found - set(ALLOWED_CYCLES) == set(), "new import cycle(s)"
    assert set(ALLOWED_CYCLES) - found == set(), "cycle(s) gone: remove them from ALLOWED_CYCLES"


def _function_imports() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for imp in package_imports():
        if imp.in_function and not imp.type_checking and imp.target.split(".")[0] not in OPTIONAL:
            out.setdefault(imp.module, set()).add(imp.target)
    return out


def test_function_level_imports_only_of_optional_dependencies_or_listed() -> None:
    found = _function_imports()
    new = {m: sorted(t - ALLOWED_FUNCTION_IMPORTS.get(m, (frozenset(), ""))[0]) for m, t in found.items()}
    assert {m: t for m, t in new.items() if t} == {}, "new function-level import(s): import at the top"
    gone = {m: sorted(allowed - found.get(m, set())) for m, (allowed, _why) in ALLOWED_FUNCTION_IMPORTS.items()}
    assert {m: t for m, t in gone.items() if t} == {}, "gone: remove them from ALLOWED_FUNCTION_IMPORTS"


def test_the_library_never_imports_the_cli() -> None:
    offenders = sorted((i.module, i.target, i.line) for i in package_imports()
                       if (i.target == "antsim.cli" or i.target.startswith("antsim.cli."))
                       and not any(i.module == c or i.module.startswith(f"{c}.") for c in CLI_LAYER))
    assert offenders == []


@pytest.mark.parametrize("name", ["antsim.results", "antsim.report.compare", "antsim.report.document"])
def test_modules_that_record_the_version_do_not_import_the_package(name: str) -> None:
    targets = {i.target for i in package_imports() if i.module == name}
    assert "antsim" not in targets and "antsim.version" in targets


_IMPORT_STATE_SCRIPT = """
import importlib, sys, warnings
import matplotlib, optuna
matplotlib.use("svg")  # a caller's own choices, neither of them the default
optuna.logging.set_verbosity(optuna.logging.DEBUG)
modules = sys.argv[1:]
for name in [m[1:] for m in modules if m.startswith("+")]:  # third-party: the filters they add are their own
    try:
        importlib.import_module(name)
    except ImportError:
        pass
filters = list(warnings.filters)
skipped = []
modules = [m for m in modules if not m.startswith("+")]
for name in modules:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:  # an optional dependency this environment lacks
        if exc.name.split(".")[0] not in {optional}:
            raise
        skipped.append(name)
assert matplotlib.get_backend() == "svg", matplotlib.get_backend()
assert optuna.logging.get_verbosity() == optuna.logging.DEBUG, optuna.logging.get_verbosity()
assert warnings.filters == filters, [f for f in warnings.filters if f not in filters]
assert "matplotlib.pyplot" not in sys.modules, "a library module imports pyplot (it selects a backend)"
print(len(modules) - len(skipped))
"""


def test_importing_the_library_changes_no_global_state() -> None:
    # A fresh interpreter that imports antsim and every library module (antsim.cli aside: the CLI may own the
    # process): the caller's matplotlib backend, Optuna log level and warning filters must stay as they were.
    library = ["antsim", *(name for name in module_paths() if name != "antsim" and not any(
        name == c or name.startswith(f"{c}.") for c in CLI_LAYER))]
    third_party = sorted({i.target for i in package_imports() if not i.target.startswith("antsim")
                          and i.target.split(".")[0] not in sys.stdlib_module_names})
    script = _IMPORT_STATE_SCRIPT.replace("{optional}", repr(set(OPTIONAL)))
    done = subprocess.run([sys.executable, "-c", script, *(f"+{m}" for m in third_party), *library],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) > 60  # the modules were imported, not skipped
