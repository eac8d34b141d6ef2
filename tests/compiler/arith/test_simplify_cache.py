"""The simplifier's cache: the same answers as without it, keyed by the ranges that matter."""

from __future__ import annotations

import importlib

from compiler.arith import simplify, simplify_cache
from compiler.ir import Var, op, to_text

simplify_module = importlib.import_module("compiler.arith.simplify")


def test_cached_answers_equal_uncached_ones_under_each_range():
    i, j = Var("i"), Var("j")
    e = (i * 4 + j) // 4
    plain = [simplify(e, env) for env in ({j: (0, 3)}, {j: (0, 7)}, {})]
    with simplify_cache():
        cached = [simplify(e, env) for env in ({j: (0, 3)}, {j: (0, 7)}, {})]
        again = [simplify(e, env) for env in ({j: (0, 3)}, {j: (0, 7)}, {})]
    assert [to_text(x) for x in cached] == [to_text(x) for x in plain]
    assert all(a is b for a, b in zip(cached, again, strict=True))
    assert to_text(cached[0]) == "i" and to_text(cached[1]) != "i"


def test_ranges_of_other_variables_share_an_entry():
    i, j, k = Var("i"), Var("j"), Var("k")
    e = op.minimum(i + 3, 16)
    with simplify_cache():
        a = simplify(e, {i: (0, 8), j: (0, 1)})
        b = simplify(e, {i: (0, 8), k: (5, 9)})
        assert a is b and to_text(a) == "i + 3"


def test_the_cache_lives_as_long_as_the_outermost_scope():
    i = Var("i")
    with simplify_cache():
        with simplify_cache():
            simplify(i * 2 // 2)
        assert simplify_module._MEMO
    assert not simplify_module._MEMO
    simplify(i * 2 // 2)
    assert not simplify_module._MEMO  # no caching outside a scope
