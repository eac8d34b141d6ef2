"""Host expressions (``compiler.targets.vta.host``): each compiles to one Python function whose
values are those of the tree of closures it replaces, on random integer expressions over every
operator the host evaluates; undefined variables and unsupported nodes are named; expressions
too deep for one Python expression still evaluate."""

import random

import pytest

from compiler.ir import Var, op
from compiler.ir import expr as E
from compiler.targets.vta.errors import VTATargetError
from compiler.targets.vta.host import (
    MAX_SOURCE_DEPTH,
    _closure,
    compile_expr,
    compile_exprs,
)

VARS = [Var(n) for n in "ijk"]


def _random_expr(rng: random.Random, depth: int) -> E.Expr:
    """An int32 expression; conditions appear as the operand of a select."""
    if depth == 0 or rng.random() < 0.15:
        if rng.random() < 0.6:
            return rng.choice(VARS)
        return E.IntImm(rng.randint(-40, 40), VARS[0].dtype)
    a, b = _random_expr(rng, depth - 1), _random_expr(rng, depth - 1)
    positive = op.maximum(b, 1)
    shift = op.minimum(op.maximum(b, 0), 5)
    choices = [
        lambda: a + b, lambda: a - b, lambda: a * b, lambda: a // positive, lambda: a % positive,
        lambda: op.minimum(a, b), lambda: op.maximum(a, b), lambda: a << shift,
        lambda: a >> shift, lambda: op.if_then_else(_random_cond(rng, a, b), a, b),
    ]  # fmt: skip
    return rng.choice(choices)()


def _random_cond(rng: random.Random, a: E.Expr, b: E.Expr) -> E.Expr:
    choices = [
        lambda: op.equal(a, b), lambda: op.not_equal(a, b), lambda: op.less(a, b),
        lambda: op.less_equal(a, b), lambda: op.greater(a, b), lambda: op.greater_equal(a, b),
        lambda: op.logical_and(op.less(a, b), op.less(b, 7)),
        lambda: op.logical_or(op.greater(a, b), op.equal(a, 3)),
        lambda: op.logical_not(op.less(a, b)),
    ]  # fmt: skip
    return rng.choice(choices)()


def test_values_equal_the_closures_on_random_expressions():
    rng = random.Random(0)
    for _ in range(600):
        e = _random_expr(rng, rng.randint(1, 6))
        fast, slow = compile_expr(e), _closure(e)
        for _ in range(4):
            env = {v: rng.randint(-60, 60) for v in VARS}
            assert fast(env) == slow(env), e


def test_compile_exprs_gives_every_value_in_order():
    i, j = VARS[:2]
    f = compile_exprs([i * 3, j - i, E.IntImm(7, i.dtype), op.minimum(i, j)])
    assert f({i: 2, j: 5}) == (6, 3, 7, 2)
    assert compile_exprs([])({}) == ()


def test_undefined_variable_is_named():
    i, j = VARS[:2]
    with pytest.raises(VTATargetError, match="host code uses j, which no enclosing loop"):
        compile_expr(i + j)({i: 1})
    with pytest.raises(VTATargetError, match="host code uses j"):
        compile_exprs([i, j * 2])({i: 1})


def test_deeper_than_one_python_expression_still_evaluates():
    i = VARS[0]
    e = i
    for k in range(4 * MAX_SOURCE_DEPTH):
        e = e + k if k % 2 else op.minimum(e, 10_000)
    want = _closure(e)({i: 5})
    assert compile_expr(e)({i: 5}) == want
    assert compile_exprs([e, i])({i: 5}) == (want, 5)


def test_a_float_is_not_host_code():
    with pytest.raises(VTATargetError, match="the host cannot evaluate"):
        compile_expr(op.cast("float32", VARS[0]) * 2.0)
