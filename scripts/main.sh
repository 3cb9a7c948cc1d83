#!/usr/bin/env bash
# The main job: set up .venv and run the ANT-vs-SCNN-vs-GPU comparison on the default network,
# writing a report under reports/. Extra arguments go to `antsim`'s compare step.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/setup_env.sh"
cd "$root"
# ResNet-18 (CIFAR) training step at a training batch (16) under the SWAT regime (W and the saved A top-k at
# 10 %, the forward A at ReLU density 0.5, dense dY: antsim.sparsity.regimes): SCNN and ANT simulated, the
# V100 and H100 models at fp32 and at fp16 on tensor cores (what GPUs train with; timed kernel selection,
# the fastest plan as cudnn.benchmark picks it) at the same batch, all compared against SCNN. The dense
# comparators (arch_configs/dense.yaml ideal, dcnn.yaml SCNN-tiled) and the ant_oracle bound are left out
# to keep the job to a few minutes: add them with --arch. The report (index.html, report.md, figures/,
# data/) and the result of every design (results/*.json) land in reports/main/; progress goes to stderr,
# the summary table to stdout.
.venv/bin/antsim compare \
  --arch arch_configs/scnn.yaml arch_configs/ant.yaml \
  --gpu v100 h100 --gpu-precision fp32 fp16 \
  --network resnet18-cifar --batch 16 --regime swat --seed 0 \
  --baseline scnn --report-out reports/main "$@"
echo "main: done in ${SECONDS}s; open reports/main/index.html (or read reports/main/report.md)" >&2
