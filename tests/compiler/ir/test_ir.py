"""IR nodes: immutability, structural equality, dtype rules, folding and printing."""

from __future__ import annotations

import dataclasses

import pytest

from compiler.errors import DTypeError
from compiler.ir import Buffer, IntImm, Var, as_dtype, const, op, to_text
from compiler.ir import expr as E


def test_nodes_are_immutable_and_hash_structurally():
    i = Var("i")
    a, b = i * 4 + 1, i * 4 + 1
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.a = i  # type: ignore[misc]


def test_variables_with_the_same_name_stay_distinct():
    assert Var("i") != Var("i")
    i = Var("i")
    j = Var("i")
    assert to_text(i + j) == "i + i_1"


def test_symbolic_expression_has_no_truth_value():
    i = Var("i")
    with pytest.raises(TypeError, match="no truth value"):
        bool(i < 3)


def test_dtype_mismatch_names_both_dtypes():
    x8, x32 = Var("x", "int8"), Var("y", "int32")
    with pytest.raises(DTypeError, match="int8 vs int32"):
        _ = x8 + x32
    assert (x8 + 1).dtype == as_dtype("int8")
    with pytest.raises(DTypeError, match="does not fit in int8"):
        _ = x8 + 300
    with pytest.raises(DTypeError, match="'/' needs float"):
        _ = x32 / 2
    with pytest.raises(DTypeError, match="bool"):
        op.if_then_else(True, 1, 2)  # type: ignore[arg-type]


def test_constant_folding_wraps_like_the_dtype():
    assert op.cast("int8", const(200)).value == -56  # type: ignore[attr-defined]
    assert op.add(const(127, "int8"), const(1, "int8")).value == -128  # type: ignore[attr-defined]
    assert op.floordiv(const(-7), const(2)).value == -4  # type: ignore[attr-defined]
    assert op.floormod(const(-7), const(2)).value == 1  # type: ignore[attr-defined]
    assert op.cast("int32", const(-2.7)).value == -2  # type: ignore[attr-defined]
    i = Var("i")
    assert op.add(i, 0) is i and op.mul(i, 1) is i


def test_printer_precedence_and_forms():
    i, j = Var("i"), Var("j")
    assert to_text((i + 1) * 4) == "(i + 1)*4"
    assert to_text(i - (j - 1)) == "i - (j - 1)"
    assert to_text(op.all_of(i >= 1, i < 9)) == "i >= 1 and i < 9"
    assert to_text(op.cast("float32", i)) == "float32(i)"
    assert to_text(E.Ramp(i, IntImm(1), 8)) == "ramp(i, 1, 8)"
    B = Buffer("B", (4, 4), "float32")
    assert to_text(B[i, j] * 2.0) == "B[i, j]*2.0f"


def test_buffers_compare_by_identity():
    a, b = Buffer("A", (4,), "int8"), Buffer("A", (4,), "int8")
    assert a != b and a == a
    assert a.size == 4 and a.nbits == 32
