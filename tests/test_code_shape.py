"""Code shape (issue 17): no function in ``antsim/`` over 60 lines, none in ``antsim/dataflow/`` over 6
parameters. An AST scan: a function's length runs from its ``def`` line to its last line (docstring
included, decorators not); its parameters are every positional, keyword-only, ``*args`` and ``**kwargs``
name except ``self`` and ``cls``. Nested functions and methods count as functions of their own.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "antsim"
MAX_LINES = 60
MAX_DATAFLOW_PARAMETERS = 6

@dataclass(frozen=True)
class Function:
    path: str  # relative to antsim/
    name: str
    line: int
    lines: int
    parameters: int

    def where(self) -> str:
        return f"antsim/{self.path}:{self.line} {self.name}"


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = node.args
    names = [*args.posonlyargs, *args.args, *args.kwonlyargs, *(a for a in (args.vararg, args.kwarg) if a)]
    return sum(1 for a in names if a.arg not in ("self", "cls"))


def functions(source: str, path: str) -> list[Function]:
    """Every function (methods and nested ones included) of one module's ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            end = node.end_lineno if node.end_lineno is not None else node.lineno
            found.append(Function(path, node.name, node.lineno, end - node.lineno + 1, _parameters(node)))
    return found


@cache
def _package() -> list[Function]:
    return [f for module in sorted(PACKAGE.rglob("*.py"))
            for f in functions(module.read_text(encoding="utf-8"), module.relative_to(PACKAGE).as_posix())]


def test_the_scan_measures_lines_and_parameters() -> None:
    source = ("class A:\n"
              "    def method(self, a, /, b, *rest, c, **extra):\n"
              "        def inner():\n"
              "            return 1\n"
              "        return inner\n"
              "\n"
              "    @classmethod\n"
              "    def make(cls):\n"
              "        pass\n")
    measured = {f.name: (f.line, f.lines, f.parameters) for f in functions(source, "m.py")}
    assert measured == {"method": (2, 4, 5), "inner": (3, 2, 0), "make": (8, 2, 0)}


def test_no_function_in_the_package_is_over_60_lines() -> None:
    too_long = [f for f in _package() if f.lines > MAX_LINES]
    assert not too_long, "over the limit: " + "; ".join(f"{f.where()} ({f.lines} lines)" for f in too_long)


@pytest.mark.parametrize("limit", ["lines", "parameters"])
def test_dataflow_functions_are_short_and_take_few_parameters(limit: str) -> None:
    dataflow = [f for f in _package() if f.path.startswith("dataflow/")]
    assert dataflow
    if limit == "lines":
        bad = [f"{f.where()} ({f.lines} lines)" for f in dataflow if f.lines > MAX_LINES]
    else:
        bad = [f"{f.where()} ({f.parameters} parameters)" for f in dataflow if f.parameters > MAX_DATAFLOW_PARAMETERS]
    assert not bad, "; ".join(bad)
