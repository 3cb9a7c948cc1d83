"""Train a CIFAR-size network with SWAT top-k sparsity for a few steps and capture its conv operands.

Import after ``antsim.capture.require_torch()``. Deterministic on CPU: seeded RNGs (torch's global RNG is
forked, so the caller's state is untouched), ``torch.use_deterministic_algorithms(True)`` and a fixed
thread count for the duration of the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from antsim.capture.data import batch_indices, load_images
from antsim.capture.models import SwatState, build_model, swat_convs
from antsim.errors import WorkloadError
from antsim.sparsity.tensors import Tensors
from antsim.workloads.layers import Layer

Progress = Callable[[int, int, float], None]


@dataclass(frozen=True)
class CaptureResult:
    """What one capture produced.

    Attributes:
        tensors: ``{layer name: Tensors}`` at the last step, in network order (float32 numpy arrays).
        layers: The conv layers as trained (batch = the capture batch), in the same order.
        losses: Training loss of every step (cross-entropy, nats).
    """

    tensors: dict[str, Tensors]
    layers: list[Layer]
    losses: list[float]


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


def _check(steps: int, batch: int, density: float, grad_density: float, threads: int) -> None:
    for flag, value in (("--steps", steps), ("--batch", batch), ("--threads", threads)):
        if not isinstance(value, int) or value < 1:
            raise WorkloadError(f"{flag} must be an integer >= 1; got {value!r}")
    for flag, value in (("--density", density), ("--grad-density", grad_density)):
        if not 0.0 < value <= 1.0:
            raise WorkloadError(f"{flag} must be in (0, 1]; got {value!r}")


def capture(network: str, steps: int = 20, batch: int = 4, density: float = 0.1, grad_density: float = 1.0,
            seed: int = 0, width_mult: float = 1.0, data: str = "digits", lr: float = 0.005, threads: int = 1,
            progress: Progress | None = None) -> CaptureResult:
    """Train ``network`` for ``steps`` SGD steps with SWAT top-k and capture the last step's operands.

    Args:
        network: ``resnet18-cifar``, ``vgg16-cifar`` or ``wrn-16-8-cifar``.
        steps: Training steps; the operands of the last one are captured.
        batch: Mini-batch size N.
        density: Kept fraction of W (all phases) and of the A saved for wgrad.
        grad_density: Kept fraction of each conv's output gradient dY (1.0: dense, SWAT alone).
        seed: Seeds the initial weights and the mini-batch order.
        width_mult: Scales every channel count (1.0 = the zoo's shapes; smaller for quick tests).
        data: ``digits`` (scikit-learn's bundled digits) or ``synthetic``.
        lr: SGD learning rate (momentum 0.9, weight decay 5e-4).
        threads: CPU threads torch may use (results are reproducible for a fixed count).
        progress: Called as ``progress(step, steps, loss)`` after each step.

    Raises:
        WorkloadError: an invalid argument. MissingExtraError: ``digits`` without scikit-learn.
    """
    _check(steps, batch, density, grad_density, threads)
    images, labels = load_images(data, seed)
    state = SwatState(density_w=density, density_a=density, density_g=grad_density)
    losses: list[float] = []
    with deterministic(threads), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build_model(network, state, width_mult)
        model.train()
        optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
        for step, index in enumerate(batch_indices(len(labels), batch, steps, seed)):
            state.recording = step == steps - 1
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(torch.from_numpy(images[index])), torch.from_numpy(labels[index]))
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
            if progress is not None:
                progress(step + 1, steps, losses[-1])
        convs = swat_convs(model)
    tensors = {conv.layer_name: _to_tensors(state.records[conv.layer_name]) for conv in convs}
    layers = [_layer_of(conv.layer_name, tensors[conv.layer_name], conv.stride, conv.padding) for conv in convs]
    return CaptureResult(tensors=tensors, layers=layers, losses=losses)


def _to_tensors(record: dict[str, torch.Tensor]) -> Tensors:
    def arr(key: str) -> np.ndarray:
        return record[key].numpy().astype(np.float32, copy=True)

    return Tensors(weights=arr("weights"), activations=arr("activations"), grad_output=arr("grad_output"),
                   saved_activations=arr("saved_activations"))


def _layer_of(name: str, t: Tensors, stride: tuple[int, int], pad: tuple[int, int]) -> Layer:
    n, c, h, w = t.activations.shape
    k, _, r, s = t.weights.shape
    return Layer(name=name, N=n, C=c, K=k, H=h, W=w, R=r, S=s, stride=stride, pad=pad)
