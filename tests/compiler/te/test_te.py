"""Tensor expressions: shape inference and errors that name the culprit."""

from __future__ import annotations

import pytest

from compiler import te
from compiler.errors import DTypeError, ShapeError, TEError


def test_compute_infers_shape_and_dtype():
    A = te.placeholder((8, 16), "int8", name="A")
    k = te.reduce_axis(16, name="k")
    C = te.compute(
        (8, 8), lambda i, j: te.sum(A[i, k].astype("int32") * A[j, k].astype("int32"), axis=k)
    )
    assert C.shape == (8, 8) and C.dtype.name == "int32"
    assert C.op.input_tensors() == [A]
    assert [a.name for a in C.op.axis] == ["i", "j"]


def test_wrong_number_of_indices():
    A = te.placeholder((8, 16), name="A")
    with pytest.raises(ShapeError, match=r"A has 2 dimensions \(8, 16\) but is indexed with 1"):
        te.compute((8,), lambda i: A[i])


def test_out_of_bounds_read_is_reported_unless_guarded():
    A = te.placeholder((8,), name="A")
    with pytest.raises(ShapeError, match=r"reads A out of bounds: dimension 0 .* \[1, 8\]"):
        te.compute((8,), lambda i: A[i + 1], name="B")
    te.compute((8,), lambda i: te.if_then_else(i < 7, A[i + 1], 0.0), name="B")


def test_dtype_errors():
    A = te.placeholder((4,), "int8", name="A")
    B = te.placeholder((4,), "int32", name="B")
    with pytest.raises(DTypeError, match="int8 vs int32"):
        te.compute((4,), lambda i: A[i] + B[i])
    with pytest.raises(DTypeError, match="index"):
        te.compute((4,), lambda i: A[te.const(1.5)])
    with pytest.raises(DTypeError):
        te.placeholder((4,), "int7")


def test_reduction_must_be_the_whole_body():
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis(4, name="k")
    with pytest.raises(TEError, match="must be the whole body"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) + 1.0)
    with pytest.raises(TEError, match="not a reduction axis"):
        te.compute((4,), lambda i: te.sum(A[i, 0], axis=[i]))  # type: ignore[list-item]


def test_stray_variables_and_bad_shapes():
    A = te.placeholder((4,), name="A")
    stray = te.Var("z")
    with pytest.raises(TEError, match="variable z is not an axis"):
        te.compute((4,), lambda i: A[stray])
    with pytest.raises(ShapeError, match="must be positive"):
        te.placeholder((0, 3), name="X")
    with pytest.raises(ShapeError, match="takes 1 index arguments"):
        te.compute((4, 4), lambda i: A[i])
