"""Symbolic integer intervals, used by bound inference.

An :class:`Interval` has symbolic ``lo``/``hi`` bounds (inclusive; ``None`` is unbounded).
:func:`eval_interval` bounds an index expression when some variables range over intervals
(the loops inside a compute_at point) and the others are fixed (the loops outside it).

Example:
    >>> from compiler.ir.expr import Var
    >>> from compiler.ir.printer import to_text
    >>> io, ii = Var("io"), Var("ii")
    >>> iv = eval_interval(io * 4 + ii, {ii: Interval.const(0, 3)})
    >>> to_text(iv.lo), to_text(iv.hi)
    ('io*4', 'io*4 + 3')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from compiler.arith.bounds import Env, const_bounds
from compiler.arith.linear import to_linear
from compiler.arith.simplify import simplify
from compiler.ir import expr as E
from compiler.ir import op
from compiler.ir.expr import Expr, IntImm, Var
from compiler.ir.functor import var_set


@dataclass(frozen=True)
class Interval:
    """``[lo, hi]`` inclusive; a bound of ``None`` is unknown/unbounded."""

    lo: Expr | None
    hi: Expr | None

    @staticmethod
    def point(e: Expr) -> Interval:
        return Interval(e, e)

    @staticmethod
    def const(lo: int, hi: int) -> Interval:
        return Interval(IntImm(lo), IntImm(hi))

    @staticmethod
    def from_range(min_: Expr, extent: Expr) -> Interval:
        return Interval(min_, simplify(min_ + extent - 1))

    @property
    def bounded(self) -> bool:
        return self.lo is not None and self.hi is not None

    def union(self, other: Interval, env: Env | None = None) -> Interval:
        lo = (
            None
            if self.lo is None or other.lo is None
            else simplify(op.minimum(self.lo, other.lo), env)
        )
        hi = (
            None
            if self.hi is None or other.hi is None
            else simplify(op.maximum(self.hi, other.hi), env)
        )
        return Interval(lo, hi)

    def intersect(self, other: Interval, env: Env | None = None) -> Interval:
        def pick(a: Expr | None, b: Expr | None, fn: object) -> Expr | None:
            if a is None:
                return b
            if b is None:
                return a
            return simplify(fn(a, b), env)  # type: ignore[operator]

        return Interval(pick(self.lo, other.lo, op.maximum), pick(self.hi, other.hi, op.minimum))


Dom = Mapping[Var, Interval]


def eval_interval(e: Expr, dom: Dom, env: Env | None = None) -> Interval:
    """Interval of ``e`` when each variable in ``dom`` ranges over its interval.

    Variables not in ``dom`` are fixed (the result is symbolic in them). ``env`` gives constant
    ranges used to simplify and to decide signs.

    Example:
        >>> i = Var("i")
        >>> iv = eval_interval(i // 4, {i: Interval.const(0, 15)})
        >>> (iv.lo.value, iv.hi.value)
        (0, 3)
    """
    env = env or {}
    out = _eval(e, dom, env)
    lo = None if out.lo is None else simplify(out.lo, env)
    hi = None if out.hi is None else simplify(out.hi, env)
    return Interval(lo, hi)


def _depends(e: Expr, dom: Dom) -> bool:
    return bool(dom) and any(v in dom for v in var_set(e))


def _scale(iv: Interval, k: int) -> Interval:
    if k >= 0:
        return Interval(None if iv.lo is None else iv.lo * k, None if iv.hi is None else iv.hi * k)
    return Interval(None if iv.hi is None else iv.hi * k, None if iv.lo is None else iv.lo * k)


def _add(a: Interval, b: Interval) -> Interval:
    lo = None if a.lo is None or b.lo is None else a.lo + b.lo
    hi = None if a.hi is None or b.hi is None else a.hi + b.hi
    return Interval(lo, hi)


def _eval(e: Expr, dom: Dom, env: Env) -> Interval:
    if not _depends(e, dom):
        return Interval.point(e)
    if isinstance(e, Var):
        return dom[e]
    if isinstance(e, E.Add | E.Sub | E.Mul) and e.dtype.is_int:
        form = to_linear(e)
        if not (len(form.terms) == 1 and next(iter(form.terms)) is e):
            acc = Interval.point(IntImm(form.const, e.dtype))
            for atom, coeff in form.terms.items():
                acc = _add(acc, _scale(_eval(atom, dom, env), coeff))
            return acc
        if isinstance(e, E.Mul):
            return _mul(e, dom, env)
    if isinstance(e, E.FloorDiv) and not _depends(e.b, dom):
        lo_b, hi_b = const_bounds(e.b, env)
        a = _eval(e.a, dom, env)
        if lo_b is not None and lo_b > 0:
            return Interval(
                None if a.lo is None else op.floordiv(a.lo, e.b),
                None if a.hi is None else op.floordiv(a.hi, e.b),
            )
        return Interval(None, None)
    if isinstance(e, E.FloorMod) and not _depends(e.b, dom):
        lo_b, hi_b = const_bounds(e.b, env)
        if lo_b is not None and lo_b > 0:
            a = _eval(e.a, dom, env)
            if a.bounded:
                # If the whole range stays inside one period, x % c is x - period_start.
                lo_c, hi_c = const_bounds(simplify(a.hi - a.lo, env), env)  # type: ignore[operator]
                if isinstance(e.b, IntImm) and hi_c is not None and hi_c < e.b.value:
                    q_lo = simplify(op.floordiv(a.lo, e.b), env)  # type: ignore[arg-type]
                    q_hi = simplify(op.floordiv(a.hi, e.b), env)  # type: ignore[arg-type]
                    if q_lo == q_hi:
                        return Interval(
                            simplify(op.floormod(a.lo, e.b), env),  # type: ignore[arg-type]
                            simplify(op.floormod(a.hi, e.b), env),  # type: ignore[arg-type]
                        )
            return Interval(IntImm(0, e.dtype), simplify(e.b - 1, env))
        return Interval(None, None)
    if isinstance(e, E.Min | E.Max):
        a, b = _eval(e.a, dom, env), _eval(e.b, dom, env)
        fn = op.minimum if isinstance(e, E.Min) else op.maximum
        lo = None if a.lo is None or b.lo is None else fn(a.lo, b.lo)
        hi = None if a.hi is None or b.hi is None else fn(a.hi, b.hi)
        if isinstance(e, E.Min) and hi is None:
            hi = a.hi if a.hi is not None else b.hi
        if isinstance(e, E.Max) and lo is None:
            lo = a.lo if a.lo is not None else b.lo
        return Interval(lo, hi)
    if isinstance(e, E.IfThenElse):
        a, b = _eval(e.then_value, dom, env), _eval(e.else_value, dom, env)
        return Interval(
            None if a.lo is None or b.lo is None else op.minimum(a.lo, b.lo),
            None if a.hi is None or b.hi is None else op.maximum(a.hi, b.hi),
        )
    if isinstance(e, E.Cast) and e.dtype.is_int and e.value.dtype.is_int:
        if e.dtype.bits >= e.value.dtype.bits:
            a = _eval(e.value, dom, env)
            return Interval(
                None if a.lo is None else op.cast(e.dtype, a.lo),
                None if a.hi is None else op.cast(e.dtype, a.hi),
            )
    c_lo, c_hi = const_bounds(e, _relaxed_env(dom, env))
    return Interval(
        None if c_lo is None else IntImm(c_lo, e.dtype),
        None if c_hi is None else IntImm(c_hi, e.dtype),
    )


def _mul(e: E.Mul, dom: Dom, env: Env) -> Interval:
    a, b = _eval(e.a, dom, env), _eval(e.b, dom, env)
    for x, y in ((a, b), (b, a)):
        if x.lo is not None and x.lo is x.hi:
            lo, _ = const_bounds(x.lo, env)
            if lo is not None and lo >= 0 and y.bounded:
                return Interval(y.lo * x.lo, y.hi * x.lo)
    lo, hi = const_bounds(e, _relaxed_env(dom, env))
    return Interval(
        None if lo is None else IntImm(lo, e.dtype), None if hi is None else IntImm(hi, e.dtype)
    )


def _relaxed_env(dom: Dom, env: Env) -> dict[Var, tuple[int, int]]:
    """Constant ranges of the relaxed variables (as far as their bounds are constant)."""
    out = dict(env)
    for v, iv in dom.items():
        if iv.lo is None or iv.hi is None:
            continue
        lo, _ = const_bounds(iv.lo, env)
        _, hi = const_bounds(iv.hi, env)
        if lo is not None and hi is not None:
            out[v] = (lo, hi)
    return out
