"""Train a CIFAR-size network with SWAT top-k sparsity for a few steps and capture its conv operands.

Import after ``antsim.capture.require_torch()``. Deterministic on CPU: seeded RNGs (torch's global RNG is
forked, so the caller's state is untouched), ``torch.use_deterministic_algorithms(True)`` and a fixed
thread count for the duration of the run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from antsim.capture.data import training_data
from antsim.capture.models import SwatState, build_model, swat_convs
from antsim.capture.schedule import LrSchedule, make_schedule
from antsim.errors import WorkloadError
from antsim.sparsity.tensors import Tensors
from antsim.workloads.layers import Layer

Progress = Callable[[int, int, float], None]

DEFAULT_LR = 0.004  # peak SGD lr, measured (BENCHMARKS.md "capture"): full-width ResNet-18, natural, batch 4,
# 400 cosine steps, dense dY: last-tenth loss 1.50 at 0.004 vs 1.85 at 0.01 (which first rises to 4.6);
# at width x0.25, 0.01 / 0.02 / 0.05 end at 1.66 / 1.82 / 1.88
MOMENTUM = 0.9  # SGD momentum and weight decay of the CIFAR ResNet recipe (He et al., CVPR 2016, §4.2)
WEIGHT_DECAY = 5e-4  # [kuangliu/pytorch-cifar uses 5e-4 for all its CIFAR networks; He et al. use 1e-4]


@dataclass(frozen=True)
class CaptureResult:
    """What one capture produced.

    Attributes:
        tensors: ``{layer name: Tensors}`` at the last step, in network order (float32 numpy arrays).
        layers: The conv layers as trained (batch = the capture batch), in the same order.
        losses: Training loss of every step (cross-entropy, nats, on that step's mini-batch before its update).
        accuracies: Fraction of that mini-batch classified correctly, per step.
        lrs: Learning rate each step used.
        data: One line describing the training images and labels (``TrainingData.description``).
        classes: Number of classes of the training target (chance loss = ln(classes)).
        schedule: The learning-rate schedule the run used.
    """

    tensors: dict[str, Tensors]
    layers: list[Layer]
    losses: list[float]
    accuracies: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    data: str = ""
    classes: int = 10
    schedule: LrSchedule | None = None


@contextmanager
def deterministic(threads: int = 1) -> Iterator[None]:
    """Deterministic kernels and a fixed CPU thread count inside the block; restores both after."""
    previous_threads = torch.get_num_threads()
    previous_mode = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous_mode)
        torch.set_num_threads(previous_threads)


def _check(steps: int, batch: int, density: float, grad_density: float, threads: int, momentum: float,
           weight_decay: float) -> None:
    for name, value in (("steps", steps), ("batch", batch), ("threads", threads)):
        if not isinstance(value, int) or value < 1:
            raise WorkloadError(f"{name} must be an integer >= 1; got {value!r}", subject=name)
    for name, fraction in (("density", density), ("grad_density", grad_density)):
        if not 0.0 < fraction <= 1.0:
            raise WorkloadError(f"{name} must be in (0, 1]; got {fraction!r}", subject=name)
    if not 0.0 <= momentum < 1.0:
        raise WorkloadError(f"momentum must be in [0, 1); got {momentum!r}", subject="momentum")
    if not (math.isfinite(weight_decay) and weight_decay >= 0):
        raise WorkloadError(f"weight_decay must be >= 0; got {weight_decay!r}", subject="weight_decay")


def _sgd_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, lr: float, images: np.ndarray,
              labels: np.ndarray) -> tuple[float, float]:
    """One SGD step at ``lr`` on a mini-batch; returns its loss and accuracy (before the update)."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.zero_grad(set_to_none=True)
    target = torch.from_numpy(labels)
    logits = model(torch.from_numpy(images))
    loss = F.cross_entropy(logits, target)
    loss.backward()
    optimizer.step()
    return float(loss.detach()), float((logits.detach().argmax(dim=1) == target).float().mean())


def capture(network: str, steps: int = 20, batch: int = 4, density: float = 0.1, grad_density: float = 1.0,
            seed: int = 0, width_mult: float = 1.0, data: str = "natural", lr: float = DEFAULT_LR,
            threads: int = 1, progress: Progress | None = None, *, data_dir: Path | None = None,
            schedule: str = "cosine", warmup: int | None = None, momentum: float = MOMENTUM,
            weight_decay: float = WEIGHT_DECAY) -> CaptureResult:
    """Train ``network`` for ``steps`` SGD steps with SWAT top-k and capture the last step's operands.

    Args:
        network: ``resnet18-cifar``, ``vgg16-cifar`` or ``wrn-16-8-cifar``.
        steps: Training steps; the operands of the last one are captured.
        batch: Mini-batch size N.
        density: Kept fraction of W (all phases) and of the A saved for wgrad.
        grad_density: Kept fraction of each conv's output gradient dY (1.0: dense, SWAT alone).
        seed: Seeds the initial weights and the mini-batch order / crops.
        width_mult: Scales every channel count (1.0 = the zoo's shapes; smaller for quick tests).
        data: ``natural``, ``cifar10`` (with ``data_dir``), ``digits`` or ``synthetic`` (``antsim.capture.data``).
        lr: Peak SGD learning rate.
        threads: CPU threads torch may use (results are reproducible for a fixed count).
        progress: Called as ``progress(step, steps, loss)`` after each step.
        data_dir: The CIFAR-10 python-version folder for ``data="cifar10"``.
        schedule: ``cosine`` (warm-up + cosine decay), ``step`` or ``constant`` (``antsim.capture.schedule``).
        warmup: Warm-up steps (default 5 % of ``steps``).
        momentum, weight_decay: SGD's (defaults 0.9 and 5e-4).

    Raises:
        WorkloadError: an invalid argument or data folder. MissingExtraError: scikit-learn missing for
        ``natural`` / ``digits``.
    """
    _check(steps, batch, density, grad_density, threads, momentum, weight_decay)
    lr_at = make_schedule(schedule, lr, steps, warmup)
    source = training_data(data, seed, data_dir)
    state = SwatState(density_w=density, density_a=density, density_g=grad_density)
    losses: list[float] = []
    accuracies: list[float] = []
    lrs: list[float] = []
    with deterministic(threads), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build_model(network, state, width_mult, source.classes)
        model.train()
        optimizer = torch.optim.SGD(model.parameters(), lr=lr_at.at(0), momentum=momentum,
                                    weight_decay=weight_decay)
        for step, (images, labels) in enumerate(source.batches(batch, steps, seed)):
            state.recording = step == steps - 1
            loss, accuracy = _sgd_step(model, optimizer, lr_at.at(step), images, labels)
            losses.append(loss)
            accuracies.append(accuracy)
            lrs.append(lr_at.at(step))
            if progress is not None:
                progress(step + 1, steps, losses[-1])
        convs = swat_convs(model)
    tensors = {conv.layer_name: _to_tensors(state.records[conv.layer_name]) for conv in convs}
    layers = [_layer_of(conv.layer_name, tensors[conv.layer_name], conv.stride, conv.padding) for conv in convs]
    return CaptureResult(tensors=tensors, layers=layers, losses=losses, accuracies=accuracies, lrs=lrs,
                         data=source.description, classes=source.classes, schedule=lr_at)


def _to_tensors(record: dict[str, torch.Tensor]) -> Tensors:
    def arr(key: str) -> np.ndarray:
        return record[key].numpy().astype(np.float32, copy=True)

    return Tensors(weights=arr("weights"), activations=arr("activations"), grad_output=arr("grad_output"),
                   saved_activations=arr("saved_activations"))


def _layer_of(name: str, t: Tensors, stride: tuple[int, int], pad: tuple[int, int]) -> Layer:
    n, c, h, w = t.activations.shape
    k, _, r, s = t.weights.shape
    return Layer(name=name, N=n, C=c, K=k, H=h, W=w, R=r, S=s, stride=stride, pad=pad)
