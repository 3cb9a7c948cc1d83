"""Stage caches return what a cold run computes, whatever parameter changes between design points."""

from __future__ import annotations

import numpy as np
import pytest

from antsim.dataflow import map_phase
from antsim.dataflow.reuse import FOOTPRINTS, StageCache, array_digest, clear_all, disabled, kept_geometry
from antsim.dataflow.work import PER_CHUNK_FIELDS, PER_PE_FIELDS
from antsim.simulate import simulate_network
from antsim.sparsity.generators import make_tensors
from antsim.spec.arch import arch_from_dict, load_arch
from antsim.workloads.layers import PHASES, Layer

LAYER = Layer("l", N=3, C=16, K=24, H=12, W=12, R=3, S=3, stride=2, pad=1)
BASE = load_arch("arch_configs/ant.yaml").to_dict()

# One change per parameter the footprint key holds, and some it must not depend on.
CHANGES = [
    ("pe_array", "rows", 2), ("pe_array", "cols", 8), ("mapping", "output_channel_group", 4),
    ("mapping", "stride_phases", False), ("mapping", "batch_tile", 2), ("pe_array", "F", 2), ("pe_array", "I", 8),
    ("accumulators", "banks", 16), ("anticipation", "policy", "none"), ("buffers", "input_kb", 4),
]


def _arch(section: str | None = None, key: str | None = None, value=None):
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in BASE.items()}
    if section is not None:
        data[section][key] = value
    return arch_from_dict(data)


def _assert_same(a, b):
    for name in (*PER_PE_FIELDS, *PER_CHUNK_FIELDS, "stationary_values", "stationary_resident"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.products == b.products and a.tiling == b.tiling and a.notes == b.notes


@pytest.mark.parametrize("section,key,value", CHANGES)
@pytest.mark.parametrize("phase", PHASES)
def test_a_warm_cache_gives_the_cold_result_after_any_change(section, key, value, phase):
    tensors = make_tensors(LAYER, 0.3, 0.3, 0.3, seed=2)
    clear_all()
    map_phase(_arch(), LAYER, phase, tensors)  # warm the caches with the base design
    changed = _arch(section, key, value)
    warm = map_phase(changed, LAYER, phase, tensors)
    with disabled():
        cold = map_phase(changed, LAYER, phase, tensors)
    _assert_same(warm, cold)


def test_other_operands_miss_and_the_same_ones_hit():
    arch = _arch()
    first = make_tensors(LAYER, 0.3, 0.3, 0.3, seed=2)
    other = make_tensors(LAYER, 0.3, 0.3, 0.3, seed=3)  # same densities, other masks
    clear_all()
    map_phase(arch, LAYER, "fprop", first)
    map_phase(arch, LAYER, "fprop", first)
    assert (FOOTPRINTS.hits, FOOTPRINTS.misses) == (1, 1)
    warm = map_phase(arch, LAYER, "fprop", other)
    assert FOOTPRINTS.misses == 2
    with disabled():
        _assert_same(warm, map_phase(arch, LAYER, "fprop", other))


def test_every_record_of_a_network_is_identical_with_and_without_caches():
    layers = [LAYER, Layer("m", N=3, C=24, K=16, H=6, W=6, R=1, S=1)]
    clear_all()
    archs = [load_arch(f"arch_configs/{c}.yaml") for c in ("scnn", "ant", "ant_oracle", "dense")]
    warm = [simulate_network(a, layers, densities={"w": 0.3, "a": 0.4, "g": 0.5}, seed=1) for a in archs]
    assert FOOTPRINTS.hits > 0
    with disabled():
        cold = [simulate_network(a, layers, densities={"w": 0.3, "a": 0.4, "g": 0.5}, seed=1) for a in archs]
    assert [r.to_dict() for r in warm] == [r.to_dict() for r in cold]


def test_cached_arrays_are_read_only_and_the_cache_is_bounded():
    cache = StageCache("t", max_bytes=8 * 100)
    first = cache.get("a", lambda: np.zeros(60))
    with pytest.raises(ValueError):
        first[0] = 1.0
    cache.get("b", lambda: np.zeros(60))  # 960 bytes together: "a" is evicted
    assert list(cache.entries) == ["b"] and cache.held_bytes == 480
    assert array_digest(np.arange(4)) != array_digest(np.arange(4).reshape(2, 2))
    assert array_digest(np.ones(3, bool)) != array_digest(np.ones(3, np.int64))


def test_a_kept_geometry_is_built_once_per_key_bypassed_when_disabled_and_emptied_by_clear_all():
    builds: list[tuple[int, int]] = []

    @kept_geometry(4)
    def build(a: int, b: int) -> tuple[int, int]:
        builds.append((a, b))
        return a, b

    assert build(1, 2) == build(1, 2) == (1, 2) and builds == [(1, 2)]
    build(2, 1)
    assert builds == [(1, 2), (2, 1)]  # another key builds
    with disabled():
        build(1, 2)
    assert builds[-1] == (1, 2) and len(builds) == 3  # disabled: every call builds
    clear_all()
    build(2, 1)
    assert len(builds) == 4  # emptied: the kept result is gone


def test_a_lazy_key_is_built_only_while_the_cache_is_on():
    cache = StageCache("t", max_bytes=1 << 20)
    keys_built: list[str] = []

    def key_of() -> str:
        keys_built.append("k")
        return "k"

    with disabled():
        assert cache.get_keyed(key_of, lambda: 1) == 1
    assert keys_built == [] and not cache.entries
    assert cache.get_keyed(key_of, lambda: 2) == 2 and cache.get_keyed(key_of, lambda: 3) == 2
    assert keys_built == ["k", "k"] and (cache.hits, cache.misses) == (1, 1)
