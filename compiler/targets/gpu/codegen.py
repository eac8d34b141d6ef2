"""Kernel source: each kernel of a lowered GPU function becomes the Python source of a
``numba.cuda.jit`` kernel.

The one generated source serves every use: ``numba.cuda.jit`` compiles it for a real GPU,
numba's CUDA simulator runs it without one, and ``numba.cuda.compile_ptx`` turns it into PTX.
Buffers are passed flat (1-d, C order); ``shared`` allocations become ``cuda.shared.array``
and ``local`` ones ``cuda.local.array``, declared at the top of the kernel; a loop bound to
``threadIdx.x`` becomes ``i = cuda.threadIdx.x`` (with ``if i < extent:`` when the block is
larger than the loop) and barriers become ``cuda.syncthreads()``.

Example:
    >>> from compiler import te
    >>> from compiler.build import lower
    >>> from compiler.schedule import create_schedule
    >>> from compiler.targets.gpu.kernels import split_kernels
    >>> A = te.placeholder((64,), name="A")
    >>> B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    >>> s = create_schedule(B)
    >>> bo, bi = s[B].split("i", factor=32)
    >>> s[B].bind(bo, "blockIdx.x"); s[B].bind(bi, "threadIdx.x")
    >>> kernel = split_kernels(lower(s, [A, B], target="gpu")).kernels[0]
    >>> print(kernel_source(kernel).text, end="")
    def main_kernel0(A, B):
        i_outer = cuda.blockIdx.x
        i_inner = cuda.threadIdx.x
        B[i_outer*32 + i_inner] = A[i_outer*32 + i_inner] + np.float32(1.0)
"""

from __future__ import annotations

import keyword
import math
import re
from dataclasses import dataclass

from compiler.errors import CodegenError
from compiler.ir import expr as E
from compiler.ir import stmt as S
from compiler.ir.buffer import Buffer
from compiler.ir.node import Node
from compiler.targets.gpu.intrin import is_barrier
from compiler.targets.gpu.kernels import Kernel

#: The module prologue every kernel's source is executed under.
PROLOGUE = "import math\n\nimport numpy as np\nfrom numba import cuda\n"

_RESERVED = set(keyword.kwlist) | {
    "cuda", "np", "math", "range", "min", "max", "abs", "int", "float", "bool", "len",
}  # fmt: skip

_MATH = {"exp": "math.exp", "log": "math.log", "sqrt": "math.sqrt", "tanh": "math.tanh",
         "fabs": "math.fabs"}  # fmt: skip

_BINARY = {
    E.Add: ("+", 6),
    E.Sub: ("-", 6),
    E.Mul: ("*", 7),
    E.Div: ("/", 7),
    E.FloorDiv: ("//", 7),
    E.FloorMod: ("%", 7),
    E.ShiftLeft: ("<<", 5),
    E.ShiftRight: (">>", 5),
    E.EQ: ("==", 4),
    E.NE: ("!=", 4),
    E.LT: ("<", 4),
    E.LE: ("<=", 4),
    E.GT: (">", 4),
    E.GE: (">=", 4),
    E.And: ("and", 2),
    E.Or: ("or", 1),
}
_ATOM = 10


@dataclass(frozen=True)
class KernelSource:
    """The Python source of one kernel and the numba signature of its parameters."""

    name: str
    text: str
    params: tuple[Buffer, ...]

    @property
    def signature(self) -> str:
        """The ``numba`` type signature, e.g. ``void(float32[::1], int8[::1])``."""
        return "void(" + ", ".join(f"{_np_name(b)}[::1]" for b in self.params) + ")"


def _np_name(buf: Buffer) -> str:
    name = buf.dtype.name
    # numba's name for numpy's bool (one byte per element, as numpy stores it)
    return "boolean" if name == "bool" else name


