"""Cross-thread reductions, and the check that no two threads accumulate into one element.

A reduction axis bound to ``threadIdx.*`` gives every thread a part of the reduction. The
pass turns the thread-bound loop into a per-thread partial result in a register, a tree
reduction of the partial results in shared memory (TVM's allreduce), and one update of the
output: by thread 0 when the output is in shared or global memory, by every thread when it
is in the thread's own local memory. The barriers between the tree's steps come from the
thread-sync pass like every other barrier.

Any other accumulation (``X[i] = X[i] + ...``) that several threads or blocks run on the
same element is a race and is reported: a reduction bound to threads without a
cross-thread reduction.

Before / after, ``B[i] = sum(A[i, k])`` with ``k`` bound to ``threadIdx.x`` (extent 4)::

    B[i] = 0.0f                        B[i] = 0.0f
    for k in range(4):  # threadIdx.x  B.acc[0] = 0.0f
      B[i] = B[i] + A[i*4 + k]         for k in range(4):  # threadIdx.x
                                         B.acc[0] = B.acc[0] + A[i*4 + k]
                                       for k in range(4):  # threadIdx.x
                                         B.red[k] = B.acc[0]
                                       for k in range(2):  # threadIdx.x
                                         B.red[k] = B.red[k] + B.red[k + 2]
                                       for k in range(1):  # threadIdx.x
                                         B.red[k] = B.red[k] + B.red[k + 1]
                                       for k in range(1):  # threadIdx.x
                                         B[i] = B[i] + B.red[0]
"""

from __future__ import annotations

import math

from compiler.errors import LoweringError
from compiler.ir import expr as E
from compiler.ir import op
from compiler.ir import stmt as S
from compiler.ir.buffer import LOCAL, SHARED, Buffer
from compiler.ir.expr import BufferLoad, Expr, IntImm, Var
from compiler.ir.functor import rewrite, used_vars, visit
from compiler.ir.node import Node
from compiler.targets.gpu.kernels import BLOCK_TAGS, THREAD_TAGS, LaunchConfig, map_kernels

_COMBINERS = (E.Add, E.Mul, E.Max, E.Min)


def lower_cross_thread_reduction(func: S.PrimFunc) -> S.PrimFunc:
    """The ``lower_cross_thread_reduction`` pass."""
    return map_kernels(func, _kernel)


def _kernel(stmt: S.Stmt, launch: LaunchConfig, name: str) -> S.Stmt:
    from compiler.targets.gpu.kernels import written_stages

    what = f"kernel {name} (stage {', '.join(written_stages(stmt))})"

    def go(s: S.Stmt, stack: tuple[S.For, ...], depth: dict[Buffer, int]) -> S.Stmt:
        if isinstance(s, S.SeqStmt):
            return S.seq(*(go(x, stack, depth) for x in s.stmts))
        if isinstance(s, S.Allocate):
            return S.Allocate(s.buffer, go(s.body, stack, {**depth, s.buffer: len(stack)}))
        if isinstance(s, S.LetStmt):
            return S.LetStmt(s.var, s.value, go(s.body, stack, depth))
        if isinstance(s, S.If):
            other = None if s.else_body is None else go(s.else_body, stack, depth)
            return S.If(s.cond, go(s.then_body, stack, depth), other)
        if isinstance(s, S.For):
            if s.thread is not None and s.thread.is_gpu:
                if s.thread.tag in THREAD_TAGS and _int(s.extent) > 1:
                    store = _reduced_store(s, stack, depth)
                    if store is not None:
                        return _cross_thread(what, s, store, stack, launch)
                return s.replace(body=go(s.body, stack + (s,), depth))
            return s.replace(body=go(s.body, stack, depth))
        if isinstance(s, S.BufferStore) and _is_update(s):
            _check_race(what, s, stack, depth, launch)
        return s

    return go(stmt, (), {})


def _int(e: Expr) -> int:
    assert isinstance(e, IntImm)
    return e.value


def _is_update(s: S.BufferStore) -> bool:
    """True if ``s`` reads the element it writes (an accumulation)."""
    hits: list[Node] = []
    visit(s.value, lambda n: hits.append(n) if _reads(n, s) else None)
    return bool(hits)


