"""The CPU kernels' thread pool: persistent worker threads that run the chunks of a parallel
loop, instead of a thread created and joined per loop.

A kernel's parallel loop fills one closure per chunk and calls
``vtac_parallel_run(worker, closures, stride, ntasks)`` (:mod:`compiler.targets.cpu.parallel`):
chunk 0 runs on the calling thread, chunks ``1 .. ntasks-1`` on the pool's workers, and the call
returns when every chunk is done. The pool is LLVM IR of its own (:data:`POOL_IR`), compiled
once per process into the JIT engine that holds every kernel, which resolves the kernels'
calls to it (:func:`compiler.targets.cpu.jit.compile_llvm`).

* Workers start on first use, as many as the widest loop needs, and live as long as the
  process. Between loops a worker polls for the next one a short while (:data:`SPIN` polls,
  about 25 us on an AMD EPYC core: a network's loops follow each other closely), then sleeps
  on a condition variable; the launching thread waits for the last chunk the same way.
* One loop runs at a time (a launch lock): kernels called from several Python threads take
  turns, each loop with every worker.
* A worker that cannot be created leaves its chunks to the calling thread, which runs them
  after its own.
* A process forked from one that had started workers has none of them: the first loop in the
  child (its pid differs from the one recorded when the pool was compiled, ``vtac_pool_init``)
  resets the locks and starts its own workers.

The mutexes and condition variables are zero-initialised storage, which is glibc's static
initializer for both (and what a forked child resets them to).
"""

from __future__ import annotations

#: Polls of the shared generation (the pending count) a worker (the launching thread) makes
#: before it sleeps on the condition variable: about 25 us (100,000 acquire loads of one
#: uncontended word took 24-25 us on an AMD EPYC core), within which a network's next parallel
#: loop usually starts.
SPIN = 100_000

#: The entry point the kernels call, and the one that records the process owning the pool.
POOL_ENTRY = "vtac_parallel_run"
POOL_INIT = "vtac_pool_init"

