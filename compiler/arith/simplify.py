"""Expression simplifier.

Integer index arithmetic (int32/int64) is put in affine normal form; floor division and modulo
by constants are resolved with the variables' constant ranges; min/max and comparisons that
bounds decide are folded. Float arithmetic is never reassociated (only constants are folded),
so the simplifier does not change numerical results.

Example:
    >>> from compiler.ir.expr import Var
    >>> from compiler.ir.printer import to_text
    >>> io, ii = Var("io"), Var("ii")
    >>> to_text(simplify((io * 4 + ii) // 4, {ii: (0, 3)}))
    'io'
    >>> to_text(simplify((io * 4 + ii) % 4, {ii: (0, 3)}))
    'ii'
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from compiler.arith.bounds import Env, const_bounds, prove
from compiler.arith.linear import LinearForm, _linear, from_linear, is_linear_dtype, to_linear
from compiler.ir import expr as E
from compiler.ir import op
from compiler.ir.expr import Expr, IntImm, Var
from compiler.ir.functor import rewrite, var_set
from compiler.ir.node import Node

_BUILDERS = {
    E.Add: op.add,
    E.Sub: op.sub,
    E.Mul: op.mul,
    E.Div: op.div,
    E.FloorDiv: op.floordiv,
    E.FloorMod: op.floormod,
    E.Min: op.minimum,
    E.Max: op.maximum,
    E.ShiftLeft: op.shift_left,
    E.ShiftRight: op.shift_right,
    E.EQ: op.equal,
    E.NE: op.not_equal,
    E.LT: op.less,
    E.LE: op.less_equal,
    E.GT: op.greater,
    E.GE: op.greater_equal,
    E.And: op.logical_and,
    E.Or: op.logical_or,
}


def simplify(expr: Expr, env: Env | None = None) -> Expr:
    """Simplify ``expr`` given constant ranges ``env`` (var -> (lo, hi), inclusive).

    Example:
        >>> from compiler.ir.expr import Var
        >>> from compiler.ir.printer import to_text
        >>> i = Var("i")
        >>> to_text(simplify(op.minimum(i + 3, 16), {i: (0, 8)}))
        'i + 3'
    """
    return Simplifier(env or {}).expr(expr)


#: (expression, the ranges of its variables) -> simplified expression, while a
#: :func:`simplify_cache` is open: lowering asks for the same index expressions under the same
#: loop ranges many times (bound inference, the statement simplifier, interval evaluation).
_MEMO: dict[tuple[Expr, frozenset[tuple[Var, tuple[int, int]]]], Expr] = {}
_MEMO_LIMIT = 200_000
_MEMO_OPEN = [0]


@contextmanager
def simplify_cache() -> Iterator[None]:
    """Cache simplified expressions until the outermost ``with`` ends (lowering one function):
    the cache holds its expressions alive, so it lives no longer than the IR it serves.

    Example:
        >>> i = Var("i")
        >>> with simplify_cache():
        ...     simplify(i * 4 // 4) is simplify(i * 4 // 4)
        True
    """
    _MEMO_OPEN[0] += 1
    try:
        yield
    finally:
        _MEMO_OPEN[0] -= 1
        if not _MEMO_OPEN[0]:
            _MEMO.clear()


#: leaves: nothing to simplify
_LEAVES = (Var, IntImm, E.FloatImm)
#: the operations of an affine form
_LINEAR_OPS = (E.Add, E.Sub, E.Mul)


class Simplifier:
    """Simplifies expressions under one variable-range environment.

    The result depends only on the expression's structure and the ranges of the variables in
    it, so inside :func:`simplify_cache` it is cached under that key (the IR is immutable and
    compared structurally).
    """

    def __init__(self, env: Mapping[Var, tuple[int, int]]) -> None:
        self.env = env

    def expr(self, e: Expr) -> Expr:
        if type(e) in _LEAVES:
            return e
        if not _MEMO_OPEN[0]:
            return rewrite(e, self._post, self._pre)
        env = self.env
        try:
            key = (e, frozenset([(v, env[v]) for v in var_set(e) if v in env]))
            hit = _MEMO.get(key)
        except TypeError:  # a range that does not hash: simplified without the cache
            return rewrite(e, self._post, self._pre)
        if hit is None:
            hit = rewrite(e, self._post, self._pre)
            if len(_MEMO) >= _MEMO_LIMIT:
                _MEMO.clear()
            _MEMO[key] = hit
        return hit

    def _pre(self, n: Node) -> Node | None:
        """A sum or product of integer indices whole: its affine form's atoms simplified, then
        the form put in normal form once (post-order, every partial sum of a chain was put in
        normal form, then rebuilt again by the sum above it)."""
        if not isinstance(n, _LINEAR_OPS):
            return None
        dtype = n.dtype
        if dtype.lanes != 1 or not is_linear_dtype(dtype):
            return None
        form = _linear(n)
        if n in form.terms:
            return None  # a product of two non-constants: an atom of its own
        out = LinearForm(dtype, {}, form.const)
        for atom, coeff in form.terms.items():
            done = atom if type(atom) in _LEAVES else rewrite(atom, self._post, self._pre)
            part = _linear(done)
            out.const += part.const * coeff
            for a, c in part.terms.items():
                out.add_term(a, c * coeff)
        return self._canonical(out)

    def _post(self, n: Node) -> Node | None:
        if type(n) in _LEAVES or not isinstance(n, Expr):
            return None
        scalar = n.dtype.lanes == 1
        if isinstance(n, E.Add | E.Sub | E.Mul) and scalar and is_linear_dtype(n.dtype):
            return self._canonical(to_linear(n))
        if isinstance(n, E.FloorDiv) and scalar:
            return self._floordiv(n)
        if isinstance(n, E.FloorMod) and scalar:
            return self._floormod(n)
        if isinstance(n, E.Min | E.Max) and scalar and n.dtype.is_int:
            return self._minmax(n)
        if isinstance(n, E.CmpOp | E.And | E.Or | E.Not) and scalar:
            decided = prove(n, self.env)
            if decided is not None:
                return IntImm(int(decided), n.dtype)
        if isinstance(n, E.IfThenElse) and n.cond.dtype.lanes == 1:
            decided = prove(n.cond, self.env)
            if decided is not None:
                return n.then_value if decided else n.else_value
        if isinstance(n, E.Cast):
            return op.cast(n.dtype, n.value)
        if isinstance(n, E.Not):
            return op.logical_not(n.a)
        builder = _BUILDERS.get(type(n))
        if (
            builder is not None
            and isinstance(n, E.TWO_OPERANDS)
            and (isinstance(n.a, E.IntImm | E.FloatImm) or isinstance(n.b, E.IntImm | E.FloatImm))
        ):
            return builder(n.a, n.b)
        return None

    # Affine normal form ---------------------------------------------------------------------
    def _canonical(self, form: LinearForm) -> Expr:
        self._merge_div_mod(form)
        out = self._distribute_minmax(form)
        return out if out is not None else from_linear(form)

    @staticmethod
    def _merge_div_mod(form: LinearForm) -> None:
        """``(x // c) * c * k + (x % c) * k`` becomes ``x * k`` (fuse followed by split)."""
        for atom, k in list(form.terms.items()):
            if not isinstance(atom, E.FloorMod) or not isinstance(atom.b, IntImm):
                continue
            c = atom.b.value
            partner = E.FloorDiv(atom.a, atom.b)
            if c > 0 and form.terms.get(partner) == k * c and form.terms.get(atom) == k:
                form.terms.pop(atom)
                form.terms.pop(partner)
                merged = form.plus(to_linear(atom.a).scaled(k))
                form.terms, form.const = merged.terms, merged.const

    def _distribute_minmax(self, form: LinearForm) -> Expr | None:
        """``min(a, b) + t`` becomes ``min(a + t, b + t)`` when one side folds to a constant."""
        minmax = [(a, c) for a, c in form.terms.items() if isinstance(a, E.Min | E.Max)]
        if len(minmax) != 1 or abs(minmax[0][1]) != 1 or (len(form.terms) < 2 and form.const == 0):
            return None
        atom, coeff = minmax[0]
        rest = LinearForm(
            form.dtype, {a: c for a, c in form.terms.items() if a is not atom}, form.const
        )
        rest_expr = from_linear(rest)
        if coeff == 1:
            left, right = self.expr(atom.a + rest_expr), self.expr(atom.b + rest_expr)
            cls = type(atom)
        else:
            left, right = self.expr(rest_expr - atom.a), self.expr(rest_expr - atom.b)
            cls = E.Max if isinstance(atom, E.Min) else E.Min
        if not (isinstance(left, IntImm) or isinstance(right, IntImm)):
            return None
        return self._minmax(cls(left, right))

    # Division -------------------------------------------------------------------------------
    def _split(self, a: Expr, c: int) -> tuple[LinearForm, LinearForm]:
        """Split ``a`` into ``c * quotient + remainder`` with exact integer coefficients."""
        form = to_linear(a)
        quot = LinearForm(form.dtype, {}, form.const // c)
        rem = LinearForm(form.dtype, {}, form.const % c)
        for atom, coeff in form.terms.items():
            if coeff % c == 0:
                quot.add_term(atom, coeff // c)
            else:
                rem.add_term(atom, coeff)
        return quot, rem

    def _floordiv(self, n: E.FloorDiv) -> Expr:
        a, b = n.a, n.b
        if not isinstance(b, IntImm) or b.value <= 0 or not is_linear_dtype(n.dtype):
            return op.floordiv(a, b)
        c = b.value
        if isinstance(a, E.FloorDiv) and isinstance(a.b, IntImm) and a.b.value > 0:
            return self._floordiv(E.FloorDiv(a.a, IntImm(a.b.value * c, n.dtype)))
        quot, rem = self._split(a, c)
        lo, hi = const_bounds(from_linear(rem), self.env)
        if lo is not None and hi is not None and lo // c == hi // c:
            quot.const += lo // c
            return from_linear(quot)
        if quot.is_const and quot.const == 0:
            return op.floordiv(a, b)
        return self._canonical(quot.plus(to_linear(E.FloorDiv(from_linear(rem), b))))

    def _floormod(self, n: E.FloorMod) -> Expr:
        a, b = n.a, n.b
        if not isinstance(b, IntImm) or b.value <= 0 or not is_linear_dtype(n.dtype):
            return op.floormod(a, b)
        c = b.value
        if isinstance(a, E.FloorMod) and isinstance(a.b, IntImm) and a.b.value % c == 0:
            return self._floormod(E.FloorMod(a.a, b))
        _, rem = self._split(a, c)
        rem_expr = from_linear(rem)
        lo, hi = const_bounds(rem_expr, self.env)
        if lo is not None and hi is not None and lo // c == hi // c:
            rem.const -= (lo // c) * c
            return from_linear(rem)
        return (
            E.FloorMod(rem_expr, b)
            if not isinstance(rem_expr, IntImm)
            else IntImm(rem_expr.value % c, n.dtype)
        )

    # Min / max ------------------------------------------------------------------------------
    def _minmax(self, n: E.Min | E.Max) -> Expr:
        a, b = n.a, n.b
        if isinstance(a, IntImm) and isinstance(b, IntImm):
            return op.minimum(a, b) if isinstance(n, E.Min) else op.maximum(a, b)
        if a == b:
            return a
        # min(min(x, c1), c2) -> min(x, min(c1, c2)) (and the same for max)
        if type(a) is type(n) and isinstance(b, IntImm) and isinstance(a.b, IntImm):
            return self._minmax(type(n)(a.a, self._minmax(type(n)(a.b, b))))
        if is_linear_dtype(n.dtype):
            a_le_b = self.prove_le(a, b)
            a_ge_b = not a_le_b and self.prove_le(b, a)
            if isinstance(n, E.Min):
                if a_le_b:
                    return a
                if a_ge_b:
                    return b
            else:
                if a_le_b:
                    return b
                if a_ge_b:
                    return a
        return type(n)(a, b)

    def prove_le(self, x: Expr, y: Expr, depth: int = 4) -> bool:
        """True if ``x <= y`` is provable (through nested min/max as well as bounds)."""
        diff = to_linear(x).plus(to_linear(y), -1)
        _, hi = const_bounds(from_linear(diff), self.env)
        if hi is not None and hi <= 0:
            return True
        if depth == 0:
            return False
        d = depth - 1
        if isinstance(y, E.Min):
            return self.prove_le(x, y.a, d) and self.prove_le(x, y.b, d)
        if isinstance(x, E.Max):
            return self.prove_le(x.a, y, d) and self.prove_le(x.b, y, d)
        if isinstance(x, E.Min) and (self.prove_le(x.a, y, d) or self.prove_le(x.b, y, d)):
            return True
        if isinstance(y, E.Max) and (self.prove_le(x, y.a, d) or self.prove_le(x, y.b, d)):
            return True
        return False
