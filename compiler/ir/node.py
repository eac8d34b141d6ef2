"""The base class of every IR node: immutable, hashable, structurally compared.

Nodes are frozen dataclasses. Equality is structural (two ``Add`` nodes with equal operands are
equal); variables and buffers carry a unique id, so two loops that both call their variable ``i``
stay distinct. Hashes are cached because passes use nodes as dictionary keys.

Example:
    >>> from compiler.ir.expr import IntImm
    >>> IntImm(3) == IntImm(3), hash(IntImm(3)) == hash(IntImm(3))
    (True, True)
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")

_FIELD_CACHE: dict[type, tuple[str, ...]] = {}


def field_names(cls: type) -> tuple[str, ...]:
    """Names of the constructor fields of a node class, in order."""
    names = _FIELD_CACHE.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        _FIELD_CACHE[cls] = names
    return names


def _cached_hash(self: Any) -> int:
    try:
        return self.__dict__["_hash"]
    except KeyError:
        value = hash(
            (type(self).__name__,) + tuple(getattr(self, n) for n in field_names(type(self)))
        )
        object.__setattr__(self, "_hash", value)
        return value


# Type checkers see through the decorator: a node class gets a typed constructor and frozen
# fields, exactly as ``dataclasses.dataclass(frozen=True)`` would give it.
@dataclass_transform(frozen_default=True, eq_default=True, field_specifiers=(dataclasses.field,))
def node(cls: type[T]) -> type[T]:
    """Class decorator: a frozen dataclass with a cached structural hash.

    Example:
        >>> @node
        ... class Leaf(Node):
        ...     value: int
        >>> Leaf(1) == Leaf(1)
        True
    """
    cls = dataclasses.dataclass(frozen=True, eq=True, repr=False)(cls)
    # The cached structural hash replaces the one dataclasses generates (same value, computed once).
    cls.__hash__ = _cached_hash  # type: ignore[method-assign]
    return cls


class Node:
    """Base of expressions and statements."""

    def __repr__(self) -> str:
        from compiler.ir.printer import to_text

        return to_text(self)

    def children(self) -> list[Node]:
        """Direct child nodes, in field order."""
        out: list[Node] = []
        for name in field_names(type(self)):
            value = getattr(self, name)
            if isinstance(value, Node):
                out.append(value)
            elif isinstance(value, tuple):
                out.extend(v for v in value if isinstance(v, Node))
        return out

    def replace(self: T, **changes: Any) -> T:
        """A copy with some fields changed (nodes are immutable)."""
        # Every concrete node class is a dataclass (the ``node`` decorator); mypy cannot see that
        # through the unbounded ``T``.
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]
