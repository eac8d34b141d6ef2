"""Errors of the RTL tools. They derive from :class:`isa.errors.IsaError`, so ``vtac`` reports
them as a message and a non-zero exit status."""

from __future__ import annotations

from isa.errors import IsaError


class RtlError(IsaError, RuntimeError):
    """The RTL could not be built or run (missing simulator, failed build, simulator crash)."""


class RtlHang(RtlError):
    """The RTL did not reach FINISH within its cycle limit; the message names where it stuck."""
