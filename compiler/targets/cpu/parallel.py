"""Parallel loops on the CPU: the body is outlined into a worker function and the iteration
range is split into one contiguous chunk per thread, run by the process's thread pool
(:mod:`compiler.targets.cpu.pool`; the calling thread runs chunk 0).

Each worker receives a closure ``{task, ntasks, min, extent, captured values...}`` holding the
loop variables and buffer pointers its body uses from the enclosing scope; buffers allocated
inside the loop body are private to each worker.

Example (shape of the emitted code)::

    define internal ptr @main_par0(ptr %clo)   ; runs iterations [task*chunk, (task+1)*chunk)
    ...
    call void @vtac_parallel_run(ptr @main_par0, ptr %clo, i64 %stride, i64 %ntasks)
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

    # Worker: a trampoline that reads the closure and calls the body, whose buffer parameters
    # are noalias as the kernel's own are (a pointer loaded from the closure would carry no such
    # fact, and the loop body would then lose its vectorization and hoisting) ------------------
    saved = (cg.fb, cg.vars, cg.bufs, cg.env)
    body = f"{worker}_body"
    params = ["i64 %task", "i64 %ntasks", "i64 %lo", "i64 %ext"]
    params += [f"{cap_values[k].ty} %cv{k}" for k in range(len(captured_vars))]
    params += [f"ptr noalias %cb{k}" for k in range(len(captured_bufs))]
    cg.fb = FunctionBuilder(body, f"define internal void @{body}({', '.join(params)}) #0 noinline")
    cg.vars, cg.bufs, cg.env = {}, {}, dict(cg.env)
    cg.in_parallel = True
    for k, v in enumerate(captured_vars):
        cg.vars[v] = Value(cap_values[k].ty, f"%cv{k}")
    for k, b in enumerate(captured_bufs):
        cg.bufs[b] = Value("ptr", f"%cb{k}")
    task, ntasks = Value("i64", "%task"), Value("i64", "%ntasks")
    w_lo, w_ext = Value("i64", "%lo"), Value("i64", "%ext")
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

    cg.fb = FunctionBuilder(worker, f"define internal ptr @{worker}(ptr %clo) #0")
    cg.fb.ret = "ret ptr null"
    fields = []
    for k, ty in enumerate(["i64", "i64", "i64", "i64"] + [v.ty for v in cap_values]):
        p = cg.op("ptr", f"getelementptr inbounds {struct}, ptr %clo, i32 0, i32 {k}")
        fields.append(cg.op(ty, f"load {ty}, ptr {p.ref}"))
    args = ", ".join(f"{f.ty} {f.ref}" for f in fields)
    cg.emit(f"call void @{body}({args})")
    cg.functions.append(cg.fb.text())
    cg.fb, cg.vars, cg.bufs, cg.env = saved
    cg.in_parallel = False

    # Launch: one closure per chunk, run by the process's thread pool (pool.py) ----------------
    from compiler.targets.cpu.pool import POOL_ENTRY

    cg.declare(POOL_ENTRY, f"declare void @{POOL_ENTRY}(ptr, ptr, i64, i64)")
    n = cg.num_threads
    clos = f"%clo{cg.n_outlined}"
    cg.fb.entry.append(f"  {clos} = alloca [{n} x {struct}], align 64")
    few = cg.op("i1", f"icmp slt i64 {ext.ref}, {n}")
    capped = cg.op("i64", f"select i1 {few.ref}, i64 {ext.ref}, i64 {n}")
    # At least one task, so an empty loop still divides its range by a non-zero count.
    empty = cg.op("i1", f"icmp slt i64 {capped.ref}, 1")
    ntask = cg.op("i64", f"select i1 {empty.ref}, i64 1, i64 {capped.ref}")

    def fill(t: str) -> None:
        c = cg.op("ptr", f"getelementptr inbounds [{n} x {struct}], ptr {clos}, i64 0, i64 {t}")
        for k, val in enumerate([Value("i64", t), ntask, lo, ext] + cap_values):
            p = cg.op("ptr", f"getelementptr inbounds {struct}, ptr {c.ref}, i32 0, i32 {k}")
            cg.emit(f"store {val.ty} {val.ref}, ptr {p.ref}")

    _raw_loop(cg, "0", ntask.ref, fill)
    size = cg.op("ptr", f"getelementptr {struct}, ptr null, i64 1")
    stride = cg.op("i64", f"ptrtoint ptr {size.ref} to i64")
    cg.emit(
        f"call void @{POOL_ENTRY}(ptr @{worker}, ptr {clos}, i64 {stride.ref}, i64 {ntask.ref})"
    )
