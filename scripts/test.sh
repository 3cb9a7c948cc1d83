#!/usr/bin/env bash
# Set up .venv (antsim + test extras + the PyTorch CPU wheel) and run the test suite.
#   bash scripts/test.sh            everything, slow tests included (what CI runs)
#   bash scripts/test.sh --fast     the development selection: -m "not slow" (no worker races, no
#                                   full-network monotonicity sweeps); see docs/development.md
# Any other argument goes to pytest, e.g. `bash scripts/test.sh --fast tests/dataflow -x`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/setup_env.sh" "test,torch"
cd "$root"
args=()
for arg in "$@"; do
  if [ "$arg" = "--fast" ]; then args+=(-m "not slow"); else args+=("$arg"); fi
done
exec .venv/bin/python -m pytest -q ${args[@]+"${args[@]}"}
