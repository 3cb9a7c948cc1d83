"""The event blocks of the per-PE reference model (``antsim.sim.blocks``), driven directly and checked against
event times worked out by hand: a serialised DRAM channel, the step barrier, the anticipation unit's lookahead;
and, inside the per-PE model, prefetch into staging slots and the halo exchange."""

from __future__ import annotations

import math

import pytest

from antsim.sim import Densities, SimParams, simulate_phase
from antsim.sim.blocks import ChunkBarrier, DramChannel, Proc, RcpAnticipator
from antsim.sim.kernel import Environment, Event

DENSE = Densities(1.0, 1.0, 1.0)


def _transfer_at(env: Environment, dram: DramChannel, start: float, bits: float, write: bool,
                 done: dict[str, float], name: str) -> Proc:
    yield env.timeout(start)
    yield from dram.transfer(bits, write=write)
    done[name] = env.now


def test_dram_transfers_are_serialised_at_bits_per_cycle() -> None:
    env = Environment()
    dram = DramChannel(env, bits_per_cycle=10.0)
    done: dict[str, float] = {}
    for name, start, bits, write in (("a", 0, 100, False), ("b", 0, 60, True), ("c", 30, 50, False),
                                     ("empty", 1, 0, False)):
        env.process(_transfer_at(env, dram, start, bits, write, done, name))
    env.run()
    # a: 0-10; b waits for a: 10-16; c arrives at 30 on a free channel: 30-35; a zero-bit transfer takes no time.
    assert done == {"a": 10.0, "b": 16.0, "c": 35.0, "empty": 1.0}
    assert (dram.read_bits, dram.write_bits, dram.busy_cycles) == (150.0, 60.0, 21.0)


def _arrive_at(env: Environment, barrier: ChunkBarrier, at: float, released: list[float]) -> Proc:
    yield env.timeout(at)
    yield barrier.arrive(0)
    released.append(env.now)


def test_barrier_releases_every_pe_when_the_last_arrives() -> None:
    env = Environment()
    calls: list[int] = []
    barrier = ChunkBarrier(env, n_pes=3, n_steps=1, on_release=calls.append)
    released: list[float] = []
    for at in (5.0, 2.0, 9.0):
        env.process(_arrive_at(env, barrier, at, released))
    env.run()
    assert released == [9.0, 9.0, 9.0] and calls == [0]


def _fire_at(env: Environment, event: Event, at: float) -> Proc:
    yield env.timeout(at)
    event.succeed()


@pytest.mark.parametrize(("lookahead", "expected"), [
    # Unbounded queue: screening runs back to back once the chunks are on chip (all at t = 0).
    (3, [4.0, 10.0, 13.0]),
    # No lookahead: step s starts screening only when its PE started step s (t = 0, 20, 30).
    (0, [4.0, 26.0, 33.0]),
    # One step ahead: step s waits for the PE to start step s - 1 (step 2 waits for t = 20).
    (1, [4.0, 10.0, 23.0]),
])
def test_anticipator_screens_at_most_lookahead_steps_ahead(lookahead: int, expected: list[float]) -> None:
    env = Environment()
    ready = [env.event() for _ in range(3)]
    for event in ready:
        event.succeed()
    started = [env.event() for _ in range(3)]
    for event, at in zip(started, (0.0, 20.0, 30.0), strict=True):
        env.process(_fire_at(env, event, at))
    unit = RcpAnticipator(env, [4.0, 6.0, 3.0], ready, started, lookahead)
    screened_at: list[float] = []
    for event in unit.screened:
        event.callbacks.append(lambda _e: screened_at.append(env.now))
    env.run()
    assert screened_at == expected and unit.busy_cycles == 13.0


def test_prefetch_hides_transfers_shorter_than_compute_and_one_slot_does_not(make_work, make_arch) -> None:
    # per chunk: 500 values x 16 b / 204.8 b/cycle = 39 cycles of transfer vs 100 of compute
    arch = make_arch(pe_array={"rows": 1, "cols": 1}, compression={"format": "dense", "index_bits": 0},
                     dram={"bandwidth_gbps": 25.6})
    work = make_work(10, 1, 100, streamed=500)
    transfer = 500 * 16 / 204.8
    assert simulate_phase(arch, work, DENSE, per_pe=True).end_cycle == pytest.approx(transfer + 10 * 100)
    single = simulate_phase(arch, work, DENSE, SimParams(staging_chunks=1), per_pe=True)
    assert single.end_cycle == pytest.approx(10 * (transfer + 100))


def test_halo_exchange_is_hidden_by_a_second_accumulator_half(make_work, make_arch) -> None:
    halo_cycles = math.ceil(30 / SimParams().halo_values_per_cycle)
    work = make_work(6, 4, 100, halo=30)
    double = make_arch(pe_array={"rows": 2, "cols": 2})
    assert simulate_phase(double, work, DENSE, per_pe=True).end_cycle == pytest.approx(6 * 100 + halo_cycles)
    single = make_arch(pe_array={"rows": 2, "cols": 2}, accumulators={"double_buffered": False})
    timing = simulate_phase(single, work, DENSE, per_pe=True)
    assert timing.end_cycle == pytest.approx(6 * (100 + halo_cycles))
    assert timing.stalls["halo"] == pytest.approx(6 * halo_cycles)
