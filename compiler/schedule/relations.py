"""Records that a schedule keeps per stage: axis relations, loop attributes, attach points.

Example:
    >>> from compiler import te
    >>> from compiler.schedule.relations import IterAttr
    >>> IterAttr().kind.value
    'serial'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from compiler.ir.pragma import PragmaKey
from compiler.ir.stmt import ForKind, ThreadAxis
from compiler.te.tensor import IterVar

if TYPE_CHECKING:
    from compiler.schedule.intrin import TensorIntrin
    from compiler.schedule.stage import Stage


@dataclass(frozen=True, eq=False)
class Split:
    """``parent = outer * factor + inner`` (``nparts`` fixes the outer extent instead)."""

    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int | None
    nparts: int | None


@dataclass(frozen=True, eq=False)
class Fuse:
    """``fused = outer * extent(inner) + inner``."""

    outer: IterVar
    inner: IterVar
    fused: IterVar


Relation = Split | Fuse


@dataclass
class IterAttr:
    """How the loop of one leaf axis runs, and what is attached to it."""

    kind: ForKind = ForKind.SERIAL
    thread: ThreadAxis | None = None
    pragmas: list[tuple[PragmaKey, Any]] = field(default_factory=list)
    tensorize: TensorIntrin | None = None


@dataclass(frozen=True)
class AttachRoot:
    """The stage gets its own loop nest at the top level of the function."""


@dataclass(frozen=True)
class AttachInline:
    """The stage is substituted into its consumers."""


@dataclass(frozen=True, eq=False)
class AttachAt:
    """The stage is computed inside the loop of ``axis`` of ``stage``."""

    stage: Stage
    axis: IterVar


Attach = AttachRoot | AttachInline | AttachAt
ROOT = AttachRoot()
INLINE = AttachInline()
