"""Builders of synthetic but schema-true results (antsim.result/1) for the compare/report tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from antsim.energy.actions import ACTIONS
from antsim.results import LayerResult, NetworkResult, ProductCounts
from antsim.workloads.layers import PHASES, Layer

LAYERS = [
    Layer(name="conv1", N=1, C=3, K=16, H=32, W=32, R=3, S=3, stride=1, pad=1),
    Layer(name="layer2.conv", N=1, C=16, K=32, H=32, W=32, R=3, S=3, stride=2, pad=1),
    Layer(name="layer3.conv", N=1, C=32, K=64, H=16, W=16, R=3, S=3, stride=1, pad=1),
]
STALLS = ("busy", "bank_conflict", "anticipation", "barrier_wait", "halo", "reduction", "memory_stall")


def workload(layers: list[Layer] = LAYERS, batch: int = 1, **extra: object) -> dict:
    echo = {"network": "tiny-cifar", "layers_csv": None, "batch": batch, "phases": list(PHASES),
            "layers": [layer.with_batch(batch).to_dict() for layer in layers]}
    return {**echo, **extra}


ACCEL_WORKLOAD = {"densities": {"w": 0.1, "a": 0.1, "g": 0.1}, "sparsity": "topk_field", "tensors": None,
                  "seed": 0, "fidelity": "fast"}


def accelerator_result(design: str, seed: int, skip_fraction: float, layers: list[Layer] = LAYERS,
                       clock_ghz: float = 1.0, **workload_extra: object) -> NetworkResult:
    """Records whose energy breakdown sums to energy_j, stalls cover ≤ cycles, products are consistent."""
    rng = np.random.default_rng(seed)
    records = []
    for layer in layers:
        for phase in PHASES:
            total = int(layer.macs * 0.01 * (30 if phase == "wgrad" else 1)) + 100
            valid = int(total * (0.05 if phase == "wgrad" else 0.9))
            skipped = int((total - valid) * skip_fraction)
            stalls = {k: float(rng.integers(10, 5000)) for k in STALLS}
            cycles = int(sum(stalls.values()) + rng.integers(0, 500))  # some cycles no category covers
            breakdown = {c: float(rng.uniform(1e-7, 1e-5)) for c in (*ACTIONS, "leakage")}
            records.append(LayerResult(
                layer=layer.name, phase=phase, time_s=cycles / (clock_ghz * 1e9), cycles=cycles,
                energy_j=float(sum(breakdown.values())), energy_breakdown_j=breakdown,
                products=ProductCounts(total, valid, skipped), stalls=stalls,
                actions={"multiplier": {"multiply": float(total - skipped)}}, details={"tiles": 64},
                area_mm2=7.9))
    spec = {"name": design, "pe_array": {"rows": 8, "cols": 8, "F": 4, "I": 4},
            "technology": {"node_nm": 16, "clock_ghz": clock_ghz}, "anticipation": {"policy": design}}
    return NetworkResult(design=design, backend="accelerator", records=tuple(records), spec=spec,
                         workload=workload(layers, **{**ACCEL_WORKLOAD, **workload_extra}), area_mm2=7.9,
                         meta={"antsim_version": "test"})


def gpu_result(design: str, seed: int, layers: list[Layer] = LAYERS, batch: int = 1) -> NetworkResult:
    rng = np.random.default_rng(seed)
    records = []
    for layer in layers:
        for phase in PHASES:
            time_s = float(rng.uniform(5e-6, 5e-5))
            records.append(LayerResult(layer=layer.name, phase=phase, time_s=time_s, energy_j=time_s * 250.0,
                                       details={"M": layer.K, "N": layer.C * 9, "K": layer.P * layer.Q}))
    return NetworkResult(design=design, backend="gpu", records=tuple(records),
                         spec={"name": design, "sms": 80}, workload=workload(layers, batch=batch),
                         meta={"precision": "fp32"})


def five_designs() -> list[NetworkResult]:
    """SCNN, ANT, ANT oracle and two GPUs on the same workload (the report and compare command tests)."""
    return [accelerator_result("scnn", 1, 0.0), accelerator_result("ant", 2, 0.9),
            accelerator_result("ant_oracle", 3, 1.0), gpu_result("v100", 4), gpu_result("h100", 5)]


def write_result_files(folder: Path, items: list[NetworkResult]) -> list[str]:
    """Each result as ``folder/<design>.json``; the paths as strings, in order."""
    paths = []
    for result in items:
        path = folder / f"{result.design}.json"
        result.write_json(path)
        paths.append(str(path))
    return paths
