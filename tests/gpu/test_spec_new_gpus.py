"""The builtin GPUs added for issue 13 (docs/gpu_specs.md §4.5): published numbers, sources, first-principles peaks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from antsim.errors import AntsimError
from antsim.gpu import estimate_gpu, gpu_names, load_gpu
from antsim.gpu.step import estimate_step
from antsim.workloads.zoo import network

REPO = Path(__file__).resolve().parents[2]
BUILTIN = REPO / "antsim" / "gpu" / "specs"

# docs/gpu_specs.md §4.5, typed in independently of the YAML files: SMs, boost MHz, FP32 TFLOP/s, DRAM type,
# DRAM GB/s, L2 MB, smem/SM KB, TDP W.
PUBLISHED = {
    "gtx1080ti": (28, 1582, 11.34, "gddr5x", 484, 2.75, 96, 250),
    "titanx-maxwell": (24, 1075, 6.60, "gddr5", 336.5, 3, 96, 250),
    "m40": (24, 1114, 6.84, "gddr5", 288.4, 3, 96, 250),
    "t4": (40, 1590, 8.14, "gddr6", 320, 4, 64, 70),
    "p4": (20, 1113, 5.70, "gddr5", 192, 2, 96, 75),
    "p100-pcie": (56, 1328, 9.52, "hbm2", 732, 4, 64, 250),
    "a100-80gb-pcie": (108, 1410, 19.5, "hbm2e", 1935, 40, 164, 300),
}
# FP32 lanes per SM by chip (NVIDIA architecture whitepapers: GM200/GP102/GP104 128; GP100, TU104, GA100 64)
# and dense FP16 tensor-core FMAs per SM per clock (Turing 8 TCs x 64; Ampere 4 TCs x 256).
FP32_LANES = {"gtx1080ti": 128, "titanx-maxwell": 128, "m40": 128, "p4": 128, "p100-pcie": 64, "t4": 64,
              "a100-80gb-pcie": 64}
TENSOR_FMA_PER_SM = {"t4": 8 * 64, "a100-80gb-pcie": 4 * 256}
# Source tags a number may carry (docs/gpu_specs.md marks and §4.5 tags).
TAG = re.compile(r"\[(C\d*|V|Hb|S|HH|Q|N|G|I|U|assumption)\b")


def test_every_new_gpu_is_a_builtin() -> None:
    assert set(PUBLISHED) <= set(gpu_names())


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_new_gpu_holds_the_published_numbers(name: str) -> None:
    gpu = load_gpu(name)
    sms, mhz, fp32, dram_type, dram, l2, smem, tdp = PUBLISHED[name]
    assert gpu.name == name
    assert (gpu.sms, gpu.clock_mhz, gpu.peak_tflops.fp32, gpu.dram.type, gpu.dram.bandwidth_gbs, gpu.l2.size_mb,
            gpu.smem_per_sm_kb, gpu.power.tdp_w) == (sms, mhz, fp32, dram_type, dram, l2, smem, tdp)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_peaks_match_sms_times_clock_times_flops_per_clock(name: str) -> None:
    gpu = load_gpu(name)
    clock_hz = gpu.clock_mhz * 1e6
    assert gpu.peak("fp32") == pytest.approx(2 * FP32_LANES[name] * gpu.sms * clock_hz, rel=0.005)
    if name in TENSOR_FMA_PER_SM:
        assert gpu.tensor_cores
        assert gpu.peak("fp16") == pytest.approx(2 * TENSOR_FMA_PER_SM[name] * gpu.sms * clock_hz, rel=0.005)
    else:
        assert not gpu.tensor_cores


def test_a100_80gb_pcie_tensor_precisions_are_the_sxm4_die_rates() -> None:
    gpu = load_gpu("a100-80gb-pcie")
    assert gpu.peak("tf32") == pytest.approx(gpu.peak("fp16") / 2, rel=0.01)  # TF32 runs at half the FP16 rate
    assert gpu.peak("bf16") == gpu.peak("fp16")
    assert gpu.sparse_tensor_cores


@pytest.mark.parametrize("name", ["titanx-maxwell", "m40"])
def test_maxwell_has_no_fp16_arithmetic_but_runs_fp16_storage_at_fp32(name: str) -> None:
    gpu = load_gpu(name)
    with pytest.raises(AntsimError, match="not available"):
        gpu.peak("fp16")
    assert gpu.peak("fp16_pseudo") == gpu.peak("fp32")


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_every_number_of_a_new_gpu_names_its_source(name: str) -> None:
    for line in (BUILTIN / f"{name}.yaml").read_text().splitlines():
        body, _, comment = line.partition("#")
        key, _, value = body.partition(":")
        if key.strip() in ("version", "name", "description") or not any(ch.isdigit() for ch in value):
            continue
        assert TAG.search(comment), f"{name}.yaml: {line!r} names no source tag"


def test_pcie_parts_are_distinct_from_the_sxm_builtins() -> None:
    # Same dies, other boards: the PCIe P100 clocks lower, the 80 GB A100 has HBM2e and a lower TDP.
    assert load_gpu("p100-pcie").clock_mhz < load_gpu("p100").clock_mhz
    assert load_gpu("a100-80gb-pcie").dram.bandwidth_gbs > load_gpu("a100").dram.bandwidth_gbs
    assert load_gpu("a100-80gb-pcie").power.tdp_w < load_gpu("a100").power.tdp_w


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_a_training_step_runs_on_every_new_gpu_and_costs_more_than_its_convolutions(name: str) -> None:
    precision = "fp16" if load_gpu(name).tensor_cores else "fp32"
    layers = [layer.with_batch(2) for layer in network("resnet18-cifar")]
    conv = estimate_gpu(name, layers, precision=precision)
    step = estimate_step(name, layers, precision=precision, network="resnet18-cifar")
    assert all(s.time_s > c.time_s for s, c in zip(step.records, conv.records, strict=True))
