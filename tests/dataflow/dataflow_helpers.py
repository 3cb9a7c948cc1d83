"""Helpers for the dataflow tests: small random layers, operands and architectures."""

from __future__ import annotations

import numpy as np

from antsim.sparsity.tensors import Tensors
from antsim.spec.arch import arch_from_dict, load_arch

__all__ = ["arch_from_dict", "config_with", "load_arch", "random_tensors", "small_arch"]
from antsim.workloads.layers import Layer


def random_tensors(layer: Layer, density: float | tuple[float, float, float], seed: int) -> Tensors:
    """Bernoulli(density) masks times standard normals for W, A and dY."""
    rng = np.random.default_rng(seed)
    dw, da, dg = (density,) * 3 if isinstance(density, float) else density

    def draw(shape: tuple[int, ...], d: float) -> np.ndarray:
        return (rng.random(shape) < d) * rng.standard_normal(shape)

    return Tensors(weights=draw((layer.K, layer.C, layer.R, layer.S), dw),
                   activations=draw((layer.N, layer.C, layer.H, layer.W), da),
                   grad_output=draw((layer.N, layer.K, layer.P, layer.Q), dg))


def small_arch(policy: str = "none", rows: int = 2, cols: int = 3, kc: int = 2, stride_phases: bool = False,
               **sections: dict) -> object:
    """An arch with a small PE grid (rows × cols), Kc output channels per group and the given policy."""
    data = {"name": "small", "pe_array": {"rows": rows, "cols": cols, "F": 4, "I": 4},
            "mapping": {"output_channel_group": kc, "stride_phases": stride_phases},
            "anticipation": {"policy": policy, "fetch_filter": policy != "none"}}
    for key, value in sections.items():
        data.setdefault(key, {}).update(value)
    return arch_from_dict(data)


def config_with(path: str, **updates: dict) -> object:
    """An arch_configs file with some sections overridden."""
    data = load_arch(path).to_dict()
    for key, value in updates.items():
        data[key].update(value)
    return arch_from_dict(data)


# Small layers covering strides, asymmetric strides and pads, 1x1 and 5x5 kernels, batches: (layer, density,
# rows, cols, Kc).
MAPPING_CASES = [
    (Layer("s1", N=2, C=3, K=5, H=9, W=7, R=3, S=3, stride=1, pad=1), 0.4, 2, 3, 2),
    (Layer("s2", N=1, C=4, K=3, H=11, W=9, R=3, S=3, stride=2, pad=1), 0.5, 3, 2, 2),
    (Layer("ns", N=3, C=2, K=4, H=9, W=10, R=5, S=3, stride=(2, 1), pad=(2, 0)), 0.3, 2, 2, 3),
    (Layer("k1", N=1, C=3, K=4, H=7, W=7, R=1, S=1, stride=2, pad=0), 0.6, 2, 2, 4),
    (Layer("k5", N=2, C=2, K=2, H=13, W=11, R=5, S=5, stride=1, pad=2), 0.25, 3, 3, 1),
]
