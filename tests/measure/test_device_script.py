"""scripts/device_gpu_check.py: the measured rows become a DeepBench file the GPU check reads back."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from antsim.measure.deepbench import read_deepbench_csv

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "device_gpu_check.py"


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("device_gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_kernel_names_map_to_algorithm_families() -> None:
    family = _script().kernel_family
    assert family("nchwToNhwcKernel;sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw") == "IMPLICIT_GEMM"
    assert family("cudnn::winograd_nonfused::winogradForwardData4x4;cudnn::gemm::computeOffsetsKernel") == "WINOGRAD"
    assert family("fft2d_r2c_32x32<float>;void cutlass::Kernel") == "FFT"
    assert family("some_unknown_kernel") == "OTHER"


def test_measured_rows_round_trip_through_the_deepbench_format(tmp_path: Path) -> None:
    script = _script()
    shapes = script.deepbench_shapes(limit=2)
    assert len(shapes) == 2 and shapes[0][1] == "DeepSpeech" and shapes[0][0].N == 4
    rows = [{"name": layer.name, "phase": phase, "time_s": 1e-3 * (i + 1) * (j + 1),
             "kernels": "sm90_xmma_fprop_implicit_gemm" if phase == "fprop" else "x"}
            for i, (layer, _) in enumerate(shapes) for j, phase in enumerate(("fprop", "dgrad", "wgrad"))
            if not (i == 1 and phase == "dgrad")]  # an unmeasured phase stays empty
    path = tmp_path / "db.csv"
    path.write_text(script.deepbench_csv("H200", "bf16", shapes, rows))
    back = read_deepbench_csv(path, "bf16")
    assert [m.layer.N for m in back] == [layer.N for layer, _ in shapes]
    assert back[0].times_s == pytest.approx({"fprop": 1e-3, "dgrad": 2e-3, "wgrad": 3e-3})
    assert back[1].times_s == pytest.approx({"fprop": 2e-3, "wgrad": 6e-3})
    assert all(m.implicit_gemm and m.gpu == "H200" and m.source == "DeepSpeech" for m in back)
