"""The console entry point: a reader that goes away early (``antsim zoo | head``) is not an error."""

from __future__ import annotations

import os
import subprocess
import sys


def test_a_closed_pipe_ends_quietly():
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before the first line: every write fails with EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "antsim", "zoo"], stdout=write_end, stderr=subprocess.PIPE,
                              timeout=120, check=False)
    finally:
        os.close(write_end)
    stderr = proc.stderr.decode()
    assert "error" not in stderr and "Traceback" not in stderr, stderr
    assert proc.returncode == 141  # 128 + SIGPIPE, what a shell reports for a writer whose pipe closed
