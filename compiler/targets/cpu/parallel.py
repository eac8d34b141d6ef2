"""Parallel loops on the CPU: the body is outlined into a worker function and the iteration
range is split into one contiguous chunk per thread (pthreads; the calling thread runs chunk 0).

Each worker receives a closure ``{task, ntasks, min, extent, captured values...}`` holding the
loop variables and buffer pointers its body uses from the enclosing scope; buffers allocated
inside the loop body are private to each worker.

Example (shape of the emitted code)::

    define internal ptr @main_par0(ptr %clo)   ; runs iterations [task*chunk, (task+1)*chunk)
    ...
    call i32 @pthread_create(ptr %tid, ptr null, ptr @main_par0, ptr %clo_t)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from compiler.ir import stmt as S
from compiler.ir.functor import buffers_used, free_vars

if TYPE_CHECKING:
    from compiler.targets.cpu.codegen import CpuCodegen, Value


def _raw_loop(cg: CpuCodegen, lo: str, end: str, body: Callable[[str], None]) -> None:
    head, loop, done = cg.new_label("pl_head"), cg.new_label("pl_body"), cg.new_label("pl_end")
    pre = cg.fb.block
    cg.emit(f"br label %{head}")
    cg.start_block(head)
    iv = cg.t()
    cg.emit(f"{iv} = phi i64 [ {lo}, %{pre} ], [ {iv}.next, %{loop}.latch ]")
    cond = cg.op("i1", f"icmp slt i64 {iv}, {end}")
    cg.emit(f"br {cond}, label %{loop}, label %{done}")
    cg.start_block(loop)
    body(iv)
    cg.emit(f"br label %{loop}.latch")
    cg.start_block(f"{loop}.latch")
    cg.emit(f"{iv}.next = add nsw i64 {iv}, 1")
    cg.emit(f"br label %{head}")
    cg.start_block(done)


def emit_parallel_for(cg: CpuCodegen, loop: S.For) -> None:
    from compiler.targets.cpu.codegen import FunctionBuilder, Value

    if cg.in_parallel:
        cg.fail(f"parallel loop {loop.var.name} is nested inside another parallel loop")
    lo = cg.index(loop.min)
    ext = cg.index(loop.extent)
    if cg.num_threads == 1:
        cg.serial_loop(loop.var, lo, ext, loop.extent, lambda: cg.stmt(loop.body), loop.min)
        return

    captured_vars = sorted(
        (v for v in free_vars(loop) if v in cg.vars and v != loop.var), key=lambda v: v.uid
    )
    captured_bufs = sorted(
        (b for b in buffers_used(loop.body) if b in cg.bufs), key=lambda b: b.uid
    )
    cap_values: list[Value] = [cg.vars[v] for v in captured_vars] + [
        cg.bufs[b] for b in captured_bufs
    ]
    struct = "{ i64, i64, i64, i64" + "".join(f", {v.ty}" for v in cap_values) + " }"
    cg.n_outlined += 1
    worker = f"{cg.func.name}_par{cg.n_outlined}"

    # Worker function --------------------------------------------------------------------------
    saved = (cg.fb, cg.vars, cg.bufs, cg.env)
    cg.fb = FunctionBuilder(worker, f"define internal ptr @{worker}(ptr %clo) #0")
    cg.fb.ret = "ret ptr null"
    cg.vars, cg.bufs, cg.env = {}, {}, dict(cg.env)
    cg.in_parallel = True
    fields = []
    for k, ty in enumerate(["i64", "i64", "i64", "i64"] + [v.ty for v in cap_values]):
        p = cg.op("ptr", f"getelementptr inbounds {struct}, ptr %clo, i32 0, i32 {k}")
        fields.append(cg.op(ty, f"load {ty}, ptr {p.ref}"))
    task, ntasks, w_lo, w_ext = fields[:4]
    for v, val in zip(captured_vars, fields[4:], strict=False):
        cg.vars[v] = val
    for b, val in zip(captured_bufs, fields[4 + len(captured_vars) :], strict=True):
        cg.bufs[b] = val
    t1 = cg.op("i64", f"add i64 {w_ext.ref}, {ntasks.ref}")
    t2 = cg.op("i64", f"sub i64 {t1.ref}, 1")
    chunk = cg.op("i64", f"sdiv i64 {t2.ref}, {ntasks.ref}")
    begin = cg.op("i64", f"mul i64 {task.ref}, {chunk.ref}")
    stop = cg.op("i64", f"add i64 {begin.ref}, {chunk.ref}")
    over = cg.op("i1", f"icmp sgt i64 {stop.ref}, {w_ext.ref}")
    end = cg.op("i64", f"select i1 {over.ref}, i64 {w_ext.ref}, i64 {stop.ref}")
    count0 = cg.op("i64", f"sub i64 {end.ref}, {begin.ref}")
    neg = cg.op("i1", f"icmp slt i64 {count0.ref}, 0")
    count = cg.op("i64", f"select i1 {neg.ref}, i64 0, i64 {count0.ref}")
    start = cg.op("i64", f"add i64 {w_lo.ref}, {begin.ref}")
    cg.serial_loop(loop.var, start, count, loop.extent, lambda: cg.stmt(loop.body), loop.min)
    cg.functions.append(cg.fb.text())
    cg.fb, cg.vars, cg.bufs, cg.env = saved
    cg.in_parallel = False

    # Launch ---------------------------------------------------------------------------------
    cg.declare("pthread_create", "declare i32 @pthread_create(ptr, ptr, ptr, ptr)")
    cg.declare("pthread_join", "declare i32 @pthread_join(i64, ptr)")
    n = cg.num_threads
    clos = f"%clo{cg.n_outlined}"
    tids = f"%tids{cg.n_outlined}"
    cg.fb.entry.append(f"  {clos} = alloca [{n} x {struct}], align 64")
    cg.fb.entry.append(f"  {tids} = alloca [{n} x i64], align 8")
    few = cg.op("i1", f"icmp slt i64 {ext.ref}, {n}")
    capped = cg.op("i64", f"select i1 {few.ref}, i64 {ext.ref}, i64 {n}")
    # At least one task, so an empty loop still divides its range by a non-zero count.
    empty = cg.op("i1", f"icmp slt i64 {capped.ref}, 1")
    ntask = cg.op("i64", f"select i1 {empty.ref}, i64 1, i64 {capped.ref}")

    def fill(t: str) -> str:
        c = cg.op("ptr", f"getelementptr inbounds [{n} x {struct}], ptr {clos}, i64 0, i64 {t}")
        for k, val in enumerate([Value("i64", t), ntask, lo, ext] + cap_values):
            p = cg.op("ptr", f"getelementptr inbounds {struct}, ptr {c.ref}, i32 0, i32 {k}")
            cg.emit(f"store {val.ty} {val.ref}, ptr {p.ref}")
        return c.ref

    def launch(t: str) -> None:
        c = fill(t)
        tid = cg.op("ptr", f"getelementptr inbounds [{n} x i64], ptr {tids}, i64 0, i64 {t}")
        rc = cg.op(
            "i32", f"call i32 @pthread_create(ptr {tid.ref}, ptr null, ptr @{worker}, ptr {c})"
        )
        # A thread that cannot be created runs its chunk here; it then has nothing to join.
        failed = cg.op("i1", f"icmp ne i32 {rc.ref}, 0")
        run, cont = cg.new_label("pt_inline"), cg.new_label("pt_ok")
        cg.emit(f"br i1 {failed.ref}, label %{run}, label %{cont}")
        cg.start_block(run)
        cg.emit(f"call ptr @{worker}(ptr {c})")
        cg.emit(f"store i64 0, ptr {tid.ref}")
        cg.emit(f"br label %{cont}")
        cg.start_block(cont)

    def join(t: str) -> None:
        tid = cg.op("ptr", f"getelementptr inbounds [{n} x i64], ptr {tids}, i64 0, i64 {t}")
        handle = cg.op("i64", f"load i64, ptr {tid.ref}")
        started = cg.op("i1", f"icmp ne i64 {handle.ref}, 0")
        do, cont = cg.new_label("pj_do"), cg.new_label("pj_ok")
        cg.emit(f"br i1 {started.ref}, label %{do}, label %{cont}")
        cg.start_block(do)
        cg.emit(f"call i32 @pthread_join(i64 {handle.ref}, ptr null)")
        cg.emit(f"br label %{cont}")
        cg.start_block(cont)

    _raw_loop(cg, "1", ntask.ref, launch)
    c0 = fill("0")
    cg.emit(f"call ptr @{worker}(ptr {c0})")
    _raw_loop(cg, "1", ntask.ref, join)