def _reads(n: Node, s: S.BufferStore) -> bool:
    return isinstance(n, BufferLoad) and n.buffer == s.buffer and n.indices == s.indices


def _tag(loop: S.For) -> str:
    """The GPU axis of a loop on the thread stack (only bound loops are pushed there)."""
    if loop.thread is None:
        raise LoweringError(f"loop {loop.var.name} on the thread stack is bound to no GPU axis")
    return loop.thread.tag


def _relevant(stack: tuple[S.For, ...], buf: Buffer, depth: dict[Buffer, int]) -> tuple[S.For, ...]:
    """Thread loops whose threads all see the same copy of ``buf``."""
    if buf.scope.name == "local":
        return stack[depth.get(buf, 0) :]
    if buf.scope.name == "shared":
        return tuple(f for f in stack if _tag(f) in THREAD_TAGS)
    return stack


def _reduced_store(
    loop: S.For, stack: tuple[S.For, ...], depth: dict[Buffer, int]
) -> S.BufferStore | None:
    """An accumulation inside ``loop`` that ``loop``'s threads share (the loop is a reduction
    axis bound to threads), or None."""
    found: list[S.BufferStore] = []
    # buffers allocated inside the loop are not shared by its threads (a local one is each
    # thread's own; a shared one is checked by the race check at its stores)
    inner: set[Buffer] = set()
    visit(loop.body, lambda n: inner.add(n.buffer) if isinstance(n, S.Allocate) else None)

    def fn(n: Node) -> bool | None:
        if isinstance(n, S.For) and n.thread is not None and n.thread.is_gpu:
            return False  # a nested thread loop is checked on its own
        if isinstance(n, S.BufferStore) and _is_update(n) and n.buffer not in inner:
            if loop.var not in _index_vars(n):
                found.append(n)
        return None

    visit(loop.body, fn)
    return found[0] if found else None


def _index_vars(s: S.BufferStore) -> set[Var]:
    out: set[Var] = set()
    for i in s.indices:
        out |= used_vars(i)
    return out


def _fail(what: str, loop: S.For, store: S.BufferStore, why: str) -> LoweringError:
    return LoweringError(
        f"{what}: loop {loop.var.name} bound to {loop.thread} accumulates into "
        f"{store.buffer.name} from every thread ({why}): a reduction bound to threads without "
        "a cross-thread reduction"
    )


