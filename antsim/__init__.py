"""antsim — design-space explorer for sparse-training outer-product accelerators (SCNN-like, ANT).

Public API (docs/api.md)::

    arch = antsim.load_arch("arch_configs/ant.yaml")
    layer = antsim.Layer(name="l", N=2, C=4, K=8, H=9, W=7, R=3, S=3, stride=2, pad=1)
    t = antsim.Tensors(weights=W, activations=A, grad_output=dY)
    r = antsim.simulate_layer(arch, layer, phase="wgrad", tensors=t, fidelity="exact")
    c = antsim.compare_designs(layers, workload, archs=[...], gpus=[...])   # antsim.compare
"""

from __future__ import annotations

import importlib
from typing import Any

from antsim.errors import AntsimError, SpecError, WorkloadError
from antsim.results import LayerResult, NetworkResult, ProductCounts
from antsim.sparsity.densities import Densities
from antsim.sparsity.tensors import Tensors, load_tensors, save_tensors
from antsim.spec.arch import ArchSpec, load_arch
from antsim.version import __version__
from antsim.vocabulary import Fidelity, Phase, Policy
from antsim.workloads.layers import PHASES, Layer, read_layers_csv

_LAZY = {
    "network": "antsim.workloads.zoo",
    "networks": "antsim.workloads.zoo",
    "make_tensors": "antsim.sparsity.generators",
    "simulate_layer": "antsim.simulate",
    "simulate_network": "antsim.simulate",
    "estimate_gpu": "antsim.gpu",
    "compare_designs": "antsim.compare",
}


def __getattr__(name: str) -> Any:
    # Stages load lazily so that `import antsim` stays light and a stage can be used without the others.
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'antsim' has no attribute {name!r}")


__all__ = [
    "PHASES", "AntsimError", "ArchSpec", "Densities", "Fidelity", "Layer", "LayerResult", "NetworkResult", "Phase",
    "Policy", "ProductCounts", "SpecError", "Tensors", "WorkloadError", "__version__", "load_arch", "load_tensors",
    "read_layers_csv", "save_tensors", *_LAZY,
]
