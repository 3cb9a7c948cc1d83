#!/usr/bin/env bash
# The prepared device check, for a session lent a GPU machine (device tool `run`, repo root, ~5 min):
#   run(command="bash scripts/device_gpu_check.sh", carry=[".whl"], timeout_s=600)
# It measures DeepBench's 90 conv shapes (fprop/dgrad/wgrad, fp32 and bf16, cudnn.benchmark) with the
# names of the kernels that ran, and checks the GPU model on them (scripts/device_gpu_check.py).
# The machine's python3 has torch, numpy, scipy, PyYAML and tqdm but not pydantic; carry its wheels in
# .whl (ignored by git), fetched here once with:
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux2014_x86_64 -d .whl pydantic==2.14.4 pydantic-core==2.50.5 \
#     annotated-types==0.8.0 typing-inspection==0.4.5
# (the versions of .venv: `.venv/bin/pip show pydantic pydantic-core annotated-types typing-inspection`).
# At most 8 files come back from $OUT: 3 per precision, the log and nvidia-smi's readings.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c "import pydantic" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site
fi
export PYTHONUNBUFFERED=1
out="${OUT:-reports/device}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv > "$out/nvidia_smi.csv" \
  || echo "no nvidia-smi" > "$out/nvidia_smi.csv"
python3 scripts/device_gpu_check.py --gpu h200 --device cuda --precision fp32 bf16 --repeats 10 --warmup 3 \
  --out "$out" 2>&1 | tee "$out/log.txt"
