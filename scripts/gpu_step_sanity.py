"""Whole-network sanity of ``antsim gpu --step``: ResNet-50 (ImageNet) training throughput vs NVIDIA's figures.

For each published single-GPU ResNet-50 v1.5 training throughput (NVIDIA Deep Learning Examples), model the
same GPU, precision and per-GPU batch with ``estimate_step`` (convolutions + BatchNorm, ReLU, residual adds,
pooling, SGD-momentum update) and print model images/s = batch / step time next to the published figure.

The published runs differ from the model in ways the ratio absorbs: they include the FC layer, the loss and
the input pipeline (DALI; small at these batch sizes), and were measured on DGX boards (V100 SXM2 16 GB,
A100 SXM4). The DGX A100 of the PyTorch table is the 80 GB part (2039 GB/s); it is modelled as the builtin a100
with that bandwidth. Each row is modelled in its run's tensor layout (``LAYOUTS_NOTE`` below): the AMP runs NHWC, the
FP32 and TF32 runs NCHW, where cuDNN transposes around every tensor-core convolution (TF32; the FP32 rows run
SIMT kernels and pay none), and in its framework's fusion (``Published.fusion``: the TensorFlow + XLA rows
with ReLU and residual adds fused into BatchNorm's kernels, PyTorch eager one kernel per op).

Usage::

    .venv/bin/python scripts/gpu_step_sanity.py
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from antsim.gpu import estimate_gpu, gpu_from_dict, load_gpu
from antsim.gpu.spec import GpuSpec
from antsim.gpu.step import estimate_step
from antsim.vocabulary import StepFusion, TensorLayout
from antsim.workloads.zoo import network

PYTORCH = ("https://github.com/NVIDIA/DeepLearningExamples/blob/master/PyTorch/Classification/ConvNets/"
           "resnet50v1.5/README.md")
PYTORCH_BATCH = "https://github.com/NVIDIA/DeepLearningExamples/blob/master/PyTorch/Classification/ConvNets/configs.yml"
TENSORFLOW = ("https://github.com/NVIDIA/DeepLearningExamples/blob/master/TensorFlow/Classification/ConvNets/"
              "resnet50v1.5/README.md")
PT = f"{PYTORCH} ; batch: {PYTORCH_BATCH}"
# A100 SXM4 80 GB: 2039 GB/s (docs/gpu_specs.md [C11], thundercompute.com A100 guide).
A100_80GB_SXM_GBS = 2039


@dataclass(frozen=True)
class Published:
    """One published throughput: GPU (builtin name or ``a100-80gb-sxm``), model precision, batch, img/s, setup,
    source, and the run's tensor layout (``LAYOUTS_NOTE``)."""

    gpu: str
    board: str
    precision: str
    batch: int
    images_per_s: float
    setup: str
    source: str
    layout: TensorLayout

    @property
    def fusion(self) -> StepFusion:
        """``xla`` for the TensorFlow + XLA runs, ``eager`` for PyTorch (antsim.gpu.step ``DEFAULT_FUSION``)."""
        return "xla" if "XLA" in self.setup else "eager"


