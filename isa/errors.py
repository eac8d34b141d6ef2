"""Exceptions raised by the ISA layer. Every message names the thing at fault."""

from __future__ import annotations


class IsaError(Exception):
    """Base class of every error the ISA layer raises."""


class ConfigError(IsaError, ValueError):
    """A hardware config is malformed or does not fit the instruction formats."""


class EncodingError(IsaError, ValueError):
    """An instruction or micro-op field does not fit its encoding, or a word does not decode."""


class ProgramError(IsaError, ValueError):
    """A program file is malformed, truncated, or built for another ISA version or config."""


class OutputError(IsaError, OSError):
    """An output file cannot be written: a missing directory, a directory given as the file,
    no permission. The message names the path."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class AsmError(IsaError, ValueError):
    """The assembler text form could not be parsed; the message names the line."""

    def __init__(self, message: str, *, line: int | None = None, source: str | None = None):
        where = ""
        if source is not None and line is not None:
            where = f"{source}:{line}: "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(where + message)
        self.message = message
        self.line = line
        self.source = source


class ExecutionError(IsaError, RuntimeError):
    """An instruction cannot execute: an index out of its buffer, a bad opcode or memory type.

    ``index`` is the instruction's position in the stream; ``field`` the field at fault.
    """

    def __init__(self, message: str, *, index: int | None = None, field: str | None = None):
        prefix = f"instruction {index}" if index is not None else "instruction"
        if field is not None:
            prefix += f" ({field})"
        super().__init__(f"{prefix}: {message}")
        self.what = message
        self.index = index
        self.field = field
