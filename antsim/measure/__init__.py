"""Measured baselines: time the three training convolutions with PyTorch (``antsim measure``) and read
measured or external per-layer results from CSV files (``read_results_csv``).

PyTorch is optional: ``antsim.measure.external`` needs only the standard library and numpy; the timing
code in ``antsim.measure.timing`` imports torch lazily and raises ``MissingExtraError`` without it.
"""

from __future__ import annotations

from antsim.measure.external import read_deepbench_layers, read_results_csv

__all__ = ["read_deepbench_layers", "read_results_csv"]