# Single-GPU rows. PyTorch: "Training performance" tables (pytorch-21.03 NGC container); per-GPU batch sizes
# from configs.yml (DGX1V AMP 256, FP32 112; DGXA100 AMP 256, TF32 256). TensorFlow: "Training performance"
# tables (20.06-tf1 container, + XLA), batch in the table.
# LAYOUTS_NOTE — each run's tensor layout (antsim.gpu.step, ``layout``): PyTorch's main.py defaults to
# --memory-format nchw and configs.yml sets memory_format: nhwc for the AMP runs only (FP32 and TF32 keep NCHW).
# TensorFlow's script builds NCHW graphs (cmdline_helper.py, --data_format default NCHW); TensorFlow's layout
# optimizer turns fp16 convolutions on Volta and later into NHWC and keeps fp32 (hence TF32) ones NCHW
# (tensorflow/tensorflow tests layout_optimization_layout_assignment_gpu_cc_70.mlir; NHWC for TF32 on Ampere was
# added in 2022, pull 55761, and reverted, pull 56744 — after the 20.06 container these rows ran in).
PUBLISHED = (
    Published("v100", "DGX-1 V100 16GB", "fp16", 256, 1200, "PyTorch AMP", PT, "nhwc"),
    Published("v100", "DGX-1 V100 16GB", "fp32", 112, 367, "PyTorch FP32", PT, "nchw"),
    Published("a100-80gb-sxm", "DGX A100 80GB", "fp16", 256, 2470, "PyTorch AMP", PT, "nhwc"),
    Published("a100-80gb-sxm", "DGX A100 80GB", "tf32", 256, 938, "PyTorch TF32", PT, "nchw"),
    Published("v100", "DGX-1 V100 16GB", "fp16", 256, 1270, "TensorFlow AMP + XLA", TENSORFLOW, "nhwc"),
    Published("v100", "DGX-1 V100 16GB", "fp32", 128, 412, "TensorFlow FP32 + XLA", TENSORFLOW, "nchw"),
    Published("a100", "DGX A100 40GB", "fp16", 256, 2375, "TensorFlow AMP + XLA", TENSORFLOW, "nhwc"),
    Published("a100", "DGX A100 40GB", "tf32", 256, 909, "TensorFlow TF32 + XLA", TENSORFLOW, "nchw"),
)
NETWORK = "resnet50-imagenet"


def gpu_spec(name: str) -> GpuSpec:
    """A builtin GPU, or the A100 SXM4 80 GB: the builtin a100 with its 2039 GB/s HBM2e (achievable 0.9 x)."""
    if name != "a100-80gb-sxm":
        return load_gpu(name)
    data = load_gpu("a100").to_dict()
    data.update(name="a100-80gb-sxm", description="NVIDIA A100 SXM4 80 GB (the builtin a100 at 2039 GB/s)")
    data["dram"] = {**data["dram"], "type": "hbm2e", "bandwidth_gbs": A100_80GB_SXM_GBS, "achievable_gbs": None}
    return gpu_from_dict(data, source="gpu_step_sanity.py")


def model_row(row: Published) -> tuple[float, float, float]:
    """(step img/s, conv-only img/s, share of the step in memory-bound kernels)."""
    spec = gpu_spec(row.gpu)
    layers = [layer.with_batch(row.batch) for layer in network(NETWORK)]
    step = estimate_step(spec, layers, precision=row.precision, network=NETWORK, layout=row.layout,
                         fusion=row.fusion)
    conv = estimate_gpu(spec, layers, precision=row.precision)
    extra = math.fsum(r.details["step_time_s"] for r in step.records)
    return row.batch / step.totals["time_s"], row.batch / conv.totals["time_s"], extra / step.totals["time_s"]


def main() -> None:
    print("ResNet-50 v1.5 ImageNet training, one GPU: antsim gpu --step vs published (model / published)")
    print(f"{'board':18s} {'setup':22s} {'prec':5s} {'mem':4s} {'batch':>5s} {'published':>9s} {'step':>7s} "
          f"{'ratio':>6s} {'conv-only':>9s} {'ratio':>6s} {'mem-bound':>9s}")
    ratios = []
    for row in PUBLISHED:
        step, conv, share = model_row(row)
        ratios.append(step / row.images_per_s)
        print(f"{row.board:18s} {row.setup:22s} {row.precision:5s} {row.layout:4s} {row.batch:5d} "
              f"{row.images_per_s:9.0f} {step:7.0f} {step / row.images_per_s:6.2f} {conv:9.0f} "
              f"{conv / row.images_per_s:6.2f} {share * 100:8.0f}%")
    geo = math.exp(math.fsum(math.log(r) for r in ratios) / len(ratios))
    err = math.exp(math.fsum(abs(math.log(r)) for r in ratios) / len(ratios)) - 1
    print(f"geomean ratio (model / published) {geo:.2f}; geomean |error| {err * 100:.0f} %")
    print("sources:")
    for source in dict.fromkeys(row.source for row in PUBLISHED):
        print(f"  {source}")


if __name__ == "__main__":
    main()