class _Namer:
    def __init__(self) -> None:
        self.names: dict[object, str] = {}
        self.taken: set[str] = set()

    def __call__(self, obj: E.Var | Buffer) -> str:
        key = ("v" if isinstance(obj, E.Var) else "b", obj.uid)
        hit = self.names.get(key)
        if hit is not None:
            return hit
        base = re.sub(r"\W", "_", obj.name) or "v"
        if base[0].isdigit() or base in _RESERVED:
            base = "_" + base
        name, k = base, 1
        while name in self.taken:
            name = f"{base}_{k}"
            k += 1
        self.taken.add(name)
        self.names[key] = name
        return name


class _Emitter:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.name = _Namer()
        self.lines: list[str] = []

    def fail(self, what: str) -> CodegenError:
        return CodegenError(f"kernel {self.kernel.name} (stage {self.kernel.stage}): {what}")

    # Expressions ------------------------------------------------------------------------------
    def expr(self, e: Node, parent: int = 0) -> str:
        text, prec = self._expr(e)
        return f"({text})" if prec < parent else text

    def _expr(self, e: Node) -> tuple[str, int]:
        if isinstance(e, E.IntImm):
            if e.dtype.is_bool:
                return ("True" if e.value else "False"), _ATOM
            return (str(e.value) if e.value >= 0 else f"({e.value})"), _ATOM
        if isinstance(e, E.FloatImm):
            return _float(e), _ATOM
        if isinstance(e, E.Var):
            return self.name(e), _ATOM
        if isinstance(e, E.BufferLoad):
            if e.predicate is not None:
                raise self.fail("predicated loads are not supported")
            return f"{self.name(e.buffer)}[{self.index(e.indices)}]", _ATOM
        sym = _BINARY.get(type(e))  # type: ignore[arg-type]
        if sym is not None and isinstance(e, E.TWO_OPERANDS):
            op, prec = sym
            if isinstance(e, E.Div) and not e.dtype.is_float:
                raise self.fail("integer '/' has no GPU lowering (use '//')")
            # comparisons do not chain: both operands of one get parentheses when needed
            a = self.expr(e.a, prec + 1 if prec == 4 else prec)
            b = self.expr(e.b, prec + 1)
            return f"{a} {op} {b}" if op not in ("*", "/") else f"{a}{op}{b}", prec
        if isinstance(e, E.Min | E.Max):
            fn = "min" if isinstance(e, E.Min) else "max"
            return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
        if isinstance(e, E.Not):
            return f"not {self.expr(e.a, 3)}", 3
        if isinstance(e, E.Cast):
            if e.dtype.is_bool:
                return f"{self.expr(e.value, 4)} != 0", 4
            return f"np.{e.dtype.name}({self.expr(e.value)})", _ATOM
        if isinstance(e, E.IfThenElse):
            c = self.expr(e.cond, 1)
            return f"{self.expr(e.then_value, 1)} if {c} else {self.expr(e.else_value, 1)}", 0
        if isinstance(e, E.Call):
            math_fn = _MATH.get(e.op.name)
            if math_fn is None:
                raise self.fail(f"intrinsic {e.op.name} has no GPU lowering")
            args = ", ".join(self.expr(a) for a in e.args)
            return f"{math_fn}({args})", _ATOM
        if isinstance(e, E.Ramp | E.Broadcast):
            raise self.fail("vector expressions are not supported (the GPU target vectorizes none)")
        raise self.fail(f"cannot generate code for {type(e).__name__}")

    def index(self, indices: tuple[E.Expr, ...]) -> str:
        if len(indices) != 1:
            raise self.fail("buffers must be flattened before code generation")
        return self.expr(indices[0])

    # Statements -------------------------------------------------------------------------------
    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def stmt(self, s: S.Stmt, depth: int) -> None:
        if isinstance(s, S.SeqStmt):
            if not s.stmts:
                self.emit(depth, "pass")
            for x in s.stmts:
                self.stmt(x, depth)
        elif isinstance(s, S.BufferStore):
            if s.predicate is not None:
                raise self.fail("predicated stores are not supported")
            target = f"{self.name(s.buffer)}[{self.index(s.indices)}]"
            self.emit(depth, f"{target} = {self.expr(s.value)}")
        elif isinstance(s, S.For):
            self.loop(s, depth)
        elif isinstance(s, S.If):
            self.emit(depth, f"if {self.expr(s.cond)}:")
            self.stmt(s.then_body, depth + 1)
            if s.else_body is not None:
                self.emit(depth, "else:")
                self.stmt(s.else_body, depth + 1)
        elif isinstance(s, S.Allocate):
            self.stmt(s.body, depth)  # declared at the top of the kernel
        elif isinstance(s, S.LetStmt):
            self.emit(depth, f"{self.name(s.var)} = {self.expr(s.value)}")
            self.stmt(s.body, depth)
        elif isinstance(s, S.Evaluate) and is_barrier(s):
            self.emit(depth, "cuda.syncthreads()")
        else:
            raise self.fail(f"cannot generate code for {type(s).__name__}")

    def loop(self, s: S.For, depth: int) -> None:
        var = self.name(s.var)
        if s.thread is not None and s.thread.is_gpu:
            kind, axis = s.thread.tag.split(".")
            offset = "" if _is_zero(s.min) else f" + {self.expr(s.min, 6)}"
            self.emit(depth, f"{var} = cuda.{kind}.{axis}{offset}")
            if not isinstance(s.extent, E.IntImm):
                raise self.fail(f"loop {s.var.name} bound to {s.thread} has a symbolic extent")
            if s.extent.value < self.kernel.launch.extent(s.thread.tag):
                self.emit(depth, f"if {var} < {self.expr(s.min, 6) + ' + ' if offset else ''}"
                          f"{s.extent.value}:")  # fmt: skip
                self.stmt(s.body, depth + 1)
            else:
                self.stmt(s.body, depth)
            return
        if s.thread is not None:
            raise self.fail(f"loop {s.var.name} is still bound to {s.thread}")
        # int32 bounds make numba type the loop variable (and the index arithmetic built on it,
        # like the IR's int32 index type) as 32-bit: a Python int would be 64-bit, which about
        # doubles the registers of a kernel
        if _is_zero(s.min):
            rng = f"np.int32({self.expr(s.extent)})"
        else:
            rng = (
                f"np.int32({self.expr(s.min)}), "
                f"np.int32({self.expr(s.min, 6)} + {self.expr(s.extent, 6)})"
            )
        self.emit(depth, f"for {var} in range({rng}):")
        self.stmt(s.body, depth + 1)

    def kernel_text(self) -> tuple[str, tuple[Buffer, ...]]:
        k = self.kernel
        params = ", ".join(self.name(b) for b in k.params)
        self.emit(0, f"def {k.name}({params}):")
        for buf in k.shared:
            self.emit(1, f"{self.name(buf)} = cuda.shared.array({buf.size}, np.{buf.dtype.name})")
        for buf in k.local:
            self.emit(1, f"{self.name(buf)} = cuda.local.array({buf.size}, np.{buf.dtype.name})")
        self.stmt(k.body, 1)
        return "\n".join(self.lines) + "\n", k.params


def _is_zero(e: E.Expr) -> bool:
    return isinstance(e, E.IntImm) and e.value == 0


def _float(e: E.FloatImm) -> str:
    v = e.value
    if math.isnan(v):
        text = "np.nan"
    elif math.isinf(v):
        text = "np.inf" if v > 0 else "-np.inf"
    else:
        text = repr(v)
    return f"np.{e.dtype.name}({text})"


def kernel_source(kernel: Kernel) -> KernelSource:
    """The Python source of ``kernel`` (a function named after it)."""
    text, params = _Emitter(kernel).kernel_text()
    return KernelSource(kernel.name, text, params)


def module_source(kernels: list[KernelSource]) -> str:
    """One module holding every kernel, runnable with ``exec``."""
    return PROLOGUE + "".join("\n\n" + k.text for k in kernels)
