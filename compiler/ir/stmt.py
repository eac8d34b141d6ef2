"""Statement nodes of the loop IR and the function that holds them.

The lowered IR keeps schedule decisions visible: loop kinds (parallel, vectorized, unrolled,
bound to a thread axis), pragmas around the loop they were attached to, allocations with their
memory scope, and tensorized regions with the intrinsic they must become.

Example:
    >>> from compiler.ir.expr import IntImm, Var
    >>> i = Var("i")
    >>> loop = For(i, IntImm(0), IntImm(4), ForKind.SERIAL, SeqStmt(()))
    >>> loop.kind.value
    'serial'
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from compiler.ir.buffer import Buffer
from compiler.ir.expr import Expr, Var
from compiler.ir.node import Node, node
from compiler.ir.pragma import PragmaKey, pragma_key


class ForKind(enum.Enum):
    """How a loop runs. ``THREAD_BINDING`` loops carry the :class:`ThreadAxis` they bind."""

    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"
    THREAD_BINDING = "thread_binding"


@dataclass(frozen=True)
class ThreadAxis:
    """A thread dimension a loop is bound to.

    ``cthread``/``vthread`` are virtual threads (interleaved in one instruction stream; on the
    accelerator each gets private on-chip buffers); ``blockIdx.*``/``threadIdx.*`` are GPU axes.

    Example:
        >>> ThreadAxis("cthread").is_virtual
        True
    """

    tag: str

    VIRTUAL_TAGS = ("cthread", "vthread")
    GPU_TAGS = (
        "blockIdx.x",
        "blockIdx.y",
        "blockIdx.z",
        "threadIdx.x",
        "threadIdx.y",
        "threadIdx.z",
    )

    def __post_init__(self) -> None:
        from compiler.errors import ScheduleError

        if self.tag not in self.VIRTUAL_TAGS + self.GPU_TAGS:
            raise ScheduleError(
                f"unknown thread axis {self.tag!r}; use one of "
                + ", ".join(self.VIRTUAL_TAGS + self.GPU_TAGS)
            )

    @property
    def is_virtual(self) -> bool:
        return self.tag in self.VIRTUAL_TAGS

    @property
    def is_gpu(self) -> bool:
        return self.tag in self.GPU_TAGS

    def __str__(self) -> str:
        return self.tag


class Stmt(Node):
    """Base of statements."""


@node
class For(Stmt):
    """``for var in [min, min + extent)``. ``annotations`` are (key, value) pairs."""

    var: Var
    min: Expr
    extent: Expr
    kind: ForKind
    body: Stmt
    thread: ThreadAxis | None = None
    annotations: tuple[tuple[str, Any], ...] = ()


@node
class SeqStmt(Stmt):
    """Statements executed in order; ``SeqStmt(())`` is the no-op."""

    stmts: tuple[Stmt, ...]


@node
class BufferStore(Stmt):
    """``buffer[indices] = value``; with a vector ``predicate`` masked-off lanes are not written."""

    buffer: Buffer
    value: Expr
    indices: tuple[Expr, ...]
    predicate: Expr | None = None


@node
class Allocate(Stmt):
    """``buffer`` exists (uninitialised) while ``body`` runs; its scope says where it lives."""

    buffer: Buffer
    body: Stmt


@node
class If(Stmt):
    cond: Expr
    then_body: Stmt
    else_body: Stmt | None = None


@node
class Evaluate(Stmt):
    """Evaluate an expression for its side effect (an intrinsic call)."""

    value: Expr


@node
class LetStmt(Stmt):
    var: Var
    value: Expr
    body: Stmt


@node
class Pragma(Stmt):
    """A pragma attached by ``Stage.pragma(axis, key, value)``; it wraps that axis' loop.

    ``key`` is a typed :class:`~compiler.ir.pragma.PragmaKey` (a name given here is converted
    to its interned key); ``stage`` names the schedule stage whose loop it wraps, so that
    errors name what the user wrote even after passes merge buffers. Targets act on pragmas
    they know (``dma_copy`` marks a copy loop nest for DMA injection) and the CPU target
    rejects pragmas it does not know instead of ignoring them.
    """

    key: PragmaKey
    value: Any
    body: Stmt
    stage: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.key, PragmaKey):
            object.__setattr__(self, "key", pragma_key(self.key))


@node
class Tensorize(Stmt):
    """A loop nest that must be replaced by ``intrin``; ``body`` is the nest as scheduled.

    ``stage`` names the tensorized stage and ``loop_vars`` are the loops that the intrinsic
    covers (outermost first). A target pass matches ``body`` against the intrinsic's
    declaration and replaces it.
    """

    intrin: Any
    stage: str
    loop_vars: tuple[Var, ...]
    body: Stmt


NOP = SeqStmt(())


def seq(*stmts: Stmt) -> Stmt:
    """Sequence of statements, flattening nested sequences and dropping no-ops.

    Example:
        >>> seq(NOP, NOP) == NOP
        True
    """
    out: list[Stmt] = []
    for s in stmts:
        if isinstance(s, SeqStmt):
            out.extend(s.stmts)
        else:
            out.append(s)
    if len(out) == 1:
        return out[0]
    return SeqStmt(tuple(out))


def is_nop(stmt: Stmt) -> bool:
    return isinstance(stmt, SeqStmt) and not stmt.stmts


@dataclass(frozen=True)
class ArgInfo:
    """Logical shape and dtype of a function argument, as the caller sees it."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    is_output: bool


@node
class PrimFunc(Node):
    """A lowered function: ``params`` are buffers passed by the caller.

    ``args`` keeps the caller-visible shapes after buffers are flattened; ``attrs`` holds
    (key, value) pairs such as the target name.
    """

    name: str
    params: tuple[Buffer, ...]
    body: Stmt
    args: tuple[ArgInfo, ...] = field(default=())
    attrs: tuple[tuple[str, Any], ...] = ()

    def with_body(self, body: Stmt) -> PrimFunc:
        return PrimFunc(self.name, self.params, body, self.args, self.attrs)

    def attr(self, key: str, default: Any = None) -> Any:
        return dict(self.attrs).get(key, default)
