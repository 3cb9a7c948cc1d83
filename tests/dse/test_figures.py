"""antsim.dse.figures draws without touching the caller's matplotlib backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from antsim.dse.figures import HistoryInfo, ParetoInfo, _draw_history, _draw_pareto

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_importing_and_drawing_leaves_the_backend_as_the_caller_set_it(tmp_path: Path) -> None:
    # A fresh interpreter: the test process's own backend is not the one under test.
    script = (
        "import matplotlib\n"
        "matplotlib.use('svg')\n"
        "import numpy as np\n"
        "import antsim.dse.figures as f\n"
        "assert matplotlib.get_backend() == 'svg', matplotlib.get_backend()\n"
        "info = f.ParetoInfo(['a', 'b'], np.array([[1.0, 2.0], [2.0, 1.0]]), [0, 1], np.array([True, True]))\n"
        f"f._draw_pareto(info, __import__('pathlib').Path({str(tmp_path / 'p.png')!r}))\n"
        "assert matplotlib.get_backend() == 'svg', matplotlib.get_backend()\n"
        "import sys\n"
        "assert 'matplotlib.pyplot' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "p.png").read_bytes()[:8] == PNG_MAGIC


def test_figures_are_png_files(tmp_path: Path) -> None:
    _draw_pareto(ParetoInfo(["x", "y", "z"], np.arange(6.0).reshape(2, 3), [0, 1], np.array([True, False])),
                 tmp_path / "pareto.png")
    _draw_history(HistoryInfo(["x"], np.array([0, 1, 2]), np.array([[3.0], [2.0], [1.0]]),
                              np.array([True, False, True])), tmp_path / "history.png")
    for name in ("pareto.png", "history.png"):
        assert (tmp_path / name).read_bytes()[:8] == PNG_MAGIC
