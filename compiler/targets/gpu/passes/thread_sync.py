"""Barrier insertion (TVM's thread-storage sync): a ``syncthreads()`` goes where a shared
buffer is written and then read by other threads of the block (and where it is read and then
overwritten, across iterations of a loop), and nowhere else.

The pass walks each kernel in program order, keeping the shared-memory accesses made since
the last barrier. A statement whose accesses conflict with them gets a barrier in front of
it. Two accesses to one buffer conflict when one is a write, unless both use the same index
expression in terms of the thread indices alone (each thread then touches only its own
element). Loop bodies are walked until the barriers are stable, so that accesses at the end
of one iteration are checked against the start of the next.

Barriers are only placed where every thread of the block arrives: inside loops bound to
``threadIdx.*`` with the block's full extent, outside loops with a smaller extent and
outside branches on the thread index. A conflict inside such divergent code cannot be fixed
with a barrier and is reported.

Example (a 2-step tile loop; the fill writes, the product reads)::

    for ko in range(2):                 for ko in range(2):
      fill A.shared                       syncthreads()    # last iteration's reads done
      C.local += A.shared ...             fill A.shared
                                          syncthreads()    # the fill is visible
                                          C.local += A.shared ...
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.errors import LoweringError
from compiler.ir import stmt as S
from compiler.ir.buffer import Buffer
from compiler.ir.expr import BufferLoad, Expr, IntImm, Var
from compiler.ir.functor import substitute, used_vars, visit
from compiler.ir.node import Node
from compiler.targets.gpu.intrin import barrier
from compiler.targets.gpu.kernels import THREAD_TAGS, LaunchConfig, map_kernels

#: The hardware index of each GPU axis, shared by every loop bound to it.
CANONICAL = {tag: Var(tag) for tag in ("blockIdx.x", "blockIdx.y", "blockIdx.z") + THREAD_TAGS}

_MAX_ROUNDS = 4


@dataclass(frozen=True)
class Access:
    buffer: Buffer
    write: bool
    index: tuple[Expr, ...]
    #: the index depends on the thread and block indices only, and on every thread axis of
    #: the block: each thread touches an element of its own
    exact: bool


def insert_thread_sync(func: S.PrimFunc) -> S.PrimFunc:
    """The ``insert_thread_sync`` pass."""
    return map_kernels(func, _kernel)


class _Planner:
    def __init__(self, launch: LaunchConfig, name: str, stages: str) -> None:
        self.launch = launch
        self.what = f"kernel {name} (stage {stages})"
        self.required = {CANONICAL[t] for t in THREAD_TAGS if launch.extent(t) > 1}
        self.allowed = set(CANONICAL.values())

    # Accesses -------------------------------------------------------------------------------
    def accesses(self, s: Node, canon: dict[Var, Expr]) -> list[Access]:
        out: list[Access] = []

        def go(n: Node, canon: dict[Var, Expr]) -> None:
            if isinstance(n, S.For) and n.thread is not None and n.thread.is_gpu:
                canon = {**canon, n.var: CANONICAL[n.thread.tag]}
                for c in (n.min, n.extent):
                    go(c, canon)
                go(n.body, canon)
                return
            if isinstance(n, BufferLoad | S.BufferStore) and n.buffer.scope.name == "shared":
                index = tuple(substitute(i, canon) for i in n.indices)
                used: set[Var] = set()
                for i in index:
                    used |= used_vars(i)
                exact = used <= self.allowed and self.required <= used
                out.append(Access(n.buffer, isinstance(n, S.BufferStore), index, exact))
            for child in n.children():
                go(child, canon)

        go(s, canon)
        return out

    @staticmethod
    def conflict(before: list[Access], after: list[Access]) -> Access | None:
        for b in after:
            for a in before:
                # a read after a write, or a write after a read; two writes need no barrier
                # between them (TVM's planner makes the same choice)
                if a.buffer != b.buffer or a.write == b.write:
                    continue
                if a.exact and b.exact and a.index == b.index:
                    continue
                return b
        return None

    # Planning ---------------------------------------------------------------------------------
    def divergent(self, s: S.Stmt, tvars: set[Var]) -> str | None:
        """Why not every thread of the block runs ``s`` (None if all do)."""
        if isinstance(s, S.For):
            if s.thread is not None and s.thread.tag in THREAD_TAGS:
                full = self.launch.extent(s.thread.tag)
                if isinstance(s.extent, IntImm) and s.extent.value < full:
                    return (
                        f"loop {s.var.name} bound to {s.thread.tag} covers {s.extent.value} of "
                        f"the block's {full} threads"
                    )
                return None
            if used_vars(s.extent) & tvars:
                return f"the extent of loop {s.var.name} depends on the thread index"
        if isinstance(s, S.If) and used_vars(s.cond) & tvars:
            return f"the branch on {s.cond!r} depends on the thread index"
        return None

    def plan(
        self, s: S.Stmt, state: list[Access], canon: dict[Var, Expr]
    ) -> tuple[S.Stmt, list[Access]]:
        # block indices are the same for every thread of the block: only threadIdx diverges
        tvars = {v for v, c in canon.items() if c.name.startswith("threadIdx")}  # type: ignore[attr-defined]
        if isinstance(s, S.SeqStmt):
            out: list[S.Stmt] = []
            for x in s.stmts:
                new, state = self.plan(x, state, canon)
                out.append(new)
            return S.seq(*out), state
        if isinstance(s, S.Allocate):
            body, state = self.plan(s.body, state, canon)
            return S.Allocate(s.buffer, body), state
        if isinstance(s, S.LetStmt):
            body, state = self.plan(s.body, state, canon)
            return S.LetStmt(s.var, s.value, body), state
        why = self.divergent(s, tvars)
        if why is None and isinstance(s, S.If | S.For):
            # a barrier needed by a part of a loop or branch goes in front of all of it
            prefix: list[S.Stmt] = []
            if self.conflict(state, self.accesses(s, canon)) is not None:
                prefix, state = [barrier()], []
            if isinstance(s, S.If):
                then, st1 = self.plan(s.then_body, state, canon)
                other, st2 = (
                    (None, state) if s.else_body is None else self.plan(s.else_body, state, canon)
                )
                return S.seq(*prefix, S.If(s.cond, then, other)), _union(st1, st2)
            if s.thread is not None and s.thread.is_gpu:
                inner = {**canon, s.var: CANONICAL[s.thread.tag]}
                body, state = self.plan(s.body, state, inner)
                return S.seq(*prefix, s.replace(body=body)), state
            loop, state = self.plan_loop(s, state, canon)
            return S.seq(*prefix, loop), state
        mine = self.accesses(s, canon)
        if why is not None:
            self.check_inside(s, canon, why)
        if self.conflict(state, mine) is not None:
            return S.seq(barrier(), s), mine
        return s, _union(state, mine)

    def plan_loop(
        self, loop: S.For, state: list[Access], canon: dict[Var, Expr]
    ) -> tuple[S.Stmt, list[Access]]:
        body, out = self.plan(loop.body, state, canon)
        for _ in range(_MAX_ROUNDS):
            # the next iteration starts with what the previous one left unsynchronised
            again, out2 = self.plan(loop.body, _union(state, out), canon)
            if again == body:
                break
            body, out = again, out2
        return loop.replace(body=body), out

    def check_inside(self, s: S.Stmt, canon: dict[Var, Expr], why: str) -> None:
        """A divergent statement must not need a barrier inside."""
        inner = s.body if isinstance(s, S.For) else s
        if isinstance(s, S.For) and s.thread is not None and s.thread.is_gpu:
            canon = {**canon, s.var: CANONICAL[s.thread.tag]}
        bodies = [inner] if not isinstance(inner, S.If) else [inner.then_body, inner.else_body]
        for b in bodies:
            if b is None:
                continue
            planned, _ = self.plan(b, [], canon)
            if _count_barriers(planned):
                conflict = _first_shared(b)
                raise LoweringError(
                    f"{self.what}: shared buffer {conflict} is written and read by different "
                    f"threads where not every thread of the block arrives ({why}), so no "
                    "barrier can separate them: give every loop bound to a threadIdx axis the "
                    "block's extent along it"
                )


def _union(a: list[Access], b: list[Access]) -> list[Access]:
    out = list(a)
    for x in b:
        if x not in out:
            out.append(x)
    return out


def _count_barriers(s: S.Stmt) -> int:
    from compiler.targets.gpu.intrin import is_barrier

    n = 0

    def fn(x: Node) -> None:
        nonlocal n
        if isinstance(x, S.Evaluate) and is_barrier(x):
            n += 1

    visit(s, fn)
    return n


def _first_shared(s: S.Stmt) -> str:
    names: list[str] = []

    def fn(x: Node) -> None:
        if isinstance(x, S.BufferStore) and x.buffer.scope.name == "shared":
            names.append(x.buffer.name)

    visit(s, fn)
    return names[0] if names else "?"


def _kernel(stmt: S.Stmt, launch: LaunchConfig, name: str) -> S.Stmt:
    from compiler.targets.gpu.kernels import written_stages

    planner = _Planner(launch, name, ", ".join(written_stages(stmt)))
    new, _ = planner.plan(stmt, [], {})
    return new
