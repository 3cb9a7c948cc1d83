"""Helpers for the sweep tests: tiny sweep specs (analytic evaluator) written to a folder."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
ANT = REPO / "arch_configs" / "ant.yaml"

TINY_LAYERS = [
    {"name": "a", "N": 1, "C": 8, "K": 16, "H": 8, "W": 8, "R": 3, "S": 3, "stride": 1, "pad": 1},
    {"name": "b", "N": 1, "C": 16, "K": 16, "H": 4, "W": 4, "R": 3, "S": 3, "stride": 1, "pad": 1},
    {"name": "c", "N": 1, "C": 16, "K": 32, "H": 4, "W": 4, "R": 1, "S": 1, "stride": 1, "pad": 0},
]


def sweep_dict(**overrides: object) -> dict:
    """A small analytic-evaluator sweep (3 objectives, one constraint) with overrides."""
    spec = {
        "kind": "sweep", "version": 1, "base_arch": str(ANT),
        "evaluator": {"name": "analytic", "options": {"min_input_bytes_per_pe": 4096}},
        "space": {"pe_array.rows": {"low": 2, "high": 16}, "pe_array.F": {"choices": [2, 4, 8]},
                  "buffers.input_kb": {"low": 1, "high": 64, "log": True},
                  "anticipation.policy": {"choices": ["none", "ant", "oracle"]}},
        "workload": {"layers": TINY_LAYERS},
        "objectives": {"time_s": "min", "energy_j": "min", "area_mm2": "min"},
        "constraints": {"area_mm2": {"max": 40}},
        "n_trials": 12, "seed": 3,
    }
    spec.update(overrides)
    return spec


def write_spec(folder: Path, name: str = "tiny", **overrides: object) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(sweep_dict(**overrides), sort_keys=False))
    return path
