"""Targets are plug-ins of one shape: a name, the memory scopes and tensor intrinsics they
provide, an extension of the pass pipeline, and a code generator.

Example:
    >>> from compiler.targets import get_target
    >>> cpu = get_target("cpu")
    >>> cpu.name, [s.name for s in cpu.scopes]
    ('cpu', ['global', 'local'])
    >>> "serialize_virtual_threads" in cpu.pipeline().names()
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compiler.errors import CompilerError
from compiler.ir.buffer import Scope, get_scope, register_scope
from compiler.ir.stmt import PrimFunc
from compiler.passes.pipeline import Pipeline, default_pipeline
from compiler.schedule.intrin import TensorIntrin


class Target:
    """Base class of targets. Subclasses set ``name``, ``scopes``, ``intrinsics`` and implement
    :meth:`extend_pipeline` and :meth:`codegen`."""

    name: str = "abstract"
    scopes: tuple[Scope, ...] = ()
    intrinsics: tuple[TensorIntrin, ...] = ()

    def register(self) -> None:
        """Make the target's scopes resolvable by name in every schedule. Only for scopes that
        do not depend on a configuration; a target whose memories do (the accelerator) keeps
        them to itself and resolves them in :meth:`resolve_scope`."""
        for scope in self.scopes:
            register_scope(scope)

    def resolve_scope(self, scope: Scope | str) -> Scope:
        """The memory of this target that ``scope`` (a name, or a scope object) denotes.

        A scope object made for another instance with the same definition (an equal
        configuration) stands for this target's own; one that differs is refused.

        Example:
            >>> from compiler.ir.buffer import GLOBAL
            >>> get_target("cpu").resolve_scope("global") is GLOBAL
            True
        """
        own = {s.name: s for s in self.scopes}
        if isinstance(scope, Scope):
            if any(scope is s for s in self.scopes):
                return scope
            mine = own.get(scope.name)
            if mine is None:
                return get_scope(scope)
            if mine == scope:
                return mine
            raise CompilerError(
                f"scope {scope.name} was made for another configuration (unit {scope.unit_bits} "
                f"bits, {scope.capacity_bytes} bytes); target {self!r} has unit "
                f"{mine.unit_bits} bits, {mine.capacity_bytes} bytes"
            )
        if scope in own:
            return own[scope]
        try:
            return get_scope(scope)
        except CompilerError:
            raise CompilerError(
                f"unknown memory scope {scope!r} for target {self!r}; its scopes are "
                f"{', '.join(sorted(own)) or 'none'}"
            ) from None

    def extend_pipeline(self, pipeline: Pipeline) -> Pipeline:
        """Insert the target's passes into the target-independent pipeline."""
        return pipeline

    def pipeline(self) -> Pipeline:
        """The full pass pipeline for this target."""
        return self.extend_pipeline(default_pipeline())

    def codegen(self, func: PrimFunc) -> Any:
        """Turn a lowered function into the target's executable form."""
        raise NotImplementedError(f"target {self.name} has no code generator")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


_FACTORIES: dict[str, Callable[..., Target]] = {}
#: Targets shipped with the compiler, imported on first use.
_BUILTIN = {
    "cpu": "compiler.targets.cpu",
    "gpu": "compiler.targets.gpu",
    "vta": "compiler.targets.vta",
}


def register_target(name: str, factory: Callable[..., Target]) -> None:
    """Register a factory so that ``get_target(name, **options)`` can build the target.

    Example:
        >>> register_target("null", lambda: Target())
        >>> get_target("null").name
        'abstract'
    """
    _FACTORIES[name] = factory


def get_target(target: Target | str | None = None, **options: Any) -> Target:
    """Resolve a target by name (default ``cpu``) or pass a :class:`Target` through."""
    if isinstance(target, Target):
        return target
    name = target or "cpu"
    if name not in _FACTORIES and name in _BUILTIN:
        import importlib

        importlib.import_module(_BUILTIN[name])  # registers itself
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise CompilerError(f"unknown target {name!r}; registered: {sorted(_FACTORIES)}") from None
    tgt = factory(**options)
    tgt.register()
    return tgt
