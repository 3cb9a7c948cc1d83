#!/usr/bin/env bash
# Set up .venv (antsim + test extras + the PyTorch CPU wheel) and run the whole test suite.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/setup_env.sh" "test,torch"
cd "$root"
exec .venv/bin/python -m pytest -q "$@"
