"""A sampled design with a tiny input buffer is refused before its trial runs for hours."""

from __future__ import annotations

import time

import pytest

from antsim.dse.evaluators import simulator
from antsim.dse.workload import Workload
from antsim.errors import MappingError
from antsim.guard import MAX_PASSES, phase_steps
from antsim.spec.arch import arch_from_dict
from antsim.workloads.layers import Layer

LAYER = Layer(name="c", N=1, C=64, K=64, H=8, W=8, R=3, S=3, stride=1, pad=1)


def test_a_trial_past_the_pass_limit_is_infeasible_within_a_second() -> None:
    tiny = arch_from_dict({"name": "tiny", "buffers": {"input_kb": 0.0001}})
    workload = Workload(layers=(LAYER,), phases=("fprop",), densities={"w": 1.0, "a": 1.0, "g": 1.0})
    assert phase_steps(tiny, LAYER, "fprop", workload.densities)[1] > MAX_PASSES
    start = time.perf_counter()
    with pytest.raises(MappingError, match=r"c/fprop needs about \d+ stationary passes"):
        simulator(tiny, workload)
    assert time.perf_counter() - start < 1.0


def test_a_design_within_the_limit_is_simulated() -> None:
    roomy = arch_from_dict({"name": "roomy"})
    workload = Workload(layers=(LAYER,), phases=("fprop",))
    assert phase_steps(roomy, LAYER, "fprop", workload.densities)[1] <= MAX_PASSES
    assert simulator(roomy, workload)["time_s"] > 0
