"""GPU spec files: builtin specs, their repository mirror, published numbers, and bad specs."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest
import yaml

from antsim.errors import AntsimError, SpecError
from antsim.gpu import gpu_names, load_gpu

REPO = Path(__file__).resolve().parents[2]
BUILTIN = REPO / "antsim" / "gpu" / "specs"
MIRROR = REPO / "arch_configs" / "gpus"

# Published figures (docs/sources.md §1.6 and docs/gpu_specs.md §4.1), typed in independently of the YAML files:
# SMs, FP32 TFLOP/s, DRAM GB/s, L2 MB, TDP W.
PUBLISHED = {
    "titanxp": (30, 12.1, 547.7, 3, 250),
    "p100": (56, 10.6, 732, 4, 300),
    "v100": (80, 15.7, 900, 6, 300),
    "a100": (108, 19.5, 1555, 40, 400),
    "h100": (132, 66.9, 3350, 50, 700),
    "h200": (132, 66.9, 4800, 50, 700),
}
DENSE_TENSOR = {"v100": ("fp16", 125), "a100": ("bf16", 312), "h100": ("bf16", 989.4), "h200": ("bf16", 989.4)}


def test_every_builtin_gpu_is_mirrored_identically_in_arch_configs() -> None:
    names = sorted(p.name for p in BUILTIN.glob("*.yaml"))
    assert names == sorted(p.name for p in MIRROR.glob("*.yaml"))
    assert set(PUBLISHED) <= set(gpu_names())  # the GPUs added later: tests/gpu/test_spec_new_gpus.py
    for name in names:
        assert filecmp.cmp(BUILTIN / name, MIRROR / name, shallow=False), name


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_builtin_specs_hold_the_published_numbers(name: str) -> None:
    gpu = load_gpu(name)
    sms, fp32, dram, l2, tdp = PUBLISHED[name]
    assert (gpu.sms, gpu.peak_tflops.fp32, gpu.dram.bandwidth_gbs, gpu.l2.size_mb, gpu.power.tdp_w) == (
        sms, fp32, dram, l2, tdp)
    # FP32 peak = 2 × lanes × SMs × clock with a whole number of lanes per SM (64 or 128), within 1 %.
    assert gpu.fp32_lanes_per_sm == pytest.approx(round(gpu.fp32_lanes_per_sm / 64) * 64, rel=0.01)
    if name in DENSE_TENSOR:
        precision, tflops = DENSE_TENSOR[name]
        assert gpu.peak(precision) == pytest.approx(tflops * 1e12)  # dense, not the 2:4-sparse figure


def test_every_number_in_a_spec_file_has_a_source_comment() -> None:
    for path in BUILTIN.glob("*.yaml"):
        for line in path.read_text().splitlines():
            key, _, value = line.split("#")[0].partition(":")
            if key.strip() in ("version", "name", "description"):
                continue
            if any(ch.isdigit() for ch in value):
                assert "#" in line, f"{path.name}: {line!r} has no source comment"


def test_load_by_path_equals_load_by_name() -> None:
    assert load_gpu(MIRROR / "a100.yaml") == load_gpu("a100") == load_gpu("A100")


def _write_spec(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    data = yaml.safe_load((BUILTIN / "v100.yaml").read_text())
    edit(data)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_missing_fp32_peak_names_file_and_key(tmp_path: Path) -> None:
    path = _write_spec(tmp_path, lambda d: d["peak_tflops"].pop("fp32"))
    with pytest.raises(SpecError) as err:
        load_gpu(path)
    message = str(err.value)
    assert str(path) in message and "peak_tflops.fp32" in message and "\n" not in message


def test_negative_bandwidth_names_file_key_and_value(tmp_path: Path) -> None:
    path = _write_spec(tmp_path, lambda d: d["dram"].__setitem__("bandwidth_gbs", -900))
    with pytest.raises(SpecError) as err:
        load_gpu(path)
    message = str(err.value)
    assert str(path) in message and "dram.bandwidth_gbs" in message and "-900" in message


def test_unknown_key_and_wrong_kind_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="l2.bandwith_gbs: unknown key"):
        load_gpu(_write_spec(tmp_path, lambda d: d["l2"].__setitem__("bandwith_gbs", 1)))
    with pytest.raises(SpecError, match="kind: must be 'gpu'"):
        load_gpu(_write_spec(tmp_path, lambda d: d.__setitem__("kind", "arch")))


def test_unknown_gpu_name_lists_the_builtin_ones() -> None:
    with pytest.raises(SpecError, match="unknown GPU; known: a100, a100-80gb-pcie, gtx1080ti, h100, h200, m40, p100, "
                                        "p100-pcie, p4, t4, titanx-maxwell, titanxp, v100"):
        load_gpu("rtx9090")


def test_precision_the_gpu_lacks_is_a_one_line_error() -> None:
    with pytest.raises(AntsimError) as err:
        load_gpu("p100").peak("bf16")
    assert str(err.value) == "gpu p100: precision 'bf16' not available; has fp32, fp16, fp16_pseudo"
    with pytest.raises(AntsimError, match="precision: unknown 'fp8'"):
        load_gpu("h100").peak("fp8")


def test_sparse_tensor_cores_need_tensor_cores_and_are_ampere_and_later(tmp_path: Path) -> None:
    data = yaml.safe_load((BUILTIN / "p100.yaml").read_text())
    data["sparse_tensor_cores"] = True
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError, match="bad.yaml.*sparse_tensor_cores: true needs tensor_cores: true") as info:
        load_gpu(path)
    assert "\n" not in str(info.value)
    sparse = [name for name in gpu_names() if load_gpu(name).sparse_tensor_cores]
    assert sparse == ["a100", "a100-80gb-pcie", "h100", "h200"]
