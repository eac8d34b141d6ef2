"""Buffers and typed memory scopes.

A :class:`Scope` describes a memory a buffer lives in. The built-in ``global`` (main memory),
``local`` (private to the enclosing loop body) and ``shared`` resolve by name everywhere; a
target instance owns its own scopes (an accelerator's input/weight/accumulator SRAMs with the
access width and capacity of its hardware config) and resolves their names itself
(``Target.resolve_scope``), so targets of different configs coexist in one process.

Example:
    >>> sram = register_scope(Scope("local.example_sram", unit_bits=128, capacity_bits=1 << 18))
    >>> get_scope("local.example_sram") is sram
    True
    >>> Buffer("A", (16, 16), "int8").scope.name
    'global'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from compiler.errors import CompilerError, DTypeError
from compiler.ir.dtype import DType, as_dtype
from compiler.ir.expr import Expr, const, is_const_int, next_uid


@dataclass(frozen=True)
class Scope:
    """A memory scope.

    ``unit_bits`` is the access granularity (one addressable element of the memory) and
    ``capacity_bits`` the total size; ``None`` means unconstrained (main memory).
    ``private`` scopes hold per-iteration scratch data (a target may keep them in registers or
    on the stack).

    Example:
        >>> Scope("local.acc", unit_bits=512, capacity_bits=1 << 20).capacity_bytes
        131072
    """

    name: str
    unit_bits: int | None = None
    capacity_bits: int | None = None
    private: bool = False

    def __post_init__(self) -> None:
        if not self.name or any(c.isspace() for c in self.name):
            raise CompilerError(f"invalid scope name {self.name!r}")
        for label, bits in (("unit_bits", self.unit_bits), ("capacity_bits", self.capacity_bits)):
            if bits is not None and bits <= 0:
                raise CompilerError(f"scope {self.name}: {label} must be positive, got {bits}")

    @property
    def capacity_bytes(self) -> int | None:
        return None if self.capacity_bits is None else self.capacity_bits // 8

    def check_fits(self, buffer_name: str, nbits: int) -> None:
        """Raise if a buffer of ``nbits`` bits does not fit this scope.

        Example:
            >>> Scope("local.tiny", capacity_bits=64).check_fits("A", 128)
            Traceback (most recent call last):
            compiler.errors.CompilerError: buffer A needs 128 bits but scope local.tiny holds 64
        """
        if self.capacity_bits is not None and nbits > self.capacity_bits:
            raise CompilerError(
                f"buffer {buffer_name} needs {nbits} bits but scope {self.name} "
                f"holds {self.capacity_bits}"
            )

    def __str__(self) -> str:
        return self.name


GLOBAL = Scope("global")
LOCAL = Scope("local", private=True)
SHARED = Scope("shared")

_REGISTRY: dict[str, Scope] = {s.name: s for s in (GLOBAL, LOCAL, SHARED)}


def register_scope(scope: Scope, replace: bool = False) -> Scope:
    """Make ``scope`` resolvable by name (re-registering an identical scope is a no-op).

    ``replace=True`` lets a target whose memories depend on a hardware configuration re-bind
    the name to the scopes of the configuration it was built for; buffers keep the scope object
    they were created with, so this only changes what later lookups by name return.

    Example:
        >>> register_scope(Scope("local.demo")).name
        'local.demo'
        >>> register_scope(Scope("local.demo", capacity_bits=64), replace=True).capacity_bits
        64
    """
    existing = _REGISTRY.get(scope.name)
    if existing is not None and existing != scope and not replace:
        raise CompilerError(
            f"scope {scope.name} is already registered with a different definition: {existing}"
        )
    _REGISTRY[scope.name] = scope
    return scope


def get_scope(scope: Scope | str) -> Scope:
    """Resolve a scope name (or pass a ``Scope`` through).

    Example:
        >>> get_scope("global") is GLOBAL
        True
    """
    if isinstance(scope, Scope):
        return scope
    try:
        return _REGISTRY[scope]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise CompilerError(f"unknown memory scope {scope!r}; registered: {known}") from None


def schedule_scope(scope: Scope | str) -> Scope | str:
    """What a schedule records for ``scope``: the object, the built-in or registered scope of
    that name, or else the name itself, which the target compiled for resolves when lowering
    (``Target.resolve_scope``): scopes such as ``local.acc_buffer`` belong to one target
    instance and its hardware config, not to the process.

    Example:
        >>> schedule_scope("global") is GLOBAL, schedule_scope("local.acc_buffer")
        (True, 'local.acc_buffer')
    """
    if isinstance(scope, Scope):
        return scope
    if not isinstance(scope, str) or not scope or any(c.isspace() for c in scope):
        raise CompilerError(f"invalid memory scope {scope!r}")
    return _REGISTRY.get(scope, scope)


def scope_name(scope: Scope | str) -> str:
    """The name of a scope or of a scope name.

    Example:
        >>> scope_name(GLOBAL), scope_name("local.inp_buffer")
        ('global', 'local.inp_buffer')
    """
    return scope.name if isinstance(scope, Scope) else scope


@dataclass(frozen=True, eq=False, init=False)
class Buffer:
    """A named, typed n-d memory region. Identity matters: two buffers named ``A`` differ.

    The constructor takes Python ints as dimensions, a dtype name and a scope name, and stores
    them normalised: ``shape`` holds expressions, ``dtype`` a :class:`DType` and ``scope`` a
    :class:`Scope`. ``uid`` is fresh unless given.

    Example:
        >>> b = Buffer("C", (4, 8), "float32")
        >>> b.ndim, b.size, b.shape[0]
        (2, 32, 4)
    """

    name: str
    shape: tuple[Expr, ...]
    dtype: DType
    scope: Scope
    uid: int

    def __init__(
        self,
        name: str,
        shape: Sequence[Expr | int],
        dtype: DType | str,
        scope: Scope | str = GLOBAL,
        uid: int | None = None,
    ) -> None:
        element = as_dtype(dtype)
        if element.lanes != 1:
            raise DTypeError(f"buffer {name}: element dtype must be scalar, got {element}")
        # Frozen dataclass: fields are set once, here, through object.__setattr__.
        object.__setattr__(self, "name", name)
        object.__setattr__(
            self, "shape", tuple(const(s) if isinstance(s, int) else s for s in shape)
        )
        object.__setattr__(self, "dtype", element)
        object.__setattr__(self, "scope", get_scope(scope))
        object.__setattr__(self, "uid", next_uid() if uid is None else uid)

    def __hash__(self) -> int:
        return hash(("Buffer", self.uid))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Buffer) and other.uid == self.uid

    def __repr__(self) -> str:
        dims = ", ".join(str(getattr(s, "value", s)) for s in self.shape)
        return f"Buffer({self.name}: {self.dtype}[{dims}] @{self.scope.name})"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def const_shape(self) -> tuple[int, ...]:
        """The shape as Python ints; raises if a dimension is symbolic."""
        dims = []
        for s in self.shape:
            if not is_const_int(s):
                raise CompilerError(f"buffer {self.name} has a symbolic dimension {s!r}")
            dims.append(s.value)
        return tuple(dims)

    @property
    def size(self) -> int:
        return math.prod(self.const_shape)

    @property
    def nbits(self) -> int:
        return self.size * max(self.dtype.bits, 8)

    def __getitem__(self, indices: object) -> Expr:
        """``buf[i, j]`` builds a :class:`BufferLoad`."""
        from compiler.ir.expr import BufferLoad

        if not isinstance(indices, tuple):
            indices = (indices,)
        return BufferLoad(self, tuple(const(i) if isinstance(i, int) else i for i in indices))
