"""Affine (linear) forms of integer index expressions.

An index expression is split into ``sum(coeff * atom) + const`` where atoms are variables or
non-affine sub-expressions (``x // 4``, ``min(a, b)``, a product of two variables...). This is the
basis of the simplifier and of :func:`detect_linear_equation`, which accelerator passes use to read
strides of a loop nest out of an index (the way TVM's ``detect_linear_equation`` is used by DMA and
micro-op folding passes).

Example:
    >>> from compiler.ir.expr import Var
    >>> i, j = Var("i"), Var("j")
    >>> detect_linear_equation(i * 64 + j * 4 + 3, [i, j])
    [64, 4, 3]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from compiler.ir import expr as E
from compiler.ir.dtype import DType
from compiler.ir.expr import Expr, IntImm, Var
from compiler.ir.functor import uses_var

#: Integer dtypes on which the simplifier may reassociate arithmetic.
LINEAR_DTYPES = frozenset({"int32", "int64"})


def is_linear_dtype(dtype: DType) -> bool:
    return dtype.name in LINEAR_DTYPES


@dataclass
class LinearForm:
    """``sum(terms[atom] * atom) + const``; ``terms`` keeps insertion order."""

    dtype: DType
    terms: dict[Expr, int] = field(default_factory=dict)
    const: int = 0

    def add_term(self, atom: Expr, coeff: int) -> None:
        if coeff == 0:
            return
        new = self.terms.get(atom, 0) + coeff
        if new == 0:
            self.terms.pop(atom, None)
        else:
            self.terms[atom] = new

    def scaled(self, k: int) -> LinearForm:
        out = LinearForm(self.dtype, {a: c * k for a, c in self.terms.items()}, self.const * k)
        out.terms = {a: c for a, c in out.terms.items() if c != 0}
        return out

    def plus(self, other: LinearForm, sign: int = 1) -> LinearForm:
        out = LinearForm(self.dtype, dict(self.terms), self.const + sign * other.const)
        for atom, coeff in other.terms.items():
            out.add_term(atom, sign * coeff)
        return out

    @property
    def is_const(self) -> bool:
        return not self.terms


def to_linear(expr: Expr) -> LinearForm:
    """Split an integer expression into its affine form (non-affine parts become atoms).

    The form is the caller's to change: the one kept on the node (see :func:`_linear`) is
    copied.

    Example:
        >>> i = Var("i")
        >>> f = to_linear((i + 2) * 3 - i)
        >>> f.terms[i], f.const
        (2, 6)
    """
    form = _linear(expr)
    return LinearForm(form.dtype, dict(form.terms), form.const)


def _linear(expr: Expr) -> LinearForm:
    """:func:`to_linear`'s form, kept on the node (the simplifier asks for the form of every
    sum it rebuilds, whose operands it asked for just before): never changed once made."""
    if isinstance(expr, IntImm):
        return LinearForm(expr.dtype, {}, expr.value)
    fields = expr.__dict__
    hit = fields.get("_linear")
    if hit is not None:
        return hit
    dtype = expr.dtype
    out: LinearForm | None = None
    if isinstance(expr, E.Add | E.Sub) and is_linear_dtype(dtype):
        out = _linear(expr.a).plus(_linear(expr.b), 1 if isinstance(expr, E.Add) else -1)
    elif isinstance(expr, E.Mul) and is_linear_dtype(dtype):
        a, b = _linear(expr.a), _linear(expr.b)
        if b.is_const:
            out = a.scaled(b.const)
        elif a.is_const:
            out = b.scaled(a.const)
    if out is None:
        out = LinearForm(dtype, {expr: 1}, 0)
    fields["_linear"] = out
    return out


def _term(atom: Expr, coeff: int, dtype: DType) -> Expr:
    if coeff == 1:
        return atom
    return E.Mul(atom, IntImm(coeff, dtype))


def from_linear(form: LinearForm) -> Expr:
    """Rebuild an expression: larger coefficients first, then subtraction of negative terms,
    then the constant (so ``i*64 + j*4 + 3`` and ``i - 1`` read naturally).

    Example:
        >>> i, j = Var("i"), Var("j")
        >>> from compiler.ir.printer import to_text
        >>> to_text(from_linear(to_linear(j + i * 64 - 1)))
        'i*64 + j - 1'
    """
    dtype, const = form.dtype, form.const
    items = list(form.terms.items())
    order = sorted(range(len(items)), key=lambda k: -abs(items[k][1]))
    pos = [items[k] for k in order if items[k][1] > 0]
    neg = [items[k] for k in order if items[k][1] < 0]
    out: Expr | None = None
    for atom, coeff in pos:
        t = _term(atom, coeff, dtype)
        out = t if out is None else E.Add(out, t)
    for atom, coeff in neg:
        if out is None:
            if form.const > 0:
                out = E.Sub(IntImm(form.const, dtype), _term(atom, -coeff, dtype))
                form = LinearForm(dtype, form.terms, 0)
            else:
                out = _term(atom, coeff, dtype)
            continue
        out = E.Sub(out, _term(atom, -coeff, dtype))
    if out is None:
        return IntImm(form.const, dtype)
    if form.const > 0:
        out = E.Add(out, IntImm(form.const, dtype))
    elif form.const < 0:
        out = E.Sub(out, IntImm(-form.const, dtype))
    if is_linear_dtype(dtype) and "_linear" not in out.__dict__:
        # the form :func:`to_linear` finds in what was built: the terms in the order built
        out.__dict__["_linear"] = LinearForm(dtype, dict(pos + neg), const)
    return out


def linear_coefficient(expr: Expr, var: Var) -> int | None:
    """The coefficient of ``var`` in ``expr``, or None when it occurs non-linearly: the first
    entry of :func:`detect_linear_equation` ``(expr, [var])``, without rebuilding the rest.

    Example:
        >>> i, j = Var("i"), Var("j")
        >>> [linear_coefficient(e, i) for e in (i * 16 + j, j, i // 2)]
        [16, 0, None]
    """
    form = _linear(expr)
    for atom in form.terms:
        if atom is not var and atom != var and uses_var(atom, var):
            return None
    return form.terms.get(var, 0)


def detect_linear_equation(expr: Expr, variables: Sequence[Var]) -> list[int | Expr] | None:
    """Coefficients of ``variables`` in ``expr`` followed by the remaining base expression.

    Returns ``[c_0, ..., c_{n-1}, base]`` with integer coefficients, where ``base`` is an ``int``
    when it is constant and an expression otherwise; ``None`` when a variable occurs
    non-linearly (inside a division, a min, a product with another variable...).

    Example:
        >>> i, j, k = Var("i"), Var("j"), Var("k")
        >>> detect_linear_equation(i * 16 + k, [i, j])
        [16, 0, k]
        >>> detect_linear_equation(i // 2, [i]) is None
        True
    """
    form = to_linear(expr)
    coeffs: list[int | Expr] = []
    rest = LinearForm(form.dtype, dict(form.terms), form.const)
    for v in variables:
        coeffs.append(rest.terms.pop(v, 0))
    for atom in rest.terms:
        if any(uses_var(atom, v) for v in variables):
            return None
    base = from_linear(rest)
    coeffs.append(base.value if isinstance(base, IntImm) else base)
    return coeffs
