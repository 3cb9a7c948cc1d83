"""Accumulator banks: which bank a valid product's accumulator entry lives in.

Bank hash (``accumulators.bank_hash``): a valid product goes to bank ``bank_of(region_index)``, where
``region_index`` is its linear index in the PE's accumulator region — (output channel − g·Kc, output row
− window row, output column − window column) over the PE's reachable output window (fprop/dgrad) or
(output channel − g·Kc, stationary channel, r, s) (wgrad) — ``mod``: the index mod banks; ``xor``: the
XOR of the index's log2(banks)-bit slices; ``sliced``: one group of banks per output channel mod F.

Bank timing (``accumulators.queue_depth`` = Q; docs/accumulator_banks.md): a bank writes one product a
cycle. With Q = 0 (SCNN's and DNNsim's rule) a pair takes ``max(1, largest bank load)`` cycles. With a
FIFO of Q products in front of every bank the array issues the next pair as soon as every bank's backlog
is at most Q (``BankQueues``): pair t with loads l_b, backlogs B_b takes d_t = max(1, max_b(B_b + l_b) − Q)
cycles and leaves B_b ← max(0, B_b + l_b − d_t); a slot's sequence ends by draining its largest backlog.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np


def bank_of(region: np.ndarray, banks: int, bank_hash: str) -> np.ndarray:
    """Accumulator bank of each region index: ``mod`` (index mod banks) or ``xor`` (XOR of the index's
    log2(banks)-bit slices; banks a power of two). Within an aligned run of ``banks`` consecutive
    indices both are bijections; ``xor`` also spreads indices that differ by a multiple of ``banks``."""
    region = np.asarray(region, dtype=np.int64)
    if bank_hash == "mod" or banks == 1:
        return region % banks
    bits = banks.bit_length() - 1
    bank = np.zeros_like(region)
    rest = region.copy()
    while rest.any():
        bank ^= rest & (banks - 1)
        rest >>= bits
    return bank


@dataclass(frozen=True)
class BankMap:
    """How a PE's accumulator entries map to its banks (``accumulators.banks`` / ``bank_hash``; ``slices``
    = F for the ``sliced`` hash) and the products each bank's FIFO holds (``accumulators.queue_depth``)."""

    banks: int
    hash: str = "mod"
    slices: int = 1
    queue_depth: int = 0

    def bank(self, k_local: np.ndarray, entry: np.ndarray, per_channel: int) -> np.ndarray:
        """Bank of the entry ``entry`` of local output channel ``k_local`` (``per_channel`` entries each)."""
        if self.hash == "sliced":
            return sliced_bank(k_local, entry, self.banks, self.slices)
        return bank_of(np.asarray(k_local) * per_channel + entry, self.banks, self.hash)


def sliced_bank(k_local: np.ndarray, entry: np.ndarray, banks: int, slices: int) -> np.ndarray:
    """``sliced`` hash: the banks form ``slices`` (= F) groups, one per output channel mod F, and an
    entry's position within its channel picks the bank of its group (mod banks/F). The F output
    channels of a streamed vector then never share a bank, and neither do the I outputs of a
    stationary vector that lie within banks/F consecutive entries of one channel."""
    per_slice = banks // slices
    k_local, entry = np.asarray(k_local), np.asarray(entry)
    if not (slices & (slices - 1) or per_slice & (per_slice - 1)):  # powers of two: a mask is the floor mod
        return (k_local & (slices - 1)) * per_slice + (entry & (per_slice - 1))
    return (k_local % slices) * per_slice + entry % per_slice


# Largest (group × bank) table ``max_load_extra`` counts densely (one bincount): 2^22 int64 = 32 MB. Past it
# (the oracle's groups of a whole large phase) the products' keys are sorted instead; both give the same
# maxima. [choice] Memory, not results.
_DENSE_LOADS = 1 << 22


def bank_loads(group: np.ndarray, bank: np.ndarray, banks: int, n_groups: int) -> np.ndarray:
    """Products per (group, bank), (n_groups, banks) int32: ``group`` and ``bank`` per product."""
    flat = np.asarray(group, dtype=np.int64) * banks + bank
    return np.bincount(flat, minlength=n_groups * banks).astype(np.int32).reshape(n_groups, banks)


