"""Exceptions the simulator raises. All are :class:`isa.ExecutionError`, so ``vtac`` reports them.

Example:
    >>> str(InstructionError("the SRAM range runs past the end of its buffer", index=3,
    ...                      field="sram_base"))
    'instruction 3 (sram_base): the SRAM range runs past the end of its buffer'
"""

from __future__ import annotations

from typing import Any

from isa import ExecutionError


class InstructionError(ExecutionError):
    """An instruction cannot execute: an index out of range, a bad opcode, memory type or flag.

    ``index`` is its position in the stream and ``field`` the field at fault.
    """


class _RunError(ExecutionError):
    """A run that stopped for a reason no single instruction is at fault for."""

    def __init__(self, message: str, *, cycle: int, report: dict[str, Any]):
        Exception.__init__(self, message)
        self.what = message
        self.index = None
        self.field = None
        self.cycle = cycle
        self.report = report


class DeadlockError(_RunError):
    """No module can make progress and FINISH has not run.

    ``report`` holds each module's blocked instruction and what it waits for, and the count of
    every dependency and command queue; the message prints the same.
    """


class NoFinishError(_RunError):
    """Every instruction was fetched and executed, and none of them was a FINISH on compute."""


class CycleLimitError(_RunError):
    """The run reached the ``max_cycles`` safety limit before FINISH."""
