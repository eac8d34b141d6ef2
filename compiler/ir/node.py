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
import sys
import types
import typing
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


_CHILD_FIELD_CACHE: dict[type, tuple[tuple[str, bool, bool], ...]] = {}


def child_fields(cls: type) -> tuple[tuple[str, bool, bool], ...]:
    """``(name, may_be_node, may_be_tuple)`` for each constructor field of a node class whose
    declared type admits a child node (a node, or a tuple holding nodes), in field order.

    Traversals visit only these fields: a field declared ``int``, ``str``, ``DType`` or an
    enum is never looked at. A field whose type cannot be resolved, or is ``Any``, is checked
    both ways at run time.

    Example:
        >>> from compiler.ir.stmt import For
        >>> [name for name, _, _ in child_fields(For)]
        ['var', 'min', 'extent', 'body']
    """
    layout = _CHILD_FIELD_CACHE.get(cls)
    if layout is None:
        hints = _field_types(cls)
        out = []
        for name in field_names(cls):
            tp = hints.get(name, Any)
            as_node, as_tuple = _may_be_node(tp), _may_be_tuple_of_nodes(tp)
            if as_node or as_tuple:
                out.append((name, as_node, as_tuple))
        layout = tuple(out)
        _CHILD_FIELD_CACHE[cls] = layout
    return layout


def _field_types(cls: type) -> dict[str, Any]:
    """The resolved declared types of ``cls``'s fields; a field whose annotation names what
    its module imports only for type checking is left out (treated as ``Any``)."""
    try:
        return typing.get_type_hints(cls)
    except NameError:
        pass
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        tp = f.type
        if isinstance(tp, str):
            for owner in cls.__mro__:
                module = sys.modules.get(owner.__module__)
                try:
                    tp = eval(tp, vars(module) if module else {})  # noqa: S307
                    break
                except NameError:
                    continue
        if not isinstance(tp, str):
            out[f.name] = tp
    return out


def _may_be_node(tp: Any) -> bool:
    if tp is Any or isinstance(tp, TypeVar):
        return True
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return any(_may_be_node(a) for a in typing.get_args(tp))
    if origin is not None:
        tp = origin
    if not isinstance(tp, type):
        return True
    return issubclass(tp, Node) or issubclass(Node, tp)


def _may_be_tuple_of_nodes(tp: Any) -> bool:
    if tp is Any or isinstance(tp, TypeVar):
        return True
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return any(_may_be_tuple_of_nodes(a) for a in typing.get_args(tp))
    if origin is tuple:
        return any(_may_be_node(a) for a in typing.get_args(tp) if a is not Ellipsis)
    if tp is tuple:
        return True
    if not isinstance(tp, type):
        return True
    return issubclass(tuple, tp) or issubclass(tp, tuple)


def _cached_hash(self: Any) -> int:
    try:
        return self.__dict__["_hash"]
    except KeyError:
        cls = type(self)
        names = _FIELD_CACHE.get(cls)
        if names is None:
            names = field_names(cls)
        fields = self.__dict__
        value = hash((cls.__name__, *[fields[n] for n in names]))
        fields["_hash"] = value
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
    setattr(cls, "__hash__", _cached_hash)  # noqa: B010 - a method assigned to the class
    setattr(cls, "__init__", _direct_init(cls))  # noqa: B010
    return cls


def _direct_init(cls: type) -> Any:
    """A constructor with the dataclass's own signature that stores the fields straight into
    the instance's ``__dict__``: the generated one of a frozen dataclass goes through
    ``object.__setattr__`` for every field, and lowering builds hundreds of thousands of nodes.
    ``__post_init__`` runs after, as in the generated one."""
    fields = dataclasses.fields(cls)
    if any(not f.init or f.kw_only for f in fields):
        return getattr(cls, "__init__")  # noqa: B009 - a form not spelled here: the generated one
    params, body = ["self"], ["    d = self.__dict__"]
    scope: dict[str, Any] = {"_MISSING": dataclasses.MISSING}
    for f in fields:
        if f.default is not dataclasses.MISSING:
            scope[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
            body.append(f"    d[{f.name!r}] = {f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            scope[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            body.append(
                f"    d[{f.name!r}] = _factory_{f.name}() if {f.name} is _MISSING else {f.name}"
            )
        else:
            params.append(f.name)
            body.append(f"    d[{f.name!r}] = {f.name}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__({', '.join(params)}):\n" + "\n".join(body) + "\n"
    exec(source, scope)  # noqa: S102 - the source is spelled above from the class's fields
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = getattr(cls, "__init__").__doc__  # noqa: B009
    return init


#: what a node keeps once computed (its hash; what traversals ask, see compiler.ir.functor):
#: derived from the fields, so neither pickled nor copied (a string's hash, and so a node's,
#: differs between processes)
_DERIVED = ("_hash", "_dtype", "_vars", "_buffers", "_refolded", "_linear")


class Node:
    """Base of expressions and statements."""

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__
        if any(k in state for k in _DERIVED):
            state = {k: v for k, v in state.items() if k not in _DERIVED}
        return state

    def __repr__(self) -> str:
        from compiler.ir.printer import to_text

        return to_text(self)

    def children(self) -> list[Node]:
        """Direct child nodes, in field order."""
        out: list[Node] = []
        fields = self.__dict__
        layout = _CHILD_FIELD_CACHE.get(type(self))
        if layout is None:
            layout = child_fields(type(self))
        for name, as_node, as_tuple in layout:
            value = fields[name]
            if as_node and isinstance(value, Node):
                out.append(value)
            elif as_tuple and isinstance(value, tuple):
                out.extend(v for v in value if isinstance(v, Node))
        return out

    def replace(self: T, **changes: Any) -> T:
        """A copy with some fields changed (nodes are immutable)."""
        cls = type(self)
        names = field_names(cls)
        if not changes.keys() <= set(names):
            unknown = sorted(set(changes) - set(names))
            raise TypeError(f"{cls.__name__} has no field {unknown[0]!r} to replace")
        fields = self.__dict__
        return cls(*[changes[n] if n in changes else fields[n] for n in names])
