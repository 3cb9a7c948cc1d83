#!/usr/bin/env bash
# Create/refresh .venv with antsim installed in editable mode. Usage: scripts/setup_env.sh [EXTRAS]
# Sourced by main.sh and test.sh so that each of them sets itself up on a fresh machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
extras="${1:-}"
py="${PYTHON:-python3}"
if [ ! -x "$root/.venv/bin/python" ]; then
  "$py" -m venv "$root/.venv"
fi
# PYTHONWARNINGS: setuptools warns about editable installs on every run (noise, not a problem).
pip=(env PYTHONWARNINGS=ignore "$root/.venv/bin/python" -m pip -q --disable-pip-version-check)
"${pip[@]}" install --upgrade pip >/dev/null 2>&1 || true
if [[ "$extras" == *torch* ]]; then
  # The CPU wheel lies on disk on our machines; elsewhere pip fetches torch. Optional: tests skip without it.
  "$root/.venv/bin/python" -c "import torch" 2>/dev/null || "${pip[@]}" install "torch==2.13.0" \
    || echo "setup: PyTorch not installable here; capture/measure tests will be skipped" >&2
  extras="${extras//torch/}"; extras="${extras//,,/,}"; extras="${extras#,}"; extras="${extras%,}"
fi
if [ -n "$extras" ]; then
  "${pip[@]}" install -e "$root[$extras]"
else
  "${pip[@]}" install -e "$root"
fi
