"""Capture of real sparse-training operands (``antsim capture``) and their statistics.

``antsim.capture.run.capture`` trains a small CIFAR-size network (ResNet-18, VGG-16 or WRN-16-8, named as
in the zoo) with SWAT-style top-k sparsification under a learning-rate schedule (``schedule``) on data
that needs no download — crops of bundled natural photos — or a user's CIFAR-10 folder (``data``), and
returns each conv layer's W, A, saved A and dY at the last step as ``Tensors`` with the per-step loss
curve (``report`` tabulates and draws it). ``antsim.capture.stats`` measures
the structure of such tensors (per-channel imbalance, spatial clustering, wgrad co-location) and of the
synthetic generators, for calibration. PyTorch is optional: only ``run``/``models`` need it, and
they import it after ``require_torch`` has checked it is there.
"""

from __future__ import annotations

from antsim.capture._torch import require_torch

__all__ = ["require_torch"]
