"""Constant bounds of integer expressions given constant ranges of their variables.

Example:
    >>> from compiler.ir.expr import Var
    >>> i = Var("i")
    >>> const_bounds(i * 4 + 3, {i: (0, 7)})
    (3, 31)
"""

from __future__ import annotations

from collections.abc import Mapping

from compiler.arith.linear import to_linear
from compiler.ir import expr as E
from compiler.ir.expr import Expr, Var

Bound = tuple[int | None, int | None]
Env = Mapping[Var, tuple[int, int]]


def _mul_bounds(a: Bound, b: Bound) -> Bound:
    if None in a or None in b:
        # Products with an unbounded side are unbounded unless the other side is 0.
        if a == (0, 0) or b == (0, 0):
            return (0, 0)
        return (None, None)
    prods = [x * y for x in a for y in b]  # type: ignore[operator]
    return (min(prods), max(prods))


def _add(a: Bound, b: Bound, sign: int = 1) -> Bound:
    if sign == 1:
        lo = None if a[0] is None or b[0] is None else a[0] + b[0]
        hi = None if a[1] is None or b[1] is None else a[1] + b[1]
    else:
        lo = None if a[0] is None or b[1] is None else a[0] - b[1]
        hi = None if a[1] is None or b[0] is None else a[1] - b[0]
    return (lo, hi)


def _dtype_bounds(e: Expr) -> Bound:
    dt = e.dtype
    if dt.is_int or dt.is_bool:
        return (int(dt.min_value), int(dt.max_value))
    return (None, None)


def const_bounds(e: Expr, env: Env | None = None) -> Bound:
    """Lower and upper constant bounds of ``e`` (``None`` where unknown).

    Example:
        >>> i = Var("i")
        >>> const_bounds((i + 5) // 4, {i: (0, 10)})
        (1, 3)
    """
    env = env or {}
    return _bounds(e, env)


