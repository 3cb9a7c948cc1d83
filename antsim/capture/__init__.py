"""Capture of real sparse-training operands (``antsim capture``) and their statistics.

``antsim.capture.run.capture`` trains a small CIFAR-size network (ResNet-18, VGG-16 or WRN-16-8, named as
in the zoo) with SWAT-style top-k sparsification for a few steps on data that needs no download and returns
each conv layer's W, A, saved A and dY at the last step as ``Tensors``. ``antsim.capture.stats`` measures
the structure of such tensors (per-channel imbalance, spatial clustering, wgrad co-location) and of the
synthetic generators, for calibration. PyTorch is optional: only ``run``/``models``/``data`` need it, and
they import it after ``require_torch`` has checked it is there.
"""

from __future__ import annotations

from antsim.capture._torch import require_torch

__all__ = ["require_torch"]
