#!/usr/bin/env bash
# The main job: set up .venv and run the ANT-vs-SCNN-vs-GPU comparison on the default network,
# writing a report under reports/. Extra arguments go to `antsim`'s compare step.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/setup_env.sh"
cd "$root"
exec .venv/bin/antsim zoo resnet18-cifar "$@"
