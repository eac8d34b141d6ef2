"""Which module runs each block (coproc scopes), and the dependency tokens between blocks.

``annotate_coproc_scopes`` wraps every maximal statement whose accelerator calls all run on
one module in ``pragma coproc_scope = <module>``; consecutive blocks of the same module in a
sequence share one scope (VTA's LiftAttrScope), so they need no tokens between them.

``inject_coproc_sync`` is VTA's CoProcInstDepDetector. It walks the blocks in program order,
per virtual thread (``cthread`` loops are transparent: the threads are expanded afterwards,
each with a copy of this synchronisation):

* between consecutive blocks on different modules ``a -> b`` it pushes ``(a, b)`` at the end of
  the first and pops it at the start of the second;
* a loop adds the same pair from its last block back to its first (loop-carried); the loop then
  starts with a pending pop and ends with a pending push, which the block before the loop
  pre-charges (a push before the loop) and the block after drains (a pop after it), as do the
  start and end of the function;
* both branches of an ``if`` are closed on their own (pre-charged and drained).

The compute<->load and the compute<->store pairs are planned in two walks (:func:`_views`):
the first sees only the load blocks and the compute blocks that share a buffer with the load
module (the GEMMs), so an epilogue or a reset between two reduction loops neither waits for a
load nor holds one back; inside a compute block those tokens guard only the statements that
share the buffer.

Tokens are ``vta.dep_push(from, to)``/``vta.dep_pop(from, to)`` with modules 1 load,
2 compute, 3 store.

Example (a loop of loads feeding GEMMs, then a store)::

    compute{reset; push(2,1)}                       # pre-charge compute->load
    for ko:  load{pop(2,1); ...; push(1,2)}
             compute{pop(1,2); gemm; push(2,1)}     # loop-carried compute->load
    pop(2,1)                                        # drain
    ... compute{...; push(2,3)}  store{pop(2,3); ...}

    >>> from compiler.ir import PrimFunc, NOP
    >>> inject_coproc_sync(PrimFunc("f", (), NOP)).body == NOP
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeGuard

from compiler.ir.buffer import GLOBAL, Buffer
from compiler.ir.functor import buffers_used, visit
from compiler.ir.node import Node
from compiler.ir.pragma import declare_pragma
from compiler.ir.stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    If,
    LetStmt,
    Pragma,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)

from ..calls import MODULE_ID, Module, dep_pop, dep_push, module_of_call, vta_call
from ..errors import VTATargetError

COPROC_SCOPE = declare_pragma("coproc_scope", "the module (load, compute, store) that runs it")
# sentinels of _module besides the three modules
_MIXED = "mixed"
_HOST = "host"


# ---- coproc scopes ----------------------------------------------------------------------
def _module(s: Stmt, memo: dict[int, str | None]) -> str | None:
    key = id(s)
    if key in memo:
        return memo[key]
    out: str | None
    call = vta_call(s)
    if call is not None:
        out = module_of_call(call)
    elif isinstance(s, Evaluate):
        out = None
    elif isinstance(s, SeqStmt):
        out = _combine([_module(x, memo) for x in s.stmts])
    elif isinstance(s, For | Allocate | LetStmt | Pragma):
        out = _module(s.body, memo)
    elif isinstance(s, If):
        kids = [s.then_body] + ([s.else_body] if s.else_body is not None else [])
        out = _combine([_module(x, memo) for x in kids])
    else:
        out = _HOST
    memo[key] = out
    return out


def _combine(mods: list[str | None]) -> str | None:
    found = {m for m in mods if m is not None}
    if not found:
        return None
    if len(found) == 1:
        return found.pop()
    return _MIXED


def _wrap(s: Stmt, memo: dict[int, str | None]) -> Stmt:
    m = _module(s, memo)
    if m is None:
        return s
    if m is _HOST:
        raise _host_error(s)
    if m is not _MIXED:
        return Pragma(COPROC_SCOPE, m, s)
    if isinstance(s, SeqStmt):
        out: list[Stmt] = []
        run: list[Stmt] = []
        run_mod: str | None = None

        def flush() -> None:
            if run:
                out.append(Pragma(COPROC_SCOPE, run_mod, seq(*run)))
                run.clear()

        for x in s.stmts:
            xm = _module(x, memo)
            if xm in MODULE_ID:
                if xm != run_mod:
                    flush()
                    run_mod = xm
                run.append(x)
            else:
                flush()
                run_mod = None
                out.append(_wrap(x, memo))
        flush()
        return seq(*out)
    if isinstance(s, For | Allocate | LetStmt | Pragma):
        return s.replace(body=_wrap(s.body, memo))
    if isinstance(s, If):
        other = None if s.else_body is None else _wrap(s.else_body, memo)
        return If(s.cond, _wrap(s.then_body, memo), other)
    return s


def _host_error(s: Stmt) -> VTATargetError:
    """Name the stage whose loop nest is left to run on the host, and the pragma it lacks."""
    found: list[BufferStore] = []

    def stores(n: Node) -> bool:
        if isinstance(n, BufferStore):
            found.append(n)
            return False
        return True

    visit(s, stores)
    if not found:
        return VTATargetError(
            f"a {type(s).__name__} statement is left to run on the host; every statement of an "
            "accelerator function must become an accelerator instruction"
        )
    # an untensorized reduction starts with its init store (C = 0); name what its update lacks
    store = next(
        (st for st in found if any(b.scope is not GLOBAL and b.scope is not st.buffer.scope
                                   for b in buffers_used(st.value))),
        found[0],
    )  # fmt: skip
    dst = store.buffer
    read_bufs = buffers_used(store.value)
    reads = sorted({b.name for b in read_bufs})
    from_main = any(b.scope is GLOBAL for b in read_bufs)
    other_sram = [b for b in read_bufs if b.scope is not GLOBAL and b.scope is not dst.scope]
    if other_sram and not from_main and dst.scope is not GLOBAL:
        return VTATargetError(
            f"stage {dst.name} ({dst.scope.name}) reads {', '.join(reads)} from other on-chip "
            f"buffers ({other_sram[0].scope.name}): that is the GEMM core's work, but the stage "
            f"is not tensorized, so it would run on the host; add "
            f"s[{dst.name}].tensorize(<its batch tile axis>, env.gemm)"
        )
    if dst.scope is GLOBAL or from_main:
        need = "dma_copy"
        what = "copies between main memory and an on-chip buffer"
    else:
        need = "alu"
        what = "computes in an on-chip buffer"
    return VTATargetError(
        f"stage {dst.name} ({dst.scope.name}, reads {', '.join(reads) or 'nothing'}) {what} "
        f"but has no 'pragma {need}' on any of its loops, so it would run on the host; add "
        f's[{dst.name}].pragma(<its outermost loop>, "{need}")'
    )


def annotate_coproc_scopes(func: PrimFunc) -> PrimFunc:
    """The ``coproc_scopes`` pass."""
    # Every store left at this point would run on the host; judge them all together so the
    # error names what the stage lacks (an untensorized reduction's init store comes first).
    left: list[BufferStore] = []
    visit(func.body, lambda n: left.append(n) if isinstance(n, BufferStore) else None)
    if left:
        raise _host_error(func.body)
    return func.with_body(_wrap(func.body, {}))


def block_module(s: Stmt) -> Module | None:
    """The module of a coproc block, or None if ``s`` is not one."""
    if isinstance(s, Pragma) and s.key is COPROC_SCOPE:
        return Module(s.value)
    return None


# ---- dependency tokens ------------------------------------------------------------------
Pair = tuple[int, int]


@dataclass
class _State:
    node: Stmt | None = None
    enter_ctx: set[int] = field(default_factory=set)
    exit_ctx: set[int] = field(default_factory=set)
    enter_pop: list[Pair] = field(default_factory=list)
    exit_push: list[Pair] = field(default_factory=list)


class _DepDetector:
    """One walk over the blocks that ``keep`` accepts (all blocks by default); a block it
    rejects is transparent: no token orders it against the blocks around it."""

    def __init__(self, keep: Callable[[Stmt], bool] | None = None) -> None:
        self.before: dict[int, list[Stmt]] = {}
        self.after: dict[int, list[Stmt]] = {}
        self.first = _State()
        self.last = _State()
        self.keep = keep
        # ids of the blocks this walk ordered, and the tokens that guard part of a block
        self.blocks: set[int] = set()
        self.guarded: dict[int, tuple[Callable[[Stmt], bool], list[Stmt], list[Stmt]]] = {}

    def plan(self, s: Stmt) -> None:
        self.visit(s)
        if self.last.node is not None:
            self.fix_enter_pop(self.first)
            self.fix_exit_push(self.last)

    def _add(self, where: dict[int, list[Stmt]], node: Stmt | None, stmts: list[Stmt]) -> None:
        if stmts:
            assert node is not None
            where.setdefault(id(node), []).extend(stmts)

    def inject(self, prev: _State, nxt: _State) -> tuple[list[Pair], list[Pair]]:
        """Synchronise ``prev`` -> ``nxt``; returns (pushes left pending at prev's exit, pops
        left pending at nxt's entry)."""
        if (
            not prev.exit_push
            and not nxt.enter_pop
            and len(prev.exit_ctx) == 1
            and len(nxt.enter_ctx) == 1
        ):
            a, b = next(iter(prev.exit_ctx)), next(iter(nxt.enter_ctx))
            if a != b:
                self._add(self.after, prev.node, [dep_push(a, b)])
                self._add(self.before, nxt.node, [dep_pop(a, b)])
                return [(a, b)], [(a, b)]
            return [], []
        vpush = list(prev.exit_push)
        vpop = list(nxt.enter_pop)
        pending = [(a, b) for a in sorted(prev.exit_ctx) for b in sorted(nxt.enter_ctx) if a != b]
        prev_after: list[Stmt] = []
        next_before: list[Stmt] = []
        for p in pending:
            if p not in prev.exit_push:
                vpush.append(p)
                prev_after.append(dep_push(*p))
            if p not in nxt.enter_pop:
                vpop.append(p)
                next_before.append(dep_pop(*p))
        exit_push: list[Pair] = []
        enter_pop: list[Pair] = []
        for p in vpush:
            if p not in vpop:
                prev_after.append(dep_pop(*p))
            else:
                exit_push.append(p)
        for p in vpop:
            if p not in vpush:
                next_before.append(dep_push(*p))
            else:
                enter_pop.append(p)
        self._add(self.after, prev.node, prev_after)
        self._add(self.before, nxt.node, next_before)
        return exit_push, enter_pop

    def fix_enter_pop(self, st: _State) -> None:
        self._add(self.before, st.node, [dep_push(*p) for p in st.enter_pop])

    def fix_exit_push(self, st: _State) -> None:
        self._add(self.after, st.node, [dep_pop(*p) for p in st.exit_push])

    def update(self, cur: _State) -> None:
        if self.last.node is not None:
            self.inject(self.last, cur)
            self.last = cur
        else:
            self.first = cur
            self.last = cur

    def visit(self, s: Stmt) -> None:
        module = block_module(s)
        if module is not None:
            if self.keep is None or self.keep(s):
                ctx = MODULE_ID[module]
                self.blocks.add(id(s))
                self.update(_State(s, {ctx}, {ctx}))
            return
        if isinstance(s, SeqStmt):
            for x in s.stmts:
                self.visit(x)
            return
        if isinstance(s, For):
            if s.kind is ForKind.THREAD_BINDING and s.thread is not None and s.thread.is_virtual:
                self.visit(s.body)  # one thread's program; threads are expanded later
                return
            saved = (self.first, self.last)
            self.first, self.last = _State(), _State()
            self.visit(s.body)
            cur = _State()
            if self.last.node is not None:
                cur.node = s
                cur.exit_push, cur.enter_pop = self.inject(self.last, self.first)
                cur.enter_ctx = set(self.first.enter_ctx)
                cur.exit_ctx = set(self.last.exit_ctx)
            self.first, self.last = saved
            if cur.node is not None:
                self.update(cur)
            return
        if isinstance(s, If):
            saved = (self.first, self.last)
            cur = _State()
            for branch in (s.then_body, s.else_body):
                if branch is None:
                    continue
                self.first, self.last = _State(), _State()
                self.visit(branch)
                if self.last.node is not None:
                    cur.node = s
                    self.fix_enter_pop(self.first)
                    self.fix_exit_push(self.last)
                    cur.enter_ctx |= self.first.enter_ctx
                    cur.exit_ctx |= self.last.exit_ctx
            self.first, self.last = saved
            if cur.node is not None:
                self.update(cur)
            return
        if isinstance(s, Allocate | LetStmt | Pragma):
            self.visit(s.body)

    # ---- rebuilding ---------------------------------------------------------------------------
    def apply(self, s: Stmt) -> Stmt:
        key = id(s)
        if isinstance(s, SeqStmt):
            out = seq(*(self.apply(x) for x in s.stmts))
        elif isinstance(s, For | Allocate | LetStmt):
            out = s.replace(body=self.apply(s.body))
        elif isinstance(s, Pragma):
            body = self.apply(s.body)
            if block_module(s) is not None:
                # a block's own tokens go inside it: it pops before and pushes after its work
                if key in self.guarded:
                    guards, pre, post = self.guarded[key]
                    body = _guard(body, guards, pre, post)
                body = seq(*self.before.get(key, []), body, *self.after.get(key, []))
                return s.replace(body=body)
            out = s.replace(body=body)
        elif isinstance(s, If):
            other = None if s.else_body is None else self.apply(s.else_body)
            out = If(s.cond, self.apply(s.then_body), other)
        else:
            out = s
        return seq(*self.before.get(key, []), out, *self.after.get(key, []))


def _is_thread_loop(s: Stmt) -> TypeGuard[For]:
    return isinstance(s, For) and s.thread is not None and s.thread.is_virtual


def check_thread_nesting(body: Stmt) -> None:
    """Virtual threads must enclose the whole program: the tokens of a thread's program are
    replicated with it, so a serial loop around a thread loop, or a block outside the thread
    loops, would leave the copies unbalanced."""
    threads_found = False
    outside: list[str] = []

    def walk(s: Stmt, in_thread: bool, serial: str | None) -> None:
        nonlocal threads_found
        if _is_thread_loop(s):
            threads_found = True
            if serial is not None:
                raise VTATargetError(
                    f"virtual thread loop {s.var.name} ({s.thread}) is inside the loop "
                    f"{serial}; bind axes that enclose every other loop to virtual threads"
                )
            walk(s.body, True, None)
            return
        module = block_module(s)
        if module is not None:
            if not in_thread:
                outside.append(str(module))
            return
        for child in s.children():
            if isinstance(child, Stmt):
                walk(child, in_thread, s.var.name if isinstance(s, For) else serial)

    walk(body, False, None)
    if threads_found and outside:
        raise VTATargetError(
            f"{len(outside)} {outside[0]} block(s) run outside the virtual threads; with virtual "
            "threads every accelerator block must be inside them"
        )


def _block_buffers(body: Stmt) -> dict[Module, set[Buffer]]:
    """The buffers each module's blocks access (on chip and in main memory)."""
    out: dict[Module, set[Buffer]] = {m: set() for m in MODULE_ID}

    def walk(n: Node) -> bool:
        module = block_module(n) if isinstance(n, Stmt) else None
        if module is not None:
            out[module] |= buffers_used(n)
            return False
        return True

    visit(body, walk)
    return out


def _pairs_apart(used: dict[Module, set[Buffer]]) -> bool:
    load_global = {b for b in used[Module.LOAD] if b.scope is GLOBAL}
    store_global = {b for b in used[Module.STORE] if b.scope is GLOBAL}
    return not load_global & store_global


def split_by_module_pair(body: Stmt) -> bool:
    """Whether ``coproc_sync`` plans the compute<->load and the compute<->store tokens apart
    (see :func:`_views`): unless some main-memory buffer is both stored and loaded by the load
    module, whose order only a chain through compute keeps.

    Example:
        >>> from compiler.ir import NOP
        >>> split_by_module_pair(NOP)
        True
    """
    return _pairs_apart(_block_buffers(body))


@dataclass(frozen=True)
class _View:
    """One walk of the token planner: the blocks it orders (``keep``; None: all), and the
    statements inside a block its tokens guard (``guards``; None: the whole block)."""

    keep: Callable[[Stmt], bool] | None
    guards: Callable[[Stmt], bool] | None = None


def _views(body: Stmt) -> list[_View]:
    """The walks the tokens are planned over.

    The load module writes only the on-chip buffers its blocks fill (inp, wgt), so a compute
    block that accesses none of them (a reset, an ALU epilogue, an ACC or UOP load) has no
    hazard with it: the compute<->load tokens are planned over the load blocks and the compute
    blocks that share a buffer with them alone, and the compute<->store tokens over the store
    and every compute block. The next round of tiles' first load then waits for the last GEMM
    that read its buffer, not for the epilogue and the reset after it. Inside a compute block,
    the compute<->load tokens guard only the statements that share a buffer with the load
    module: a reset before the GEMM does not wait for the load. Store and load are ordered
    only through compute (no queue joins them), so where a main-memory buffer is both stored
    and loaded by the load module, one walk over every block keeps that chain.
    """
    used = _block_buffers(body)
    if not _pairs_apart(used):
        return [_View(None)]
    load_scopes = {b.scope for b in used[Module.LOAD] if b.scope is not GLOBAL}

    def shares_load_buffer(s: Stmt) -> bool:
        return any(b.scope in load_scopes for b in buffers_used(s))

    def load_compute(s: Stmt) -> bool:
        module = block_module(s)
        return module is Module.LOAD or (module is Module.COMPUTE and shares_load_buffer(s))

    def store_compute(s: Stmt) -> bool:
        return block_module(s) in (Module.STORE, Module.COMPUTE)

    return [_View(load_compute, shares_load_buffer), _View(store_compute)]


def _guard(body: Stmt, guards: Callable[[Stmt], bool], pre: list[Stmt], post: list[Stmt]) -> Stmt:
    """``body`` with ``pre`` before its first statement that ``guards`` accepts and ``post``
    after its last (around the whole body if none does)."""
    stmts = list(body.stmts) if isinstance(body, SeqStmt) else [body]
    hits = [k for k, x in enumerate(stmts) if guards(x)]
    lo, hi = (hits[0], hits[-1]) if hits else (0, len(stmts) - 1)
    return seq(*stmts[:lo], *pre, *stmts[lo : hi + 1], *post, *stmts[hi + 1 :])


def inject_coproc_sync(func: PrimFunc) -> PrimFunc:
    """The ``coproc_sync`` pass."""
    check_thread_nesting(func.body)
    det = _DepDetector()
    for v in _views(func.body):
        view = _DepDetector(v.keep)
        view.plan(func.body)
        for mine, theirs in ((det.before, view.before), (det.after, view.after)):
            for key, stmts in theirs.items():
                if v.guards is not None and key in view.blocks:
                    _, pre, post = det.guarded.setdefault(key, (v.guards, [], []))
                    (pre if mine is det.before else post).extend(stmts)
                else:
                    mine.setdefault(key, []).extend(stmts)
    return func.with_body(det.apply(func.body))
