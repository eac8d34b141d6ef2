"""LLVM spellings of IR dtypes, constants and intrinsic names.

Example:
    >>> from compiler.ir.dtype import as_dtype
    >>> llvm_type(as_dtype("float32x8"))
    '<8 x float>'
    >>> float_literal(0.5)
    '0x3FE0000000000000'
"""

from __future__ import annotations

import struct

from compiler.errors import CodegenError
from compiler.ir.dtype import DType

_SCALAR = {
    ("int", 8): "i8",
    ("int", 16): "i16",
    ("int", 32): "i32",
    ("int", 64): "i64",
    ("uint", 8): "i8",
    ("uint", 16): "i16",
    ("uint", 32): "i32",
    ("uint", 64): "i64",
    ("float", 32): "float",
    ("float", 64): "double",
    ("bool", 1): "i1",
}


def scalar_type(dtype: DType) -> str:
    try:
        return _SCALAR[(dtype.kind, dtype.bits)]
    except KeyError:
        raise CodegenError(f"the CPU target does not support dtype {dtype}") from None


def llvm_type(dtype: DType) -> str:
    """LLVM type of a value of ``dtype`` (vectors for more than one lane)."""
    base = scalar_type(dtype)
    return base if dtype.lanes == 1 else f"<{dtype.lanes} x {base}>"


def storage_type(dtype: DType) -> str:
    """LLVM type of one element in memory (bool is stored as a byte)."""
    return "i8" if dtype.is_bool else scalar_type(dtype.element)


def vec_of(elem: str, lanes: int) -> str:
    return elem if lanes == 1 else f"<{lanes} x {elem}>"


def mangle(elem: str, lanes: int = 1) -> str:
    """Type suffix of overloaded intrinsics (``f32``, ``v8f32``, ``v8p0``...)."""
    base = {"float": "f32", "double": "f64", "ptr": "p0"}.get(elem, elem)
    return base if lanes == 1 else f"v{lanes}{base}"


def float_literal(value: float) -> str:
    """LLVM hex form of a float constant (exact for float32 values too)."""
    return "0x" + struct.pack(">d", value).hex().upper()
