#!/usr/bin/env bash
# The main job: set up .venv and run the ANT-vs-SCNN-vs-GPU comparison on the default network,
# writing a report under reports/. Extra arguments go to `antsim`'s compare step.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/setup_env.sh"
cd "$root"
# ResNet-18 (CIFAR) training step at batch 1, 90% sparse operands (W, A and dY densities 0.1):
# four accelerator designs simulated and two GPUs modelled at fp32 (the precision the GPU model is
# validated at) and at fp16 on tensor cores (what GPUs train with; the accelerators multiply 16-bit
# operands), all compared against SCNN. The report
# (index.html, report.md, figures/, data/) and the result of every design (results/*.json) land in
# reports/main/; progress goes to stderr, the summary table to stdout.
.venv/bin/antsim compare \
  --arch arch_configs/scnn.yaml arch_configs/ant.yaml arch_configs/ant_oracle.yaml arch_configs/dense.yaml \
  --gpu v100 h100 --gpu-precision fp32 fp16 \
  --network resnet18-cifar --batch 1 --density-w 0.1 --density-a 0.1 --density-g 0.1 --seed 0 \
  --baseline scnn --report-out reports/main "$@"
echo "main: done in ${SECONDS}s; open reports/main/index.html (or read reports/main/report.md)" >&2