def _cross_thread(
    what: str,
    loop: S.For,
    store: S.BufferStore,
    stack: tuple[S.For, ...],
    launch: LaunchConfig,
) -> S.Stmt:
    tag = _tag(loop)
    inner_vars: set[Var] = set()
    count = 0
    cur: S.Stmt = loop.body
    shape_ok = True
    while True:
        if isinstance(cur, S.For):
            if cur.thread is not None:
                shape_ok = False
                break
            inner_vars.add(cur.var)
            cur = cur.body
        elif isinstance(cur, S.If) and cur.else_body is None:
            cur = cur.then_body
        else:
            break
    if not shape_ok or not isinstance(cur, S.BufferStore):

        def count_stores(n: Node) -> None:
            nonlocal count
            if isinstance(n, S.BufferStore):
                count += 1

        visit(loop.body, count_stores)
        raise _fail(
            what,
            loop,
            store,
            f"the loop holds {count} stores and nested loops of other kinds; a cross-thread "
            "reduction needs one update nested only in serial loops: reorder the reduction "
            "axis bound to threads inside the spatial axes",
        )
    if cur is not store and cur != store:
        raise _fail(what, loop, store, "the update is not the loop's only statement")
    value = store.value
    if not isinstance(value, _COMBINERS) or BufferLoad(store.buffer, store.indices) not in (
        value.a,
        value.b,
    ):
        raise _fail(what, loop, store, "the update is not a sum, product, max or min")
    spatial = _index_vars(store) & inner_vars
    if spatial:
        names = ", ".join(sorted(v.name for v in spatial))
        raise _fail(
            what,
            loop,
            store,
            f"the serial loops {names} inside it index the result; move them outside the "
            "loop bound to threads",
        )
    own = BufferLoad(store.buffer, store.indices)
    operand = value.b if value.a == own else value.a
    kind = type(value)
    dtype = store.buffer.dtype

    def combine(a: Expr, b: Expr) -> Expr:
        return kind(a, b)

    n = _int(loop.extent)
    others = [f for f in stack if _tag(f) in THREAD_TAGS and _tag(f) != tag]
    base: Expr = IntImm(0)
    for f in others:
        base = base * _int(f.extent) + f.var
    rows = math.prod(_int(f.extent) for f in others)
    acc = Buffer(f"{store.buffer.name}.acc", (E.const(1),), dtype, LOCAL)
    red = Buffer(f"{store.buffer.name}.red", (E.const(rows * n),), dtype, SHARED)
    zero = (IntImm(0),)

    def swap(x: Node) -> Node | None:
        if x is store or x == store:
            return S.BufferStore(acc, combine(BufferLoad(acc, zero), operand), zero)
        return None

    partial = loop.replace(body=rewrite(loop.body, swap))

    def on_threads(extent: int, body_of: object) -> S.Stmt:
        v = Var(loop.var.name)
        return S.For(
            v,
            IntImm(0),
            IntImm(extent),
            S.ForKind.THREAD_BINDING,
            body_of(v),  # type: ignore[operator]
            loop.thread,
            (("cross_thread_reduction", 1),),
        )

    steps: list[S.Stmt] = [
        S.BufferStore(acc, _identity(kind, dtype), zero),
        partial,
        on_threads(n, lambda v: S.BufferStore(red, BufferLoad(acc, zero), (base + v,))),
    ]
    half = 1 << max(0, (n - 1).bit_length() - 1)
    while half >= 1:
        width = half

        def step(v: Var, width: int = width) -> S.Stmt:
            upd = S.BufferStore(
                red,
                combine(BufferLoad(red, (base + v,)), BufferLoad(red, (base + v + width,))),
                (base + v,),
            )
            return upd if 2 * width <= n else S.If(v + width < n, upd)

        steps.append(on_threads(width, step))
        half //= 2
    result = combine(own, BufferLoad(red, (base,)))
    if store.buffer.scope.name == "local":
        final = on_threads(
            launch.extent(tag), lambda v: S.BufferStore(store.buffer, result, store.indices)
        )
    else:
        final = on_threads(1, lambda v: S.BufferStore(store.buffer, result, store.indices))
    steps.append(final)
    return S.Allocate(acc, S.Allocate(red, S.seq(*steps)))


def _identity(kind: type, dtype: object) -> Expr:
    if kind is E.Add:
        return op.convert(0, dtype)  # type: ignore[arg-type]
    if kind is E.Mul:
        return op.convert(1, dtype)  # type: ignore[arg-type]
    if kind is E.Max:
        return op.min_value(dtype)  # type: ignore[arg-type]
    return op.max_value(dtype)  # type: ignore[arg-type]


def _check_race(
    what: str,
    store: S.BufferStore,
    stack: tuple[S.For, ...],
    depth: dict[Buffer, int],
    launch: LaunchConfig,
) -> None:
    """Raise if several threads or blocks run this accumulation on one element."""
    used = _index_vars(store)
    loops = _relevant(stack, store.buffer, depth)
    for f in loops:
        if _int(f.extent) > 1 and f.var not in used:
            raise _fail(what, f, store, f"{f.var.name} does not index {store.buffer.name}")
    scope = store.buffer.scope.name
    if scope == "local":
        return
    tags = THREAD_TAGS if scope == "shared" else THREAD_TAGS + BLOCK_TAGS
    bound = {_tag(f) for f in stack}
    for tag in tags:
        if launch.extent(tag) > 1 and tag not in bound:
            raise LoweringError(
                f"{what}: {store.buffer.name} is accumulated by all {launch.extent(tag)} "
                f"threads of {tag} at once (no loop around the update is bound to {tag}): a "
                "reduction bound to threads without a cross-thread reduction; bind the "
                f"reduction axis of {store.buffer.name} to {tag} or compute it per thread"
            )
