"""Micro-op kernel extraction and loop folding (VTA's coproc_uop_scope and FoldUopLoop).

Inside each compute block, every maximal statement whose accelerator calls are all micro-ops
of one instruction (GEMM, GEMM reset, or one ALU operation with one immediate) becomes one
micro-op kernel, marked ``pragma vta.uop_kernel = <info>``. Up to two of its outermost loops
are folded into the instruction's ``iter_out``/``iter_in`` loops: a loop folds when, for every
micro-op under it, each operand index moves by the same whole number of SRAM entries per
iteration (its coefficient, found with :func:`compiler.arith.linear.linear_coefficient`) and the
loop variable appears nowhere else. Before folding, a loop merges into the next inner one when
together they walk the operands as one longer loop (``outer stride = inner stride * inner
extent``; VTA's ALU loop flattening). The remaining inner loops are unrolled into the kernel's
micro-ops when the host code runs; kernels are then cached in the uop buffer.

Before / after::

    for co in range(8):                 pragma vta.uop_kernel = gemm loops=((8, 98, 0, 9),
      for h in range(7):                                               (7, 14, 16, 0)):
        for dy in range(3):               for co in range(8):  ... (unchanged: 126 micro-ops
          for dx in range(3):               for h in range(7):      per iteration of co, h)
            for w in range(14):               ...
              vta.uop_gemm(...)

Example:
    >>> import isa
    >>> make_fold_uop_loops(isa.load_config("default")).__name__
    'fold_uop_loops'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from compiler.arith.linear import linear_coefficient
from compiler.ir.expr import Call, Expr, Var
from compiler.ir.functor import uses_var, visit
from compiler.ir.node import Node
from compiler.ir.pragma import declare_pragma
from compiler.ir.stmt import Allocate, Evaluate, For, If, LetStmt, Pragma, PrimFunc, SeqStmt, Stmt
from isa import HwConfig, limits

from ..calls import Module, UopKind, UopSignature, is_uop, uop_operands, uop_signature, vta_call
from ..errors import VTATargetError
from ..intrin import make_scopes
from .coproc import block_module

UOP_KERNEL = declare_pragma("vta.uop_kernel", "a micro-op kernel and its folded loops")
_MIXED = object()


@dataclass(frozen=True)
class UopKernelInfo:
    """A kernel's instruction fields: the micro-op signature and its folded loops.

    ``loops`` are ``(extent, dst_factor, src_factor, wgt_factor)`` in SRAM entries, outer
    first; ``folded`` lists the IR loop variables each folded loop stands for.
    """

    signature: UopSignature
    loops: tuple[tuple[int, int, int, int], ...]
    folded: tuple[tuple[Var, ...], ...]

    def __repr__(self) -> str:
        names = ", ".join("*".join(v.name for v in vs) for vs in self.folded)
        return f"{self.signature!r} loops={self.loops} folded=({names})"


def _signature(s: Stmt, memo: dict[int, object]) -> object:
    """The one micro-op signature under ``s``; None if it has no accelerator call; _MIXED."""
    key = id(s)
    if key in memo:
        return memo[key]
    call = vta_call(s)
    if call is not None:
        out: object = uop_signature(call) if is_uop(call) else _MIXED
    elif isinstance(s, Evaluate):
        out = None
    elif isinstance(s, For | Allocate | LetStmt | Pragma):
        out = _MIXED if isinstance(s, Allocate) else _signature(s.body, memo)
    elif isinstance(s, SeqStmt | If):
        kids = list(s.stmts) if isinstance(s, SeqStmt) else [s.then_body, s.else_body]
        found = {_signature(k, memo) for k in kids if k is not None} - {None}
        out = found.pop() if len(found) == 1 else (None if not found else _MIXED)
    else:
        out = _MIXED
    memo[key] = out
    return out


def _uop_calls(s: Stmt) -> list[Call]:
    out: list[Call] = []

    def fn(n: Node) -> None:
        c = vta_call(n)
        if c is not None and is_uop(c):
            out.append(c)

    visit(s, fn)
    return out


def _uop_count(s: Stmt) -> int:
    """Micro-ops the unrolled statement produces (an upper bound through branches)."""
    if isinstance(s, For):
        ext = s.extent.value if hasattr(s.extent, "value") else None
        if ext is None:
            raise VTATargetError(f"micro-op loop {s.var.name} has a non-constant extent")
        return ext * _uop_count(s.body)
    if isinstance(s, SeqStmt):
        return sum(_uop_count(x) for x in s.stmts)
    if isinstance(s, If):
        return max(_uop_count(s.then_body), _uop_count(s.else_body) if s.else_body else 0)
    if isinstance(s, LetStmt | Pragma):
        return _uop_count(s.body)
    return 1 if vta_call(s) is not None else 0


class _Folder:
    def __init__(self, cfg: HwConfig) -> None:
        self.cfg = cfg
        sram = make_scopes(cfg)
        self.lanes = {
            sram.inp: cfg.batch * cfg.block_in,
            sram.wgt: cfg.block_out * cfg.block_in,
            sram.acc: cfg.batch * cfg.block_out,
        }

    def coeffs(self, var: Var, calls: list[Call], below: Stmt) -> tuple[int, int, int] | None:
        """Entry strides of (dst, src, wgt) along ``var``, the same in every micro-op."""
        found: tuple[int, int, int] | None = None
        for call in calls:
            got = [0, 0, 0]
            for k, load in enumerate(uop_operands(call)):
                coeff = linear_coefficient(load.indices[0], var)
                if coeff is None:
                    return None
                lanes = self.lanes[load.buffer.scope]
                if coeff % lanes:
                    return None
                got[k] = coeff // lanes
            t = (got[0], got[1], got[2])
            if found is None:
                found = t
            elif found != t:
                return None
        if _used_in_control(var, below):
            return None
        return found

    def fits(self, fmt: str, factors: tuple[int, int, int]) -> bool:
        """Whether loop factors (dst, src, wgt) fit the instruction's factor fields (a folded
        loop may become iter_out or iter_in, so both fields of each operand must hold it)."""
        lim = limits(self.cfg)
        for operand, value in zip(("dst", "src", "wgt"), factors, strict=True):
            if fmt == "alu" and operand == "wgt":
                if value != 0:
                    return False
                continue
            for pos in ("out", "in"):
                lo, hi = lim.range(fmt, f"{operand}_factor_{pos}")
                if not lo <= value <= hi:
                    return False
        return True

    def kernel(self, s: Stmt, sig: UopSignature) -> Stmt:
        fmt = "alu" if sig.kind is UopKind.ALU else "gemm"
        lim = limits(self.cfg)
        max_iter = min(lim.max(fmt, "iter_out"), lim.max(fmt, "iter_in"))
        chain: list[For] = []
        b = s
        while isinstance(b, For):
            chain.append(b)
            b = b.body
        calls = _uop_calls(s)
        groups: list[list] = []  # [extent, (d, s, w), [vars]]
        for lp in chain:
            if not hasattr(lp.extent, "value") or lp.extent.value > max_iter:
                break
            ext = lp.extent.value
            c = self.coeffs(lp.var, calls, lp.body)
            if c is None or not self.fits(fmt, c):
                break
            if groups:
                g_ext, g_c, g_vars = groups[-1]
                if all(a == x * ext for a, x in zip(g_c, c, strict=True)) and (
                    g_ext * ext <= max_iter
                ):
                    groups[-1] = [g_ext * ext, c, g_vars + [lp.var]]
                    continue
            if len(groups) == 2:
                break
            groups.append([ext, c, [lp.var]])
        folded = {v for g in groups for v in g[2]}
        inner = s
        while isinstance(inner, For) and inner.var in folded:
            inner = inner.body
        count = _uop_count(inner)
        if count > self.cfg.uop_depth:
            if isinstance(s, For):
                return s.replace(body=self.kernels(s.body))
            raise VTATargetError(
                f"a micro-op kernel needs {count} micro-ops but the uop buffer holds "
                f"{self.cfg.uop_depth}; use smaller tiles"
            )
        info = UopKernelInfo(
            sig,
            tuple((g[0], *g[1]) for g in groups),
            tuple(tuple(g[2]) for g in groups),
        )
        return Pragma(UOP_KERNEL, info, s)

    def kernels(self, s: Stmt, memo: dict[int, object] | None = None) -> Stmt:
        memo = {} if memo is None else memo
        sig = _signature(s, memo)
        if isinstance(sig, UopSignature):
            return self.kernel(s, sig)
        if isinstance(s, SeqStmt):
            return SeqStmt(tuple(self.kernels(x, memo) for x in s.stmts))
        if isinstance(s, For | Allocate | LetStmt | Pragma):
            return s.replace(body=self.kernels(s.body, memo))
        if isinstance(s, If):
            other = None if s.else_body is None else self.kernels(s.else_body, memo)
            return If(s.cond, self.kernels(s.then_body, memo), other)
        return s

    def run(self, s: Stmt) -> Stmt:
        # block_module is not None only for a coproc_scope pragma
        if isinstance(s, Pragma) and block_module(s) is Module.COMPUTE:
            return s.replace(body=self.kernels(s.body))
        if isinstance(s, SeqStmt):
            return SeqStmt(tuple(self.run(x) for x in s.stmts))
        if isinstance(s, For | Allocate | LetStmt | Pragma):
            return s.replace(body=self.run(s.body))
        if isinstance(s, If):
            other = None if s.else_body is None else self.run(s.else_body)
            return If(s.cond, self.run(s.then_body), other)
        return s


def _used_in_control(var: Var, s: Stmt) -> bool:
    """True if ``var`` decides control flow (loop bounds, branches, lets) inside ``s``. The walk
    goes through statements only (no expression holds one) and stops at the first use."""
    stack: list[Node] = [s]
    while stack:
        n = stack.pop()
        if isinstance(n, For):
            if uses_var(n.min, var) or uses_var(n.extent, var):
                return True
        elif isinstance(n, If):
            if uses_var(n.cond, var):
                return True
        elif isinstance(n, LetStmt):
            if uses_var(n.value, var):
                return True
        stack.extend(c for c in n.children() if not isinstance(c, Expr))
    return False


def make_fold_uop_loops(cfg: HwConfig) -> Callable[[PrimFunc], PrimFunc]:
    """The ``fold_uop_loops`` pass for ``cfg``."""

    def fold_uop_loops(func: PrimFunc) -> PrimFunc:
        return func.with_body(_Folder(cfg).run(func.body))

    return fold_uop_loops
