"""A minimal discrete-event kernel with simpy's scheduling rules, for the few primitives the blocks use.

simpy (https://simpy.readthedocs.io, 4.1) spends most of a phase's simulation in its generic machinery
(bound classes, resource queues with put and get callbacks, failure handling). The blocks use only
events, timeouts, processes, a capacity-1 FIFO lock (the DRAM port, the drain links) and a counter of
free slots (the staging buffer), so this module implements exactly those, keeping every rule that
decides *when* and *in which order* something happens:

* the queue orders entries by (time, priority, insertion count); a process start is URGENT (0),
  everything else NORMAL (1);
* ``succeed`` schedules an event at the current time; a process waiting on it resumes when it is
  processed; an event already processed is not waited on;
* a lock request is granted at once when the lock is free and no earlier request waits (the grant is an
  event, so the requester resumes one queue hop later); a release frees the lock at once and schedules
  a release event whose processing grants the oldest waiter (simpy's ``Resource``: ``Release`` is a
  ``Get`` whose callback triggers the puts);
* a slot request is granted at once when a slot is free; a returned slot is counted at once and a
  waiting request is granted when the return event is processed (simpy's ``Container``).

Events nobody can observe are not scheduled: the end of a process (nobody waits on one here), a
release with no waiter and a slot return with no waiting request. Leaving them out changes no time
and no order — the insertion counter only breaks ties, and the order of the remaining entries is
unchanged; and such an event's processing could only grant a request that would already have been
granted when it was made. ``tests/sim/test_kernel.py`` runs the blocks on this kernel and on simpy and
requires the same results bit for bit.

``SimpyEnvironment`` is simpy itself with the two constructors the blocks ask for:
``simulate_phase(..., environment=SimpyEnvironment)`` runs the same blocks on simpy (about twice as slow), for a
block that needs more of simpy than these primitives, and as the reference the kernel is held to.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from heapq import heappop, heappush
from itertools import count
from typing import Any

import simpy

URGENT = 0
NORMAL = 1


class Event:
    """Something that happens at one instant; processes wait on it.

    ``callbacks`` is ``None`` once the event has been processed (simpy's convention)."""

    __slots__ = ("env", "callbacks", "triggered")

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.callbacks: list[Callable[[Event], None]] | None = []
        self.triggered = False

    @property
    def processed(self) -> bool:
        return self.callbacks is None

    def succeed(self) -> Event:
        """Mark the event as happened and schedule its processing now."""
        if self.triggered:
            raise RuntimeError("event has already been triggered")
        self.triggered = True
        env = self.env
        heappush(env.queue, (env.now, NORMAL, next(env.eid), self))
        return self


class Process:
    """Runs a generator that yields events, resuming it when each has been processed."""

    __slots__ = ("send", "wake")

    def __init__(self, env: Environment, generator: Generator[Event, Any, None]) -> None:
        self.send = generator.send
        self.wake = self.resume  # one bound method, appended to every event the process waits on
        start = Event(env)
        start.triggered = True
        start.callbacks.append(self.wake)  # type: ignore[union-attr]
        heappush(env.queue, (env.now, URGENT, next(env.eid), start))

    def resume(self, _event: Event) -> None:
        send = self.send
        while True:
            try:
                event = send(None)
            except StopIteration:
                return
            callbacks = event.callbacks
            if callbacks is not None:
                callbacks.append(self.wake)
                return


class Request(Event):
    """A request for a ``FifoLock``; as a context manager it releases the lock on exit."""

    __slots__ = ("lock",)

    def __init__(self, lock: FifoLock) -> None:
        self.env = lock.env
        self.callbacks = []
        self.triggered = False
        self.lock = lock

    def __enter__(self) -> Request:
        return self

    def __exit__(self, *exc: object) -> None:
        self.lock.release(self)


def _grant_when_processed(env: Environment, grant: Callable[[], None]) -> None:
    """Schedule an event now whose processing calls ``grant``: the one queue hop simpy's ``Release`` and
    ``ContainerPut`` take before a waiting request is granted."""
    done = Event(env)
    done.callbacks.append(lambda _event: grant())  # type: ignore[union-attr]
    done.succeed()


class FifoLock:
    """A capacity-1 resource granted in request order (simpy ``Resource(env, capacity=1)``)."""

    __slots__ = ("env", "holder", "waiting")

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.holder: Request | None = None
        self.waiting: list[Request] = []

    def request(self) -> Request:
        request = Request(self)
        self.waiting.append(request)
        self._grant()
        return request

    def release(self, request: Request) -> None:
        if self.holder is request:
            self.holder = None
        elif request in self.waiting:  # left before it was granted (simpy cancels the request)
            self.waiting.remove(request)
            return
        if self.waiting:
            _grant_when_processed(self.env, self._grant)

    def _grant(self) -> None:
        if self.holder is None and self.waiting:
            self.holder = self.waiting.pop(0)
            self.holder.succeed()


class Slots:
    """A count of free slots taken one at a time (simpy ``Container`` with ``get(1)`` / ``put(1)``)."""

    __slots__ = ("env", "capacity", "level", "waiting")

    def __init__(self, env: Environment, capacity: int) -> None:
        self.env = env
        self.capacity = capacity
        self.level = capacity
        self.waiting: list[Event] = []

    def get(self, amount: int = 1) -> Event:
        """Take one slot (the event fires when it is granted)."""
        if amount != 1:
            raise ValueError("Slots.get takes one slot at a time")
        request = Event(self.env)
        self.waiting.append(request)
        self._grant()
        return request

    def put(self, amount: int = 1) -> None:
        """Return one slot; a waiting request gets it when the return is processed."""
        if amount != 1 or self.level >= self.capacity:
            raise ValueError("Slots.put returns one taken slot at a time")
        self.level += 1
        if self.waiting:
            _grant_when_processed(self.env, self._grant)

    def _grant(self) -> None:
        while self.waiting and self.level >= 1:
            self.level -= 1
            self.waiting.pop(0).succeed()


class Environment:
    """Simulated time and the event queue."""

    __slots__ = ("now", "queue", "eid")

    def __init__(self) -> None:
        self.now: float = 0
        self.queue: list[tuple[float, int, int, Event]] = []
        self.eid = count()

    def event(self) -> Event:
        return Event(self)

    def timeout(self, delay: float) -> Event:
        """An event ``delay`` cycles from now."""
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        event = Event(self)
        event.triggered = True
        heappush(self.queue, (self.now + delay, NORMAL, next(self.eid), event))
        return event

    def process(self, generator: Generator[Event, Any, None]) -> Process:
        return Process(self, generator)

    def lock(self) -> FifoLock:
        return FifoLock(self)

    def slots(self, capacity: int) -> Slots:
        return Slots(self, capacity)

    def run(self) -> None:
        """Process events until none is left."""
        queue = self.queue
        while queue:
            self.now, _, _, event = heappop(queue)
            callbacks, event.callbacks = event.callbacks, None
            for callback in callbacks:  # type: ignore[union-attr]
                callback(event)


class SimpyEnvironment(simpy.Environment):
    """simpy with the two resource constructors the blocks ask their environment for (``lock``, ``slots``)."""

    def lock(self) -> simpy.Resource:
        return simpy.Resource(self, capacity=1)

    def slots(self, capacity: int) -> simpy.Container:
        return simpy.Container(self, capacity=capacity, init=capacity)
