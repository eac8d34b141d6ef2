"""Cooperative fetching: a stage computed into ``shared`` memory by a loop nest that is not
bound to threads is spread over all threads of the block.

Every thread would otherwise fill the whole shared tile itself. The nest's iterations are
numbered row-major and thread ``t`` of the block (``t = (tz*by + ty)*bx + tx``) does
iterations ``t, t + T, t + 2T, ...`` where ``T`` is the number of threads per block, so
consecutive threads touch consecutive elements. Nests whose loops the schedule already bound
to ``threadIdx.*`` (TVM's hand-written cooperative fetch) are left as they are.

Before / after, a 2 x 64 tile filled by a block of 32 threads::

    for ax0 in range(2):                    for fetch in range(4):
      for ax1 in range(64):                   for tx in range(32):  # threadIdx.x
        A.shared[ax0*64 + ax1] = A[...]         A.shared[fetch*32 + tx] = A[...]
"""

from __future__ import annotations

import math

from compiler.arith.simplify import simplify
from compiler.ir import stmt as S
from compiler.ir.expr import Expr, IntImm, Var
from compiler.ir.functor import substitute, used_vars
from compiler.targets.gpu.kernels import THREAD_TAGS, LaunchConfig, map_kernels
from compiler.targets.gpu.passes.check import _is_update


def cooperative_fetch(func: S.PrimFunc) -> S.PrimFunc:
    """The ``cooperative_fetch`` pass."""
    return map_kernels(func, _kernel)


def _kernel(stmt: S.Stmt, launch: LaunchConfig, name: str) -> S.Stmt:
    del name
    if launch.threads_per_block == 1:
        return stmt

    def go(s: S.Stmt, tvars: frozenset[Var], divergent: bool) -> S.Stmt:
        if isinstance(s, S.SeqStmt):
            return S.seq(*(go(x, tvars, divergent) for x in s.stmts))
        if isinstance(s, S.Allocate):
            return S.Allocate(s.buffer, go(s.body, tvars, divergent))
        if isinstance(s, S.LetStmt):
            return S.LetStmt(s.var, s.value, go(s.body, tvars, divergent))
        if isinstance(s, S.If):
            div = divergent or bool(used_vars(s.cond) & tvars)
            other = None if s.else_body is None else go(s.else_body, tvars, div)
            return S.If(s.cond, go(s.then_body, tvars, div), other)
        if isinstance(s, S.For):
            if s.thread is not None and s.thread.is_gpu:
                if s.thread.tag not in THREAD_TAGS:
                    return s.replace(body=go(s.body, tvars, divergent))
                full = launch.extent(s.thread.tag)
                div = divergent or s.extent.value < full  # type: ignore[attr-defined]
                return s.replace(body=go(s.body, tvars | {s.var}, div))
            if not divergent:
                fetched = _fetch(s, launch)
                if fetched is not None:
                    return fetched
            div = divergent or bool(used_vars(s.extent) & tvars)
            return s.replace(body=go(s.body, tvars, div))
        return s

    return go(stmt, frozenset(), False)


def _fetch(nest: S.For, launch: LaunchConfig) -> S.Stmt | None:
    """The cooperative form of ``nest`` if it is a serial nest storing into shared memory."""
    loops: list[S.For] = []
    mins: list[int] = []
    extents: list[int] = []
    guards: list[Expr] = []
    cur: S.Stmt = nest
    while isinstance(cur, S.For | S.If):
        if isinstance(cur, S.If):
            if cur.else_body is not None:
                return None
            guards.append(cur.cond)
            cur = cur.then_body
            continue
        if cur.thread is not None or cur.kind not in (S.ForKind.SERIAL, S.ForKind.UNROLLED):
            return None
        if not isinstance(cur.extent, IntImm) or not isinstance(cur.min, IntImm):
            return None
        loops.append(cur)
        mins.append(cur.min.value)
        extents.append(cur.extent.value)
        cur = cur.body
    if not isinstance(cur, S.BufferStore) or cur.buffer.scope.name != "shared":
        return None
    if _is_update(cur):
        return None
    for cond in reversed(guards):
        cur = S.If(cond, cur)
    total = math.prod(extents)
    nthreads = launch.threads_per_block
    tids = [(tag, Var("t" + tag[-1])) for tag in THREAD_TAGS if launch.extent(tag) > 1]
    tid: Expr = IntImm(0)
    for tag, v in reversed(tids):
        tid = tid * launch.extent(tag) + v
    rounds = -(-total // nthreads)
    fetch = Var("fetch")
    lin: Expr = simplify(tid if rounds == 1 else fetch * nthreads + tid)
    mapping: dict[Var, Expr] = {}
    stride = 1
    for loop, lo, extent in reversed(list(zip(loops, mins, extents, strict=True))):
        value: Expr = lin if stride == 1 else lin // stride
        if stride * extent < total:
            value = value % extent
        mapping[loop.var] = simplify(value + lo if lo else value)
        stride *= extent
    body: S.Stmt = substitute(cur, mapping)
    if total % nthreads:
        body = S.If(simplify(lin < total), body)
    for tag, v in tids:
        body = S.For(
            v,
            IntImm(0),
            IntImm(launch.extent(tag)),
            S.ForKind.THREAD_BINDING,
            body,
            S.ThreadAxis(tag),
            (("cooperative_fetch", 1),),
        )
    if rounds > 1:
        body = S.For(fetch, IntImm(0), IntImm(rounds), S.ForKind.SERIAL, body)
    return body
