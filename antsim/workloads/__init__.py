"""Workloads: conv layers, the network zoo, the layers-CSV reader."""

from antsim.workloads.layers import PHASES, Layer, read_layers_csv, write_layers_csv

__all__ = ["PHASES", "Layer", "read_layers_csv", "write_layers_csv"]
