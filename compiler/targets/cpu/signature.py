"""The argument signature a host kernel is compiled for, embedded in its own LLVM module.

A kernel reads and writes its arguments with the extents it was compiled for; nothing in its
machine code checks the buffers it is handed. Whoever binds buffers to a kernel later (a
compiled artifact's loader) must know those extents from the kernel itself, not from a
description stored beside it that can be edited on its own. So the code generator derives, from
the function's own buffers, each argument's name, caller-visible shape, dtype, byte size and
whether the kernel writes it, and emits them into the module as a private constant string
returned by an exported function ``@<symbol>.signature`` (the dot keeps it apart from every
kernel symbol, which is a C identifier). The record is part of the code: compiling the module
compiles it, the object cache keys it with the code, and an edit of any other copy of the
shapes is detected by comparing with it (:func:`compiler.targets.cpu.jit.compiled_signature`).

Example:
    >>> from compiler.ir import Buffer, BufferStore, For, ForKind, IntImm, PrimFunc, Var
    >>> from compiler.ir.stmt import ArgInfo
    >>> B = Buffer("B", (8,), "int32")
    >>> i = Var("i")
    >>> f = PrimFunc("f", (B,), For(i, IntImm(0), IntImm(8), ForKind.SERIAL,
    ...     BufferStore(B, i, (i,))), (ArgInfo("B", (2, 4), "int32", True),))
    >>> sig = signature_of(f)
    >>> sig
    (ArgSignature(name='B', shape=(2, 4), dtype='int32', nbytes=32, is_output=True),)
    >>> decode_signature(encode_signature(sig).encode()) == sig
    True
    >>> str(sig[0])
    'int32[2, 4] (32 bytes, written)'
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.errors import CodegenError
from compiler.ir import stmt as S
from compiler.ir.functor import visit
from compiler.ir.node import Node

#: What follows a kernel's symbol in the name of the function that returns its signature.
SIGNATURE_SUFFIX = ".signature"
#: Bumped when the record's fields change; a record of another version is not read.
SIGNATURE_VERSION = 1


@dataclass(frozen=True)
class ArgSignature:
    """One argument as the kernel was compiled for it: the caller-visible shape and dtype, the
    bytes the code may touch from the argument's pointer, and whether it writes them."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    is_output: bool

    def __str__(self) -> str:
        use = "written" if self.is_output else "read"
        return f"{self.dtype}{list(self.shape)} ({self.nbytes} bytes, {use})"


def _written(func: S.PrimFunc) -> set[Any]:
    """The buffers that a store of ``func``'s body targets."""
    out: set[Any] = set()

    def fn(n: Node) -> bool:
        if isinstance(n, S.BufferStore):
            out.add(n.buffer)
        return True

    visit(func.body, fn)
    return out


def signature_of(func: S.PrimFunc) -> tuple[ArgSignature, ...]:
    """Each parameter of ``func`` as the code generated for it accesses it.

    The byte size is the parameter buffer's (what the generated code indexes); the shape is the
    caller-visible one that ``func.args`` keeps after flattening, which must hold exactly as
    many elements; without ``func.args`` the buffer's own shape, and an argument counts as
    written when the body stores to it.
    """
    written = _written(func)
    if func.args and len(func.args) != len(func.params):
        raise CodegenError(
            f"cpu codegen of {func.name}: {len(func.args)} argument descriptions for "
            f"{len(func.params)} parameters"
        )
    out = []
    for k, buf in enumerate(func.params):
        try:
            size = buf.size
        except (TypeError, ValueError):
            raise CodegenError(
                f"cpu codegen of {func.name}: parameter {buf.name} has a symbolic shape"
            ) from None
        nbytes = size * buf.dtype.bytes
        if func.args:
            info = func.args[k]
            shape = tuple(int(d) for d in info.shape)
            if math.prod(shape) != size or info.dtype != buf.dtype.name:
                raise CodegenError(
                    f"cpu codegen of {func.name}: argument {info.name} is {info.dtype}"
                    f"{list(shape)}, its buffer {buf.name} holds {size} {buf.dtype.name}"
                )
            out.append(ArgSignature(info.name, shape, info.dtype, nbytes, bool(info.is_output)))
        else:
            shape = tuple(int(d) for d in buf.const_shape)
            out.append(ArgSignature(buf.name, shape, buf.dtype.name, nbytes, buf in written))
    return tuple(out)


