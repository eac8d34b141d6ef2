"""The operator registry: each operator declared once, and what every part of the compiler
implements for it, target by target.

TVM keeps one table of operators and lets each layer attach its own attributes to an operator
(its compute, its strategy, its quantization rule). This module is that table.
:mod:`compiler.graph.ops` (and :mod:`compiler.quantize.ops` for the int8 operators) declares an
operator: its attributes, type inference, pattern kind and quantization rule
(:data:`QUANT_RULES`). The parts that implement it register under a key:

============== ================================ ==============================================
key            registered by                    what
============== ================================ ==============================================
``reference``  :mod:`compiler.graph.reference`  the numpy evaluation ``fn(args, attrs, type)``
``quantize``   :mod:`compiler.quantize.realize` the int8 rule of an operator declared ``int8``
``cpu``        :mod:`compiler.strategy.compute` :class:`CpuImpl`: tensor expression + schedule
``gpu``        :mod:`compiler.topi.gpu.ops`     :class:`GpuImpl`: the schedule family
``vta``        :mod:`compiler.targets.vta.ops`  :class:`VtaImpl`: ``fits``, the template's
                                                tuning task (its space), ``compile``
============== ================================ ==============================================

A key's module is imported on the first lookup of that key, so a lookup always sees every
registration and no module has to import all the others. A part that does not implement an
operator registers why (:func:`register_unsupported`); a lookup of such an operator raises
:class:`UnsupportedOperator` with that reason, and one that nobody registered raises it saying
that the piece is missing. ``tests/test_registry.py`` walks every operator and every key and
fails on a missing piece that has no reason.

Example:
    >>> lookup("cpu", "relu").schedule
    'injective'
    >>> reason("vta", "softmax")
    'float32 operator: the accelerator computes int8 and int32 only'
    >>> declaration("conv2d").quant
    'int8'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from compiler.errors import CompilerError

if TYPE_CHECKING:
    from compiler.graph.ops import OpDef

#: The keys, each with the module whose import registers its implementations.
KEYS: dict[str, str] = {
    "reference": "compiler.graph.reference",  # and compiler.quantize.ops: the int8 operators
    "quantize": "compiler.quantize.realize",
    "cpu": "compiler.strategy.compute",
    "gpu": "compiler.topi.gpu.ops",
    "vta": "compiler.targets.vta.ops",
}
#: The compile targets among the keys.
TARGETS = ("cpu", "gpu", "vta")

#: What a declaration's ``quant`` says of an operator in a float graph being quantized:
QUANT_RULES = {
    "int8": "computed in int8 by its rule under the key 'quantize'",
    "pass-through": "int8 in, int8 out at its input's scale (no arithmetic to requantize)",
    "float": "no integer form: it stays float32",
    "integer": "an operator of quantized graphs (int8 and int32 arithmetic)",
}


class UnsupportedOperator(CompilerError):
    """An operator that a key (a target, the reference, the quantizer) does not implement; the
    message names the operator, the key and the reason."""

    def __init__(self, key: str, op: str, reason: str) -> None:
        super().__init__(f"operator {op!r} on {key}: {reason}")
        self.key, self.op, self.reason = key, op, reason


@dataclass(frozen=True)
class Unsupported:
    """The registered reason why a key does not implement an operator."""

    reason: str


@dataclass(frozen=True)
class CpuImpl:
    """An operator on the CPU: ``compute(inputs, attrs, name) -> Tensor`` builds its tensor
    expression, and ``schedule`` names the schedule family
    (:data:`compiler.strategy.schedule.KINDS`) of a fused group it anchors (``injective``:
    it is inlined into whichever group holds it)."""

    compute: Callable[..., Any]
    schedule: str


@dataclass(frozen=True)
class GpuImpl:
    """An operator on the GPU: the CPU's tensor expression under the GPU ``schedule`` family
    (:func:`compiler.topi.gpu.schedule_gpu`); ``limit`` says what it cannot take (empty: none
    beyond the schedule's)."""

    schedule: str
    limit: str = ""


@dataclass(frozen=True)
class VtaImpl:
    """An operator that anchors an accelerator group.

    * ``kind``: the group's kind (``gemm``, ``pool``, ``elementwise`` or ``rescale``), which
      says what the partition fuses into it: a gemm takes the per-channel ``requantize`` that
      reads it and an optional ``qadd``; a sum pool its ``requantize``; a rescale (a ``cast``
      to int32) the ``requantize`` that alone reads it; an elementwise node nothing.
    * ``fits(node, cfg) -> None | (rule, reason)``: whether the node, alone, is within the
      accelerator's limits for the config; the rule names the limit it exceeds.
    * ``task(group, cfg) -> (Task | None, reason)``: the template's tuning task for the
      group; its ``space`` is the knob space the tuner searches and the heuristic picks a
      point of (None, with the reason, for a template without knobs).
    * ``compile(group, cfg, knobs) -> QLayer``: the group's program.
    * ``placement(node, cfg) -> (rule, reason)``: the rule that places a fitting node on the
      accelerator and how it runs there, in words.
    * ``second``: for an elementwise group, which input is loaded as its second operand
      (None: it has one).
    """

    kind: str
    fits: Callable[..., tuple[str, str] | None]
    task: Callable[..., Any]
    compile: Callable[..., Any]
    placement: Callable[..., tuple[str, str]]
    second: int | None = None


_IMPLS: dict[str, dict[str, Any]] = {key: {} for key in KEYS}
_LOADED: set[str] = set()


def _check_key(key: str) -> None:
    if key not in KEYS:
        raise CompilerError(f"unknown registry key {key!r}: one of {sorted(KEYS)}")


def register(key: str, op: str, impl: Any) -> Any:
    """Register ``impl`` as ``key``'s implementation of ``op`` (one per key and operator)."""
    _check_key(key)
    if op in _IMPLS[key]:
        raise CompilerError(f"operator {op!r} already has a {key} implementation")
    _IMPLS[key][op] = impl
    return impl


def unregister(key: str, op: str) -> None:
    """Remove what ``key`` registered for ``op`` (an operator added for a while, as a test's
    or a plug-in's)."""
    _check_key(key)
    if _IMPLS[key].pop(op, None) is None:
        raise CompilerError(f"operator {op!r} has nothing registered on {key}")


def register_unsupported(key: str, op: str, reason: str) -> None:
    """Register why ``key`` does not implement ``op`` (one line, for error messages and
    placements)."""
    if not reason:
        raise CompilerError(f"operator {op!r} on {key}: an unsupported operator needs a reason")
    register(key, op, Unsupported(reason))


def _load(key: str) -> dict[str, Any]:
    _check_key(key)
    if key not in _LOADED:
        _LOADED.add(key)
        # the int8 operators' declarations and reference evaluations come with them
        importlib.import_module("compiler.quantize.ops")
        importlib.import_module(KEYS[key])
    return _IMPLS[key]


def support(key: str, op: str) -> Any:
    """``key``'s implementation of ``op``, its :class:`Unsupported` reason, or None when
    nothing is registered (a missing piece)."""
    return _load(key).get(op)


def lookup(key: str, op: str) -> Any:
    """``key``'s implementation of ``op``; :class:`UnsupportedOperator` with the registered
    reason, or saying that no implementation is registered."""
    impl = support(key, op)
    if isinstance(impl, Unsupported):
        raise UnsupportedOperator(key, op, impl.reason)
    if impl is None:
        raise UnsupportedOperator(key, op, f"no {key} implementation is registered")
    return impl


def reason(key: str, op: str) -> str | None:
    """Why ``key`` does not implement ``op`` (None when it does)."""
    impl = support(key, op)
    if isinstance(impl, Unsupported):
        return impl.reason
    return None if impl is not None else f"no {key} implementation is registered"


def implemented(key: str) -> Iterator[tuple[str, Any]]:
    """``(op, impl)`` of every operator ``key`` implements, by name."""
    for op, impl in sorted(_load(key).items()):
        if not isinstance(impl, Unsupported):
            yield op, impl


def registered(key: str) -> dict[str, Any]:
    """Everything registered under ``key`` (implementations and reasons), by operator."""
    return dict(_load(key))


def declaration(op: str) -> OpDef:
    """The operator's declaration (:class:`compiler.graph.ops.OpDef`)."""
    import compiler.quantize.ops  # noqa: F401  (declares the int8 operators)
    from compiler.graph.ops import get_op

    return get_op(op)


def operators() -> list[str]:
    """Every declared operator, by name (the int8 operators of quantized graphs included)."""
    import compiler.quantize.ops  # noqa: F401
    from compiler.graph.ops import op_names

    return op_names()


def table(keys: tuple[str, ...] = tuple(KEYS)) -> list[tuple[str, dict[str, str]]]:
    """Per operator, per key: ``"yes"`` (with the detail: the schedule family, the group
    kind), or ``"no: <reason>"``, or ``"MISSING"``.

    Example:
        >>> dict(table(("cpu", "vta")))["conv2d"]["vta"]
        'yes (gemm)'
    """
    rows = []
    for op in operators():
        cells = {}
        for key in keys:
            impl = support(key, op)
            if impl is None:
                cells[key] = "MISSING"
            elif isinstance(impl, Unsupported):
                cells[key] = f"no: {impl.reason}"
            else:
                detail = getattr(impl, "schedule", None) or getattr(impl, "kind", None)
                cells[key] = f"yes ({detail})" if detail else "yes"
        rows.append((op, cells))
    return rows


__all__ = [
    "KEYS",
    "QUANT_RULES",
    "TARGETS",
    "CpuImpl",
    "GpuImpl",
    "Unsupported",
    "UnsupportedOperator",
    "VtaImpl",
    "declaration",
    "implemented",
    "lookup",
    "operators",
    "reason",
    "register",
    "register_unsupported",
    "registered",
    "support",
    "table",
    "unregister",
]