def _bounds(e: Expr, env: Env) -> Bound:
    if isinstance(e, E.IntImm):
        return (e.value, e.value)
    if isinstance(e, Var):
        if e in env:
            return env[e]
        return _dtype_bounds(e) if e.dtype.bits < 32 else (None, None)
    if isinstance(e, E.Add | E.Sub | E.Mul) and e.dtype.is_int:
        if e.dtype.bits < 32:
            # Narrow arithmetic wraps around, so interval arithmetic would be unsound.
            return _dtype_bounds(e)
        form = to_linear(e)
        if len(form.terms) > 1 or (form.terms and next(iter(form.terms)) is not e):
            out: Bound = (form.const, form.const)
            for atom, coeff in form.terms.items():
                out = _add(out, _mul_bounds(_bounds(atom, env), (coeff, coeff)))
            return out
        a, b = _bounds(e.a, env), _bounds(e.b, env)
        if isinstance(e, E.Add):
            return _add(a, b)
        if isinstance(e, E.Sub):
            return _add(a, b, -1)
        return _mul_bounds(a, b)
    if isinstance(e, E.FloorDiv):
        a, b = _bounds(e.a, env), _bounds(e.b, env)
        if b[0] is not None and b[0] == b[1] and b[0] != 0:
            c = b[0]
            lo = None if a[0] is None else a[0] // c
            hi = None if a[1] is None else a[1] // c
            return (lo, hi) if c > 0 else (hi, lo)
        if b[0] is not None and b[0] > 0 and None not in a and b[1] is not None:
            cands = [x // y for x in a for y in b]  # type: ignore[operator]
            return (min(cands), max(cands))
        return (None, None)
    if isinstance(e, E.FloorMod):
        a, b = _bounds(e.a, env), _bounds(e.b, env)
        if b[0] is not None and b[0] > 0 and b[1] is not None:
            if a[0] is not None and a[1] is not None and a[0] >= 0 and a[1] < b[0]:
                return a
            if b[0] == b[1] and a[0] is not None and a[1] is not None:
                c = b[0]
                if a[0] // c == a[1] // c:
                    return (a[0] % c, a[1] % c)
            return (0, b[1] - 1)
        return (None, None)
    if isinstance(e, E.Min | E.Max):
        a, b = _bounds(e.a, env), _bounds(e.b, env)
        pick = min if isinstance(e, E.Min) else max

        def comb(x: int | None, y: int | None, is_lo: bool) -> int | None:
            if x is None or y is None:
                # min(unbounded, y) is bounded above by y; max(...) bounded below.
                if isinstance(e, E.Min) and not is_lo:
                    return y if x is None else x
                if isinstance(e, E.Max) and is_lo:
                    return y if x is None else x
                return None
            return pick(x, y)

        return (comb(a[0], b[0], True), comb(a[1], b[1], False))
    if isinstance(e, E.IfThenElse):
        a, b = _bounds(e.then_value, env), _bounds(e.else_value, env)
        lo = None if a[0] is None or b[0] is None else min(a[0], b[0])
        hi = None if a[1] is None or b[1] is None else max(a[1], b[1])
        return (lo, hi)
    if isinstance(e, E.Cast):
        if e.dtype.is_int and e.value.dtype.is_int:
            inner = _bounds(e.value, env)
            own = _dtype_bounds(e)
            if None not in inner and own[0] <= inner[0] and inner[1] <= own[1]:  # type: ignore[operator]
                return inner
            return own
        return _dtype_bounds(e)
    if isinstance(e, E.ShiftRight) and isinstance(e.b, E.IntImm) and e.b.value >= 0:
        a = _bounds(e.a, env)
        s = e.b.value
        return (None if a[0] is None else a[0] >> s, None if a[1] is None else a[1] >> s)
    if isinstance(e, E.ShiftLeft) and isinstance(e.b, E.IntImm) and e.b.value >= 0:
        a = _bounds(e.a, env)
        s = e.b.value
        return (None if a[0] is None else a[0] << s, None if a[1] is None else a[1] << s)
    if isinstance(e, E.CmpOp | E.And | E.Or | E.Not):
        return (0, 1)
    if e.dtype.is_int and e.dtype.bits < 32:
        return _dtype_bounds(e)
    return (None, None)


def prove(cond: Expr, env: Env | None = None) -> bool | None:
    """Decide an integer comparison from bounds: True, False or None (unknown).

    Example:
        >>> i = Var("i")
        >>> prove(i * 4 + 3 < 32, {i: (0, 7)})
        True
    """
    env = env or {}
    if isinstance(cond, E.IntImm) and cond.dtype.is_bool:
        return bool(cond.value)
    if isinstance(cond, E.And):
        a, b = prove(cond.a, env), prove(cond.b, env)
        if a is False or b is False:
            return False
        return True if a and b else None
    if isinstance(cond, E.Or):
        a, b = prove(cond.a, env), prove(cond.b, env)
        if a or b:
            return True
        return False if a is False and b is False else None
    if isinstance(cond, E.Not):
        a = prove(cond.a, env)
        return None if a is None else not a
    if not isinstance(cond, E.CmpOp) or not cond.a.dtype.is_int or cond.a.dtype.lanes != 1:
        return None
    diff = cond.a - cond.b if cond.a.dtype.bits >= 32 else None
    if diff is None:
        return None
    lo, hi = _bounds(diff, env)
    if isinstance(cond, E.LT):
        return True if hi is not None and hi < 0 else False if lo is not None and lo >= 0 else None
    if isinstance(cond, E.LE):
        return True if hi is not None and hi <= 0 else False if lo is not None and lo > 0 else None
    if isinstance(cond, E.GT):
        return True if lo is not None and lo > 0 else False if hi is not None and hi <= 0 else None
    if isinstance(cond, E.GE):
        return True if lo is not None and lo >= 0 else False if hi is not None and hi < 0 else None
    if isinstance(cond, E.EQ):
        if lo == hi == 0:
            return True
        return False if (lo is not None and lo > 0) or (hi is not None and hi < 0) else None
    if isinstance(cond, E.NE):
        if lo == hi == 0:
            return False
        return True if (lo is not None and lo > 0) or (hi is not None and hi < 0) else None
    return None


def tight_upper_bound(e: Expr, env: Env | None = None, max_choices: int = 64) -> int | None:
    """A constant upper bound of ``e`` that sees through ``min`` and ``max`` terms.

    ``min(a, b) + t <= a + t`` and ``<= b + t`` (and ``-max(a, b) <= -a``): each choice is
    simplified, so correlated terms cancel before bounding. Used to size buffers of regions
    like ``min(y*4 + 4, 9) - max(y*4 - 1, 0) + 1``.

    Example:
        >>> from compiler.ir import op
        >>> y = Var("y")
        >>> e = op.minimum(y * 4 + 4, 9) - op.maximum(y * 4 - 1, 0) + 1
        >>> const_bounds(e, {y: (0, 2)})[1], tight_upper_bound(e, {y: (0, 2)})
        (10, 6)
    """
    from compiler.arith.simplify import simplify

    env = env or {}
    form = to_linear(e)
    choices: list[list[tuple[Expr, Expr]]] = []
    for atom, coeff in form.terms.items():
        if (isinstance(atom, E.Min) and coeff > 0) or (isinstance(atom, E.Max) and coeff < 0):
            choices.append([(atom, atom.a), (atom, atom.b)])
    best = const_bounds(e, env)[1]
    if not choices or 2 ** len(choices) > max_choices:
        return best
    import itertools

    from compiler.arith.linear import LinearForm, from_linear

    for combo in itertools.product(*choices):
        picked = dict(combo)
        alt = LinearForm(form.dtype, {}, form.const)
        for atom, coeff in form.terms.items():
            alt = alt.plus(to_linear(picked.get(atom, atom)).scaled(coeff))
        hi = const_bounds(simplify(from_linear(alt), env), env)[1]
        if hi is not None and (best is None or hi < best):
            best = hi
    return best
