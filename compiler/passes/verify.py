"""IR well-formedness check, run after every pass under the debug switch.

Checks: every variable is defined by an enclosing loop or let (and loops do not shadow one
another), every buffer is a parameter or allocated around its uses, indices match buffer ranks,
stored values match buffer dtypes and lane counts, operands of arithmetic agree in dtype,
conditions are bool, and no tensor-expression node survived lowering.

Example:
    >>> from compiler.ir import Buffer, BufferStore, For, ForKind, IntImm, PrimFunc, Var
    >>> B = Buffer("B", (4,), "float32")
    >>> i, j = Var("i"), Var("j")
    >>> bad = PrimFunc("f", (B,), For(i, IntImm(0), IntImm(4), ForKind.SERIAL,
    ...     BufferStore(B, B[j], (i,))))
    >>> verify(bad)
    Traceback (most recent call last):
    compiler.errors.IRVerifyError: variable j is used but not defined ...
"""

from __future__ import annotations

from compiler.errors import IRVerifyError
from compiler.ir import expr as E
from compiler.ir import stmt as S
from compiler.ir.buffer import Buffer
from compiler.ir.dtype import bool_
from compiler.ir.node import Node
from compiler.ir.printer import to_text


class _Verifier:
    def __init__(self, func: S.PrimFunc) -> None:
        self.vars: set[E.Var] = set()
        self.buffers: set[Buffer] = set(func.params)
        self.func = func

    def fail(self, msg: str, where: Node) -> None:
        raise IRVerifyError(f"{msg} (in `{to_text(where).splitlines()[0]}`)")

    def expr(self, e: E.Expr, where: Node) -> None:
        stack: list[Node] = [e]
        while stack:
            n = stack.pop()
            if isinstance(n, E.Var):
                if n not in self.vars:
                    self.fail(f"variable {n.name} is used but not defined", where)
                continue
            if isinstance(n, E.BufferLoad):
                self._access(n.buffer, n.indices, where)
                if n.predicate is not None and n.predicate.dtype.lanes != n.dtype.lanes:
                    self.fail(f"load of {n.buffer.name}: predicate lanes differ", where)
            elif isinstance(n, E.BinaryOp | E.CmpOp | E.And | E.Or):
                if n.a.dtype != n.b.dtype:
                    self.fail(
                        f"{type(n).__name__} operands have dtypes {n.a.dtype} and {n.b.dtype}",
                        where,
                    )
                if isinstance(n, E.And | E.Or) and not n.a.dtype.is_bool:
                    self.fail(f"{type(n).__name__} of non-bool {n.a.dtype}", where)
            elif isinstance(n, E.IfThenElse):
                if not n.cond.dtype.is_bool or n.then_value.dtype != n.else_value.dtype:
                    self.fail("if_then_else needs a bool condition and equal branch dtypes", where)
            elif isinstance(n, E.Ramp):
                if n.base.dtype.lanes != 1 or n.stride.dtype.lanes != 1:
                    self.fail("ramp base and stride must be scalars", where)
            elif not isinstance(n, E.Expr):
                self.fail(f"{type(n).__name__} is not an expression", where)
            elif type(n).__module__.startswith("compiler.te"):
                self.fail(f"tensor-expression node {type(n).__name__} survived lowering", where)
            stack.extend(n.children())

    def _access(self, buf: Buffer, indices: tuple[E.Expr, ...], where: Node) -> None:
        if buf not in self.buffers:
            self.fail(f"buffer {buf.name} is used outside its allocation", where)
        if len(indices) != buf.ndim:
            self.fail(
                f"buffer {buf.name} has {buf.ndim} dimensions but is indexed with "
                f"{len(indices)} indices",
                where,
            )
        for i in indices:
            if not i.dtype.is_int:
                self.fail(f"index of {buf.name} has dtype {i.dtype}", where)

    def stmt(self, s: S.Stmt) -> None:
        if isinstance(s, S.SeqStmt):
            for x in s.stmts:
                self.stmt(x)
        elif isinstance(s, S.For):
            self.expr(s.min, s)
            self.expr(s.extent, s)
            if s.extent.dtype.lanes != 1 or not s.extent.dtype.is_int:
                self.fail(f"loop {s.var.name} has extent of dtype {s.extent.dtype}", s)
            if (s.kind is S.ForKind.THREAD_BINDING) != (s.thread is not None):
                self.fail(f"loop {s.var.name}: thread binding and loop kind disagree", s)
            self._bind(s.var, s, lambda: self.stmt(s.body))
        elif isinstance(s, S.LetStmt):
            self.expr(s.value, s)
            self._bind(s.var, s, lambda: self.stmt(s.body))
        elif isinstance(s, S.BufferStore):
            self._access(s.buffer, s.indices, s)
            self.expr(s.value, s)
            for i in s.indices:
                self.expr(i, s)
            lanes = max((i.dtype.lanes for i in s.indices), default=1)
            if s.value.dtype != s.buffer.dtype.with_lanes(lanes):
                self.fail(
                    f"store of {s.value.dtype} into {s.buffer.name} of {s.buffer.dtype} "
                    f"with {lanes} lanes",
                    s,
                )
            if s.predicate is not None:
                self.expr(s.predicate, s)
                if s.predicate.dtype != bool_.with_lanes(lanes):
                    self.fail(
                        f"store to {s.buffer.name}: predicate has dtype {s.predicate.dtype}", s
                    )
        elif isinstance(s, S.Allocate):
            if s.buffer in self.buffers:
                self.fail(f"buffer {s.buffer.name} is allocated while already live", s)
            self.buffers.add(s.buffer)
            try:
                self.stmt(s.body)
            finally:
                self.buffers.discard(s.buffer)
        elif isinstance(s, S.If):
            self.expr(s.cond, s)
            if s.cond.dtype != bool_:
                self.fail(f"if condition has dtype {s.cond.dtype}", s)
            self.stmt(s.then_body)
            if s.else_body is not None:
                self.stmt(s.else_body)
        elif isinstance(s, S.Evaluate):
            self.expr(s.value, s)
        elif isinstance(s, S.Pragma | S.Tensorize):
            self.stmt(s.body)
        else:
            self.fail(f"unknown statement {type(s).__name__}", s)

    def _bind(self, var: E.Var, where: S.Stmt, body: object) -> None:
        if var in self.vars:
            self.fail(f"variable {var.name} is redefined inside its own scope", where)
        self.vars.add(var)
        try:
            body()  # type: ignore[operator]
        finally:
            self.vars.discard(var)


def verify(func: S.PrimFunc) -> None:
    """Raise :class:`IRVerifyError` if ``func`` is malformed."""
    _Verifier(func).stmt(func.body)
