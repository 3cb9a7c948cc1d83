"""antsim.dse.figures draws without touching the caller's matplotlib backend, and writes PNG files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from antsim.dse.figures import SweepInfo, render_history, render_pareto, render_tradeoffs, write_png

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_importing_and_drawing_leaves_the_backend_as_the_caller_set_it(tmp_path: Path) -> None:
    # A fresh interpreter: the test process's own backend is not the one under test.
    script = (
        "import matplotlib\n"
        "matplotlib.use('svg')\n"
        "import numpy as np\n"
        "import antsim.dse.figures as f\n"
        "assert matplotlib.get_backend() == 'svg', matplotlib.get_backend()\n"
        "info = f.SweepInfo('t', ('a', 'b'), ('minimize', 'minimize'), np.array([0, 1]),\n"
        "                   np.array([[1.0, 2.0], [2.0, 1.0]]), np.array([True, True]), np.array([True, True]))\n"
        f"f.write_png(f.render_pareto(info), {str(tmp_path / 'p.png')!r})\n"
        "assert matplotlib.get_backend() == 'svg', matplotlib.get_backend()\n"
        "import sys\n"
        "assert 'matplotlib.pyplot' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "p.png").read_bytes()[:8] == PNG_MAGIC


def test_figures_are_png_files_one_objective_included(tmp_path: Path) -> None:
    three = SweepInfo("t", ("x", "y", "z"), ("minimize",) * 3, np.array([0, 1]), np.arange(6.0).reshape(2, 3),
                      np.array([True, True]), np.array([True, False]))
    one = SweepInfo("t", ("x",), ("maximize",), np.array([0, 1, 2]), np.array([[3.0], [np.nan], [1.0]]),
                    np.array([True, False, True]), np.array([True, False, False]))
    for name, fig in (("pareto.png", render_pareto(three)), ("tradeoff.png", render_tradeoffs(three)),
                      ("history.png", render_history(three)), ("pareto1.png", render_pareto(one)),
                      ("tradeoff1.png", render_tradeoffs(one)), ("history1.png", render_history(one))):
        write_png(fig, tmp_path / name)
        assert (tmp_path / name).read_bytes()[:8] == PNG_MAGIC
