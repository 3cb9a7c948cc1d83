"""GPU analytical baseline: dense implicit-GEMM convolutions on NVIDIA GPUs (docs/sources.md §1.6).

``load_gpu(name_or_path) -> GpuSpec``; ``estimate_layer(gpu, layer, phase, precision) -> LayerResult``;
``estimate_gpu(gpu, layers, phases, precision) -> NetworkResult`` (backend ``"gpu"``).
"""

from antsim.gpu.estimate import estimate_gpu, estimate_layer
from antsim.gpu.gemm import Gemm, implicit_gemm, phase_gemms
from antsim.gpu.model import CALIBRATION, Calibration, Plan, best_plan
from antsim.gpu.spec import PRECISIONS, GpuSpec, gpu_from_dict, gpu_names, load_gpu

__all__ = [
    "CALIBRATION", "PRECISIONS", "Calibration", "Gemm", "GpuSpec", "Plan", "best_plan", "estimate_gpu",
    "estimate_layer", "gpu_from_dict", "gpu_names", "implicit_gemm", "load_gpu", "phase_gemms",
]
