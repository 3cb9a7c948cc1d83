"""A network on a GPU (``antsim.gpu.estimate``): the result echoes design and workload; same bytes again."""

from __future__ import annotations

import json

from antsim.gpu import Gemm, best_plan, estimate_gpu, load_gpu
from antsim.workloads.zoo import network


def test_estimate_gpu_result_echoes_design_and_workload_and_is_deterministic(tmp_path) -> None:  # type: ignore[no-untyped-def]
    layers = [l.with_batch(8) for l in network("resnet18-cifar")]
    a = estimate_gpu("v100", layers, phases=("wgrad", "fprop"), precision="fp16")
    assert a.backend == "gpu" and a.design == "v100-fp16" and a.spec["sms"] == 80
    assert estimate_gpu("v100", layers[:1], phases=("fprop",)).design == "v100"  # fp32: the bare GPU name
    assert a.keys() == [(l.name, p) for l in layers for p in ("fprop", "wgrad")]
    assert a.workload["batch"] == 8 and a.workload["phases"] == ["fprop", "wgrad"]
    assert a.meta["precision"] == "fp16"
    rec = a.record(layers[1].name, "fprop")
    assert {"M", "N", "K", "tile", "split_k", "waves", "bound"} <= set(rec.details)
    a.write_json(tmp_path / "a.json")
    estimate_gpu("v100", layers, phases=("fprop", "wgrad"), precision="fp16").write_json(tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert json.loads((tmp_path / "a.json").read_text())["schema"] == "antsim.result/1"
    assert best_plan(load_gpu("v100"), Gemm(64, 64, 64, 1, 1, 1, 0), "fp16").tile.k == 32  # tensor-core tile