POOL_IR = r"""
@mu = internal global [64 x i8] zeroinitializer, align 16
@launch_mu = internal global [64 x i8] zeroinitializer, align 16
@cv_work = internal global [64 x i8] zeroinitializer, align 16
@cv_done = internal global [64 x i8] zeroinitializer, align 16
@gen = internal global i64 0
@task_fn = internal global ptr null
@task_clos = internal global ptr null
@task_stride = internal global i64 0
@task_n = internal global i64 0
@pending = internal global i64 0
@nworkers = internal global i64 0
@owner = internal global i32 0

declare i32 @pthread_mutex_lock(ptr)
declare i32 @pthread_mutex_unlock(ptr)
declare i32 @pthread_cond_wait(ptr, ptr)
declare i32 @pthread_cond_broadcast(ptr)
declare i32 @pthread_cond_signal(ptr)
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_detach(i64)
declare i32 @getpid()
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

define internal ptr @vtac_pool_worker(ptr %arg) nounwind {
entry:
  ; the argument packs the worker's index (low 16 bits) and the generation current when it was
  ; started (the rest): it waits for the next one, whenever it first gets the lock
  %word = ptrtoint ptr %arg to i64
  %me = and i64 %word, 65535
  %g0 = lshr i64 %word, 16
  %seen = alloca i64, align 8
  store i64 %g0, ptr %seen
  call i32 @pthread_mutex_lock(ptr @mu)
  br label %wait
wait:
  ; holds the lock
  %g = load atomic i64, ptr @gen monotonic, align 8
  %s = load i64, ptr %seen
  %new = icmp ne i64 %g, %s
  br i1 %new, label %got, label %spin_start
spin_start:
  ; the next loop often follows at once: watch for it a while before sleeping
  call i32 @pthread_mutex_unlock(ptr @mu)
  br label %spin
spin:
  %i = phi i64 [ 0, %spin_start ], [ %i1, %spin_more ]
  %gs = load atomic i64, ptr @gen acquire, align 8
  %changed = icmp ne i64 %gs, %s
  br i1 %changed, label %relock, label %spin_more
spin_more:
  %i1 = add i64 %i, 1
  %more = icmp slt i64 %i1, SPIN
  br i1 %more, label %spin, label %relock
relock:
  call i32 @pthread_mutex_lock(ptr @mu)
  %g2 = load atomic i64, ptr @gen monotonic, align 8
  %new2 = icmp ne i64 %g2, %s
  br i1 %new2, label %got, label %sleep
sleep:
  call i32 @pthread_cond_wait(ptr @cv_work, ptr @mu)
  br label %wait
got:
  %gg = phi i64 [ %g, %wait ], [ %g2, %relock ]
  store i64 %gg, ptr %seen
  %fn = load ptr, ptr @task_fn
  %clos = load ptr, ptr @task_clos
  %stride = load i64, ptr @task_stride
  %n = load i64, ptr @task_n
  %mine = icmp slt i64 %me, %n
  br i1 %mine, label %run, label %wait
run:
  call i32 @pthread_mutex_unlock(ptr @mu)
  %off = mul i64 %me, %stride
  %clo = getelementptr inbounds i8, ptr %clos, i64 %off
  call ptr %fn(ptr %clo)
  call i32 @pthread_mutex_lock(ptr @mu)
  %p = load atomic i64, ptr @pending monotonic, align 8
  %p1 = sub i64 %p, 1
  store atomic i64 %p1, ptr @pending release, align 8
  %last = icmp eq i64 %p1, 0
  br i1 %last, label %signal, label %wait
signal:
  call i32 @pthread_cond_signal(ptr @cv_done)
  br label %wait
}

define void @vtac_pool_init() nounwind {
  %pid = call i32 @getpid()
  store i32 %pid, ptr @owner
  ret void
}

define void @vtac_parallel_run(ptr %fn, ptr %clos, i64 %stride, i64 %n) nounwind {
entry:
  %one = icmp sle i64 %n, 1
  br i1 %one, label %alone, label %check
alone:
  call ptr %fn(ptr %clos)
  ret void
check:
  ; a forked child has none of its parent's workers, and its locks may be held by them
  %pid = call i32 @getpid()
  %owner = load i32, ptr @owner
  %forked = icmp ne i32 %pid, %owner
  br i1 %forked, label %reset, label %launch
reset:
  call void @llvm.memset.p0.i64(ptr @mu, i8 0, i64 64, i1 false)
  call void @llvm.memset.p0.i64(ptr @launch_mu, i8 0, i64 64, i1 false)
  call void @llvm.memset.p0.i64(ptr @cv_work, i8 0, i64 64, i1 false)
  call void @llvm.memset.p0.i64(ptr @cv_done, i8 0, i64 64, i1 false)
  store i64 0, ptr @nworkers
  store atomic i64 0, ptr @pending monotonic, align 8
  store i32 %pid, ptr @owner
  br label %launch
launch:
  call i32 @pthread_mutex_lock(ptr @launch_mu)
  %tid = alloca i64, align 8
  %want0 = sub i64 %n, 1
  %toomany = icmp sgt i64 %want0, 65535
  %want = select i1 %toomany, i64 65535, i64 %want0
  br label %grow
grow:
  %have = load i64, ptr @nworkers
  %short = icmp slt i64 %have, %want
  br i1 %short, label %spawn, label %post
spawn:
  %idx = add i64 %have, 1
  %gnow = load atomic i64, ptr @gen monotonic, align 8
  %ghi = shl i64 %gnow, 16
  %word = or i64 %ghi, %idx
  %arg = inttoptr i64 %word to ptr
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr @vtac_pool_worker, ptr %arg)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %started, label %post
started:
  %t = load i64, ptr %tid
  call i32 @pthread_detach(i64 %t)
  store i64 %idx, ptr @nworkers
  br label %grow
post:
  %workers = load i64, ptr @nworkers
  %cap = add i64 %workers, 1
  %fits = icmp slt i64 %n, %cap
  %shared = select i1 %fits, i64 %n, i64 %cap
  call i32 @pthread_mutex_lock(ptr @mu)
  store ptr %fn, ptr @task_fn
  store ptr %clos, ptr @task_clos
  store i64 %stride, ptr @task_stride
  store i64 %shared, ptr @task_n
  %busy = sub i64 %shared, 1
  store atomic i64 %busy, ptr @pending release, align 8
  %g = load atomic i64, ptr @gen monotonic, align 8
  %g1 = add i64 %g, 1
  store atomic i64 %g1, ptr @gen release, align 8
  call i32 @pthread_cond_broadcast(ptr @cv_work)
  call i32 @pthread_mutex_unlock(ptr @mu)
  call ptr %fn(ptr %clos)
  br label %rest
rest:
  ; the chunks no worker could be started for
  %k = phi i64 [ %shared, %post ], [ %k1, %rest_body ]
  %more = icmp slt i64 %k, %n
  br i1 %more, label %rest_body, label %join
rest_body:
  %roff = mul i64 %k, %stride
  %rclo = getelementptr inbounds i8, ptr %clos, i64 %roff
  call ptr %fn(ptr %rclo)
  %k1 = add i64 %k, 1
  br label %rest
join:
  br label %join_spin
join_spin:
  %j = phi i64 [ 0, %join ], [ %j1, %join_more ]
  %pend = load atomic i64, ptr @pending acquire, align 8
  %idle = icmp eq i64 %pend, 0
  br i1 %idle, label %quick, label %join_more
join_more:
  %j1 = add i64 %j, 1
  %again = icmp slt i64 %j1, SPIN
  br i1 %again, label %join_spin, label %join_lock
quick:
  call i32 @pthread_mutex_unlock(ptr @launch_mu)
  ret void
join_lock:
  call i32 @pthread_mutex_lock(ptr @mu)
  br label %join_wait
join_wait:
  %left = load atomic i64, ptr @pending acquire, align 8
  %done = icmp eq i64 %left, 0
  br i1 %done, label %finish, label %join_sleep
join_sleep:
  call i32 @pthread_cond_wait(ptr @cv_done, ptr @mu)
  br label %join_wait
finish:
  call i32 @pthread_mutex_unlock(ptr @mu)
  call i32 @pthread_mutex_unlock(ptr @launch_mu)
  ret void
}
"""

POOL_IR = POOL_IR.replace("SPIN", str(SPIN))

__all__ = ["POOL_ENTRY", "POOL_INIT", "POOL_IR", "SPIN"]
