"""Readable text form of the IR (used by ``repr``, debug dumps and golden files).

Variables and buffers that share a name get numeric suffixes in order of appearance, so the
text is deterministic and independent of internal ids.

Example:
    >>> from compiler.ir.expr import Var
    >>> i = Var("i")
    >>> to_text((i + 1) * 4)
    '(i + 1)*4'
"""

from __future__ import annotations

from typing import Any

from compiler.ir import expr as E
from compiler.ir import stmt as S
from compiler.ir.buffer import Buffer
from compiler.ir.node import Node

_PREC = {
    E.Or: 1,
    E.And: 2,
    E.Not: 3,
    E.EQ: 4,
    E.NE: 4,
    E.LT: 4,
    E.LE: 4,
    E.GT: 4,
    E.GE: 4,
    E.ShiftLeft: 5,
    E.ShiftRight: 5,
    E.Add: 6,
    E.Sub: 6,
    E.Mul: 7,
    E.Div: 7,
    E.FloorDiv: 7,
    E.FloorMod: 7,
}
_SYMBOL = {
    E.Or: " or ",
    E.And: " and ",
    E.EQ: " == ",
    E.NE: " != ",
    E.LT: " < ",
    E.LE: " <= ",
    E.GT: " > ",
    E.GE: " >= ",
    E.ShiftLeft: " << ",
    E.ShiftRight: " >> ",
    E.Add: " + ",
    E.Sub: " - ",
    E.Mul: "*",
    E.Div: "/",
    E.FloorDiv: " // ",
    E.FloorMod: " % ",
}
_ATOM = 10