def encode_signature(sig: tuple[ArgSignature, ...]) -> str:
    """The record's text (compact JSON, ASCII only)."""
    args = [
        {"name": a.name, "shape": list(a.shape), "dtype": a.dtype, "nbytes": a.nbytes,
         "is_output": a.is_output}
        for a in sig
    ]  # fmt: skip
    return json.dumps({"version": SIGNATURE_VERSION, "args": args}, separators=(",", ":"))


def decode_signature(data: bytes) -> tuple[ArgSignature, ...]:
    """The arguments of a record written by :func:`encode_signature`; ``ValueError`` for
    anything else."""
    try:
        record = json.loads(data.decode("ascii"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"the signature record is not ASCII JSON ({e})") from None
    if not isinstance(record, dict) or record.get("version") != SIGNATURE_VERSION:
        raise ValueError(f"the signature record is not of version {SIGNATURE_VERSION}")
    out = []
    try:
        for a in record["args"]:
            shape = tuple(a["shape"])
            fields = (a["name"], a["dtype"], a["nbytes"], a["is_output"], *shape)
            kinds = (str, str, int, bool, *([int] * len(shape)))
            if not all(isinstance(v, t) for v, t in zip(fields, kinds, strict=True)):
                raise ValueError(f"the signature record's argument {a!r:.60} is malformed")
            arg = ArgSignature(a["name"], shape, a["dtype"], a["nbytes"], a["is_output"])
            _self_consistent(arg)
            out.append(arg)
    except (KeyError, TypeError) as e:
        raise ValueError(f"the signature record is malformed ({type(e).__name__}: {e})") from None
    return tuple(out)


def _self_consistent(arg: ArgSignature) -> None:
    """A record whose byte size is not its shape's, or whose dtype is not numeric, contradicts
    itself: refused rather than trusted either way."""
    try:
        dtype = np.dtype(arg.dtype)
    except TypeError:
        dtype = np.dtype(object)
    if dtype.kind not in "biuf":
        raise ValueError(f"the signature record's argument {arg.name} has dtype {arg.dtype!r}")
    if min(arg.shape, default=0) < 0 or math.prod(arg.shape) * dtype.itemsize != arg.nbytes:
        raise ValueError(f"the signature record's argument {arg.name} is {arg}, which its shape "
                         "does not hold")  # fmt: skip


def _llvm_string(text: str) -> str:
    """``text`` as an LLVM ``c"..."`` literal with its NUL terminator."""
    chars = "".join(
        c if c.isascii() and c.isprintable() and c not in '"\\' else f"\\{ord(c):02X}" for c in text
    )
    return f'c"{chars}\\00"'


def llvm_signature(symbol: str, sig: tuple[ArgSignature, ...]) -> str:
    """The module text that records ``sig`` for the kernel ``symbol``: a private constant and
    the exported function ``@<symbol>.signature`` returning its address."""
    data = encode_signature(sig).encode("ascii")
    name = f"{symbol}{SIGNATURE_SUFFIX}"
    return (
        f"@{name}.text = private unnamed_addr constant [{len(data) + 1} x i8] "
        f"{_llvm_string(data.decode('ascii'))}\n\n"
        f"define ptr @{name}() #0 {{\nentry:\n  ret ptr @{name}.text\n}}"
    )


__all__ = [
    "SIGNATURE_SUFFIX",
    "ArgSignature",
    "decode_signature",
    "encode_signature",
    "llvm_signature",
    "signature_of",
]
