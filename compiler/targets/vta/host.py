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

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

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


#: Python operators of the binary nodes whose host value is one (the same integer semantics
#: as :data:`_BIN`: floor division and modulo, comparisons as 0 or 1).
_INFIX: dict[type, str] = {
    E.Add: "+", E.Sub: "-", E.Mul: "*", E.FloorDiv: "//", E.FloorMod: "%",
    E.ShiftLeft: "<<", E.ShiftRight: ">>",
}  # fmt: skip
_COMPARE: dict[type, str] = {
    E.EQ: "==", E.NE: "!=", E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">=",
}  # fmt: skip
_CALL: dict[type, str] = {E.Min: "min", E.Max: "max"}

#: Deepest expression compiled as one Python expression (the parser's nesting limit is 200);
#: deeper ones are evaluated by nested closures.
MAX_SOURCE_DEPTH = 48


def compile_expr(e: Expr) -> Fn:
    """A function computing the integer value of ``e`` from the loop variables' values.

    The expression becomes one Python function (its text compiled once): the host code runs it
    for every instruction it issues, and one call is several times cheaper than a tree of
    closures. Expressions nested deeper than :data:`MAX_SOURCE_DEPTH` use the closures.
    """
    names: dict[E.Var, str] = {}
    consts: list[object] = []
    try:
        text = _source(e, names, consts, 0)
    except _TooDeep:
        return _closure(e)
    return _function(text, tuple(names.values()), len(consts))(*names, *consts)


def compile_exprs(exprs: Sequence[Expr]) -> Callable[[Env], tuple[int, ...]]:
    """One function computing the values of all ``exprs`` as a tuple: an instruction's
    operands in one call.

    Example:
        >>> from compiler.ir import Var
        >>> i = Var("i")
        >>> compile_exprs([i * 2, i + 1])({i: 3})
        (6, 4)
    """
    names: dict[E.Var, str] = {}
    consts: list[object] = []
    try:
        text = "".join(f"{_source(e, names, consts, 0)}, " for e in exprs)
    except _TooDeep:
        fns = [_closure(e) for e in exprs]
        return lambda env: tuple(f(env) for f in fns)
    return _function(f"({text})", tuple(names.values()), len(consts))(*names, *consts)


class _TooDeep(Exception):
    pass


def _source(e: Expr, names: dict[E.Var, str], consts: list[object], depth: int) -> str:
    """``e`` as a Python expression over ``env`` (variables and constants are arguments of the
    function that evaluates it, named in ``names`` and ``consts``: the text depends on the
    expression's shape alone, so that the programs of one layer's schedules, which differ in
    their tile sizes, share the compiled text)."""
    if depth > MAX_SOURCE_DEPTH:
        raise _TooDeep
    if isinstance(e, E.IntImm):
        consts.append(e.value)
        return f"c{len(consts) - 1}"
    if isinstance(e, E.Var):
        name = names.setdefault(e, f"v{len(names)}")
        return f"env[{name}]"
    d = depth + 1
    t = type(e)
    if t in _INFIX:
        a, b = _source(e.a, names, consts, d), _source(e.b, names, consts, d)  # type: ignore[attr-defined]
        return f"({a} {_INFIX[t]} {b})"
    if t in _COMPARE:
        a, b = _source(e.a, names, consts, d), _source(e.b, names, consts, d)  # type: ignore[attr-defined]
        return f"int({a} {_COMPARE[t]} {b})"
    if t in _CALL:
        a, b = _source(e.a, names, consts, d), _source(e.b, names, consts, d)  # type: ignore[attr-defined]
        return f"{_CALL[t]}({a}, {b})"
    if isinstance(e, E.And):
        a, b = _source(e.a, names, consts, d), _source(e.b, names, consts, d)
        return f"int(bool({a}) and bool({b}))"
    if isinstance(e, E.Or):
        a, b = _source(e.a, names, consts, d), _source(e.b, names, consts, d)
        return f"int(bool({a}) or bool({b}))"
    if isinstance(e, E.Not):
        return f"int(not {_source(e.a, names, consts, d)})"
    if isinstance(e, E.IfThenElse):
        c = _source(e.cond, names, consts, d)
        then = _source(e.then_value, names, consts, d)
        other = _source(e.else_value, names, consts, d)
        return f"({then} if {c} else {other})"
    if isinstance(e, E.Cast) and e.dtype.is_int and e.value.dtype.is_int:
        return _source(e.value, names, consts, depth)
    if isinstance(e, E.Call) and e.op == ADDRESS_OF:
        load = e.args[0]
        assert isinstance(load, E.BufferLoad)
        return _source(load.indices[0], names, consts, depth)
    raise VTATargetError(f"the host cannot evaluate {to_text(e)}")


@lru_cache(maxsize=4096)
def _function(text: str, var_names: tuple[str, ...], n_consts: int) -> Callable[..., Any]:
    """A maker of the function evaluating ``text``: called with the variables and constants
    the text names, it returns the function (the text is compiled once per shape of
    expression, whatever its variables)."""
    params = ", ".join((*var_names, *(f"c{k}" for k in range(n_consts))))
    src = (
        f"def make({params}):\n"
        f"    def evaluate(env):\n"
        f"        try:\n"
        f"            return {text}\n"
        f"        except KeyError as e:\n"
        f"            raise _undefined(e) from None\n"
        f"    return evaluate\n"
    )
    namespace: dict[str, object] = {"_undefined": _undefined}
    exec(compile(src, "<host expression>", "exec"), namespace)  # noqa: S102 - our own text
    return namespace["make"]  # type: ignore[return-value]


def _undefined(e: KeyError) -> Exception:
    var = e.args[0] if e.args else None
    if isinstance(var, E.Var):
        return VTATargetError(f"host code uses {var.name}, which no enclosing loop defines")
    return e


def _closure(e: Expr) -> Fn:
    """``e`` as a tree of closures (for expressions too deep for one Python expression)."""
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
        a, b = _closure(e.a), _closure(e.b)  # type: ignore[attr-defined]
        return lambda env: fn(a(env), b(env))
    if isinstance(e, E.And):
        a, b = _closure(e.a), _closure(e.b)
        return lambda env: int(bool(a(env)) and bool(b(env)))
    if isinstance(e, E.Or):
        a, b = _closure(e.a), _closure(e.b)
        return lambda env: int(bool(a(env)) or bool(b(env)))
    if isinstance(e, E.Not):
        a = _closure(e.a)
        return lambda env: int(not a(env))
    if isinstance(e, E.IfThenElse):
        c, t, f = _closure(e.cond), _closure(e.then_value), _closure(e.else_value)
        return lambda env: t(env) if c(env) else f(env)
    if isinstance(e, E.Cast) and e.dtype.is_int and e.value.dtype.is_int:
        return _closure(e.value)
    if isinstance(e, E.Call) and e.op == ADDRESS_OF:
        load = e.args[0]
        assert isinstance(load, E.BufferLoad)
        return _closure(load.indices[0])
    raise VTATargetError(f"the host cannot evaluate {to_text(e)}")
