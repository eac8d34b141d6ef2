"""Evaluating integer IR expressions on the host.

The loops outside the accelerator's blocks run on the host (like the C code VTA generates around
its runtime calls): they compute tile positions, padding counts and addresses. Each expression
is compiled once into nested Python closures over an environment ``{Var: int}``.

Example:
    >>> from compiler.ir import Var, op
    >>> i = Var("i")
    >>> f = compile_expr(op.minimum(i * 4 + 3, 10) // 2)
    >>> f({i: 0}), f({i: 5})
    (1, 5)
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.ir import expr as E
from compiler.ir.expr import ADDRESS_OF, Expr
from compiler.ir.printer import to_text

from .errors import VTATargetError

Env = dict[E.Var, int]
Fn = Callable[[Env], int]

_BIN: dict[type, Callable[[int, int], int]] = {
    E.Add: lambda a, b: a + b,
    E.Sub: lambda a, b: a - b,
    E.Mul: lambda a, b: a * b,
    E.FloorDiv: lambda a, b: a // b,
    E.FloorMod: lambda a, b: a % b,
    E.Min: min,
    E.Max: max,
    E.ShiftLeft: lambda a, b: a << b,
    E.ShiftRight: lambda a, b: a >> b,
    E.EQ: lambda a, b: int(a == b),
    E.NE: lambda a, b: int(a != b),
    E.LT: lambda a, b: int(a < b),
    E.LE: lambda a, b: int(a <= b),
    E.GT: lambda a, b: int(a > b),
    E.GE: lambda a, b: int(a >= b),
}


def compile_expr(e: Expr) -> Fn:
    """A function computing the integer value of ``e`` from the loop variables' values."""
    if isinstance(e, E.IntImm):
        v = e.value
        return lambda env: v
    if isinstance(e, E.Var):
        var = e

        def get(env: Env) -> int:
            try:
                return env[var]
            except KeyError:
                raise VTATargetError(
                    f"host code uses {var.name}, which no enclosing loop defines"
                ) from None

        return get
    fn = _BIN.get(type(e))
    if fn is not None:
        a, b = compile_expr(e.a), compile_expr(e.b)  # type: ignore[attr-defined]
        return lambda env: fn(a(env), b(env))
    if isinstance(e, E.And):
        a, b = compile_expr(e.a), compile_expr(e.b)
        return lambda env: int(bool(a(env)) and bool(b(env)))
    if isinstance(e, E.Or):
        a, b = compile_expr(e.a), compile_expr(e.b)
        return lambda env: int(bool(a(env)) or bool(b(env)))
    if isinstance(e, E.Not):
        a = compile_expr(e.a)
        return lambda env: int(not a(env))
    if isinstance(e, E.IfThenElse):
        c, t, f = compile_expr(e.cond), compile_expr(e.then_value), compile_expr(e.else_value)
        return lambda env: t(env) if c(env) else f(env)
    if isinstance(e, E.Cast) and e.dtype.is_int and e.value.dtype.is_int:
        return compile_expr(e.value)
    if isinstance(e, E.Call) and e.op == ADDRESS_OF:
        load = e.args[0]
        assert isinstance(load, E.BufferLoad)
        return compile_expr(load.indices[0])
    raise VTATargetError(f"the host cannot evaluate {to_text(e)}")
