"""Simplifier, linear forms, constant bounds and symbolic intervals."""

from __future__ import annotations

from compiler.arith import (
    Interval,
    const_bounds,
    detect_linear_equation,
    eval_interval,
    prove,
    simplify,
)
from compiler.arith.bounds import tight_upper_bound
from compiler.ir import Var, op, to_text


def test_split_and_fuse_index_arithmetic_simplifies():
    io, ii, f = Var("io"), Var("ii"), Var("f")
    env = {ii: (0, 3), io: (0, 7)}
    assert to_text(simplify((io * 4 + ii) // 4, env)) == "io"
    assert to_text(simplify((io * 4 + ii) % 4, env)) == "ii"
    assert to_text(simplify((f // 7) * 7 + f % 7)) == "f"
    assert to_text(simplify((io * 8 + 4) // 4)) == "io*2 + 1"


def test_min_max_decided_by_bounds_and_nesting():
    i = Var("i")
    assert to_text(simplify(op.minimum(i + 3, 16), {i: (0, 8)})) == "i + 3"
    assert (
        to_text(simplify(op.minimum(i * 4 + 3, 13) - i * 4 + 1, {i: (0, 3)})) == "min(4, 14 - i*4)"
    )
    a = i * 5
    nested = op.maximum(op.minimum(a + 4, 13), op.minimum(a + 6, 15))
    assert to_text(simplify(nested)) == "min(i*5 + 6, 15)"


def test_float_arithmetic_is_not_reassociated():
    x = Var("x", "float32")
    e = (x + 1.0) - 1.0
    assert to_text(simplify(e)) == "x + 1.0f - 1.0f"


def test_detect_linear_equation():
    i, j, k = Var("i"), Var("j"), Var("k")
    assert detect_linear_equation(i * 64 + j * 4 + 3, [i, j]) == [64, 4, 3]
    coeffs = detect_linear_equation(i * 16 + k, [i, j])
    assert coeffs[:2] == [16, 0] and coeffs[2] == k
    assert detect_linear_equation(i // 2, [i]) is None
    assert detect_linear_equation(i * j, [i]) is None


def test_bounds_and_proofs():
    i = Var("i")
    assert const_bounds(i * 4 + 3, {i: (0, 7)}) == (3, 31)
    assert const_bounds((i + 5) // 4, {i: (0, 10)}) == (1, 3)
    assert const_bounds(i % 8) == (0, 7)
    assert prove(i * 4 + 3 < 32, {i: (0, 7)}) is True
    assert prove(i < 5, {i: (0, 7)}) is None
    y = Var("y")
    e = op.minimum(y * 4 + 4, 9) - op.maximum(y * 4 - 1, 0) + 1
    assert tight_upper_bound(e, {y: (0, 2)}) == 6


def test_intervals_relax_inner_variables():
    io, ii = Var("io"), Var("ii")
    iv = eval_interval(io * 4 + ii, {ii: Interval.const(0, 3)})
    assert (to_text(iv.lo), to_text(iv.hi)) == ("io*4", "io*4 + 3")
    iv = eval_interval((io * 4 + ii) // 2, {ii: Interval.const(0, 3)})
    assert (to_text(iv.lo), to_text(iv.hi)) == ("io*2", "io*2 + 1")
