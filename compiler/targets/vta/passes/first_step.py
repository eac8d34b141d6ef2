"""Move a reduction's reset into the compute block of its first step (loop peeling).

A tile's reduction runs ``reset; for each step: load, gemm``. With virtual threads every block
is replicated in thread order, so at the start of a round of tiles the compute module runs
``reset(t0), reset(t1), gemm(t0), gemm(t1), ...``. A reset overwrites the accumulator (and the
out buffer) that the thread's previous store is still reading, so it waits for that store; the
store of the last thread starts only after the last epilogue, and with nothing between the
epilogues and that thread's reset the compute module waits for the whole store every round.

This pass peels the first iteration off the step loop nest and puts the reset just before
that step's GEMM, in the same compute block::

    compute{reset}                      load{step 0}
    for ko in range(n):         ->      compute{reset; gemm step 0}
      load{...}                         for ko in range(1, n):
      compute{gemm}                       load{...}
                                          compute{gemm}

so the threads' blocks interleave as ``reset(t0); gemm(t0); reset(t1); gemm(t1)``: thread 1's
reset runs after thread 0's first GEMM, which covers thread 1's store. The reset moves past
the first step's load only, which it shares no buffer with (the load fills inp and wgt, the
reset writes acc), so the program computes the same. Allocations inside the nest move above
it (the peeled step and the loop reuse one buffer, as the iterations did).

It runs after ``coproc_scopes`` (it moves whole blocks) and only where the dependency tokens
are planned per module pair (:func:`~.coproc.split_by_module_pair`): the reset then waits for
the store through the compute<->store tokens, whichever block it sits in.

Example:
    >>> from compiler.ir import PrimFunc, NOP
    >>> reset_at_first_step(PrimFunc("f", (), NOP)).body == NOP
    True
"""

from __future__ import annotations

from compiler.ir.expr import IntImm
from compiler.ir.functor import buffers_used, substitute
from compiler.ir.stmt import (
    Allocate,
    For,
    ForKind,
    LetStmt,
    Pragma,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)

from ..calls import Module
from .coproc import block_module, split_by_module_pair


def _nest(s: Stmt) -> tuple[list[For], list[Allocate], SeqStmt] | None:
    """A perfect nest of serial loops with constant bounds around ``allocate ...: [blocks]``:
    the loops, the allocations and the innermost sequence; None for anything else."""
    loops: list[For] = []
    while isinstance(s, For):
        if (
            s.kind is not ForKind.SERIAL
            or s.thread is not None
            or not isinstance(s.min, IntImm)
            or not isinstance(s.extent, IntImm)
            or s.extent.value < 1
        ):
            return None
        loops.append(s)
        s = s.body
    allocs: list[Allocate] = []
    while isinstance(s, Allocate):
        allocs.append(s)
        s = s.body
    if not loops or not isinstance(s, SeqStmt):
        return None
    return loops, allocs, s


def _peel(loops: list[For], body: Stmt) -> tuple[Stmt, list[Stmt]]:
    """The first iteration of the nest ``loops`` around ``body``, and the loops that run the
    other iterations, in order."""
    head, inner = loops[0], loops[1:]
    start = head.min
    assert isinstance(start, IntImm) and isinstance(head.extent, IntImm)
    rest_of_head: list[Stmt] = []
    if head.extent.value > 1:
        whole = body
        for lp in reversed(inner):
            whole = lp.replace(body=whole)
        rest_of_head.append(
            head.replace(min=IntImm(start.value + 1), extent=IntImm(head.extent.value - 1),
                         body=whole)
        )  # fmt: skip
    fixed = substitute(body, {head.var: start})
    if not inner:
        return fixed, rest_of_head
    first, rest_inner = _peel([substitute(lp, {head.var: start}) for lp in inner], fixed)
    return first, rest_inner + rest_of_head


def _join(reset: Pragma, nest: Stmt) -> Stmt | None:
    """``[reset, nest]`` rewritten with the reset in the first step's compute block, or None
    when the nest does not start with a load block then a compute block that the reset can
    move past."""
    found = _nest(nest)
    if found is None:
        return None
    loops, allocs, inner = found
    stmts = inner.stmts
    if len(stmts) < 2 or block_module(stmts[0]) is not Module.LOAD:
        return None
    if block_module(stmts[1]) is not Module.COMPUTE:
        return None
    if buffers_used(reset) & buffers_used(stmts[0]):
        return None
    first, rest = _peel(loops, inner)
    assert isinstance(first, SeqStmt)
    load, gemm = first.stmts[0], first.stmts[1]
    assert isinstance(gemm, Pragma)
    joined = gemm.replace(body=seq(reset.body, gemm.body))
    out = seq(load, joined, *first.stmts[2:], *rest)
    for a in reversed(allocs):
        out = a.replace(body=out)
    return out


def _rewrite(s: Stmt, in_loop: bool) -> Stmt:
    """``in_loop``: ``s`` runs more than once per thread (the reset can wait for a store of
    an earlier iteration; outside a loop it waits for none, and moving it behind the first
    step's load would only queue its micro-ops behind that load on the memory port)."""
    if isinstance(s, SeqStmt):
        items = [_rewrite(x, in_loop) for x in s.stmts]
        out: list[Stmt] = []
        k = 0
        while k < len(items):
            cur = items[k]
            if (
                in_loop
                and k + 1 < len(items)
                and block_module(cur) is Module.COMPUTE
                and isinstance(cur, Pragma)
                and (joined := _join(cur, items[k + 1])) is not None
            ):
                out.append(joined)
                k += 2
                continue
            out.append(cur)
            k += 1
        return seq(*out)
    if block_module(s) is not None:
        return s
    if isinstance(s, For):
        repeats = s.thread is None and not (isinstance(s.extent, IntImm) and s.extent.value == 1)
        return s.replace(body=_rewrite(s.body, in_loop or repeats))
    if isinstance(s, Allocate | LetStmt | Pragma):
        return s.replace(body=_rewrite(s.body, in_loop))
    return s


def reset_at_first_step(func: PrimFunc) -> PrimFunc:
    """The ``reset_at_first_step`` pass."""
    if not split_by_module_pair(func.body):
        return func
    return func.with_body(_rewrite(func.body, False))
