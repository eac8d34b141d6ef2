"""Errors of the accelerator target. Each names what is at fault."""

from __future__ import annotations

from compiler.errors import CompilerError


class VTATargetError(CompilerError):
    """A computation or schedule the accelerator target cannot compile; says why."""


class StreamCheckError(VTATargetError):
    """The static checker rejected an emitted stream at instruction ``index``."""

    def __init__(self, message: str, *, index: int | None = None):
        super().__init__(f"instruction {index}: {message}" if index is not None else message)
        self.index = index


class LinkError(VTATargetError):
    """The network's DRAM image cannot be laid out or a program cannot be relocated into it;
    names the group, symbol or instruction at fault."""
