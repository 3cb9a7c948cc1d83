"""The one place that checks for the optional PyTorch dependency."""

from __future__ import annotations

from types import ModuleType

from antsim.errors import MissingExtraError


def require_torch(extra: str = "capture") -> ModuleType:
    """Import and return ``torch``.

    Args:
        extra: The antsim extra that brings PyTorch in (``capture`` or ``measure``), named in the message.

    Raises:
        MissingExtraError: PyTorch is not installed (one line telling how to install it).
    """
    try:
        import torch
    except ImportError:
        raise MissingExtraError(
            f"PyTorch is not installed; install it with: pip install 'antsim[{extra}]' "
            "(or pip install torch==2.13.0)") from None
    return torch