class Printer:
    """Stateful printer: keeps the unique display names of variables and buffers."""

    def __init__(self) -> None:
        self._names: dict[Any, str] = {}
        self._taken: set[str] = set()

    def name_of(self, obj: E.Var | Buffer) -> str:
        key = ("v", obj.uid) if isinstance(obj, E.Var) else ("b", obj.uid)
        name = self._names.get(key)
        if name is None:
            base = obj.name
            name = base
            k = 1
            while name in self._taken:
                name = f"{base}_{k}"
                k += 1
            self._taken.add(name)
            self._names[key] = name
        return name

    # Expressions ----------------------------------------------------------------------------
    def expr(self, e: Any) -> str:
        return self._expr(e)[0]

    def _paren(self, e: Any, parent_prec: int, right: bool) -> str:
        text, prec = self._expr(e)
        if prec < parent_prec or (right and prec == parent_prec):
            return f"({text})"
        return text

    def _expr(self, e: Any) -> tuple[str, int]:
        if not isinstance(e, E.Expr):
            return repr(e), _ATOM
        cls = type(e)
        if cls in _SYMBOL and isinstance(e, E.TWO_OPERANDS):
            prec = _PREC[cls]
            left = self._paren(e.a, prec, False)
            right = self._paren(e.b, prec, True)
            return f"{left}{_SYMBOL[cls]}{right}", prec
        if isinstance(e, E.Var):
            return self.name_of(e), _ATOM
        if isinstance(e, E.IntImm):
            if e.dtype.is_bool:
                return ("True" if e.value else "False"), _ATOM
            if e.dtype.name == "int32":
                return (str(e.value), _ATOM) if e.value >= 0 else (str(e.value), 6)
            return f"{e.dtype.name}({e.value})", _ATOM
        if isinstance(e, E.FloatImm):
            text = repr(e.value)
            if text in ("inf", "-inf", "nan"):
                text = f"float('{text}')"
            suffix = "f" if e.dtype.bits == 32 else ""
            return (f"{text}{suffix}", _ATOM) if e.value >= 0 else (f"{text}{suffix}", 6)
        if isinstance(e, E.Not):
            return f"not {self._paren(e.a, 3, False)}", 3
        if isinstance(e, E.Min | E.Max):
            fn = "min" if isinstance(e, E.Min) else "max"
            return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
        if isinstance(e, E.Cast):
            return f"{e.dtype.name}({self.expr(e.value)})", _ATOM
        if isinstance(e, E.IfThenElse):
            args = ", ".join(self.expr(x) for x in (e.cond, e.then_value, e.else_value))
            return f"if_then_else({args})", _ATOM
        if isinstance(e, E.Call):
            args = ", ".join(self.expr(x) for x in e.args)
            return f"{e.op.name}({args})", _ATOM
        if isinstance(e, E.Ramp):
            return f"ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})", _ATOM
        if isinstance(e, E.Broadcast):
            return f"broadcast({self.expr(e.value)}, {e.lanes})", _ATOM
        if isinstance(e, E.BufferLoad):
            idx = ", ".join(self.expr(i) for i in e.indices)
            text = f"{self.name_of(e.buffer)}[{idx}]"
            if e.predicate is not None:
                text += f" if {self._paren(e.predicate, _ATOM, False)}"
                return text, 0
            return text, _ATOM
        hook = getattr(e, "print_with", None)
        if hook is not None:
            return hook(self), _ATOM
        return f"<{cls.__name__}>", _ATOM

    # Statements -----------------------------------------------------------------------------
    def stmt(self, s: S.Stmt, indent: int = 0) -> list[str]:
        pad = "  " * indent
        if isinstance(s, S.SeqStmt):
            if not s.stmts:
                return [pad + "pass"]
            out: list[str] = []
            for x in s.stmts:
                out.extend(self.stmt(x, indent))
            return out
        if isinstance(s, S.For):
            rng = self.expr(s.extent)
            if not (isinstance(s.min, E.IntImm) and s.min.value == 0):
                rng = f"{self.expr(s.min)}, {self.expr(s.min + s.extent)}"
            prefix = "" if s.kind is S.ForKind.SERIAL else f"{s.kind.value} "
            if s.kind is S.ForKind.THREAD_BINDING:
                prefix = ""
            head = f"{pad}{prefix}for {self.name_of(s.var)} in range({rng})"
            if s.thread is not None:
                head += f" bind {s.thread.tag}"
            head += ":"
            if s.annotations:
                head += "  # " + ", ".join(f"{k}={v}" for k, v in s.annotations)
            return [head] + self.stmt(s.body, indent + 1)
        if isinstance(s, S.BufferStore):
            idx = ", ".join(self.expr(i) for i in s.indices)
            line = f"{pad}{self.name_of(s.buffer)}[{idx}] = {self.expr(s.value)}"
            if s.predicate is not None:
                line += f" where {self.expr(s.predicate)}"
            return [line]
        if isinstance(s, S.Allocate):
            b = s.buffer
            dims = ", ".join(self.expr(d) for d in b.shape)
            head = f"{pad}allocate {self.name_of(b)}: {b.dtype.name}[{dims}] @{b.scope.name}"
            return [head] + self.stmt(s.body, indent)
        if isinstance(s, S.If):
            out = [f"{pad}if {self.expr(s.cond)}:"] + self.stmt(s.then_body, indent + 1)
            if s.else_body is not None:
                out += [f"{pad}else:"] + self.stmt(s.else_body, indent + 1)
            return out
        if isinstance(s, S.Evaluate):
            return [pad + self.expr(s.value)]
        if isinstance(s, S.LetStmt):
            return [f"{pad}{self.name_of(s.var)} = {self.expr(s.value)}"] + self.stmt(
                s.body, indent
            )
        if isinstance(s, S.Pragma):
            value = self.expr(s.value) if isinstance(s.value, E.Expr) else repr(s.value)
            return [f"{pad}pragma {s.key} = {value}:"] + self.stmt(s.body, indent + 1)
        if isinstance(s, S.Tensorize):
            name = getattr(s.intrin, "name", str(s.intrin))
            loops = ", ".join(self.name_of(v) for v in s.loop_vars)
            head = f"{pad}tensorize {name} at {s.stage} over ({loops}):"
            return [head] + self.stmt(s.body, indent + 1)
        return [f"{pad}<{type(s).__name__}>"]

    def func(self, f: S.PrimFunc) -> list[str]:
        params = []
        for b in f.params:
            dims = ", ".join(self.expr(d) for d in b.shape)
            params.append(f"{self.name_of(b)}: {b.dtype.name}[{dims}]")
        head = f"def {f.name}({', '.join(params)}):"
        return [head] + self.stmt(f.body, 1)


def to_text(node: Node | S.PrimFunc) -> str:
    """Text of an expression, statement or function.

    Example:
        >>> from compiler.ir.expr import Var
        >>> to_text(Var("x") < 3)
        'x < 3'
    """
    p = Printer()
    if isinstance(node, S.PrimFunc):
        return "\n".join(p.func(node)) + "\n"
    if isinstance(node, S.Stmt):
        return "\n".join(p.stmt(node))
    return p.expr(node)
