"""Time the three training convolutions of each layer with PyTorch (the measured CPU / GPU baseline).

Import after ``antsim.capture.require_torch("measure")`` (this module imports torch at the top).

Per layer, operands are allocated (seeded normal values, the chosen precision), each phase is run
``warmup`` times untimed and then ``repeats`` times timed one call at a time, and the operands are freed
before the next layer, so memory never exceeds one layer's working set:

* fprop: ``torch.nn.functional.conv2d(A, W)``;
* dgrad: ``torch.nn.grad.conv2d_input(A.shape, W, dY)`` (= autograd's input gradient of conv2d);
* wgrad: ``torch.nn.grad.conv2d_weight(A, W.shape, dY)`` (= autograd's weight gradient of conv2d).

On CPU each call is timed with ``time.perf_counter``; on CUDA with a pair of CUDA events around the call
and ``torch.cuda.synchronize()`` before reading them (and before the first event, so earlier queued work
is not counted). PyTorch does not expose which cuDNN algorithm it picked, so ``algorithm`` says
``not exposed``; on CUDA the names of the GPU kernels the call launched (from ``torch.profiler``) are
recorded in ``kernels`` instead, which identify the implicit-GEMM / Winograd / FFT family.
"""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
import torch.nn.grad  # a submodule torch.nn does not re-export

from antsim.errors import AntsimError
from antsim.vocabulary import Phase
from antsim.workloads.layers import PHASES, Layer

PRECISIONS = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
COLUMNS = ("name", "phase", "time_s", "time_min_s", "time_max_s", "repeats", "warmup", "device", "device_name",
           "precision", "torch_version", "cudnn_version", "threads", "algorithm", "kernels", "gflop_s",
           "N", "C", "K", "H", "W", "R", "S", "stride", "pad", "stride_h", "stride_w", "pad_h", "pad_w")


def phase_call(phase: Phase, layer: Layer, a: torch.Tensor, w: torch.Tensor, dy: torch.Tensor
               ) -> Callable[[], torch.Tensor]:
    """The call that computes ``phase`` of ``layer`` from A (N,C,H,W), W (K,C,R,S) and dY (N,K,P,Q)."""
    stride, pad = layer.stride, layer.pad
    if phase == "fprop":
        return lambda: F.conv2d(a, w, None, stride, pad)
    if phase == "dgrad":
        return lambda: torch.nn.grad.conv2d_input(a.shape, w, dy, stride, pad)
    if phase == "wgrad":
        return lambda: torch.nn.grad.conv2d_weight(a, w.shape, dy, stride, pad)
    raise AntsimError(f"unknown phase {phase!r}; known: {', '.join(PHASES)}")


def time_call(call: Callable[[], Any], device: str, repeats: int, warmup: int) -> list[float]:
    """Seconds of each of ``repeats`` timed calls, after ``warmup`` untimed ones."""
    for _ in range(warmup):
        call()
    times = []
    if device == "cuda":
        torch.cuda.synchronize()
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) * 1e-3)  # elapsed_time is in milliseconds
        return times
    for _ in range(repeats):
        begin = time.perf_counter()
        call()
        times.append(time.perf_counter() - begin)
    return times


def cuda_kernels(call: Callable[[], Any]) -> str:
    """Names of the CUDA kernels one call launches ('' if the profiler cannot tell)."""
    try:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            call()
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA]
    except (RuntimeError, AttributeError, AssertionError):
        return ""
    return ";".join(dict.fromkeys(names))


def environment(device: str) -> dict[str, Any]:
    """Device, device name, torch and cuDNN versions, CPU threads — echoed on every row."""
    if device == "cuda":
        name = torch.cuda.get_device_name()
    else:
        name = _cpu_name()
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {"device": device, "device_name": name, "torch_version": torch.__version__,
            "cudnn_version": cudnn if cudnn is not None else "none", "threads": torch.get_num_threads()}


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def _operands(layer: Layer, device: str, dtype: torch.dtype, seed: int) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    shapes = ((layer.N, layer.C, layer.H, layer.W), (layer.K, layer.C, layer.R, layer.S),
              (layer.N, layer.K, layer.P, layer.Q))
    return tuple(torch.randn(s, generator=gen).to(device=device, dtype=dtype) for s in shapes)


def measure_layer(layer: Layer, phases: Sequence[Phase] = PHASES, device: str = "cpu", precision: str = "fp32",
                  repeats: int = 10, warmup: int = 2, seed: int = 0) -> list[dict[str, Any]]:
    """Time each phase of one layer; one row (``COLUMNS``) per phase, ``time_s`` the median in seconds.

    Raises:
        AntsimError: unknown precision, a precision the device cannot run, or too few repeats.
    """
    if precision not in PRECISIONS:
        raise AntsimError(f"precision {precision!r}: known: {', '.join(PRECISIONS)}", subject="precision")
    if repeats < 1:
        raise AntsimError(f"repeats must be >= 1; got {repeats}", subject="repeats")
    if warmup < 0:
        raise AntsimError(f"warmup runs must be >= 0; got {warmup}", subject="warmup")
    a, w, dy = _operands(layer, device, PRECISIONS[precision], seed)
    rows, env = [], environment(device)
    try:
        for phase in phases:
            call = phase_call(phase, layer, a, w, dy)
            try:
                times = time_call(call, device, repeats, warmup)
            except RuntimeError as exc:
                raise AntsimError(f"layer {layer.name!r}: {phase} in {precision} on {device} failed: "
                                  f"{str(exc).splitlines()[0]}") from None
            kernels = cuda_kernels(call) if device == "cuda" else ""
            rows.append(_row(layer, phase, times, env, precision, warmup, kernels))
    finally:
        del a, w, dy
        if device == "cuda":
            torch.cuda.empty_cache()
    return rows


def _row(layer: Layer, phase: Phase, times: list[float], env: dict[str, Any], precision: str, warmup: int,
         kernels: str) -> dict[str, Any]:
    median = statistics.median(times)
    return {"name": layer.name, "phase": phase, "time_s": median, "time_min_s": min(times),
            "time_max_s": max(times), "repeats": len(times), "warmup": warmup, **env, "precision": precision,
            "algorithm": "not exposed", "kernels": kernels,
            "gflop_s": 2 * layer.macs / median * 1e-9 if median > 0 else "",
            "N": layer.N, "C": layer.C, "K": layer.K, "H": layer.H, "W": layer.W, "R": layer.R, "S": layer.S,
            "stride": layer.stride_h, "pad": layer.pad_h, "stride_h": layer.stride_h, "stride_w": layer.stride_w,
            "pad_h": layer.pad_h, "pad_w": layer.pad_w}


def measure_layers(layers: Iterable[Layer], phases: Sequence[Phase] = PHASES, device: str = "cpu",
                   precision: str = "fp32", repeats: int = 10, warmup: int = 2, seed: int = 0
                   ) -> list[dict[str, Any]]:
    """``measure_layer`` over a workload, rows in network order (layer-major, then phase)."""
    if device == "cuda" and not torch.cuda.is_available():
        raise AntsimError("device 'cuda': PyTorch sees no CUDA device (CPU-only build or no GPU)", subject="device")
    if device not in ("cpu", "cuda"):
        raise AntsimError(f"device {device!r}: known: cpu, cuda", subject="device")
    previous = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = device == "cuda"  # cuDNN picks its fastest algorithm, as in training
    try:
        return [row for layer in layers
                for row in measure_layer(layer, phases, device, precision, repeats, warmup, seed)]
    finally:
        torch.backends.cudnn.benchmark = previous
