"""scripts/check_readme_examples.py: which lines it runs, and that a failing example fails the check."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "check_readme_examples.py"
_SPEC = importlib.util.spec_from_file_location("check_readme_examples", _SCRIPT)
assert _SPEC and _SPEC.loader
check = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = check  # dataclasses look their module up there
_SPEC.loader.exec_module(check)

README = """# x
```bash
bash scripts/main.sh     # long
```
text `not code`
```python
print("not shell")
```
```bash
# a comment line
antsim zoo \\
  resnet18-cifar   # joined
echo /tmp/tour/a.json x/tmp/keep
```
"""


def test_examples_are_the_bash_lines_in_order_with_continuations_joined() -> None:
    examples = check.bash_examples(README)
    assert [(e.line, e.command) for e in examples] == [
        (3, "bash scripts/main.sh     # long"), (11, "antsim zoo    resnet18-cifar   # joined"),
        (13, "echo /tmp/tour/a.json x/tmp/keep")]


def test_absolute_tmp_paths_move_under_the_check_folder(tmp_path: Path) -> None:
    assert check.relocate_tmp("cp /tmp/a x/tmp/b '/tmp/c'", tmp_path) == \
        f"cp {tmp_path}/tmp/a x/tmp/b '{tmp_path}/tmp/c'"


@pytest.mark.parametrize(("commands", "expected"), [(["true", "echo ok > f", "test -f f"], 0),
                                                     (["true", "false", "echo never > g"], 1)])
def test_a_failing_example_stops_the_check(tmp_path: Path, commands: list[str], expected: int) -> None:
    copy = tmp_path / "repo"
    copy.mkdir()
    examples = [check.Example(i, c) for i, c in enumerate(commands)]
    assert check.run_examples(examples, copy, tmp_path, timeout_s=30) == expected
    assert not (copy / "g").exists()