def max_load_extra(group: np.ndarray, bank: np.ndarray, banks: int, n_groups: int) -> np.ndarray:
    """Per group id: max(1, largest number of its products to one bank) − 1 (0 for empty groups): the
    stall cycles of an unbuffered bank (``queue_depth`` 0), int64."""
    if len(group) == 0:
        return np.zeros(n_groups, np.int64)
    if n_groups * banks <= _DENSE_LOADS:  # keys < 2^22: the index dtype as given (int32 from the sample)
        flat = np.asarray(group) * banks + bank
        worst = np.bincount(flat, minlength=n_groups * banks).reshape(n_groups, banks).max(axis=1)
        return np.maximum(worst - 1, 0).astype(np.int64, copy=False)
    keys = np.sort(np.asarray(group, dtype=np.int64) * banks + bank)  # sparse: count the distinct keys
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    counts = np.diff(np.append(starts, len(keys)))
    worst = np.zeros(n_groups, np.int64)
    np.maximum.at(worst, keys[starts] // banks, counts)
    return np.maximum(worst - 1, 0)


@cache
def _comparators(rows: int) -> tuple[tuple[int, int], ...]:
    """Batcher's odd-even merge sorting network on ``rows`` inputs (Knuth, TAOCP vol. 3, §5.3.4): the
    network of the next power of two, less its comparators that touch an input ≥ ``rows`` — inputs
    padded with +∞ at the top never move, so those comparators are no-ops."""
    size = 1 << max(0, rows - 1).bit_length()
    pairs: list[tuple[int, int]] = []

    def merge(lo: int, n: int, r: int) -> None:
        step = 2 * r
        if step < n:
            merge(lo, n, step)
            merge(lo + r, n, step)
            pairs.extend((i, i + r) for i in range(lo + r, lo + n - r, step))
        else:
            pairs.append((lo, lo + r))

    def sort(lo: int, n: int) -> None:
        if n > 1:
            sort(lo, n // 2)
            sort(lo + n // 2, n // 2)
            merge(lo, n, 1)

    sort(0, size)
    return tuple((i, j) for i, j in pairs if j < rows)


# Columns up to which ``column_max_load_extra`` counts loads with one ``bincount`` rather than a sorting
# network, whose comparators cost a fixed numpy call each (63 for 16 rows) whatever the column count.
# [choice] Speed only, measured on random 4-, 8- and 16-row grids: the bincount is 2–7× faster at 100–1,000
# columns and on par at 2,000, 2× slower from 8,192; both give the same maxima.
_COUNTED_COLUMNS = 1 << 11


def _counted_max_load_extra(bank: np.ndarray, valid: np.ndarray, banks: int) -> np.ndarray:
    """``column_max_load_extra`` by one ``bincount`` of bank-major (bank, column) keys, invalid entries on a
    bin of their own (arithmetic rather than a boolean mask, which runs ~10× slower), then a maximum over
    banks."""
    n = bank.shape[1]
    key = bank.astype(np.int32) * np.int32(n)
    key += np.arange(1, n + 1, dtype=np.int32)
    key *= valid
    loads = np.bincount(key.ravel(), minlength=banks * n + 1)[1:].reshape(banks, n)
    return np.maximum(loads.max(axis=0) - 1, 0).astype(np.int64, copy=False)


def column_max_load_extra(bank: np.ndarray, valid: np.ndarray, banks: int) -> np.ndarray:
    """Per column of ``bank`` (rows, n): max(1, largest number of its ``valid`` entries in one bank) − 1,
    int64 — ``max_load_extra`` for groups laid out as columns of a small fixed height (a sampled pair's
    F×I product slots). Up to ``_COUNTED_COLUMNS`` columns one ``bincount`` counts them; otherwise each
    column is sorted by a sorting network on narrow ints (one numpy call per comparator on an n-long row,
    with invalid entries as −1), then its longest run of one bank is read."""
    rows, n = bank.shape
    if rows == 0 or n == 0:
        return np.zeros(n, np.int64)
    if n <= _COUNTED_COLUMNS and banks * n <= _DENSE_LOADS:
        return _counted_max_load_extra(bank, valid, banks)
    narrow = np.int8 if banks <= np.iinfo(np.int8).max else np.int16 if banks <= np.iinfo(np.int16).max else np.int32
    key: np.ndarray = bank.astype(narrow)
    np.bitwise_or(key, np.negative((~valid).view(np.int8), dtype=narrow), out=key)  # −1 (all bits): invalid
    x = list(key)
    for i, j in _comparators(rows):
        low = np.minimum(x[i], x[j])
        np.maximum(x[i], x[j], out=x[j])
        x[i] = low
    # Sorted, the invalid entries (−1) lead; a run's length counts from its first valid entry.
    run = (x[0] >= 0).astype(narrow)
    best = run.copy()
    for j in range(1, rows):
        run *= x[j] == x[j - 1]
        run += x[j] >= 0
        np.maximum(best, run, out=best)
    return np.maximum(best.astype(np.int64) - 1, 0)


# Items of one slot in one ``feed`` above which its sequence is run by the stall-to-stall scan rather
# than in the position-parallel loop (whose per-position numpy overhead dominates for long sequences of
# few slots, e.g. wgrad's). [choice] Speed only: both give the same result (tests/dataflow/test_banks_queue.py).
_LONG_SEQUENCE = 256


class BankQueues:
    """Per-slot bank backlogs of FIFOs of ``depth`` products, fed pair (or packed group) sequences in order.

    ``feed`` runs the recurrence of the module docstring; it can be fed a slot's sequence in several calls
    (the exact path's pair batches): the backlogs carry over. Short sequences run one position at a time
    for every slot at once (numpy over slots and banks); a long one runs from stall to stall
    (``_scan``). ``stalls`` holds each slot's Σ(d_t − 1); ``drain()`` the cycles its last backlog takes.
    """

    def __init__(self, n_slots: int, banks: int, depth: int, long_sequence: int = _LONG_SEQUENCE) -> None:
        self.depth, self.long_sequence = depth, long_sequence
        self.backlog = np.zeros((n_slots, banks), np.int64)
        self.stalls = np.zeros(n_slots, np.int64)

    def feed(self, slot: np.ndarray, loads: np.ndarray) -> None:
        """Advance by the items (pairs or groups) with slots ``slot`` and bank loads ``loads`` (n, banks),
        given in sequence order within each slot (slots may interleave)."""
        slot = np.asarray(slot, dtype=np.int64)
        if len(slot) == 0:
            return
        order = np.argsort(slot, kind="stable")
        sorted_slot = slot[order]
        first = np.searchsorted(sorted_slot, sorted_slot, side="left")
        position = np.arange(len(slot)) - first
        length = np.searchsorted(sorted_slot, sorted_slot, side="right") - first
        long = length > self.long_sequence
        for s in np.unique(sorted_slot[long]):
            lo, hi = np.searchsorted(sorted_slot, [s, s + 1])
            self._scan(int(s), np.asarray(loads[order[lo:hi]], dtype=np.int64))
        short, position = order[~long], position[~long]
        by_step = short[np.argsort(position, kind="stable")]  # position-major: one item per slot a step
        start = 0
        for end in np.cumsum(np.bincount(position)) if len(position) else ():
            item = by_step[start:end]
            start = end
            slots = slot[item]
            pending = self.backlog[slots] + loads[item]
            cycles = np.maximum(pending.max(axis=1) - self.depth, 1)
            self.backlog[slots] = np.maximum(pending - cycles[:, None], 0)
            self.stalls[slots] += cycles - 1

    def _scan(self, slot: int, loads: np.ndarray) -> None:
        """One slot's sequence from stall to stall. While no bank's pending products exceed depth + 1 every
        item takes one cycle and each bank is a Lindley recursion B ← max(0, B + l − 1), whose run over a
        window is B_0 + S_t − min(0, B_0 + min_{s≤t} S_s) for S the running sum of l − 1 (a cumsum and a
        running minimum, over a window that doubles while no stall comes); at the first item that would
        overflow, the recurrence's own step is taken."""
        backlog, stalls, at, window = self.backlog[slot].copy(), 0, 0, 64
        while at < len(loads):
            chunk = loads[at:at + window]
            rise = np.cumsum(chunk - 1, axis=0)
            low = np.minimum.accumulate(rise + backlog, axis=0)  # B_0 + min_{s≤t} S_s
            after = backlog + rise - np.minimum(low, 0)  # backlog after each item, one cycle each
            pending = np.vstack([backlog, after[:-1]]) + chunk
            over = np.flatnonzero(pending.max(axis=1) > self.depth + 1)
            if len(over) == 0:
                backlog, at, window = after[-1], at + len(chunk), min(2 * window, 4096)
                continue
            step = int(over[0])
            cycles = int(pending[step].max()) - self.depth
            backlog = np.maximum(pending[step] - cycles, 0)
            stalls += cycles - 1
            at, window = at + step + 1, max(8, 2 * step)
        self.backlog[slot] = backlog
        self.stalls[slot] += stalls

    def drain(self) -> np.ndarray:
        """Per slot, the cycles its banks still need after its last item: its largest backlog."""
        return self.backlog.max(axis=1)
