"""Compressed-operand sizes: how many bits a stream of non-zeros occupies in a given format.

Pure float arithmetic on the arch's ``Compression`` section, no time: it sits with the spec so that both
the dataflow (which sizes batch tiles by the input buffer) and the timing model (DRAM transfers, buffer
passes) read one definition.

Formats (``arch.compression.format``):

* ``zero_run`` (SCNN): every stored value carries an ``index_bits`` run length of the zeros before it;
  a run longer than ``2**index_bits − 1`` needs an explicit zero value as a placeholder. With the
  non-zeros at density ``d`` placed independently, the zeros between two non-zeros are geometric and
  the expected placeholders per non-zero are ``Σ_{j≥1} P(run ≥ j·2**b) = q / (1 − q)``,
  ``q = (1 − d) ** (2**b)`` — e.g. 0.23 extra entries per non-zero at d = 0.1 with 4-bit runs, 5.7 at
  d = 0.01. Clustered (top-k) masks have longer runs *and* denser clusters; the geometric estimate is
  the documented approximation.
* ``bitmap``: values plus one bit per position (positions = non-zeros / d).
* ``coordinate``: values plus ``index_bits`` per value (the coordinate).
* ``dense``: every position stored as a value (positions = non-zeros / d).
"""

from __future__ import annotations

import math

from antsim.spec.arch import Compression


def zero_run_placeholders(density: float, index_bits: int) -> float:
    """Expected explicit-zero placeholders per non-zero in the zero-run format.

    Args:
        density: Fraction of non-zeros in the stream, in (0, 1].
        index_bits: Bits of the run-length index (SCNN: 4, i.e. runs up to 15).

    Returns:
        Placeholders per non-zero (0 for a dense stream or when there is no index).
    """
    if density >= 1.0 or index_bits <= 0:
        return 0.0
    if density <= 0.0:
        return 0.0
    q = (1.0 - density) ** (2**index_bits)
    return q / (1.0 - q)


def entries_per_value(compression: Compression, density: float) -> float:
    """Stored entries per non-zero (1 plus placeholders for ``zero_run``; 1/d for ``dense``)."""
    fmt = compression.format
    if fmt == "zero_run":
        return 1.0 + zero_run_placeholders(density, compression.index_bits)
    if fmt == "dense":
        return 1.0 / max(density, 1e-12)
    return 1.0


def encoded_bits(values: float, density: float, compression: Compression) -> float:
    """Bits to store or move ``values`` non-zeros of a stream at ``density`` in ``compression.format``.

    Args:
        values: Number of non-zero values (may be fractional when averaged).
        density: Fraction of non-zeros of the stream in (0, 1]; 1.0 for a dense stream.
        compression: The arch's compression section (format, value_bits, index_bits).

    Returns:
        Bits (float; callers round where they need whole words).
    """
    if values <= 0:
        return 0.0
    density = min(max(float(density), 1e-12), 1.0)
    vb, ib = compression.value_bits, compression.index_bits
    fmt = compression.format
    if fmt == "zero_run":
        return values * entries_per_value(compression, density) * (vb + ib)
    if fmt == "bitmap":
        return values * vb + values / density
    if fmt == "coordinate":
        return values * (vb + ib)
    return values / density * vb  # dense


def bits_per_value(compression: Compression, density: float) -> float:
    """Average bits per non-zero in the format (for buffer capacity checks)."""
    return encoded_bits(1.0, density, compression)


def bits_to_kb(bits: float) -> float:
    """Bits → KB (1 KB = 1024 bytes)."""
    return bits / 8.0 / 1024.0


def ceil_div(a: float, b: float) -> int:
    """Ceiling of a / b for positive b (exact for ints)."""
    return int(math.ceil(a / b - 1e-9)) if a > 0 else 0
