"""Accumulator banks: which bank a valid product's accumulator entry lives in.

Bank hash (``accumulators.bank_hash``): a valid product goes to bank ``bank_of(region_index)``, where
``region_index`` is its linear index in the PE's accumulator region — (output channel − g·Kc, output row
− window row, output column − window column) over the PE's reachable output window (fprop/dgrad) or
(output channel − g·Kc, stationary channel, r, s) (wgrad) — ``mod``: the index mod banks; ``xor``: the
XOR of the index's log2(banks)-bit slices; ``sliced``: one group of banks per output channel mod F.
A pair takes ``max(1, largest bank load)`` cycles (``antsim.dataflow.exact``).
"""

from __future__ import annotations

from dataclasses import dataclass

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
    = F for the ``sliced`` hash)."""

    banks: int
    hash: str = "mod"
    slices: int = 1

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
    return (np.asarray(k_local) % slices) * per_slice + np.asarray(entry) % per_slice
