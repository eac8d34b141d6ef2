"""Measuring tuning candidates: build each point of a task's space, run it on its device, check
it against the numpy reference, and return its cost; through a local process pool (default) or
a Dask cluster.

* :func:`measure_one` is the unit of work (a plain function of plain data, so it travels to any
  worker): build with the compiler, run on the simulator (cost: simulated cycles, deterministic),
  compare the output with numpy. Every failure becomes a result with its kind and message.
* :class:`LocalRunner` runs candidates in a ``ProcessPoolExecutor``. Each worker arms an alarm
  of ``timeout_s`` around a candidate; a candidate that hangs past the alarm (stuck in compiled
  code) is cut off from the parent: the pool is torn down and rebuilt and the candidate is
  recorded as a timeout. A worker that dies re-queues its candidates on a fresh pool; a
  candidate that kills workers twice is recorded as ``worker_lost``.
* :class:`DaskRunner` sends the same function to a Dask cluster (``distributed.Client``); the
  scheduler re-runs the candidates of a lost worker elsewhere (a candidate that kills workers
  repeatedly ends as ``worker_lost``).

Results come back in the order of the candidates, so the same seed gives the same records on
either runner.

Example:
    >>> from compiler.tune import conv2d_task
    >>> t = conv2d_task(4, 4, 4, 4, 1)
    >>> r = measure_one(t.to_json(), t.default_config().index)
    >>> "error" in r, r["cost"] > 0
    (False, True)
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import signal
import threading
import time
from collections.abc import Sequence
from typing import Any

from compiler.tune.measure import MeasureResult
from compiler.tune.task import Task

#: Seconds one candidate may take to build and run (each runner can set its own).
DEFAULT_TIMEOUT_S = 60.0
#: Extra seconds the parent waits past a worker's own alarm before it cuts the worker off.
GRACE_S = 10.0
#: How long closing a pool waits for its workers to exit before it ends them.
CLOSE_GRACE_S = 30.0


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def measure_one(
    task_json: dict[str, Any], index: int, timeout_s: float = DEFAULT_TIMEOUT_S, seed: int = 0
) -> dict[str, Any]:
    """Build and run point ``index`` of the task's space; a :class:`MeasureResult` as JSON."""
    armed = threading.current_thread() is threading.main_thread() and timeout_s > 0
    if armed:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
    t0 = time.perf_counter()
    stage = "compile"
    build_s = 0.0
    try:
        task = Task.from_json(task_json)
        built = task.build(index, seed=seed)
        build_s = time.perf_counter() - t0
        stage = "run"
        result = _run(task, built, build_s)
    except _Timeout:
        spent = time.perf_counter() - t0
        result = MeasureResult.failure(
            "timeout", f"no result after {timeout_s:g} s (while {_doing(stage)})",
            build_s, spent - build_s,
        )  # fmt: skip
    except Exception as e:  # noqa: BLE001 - any failure of a candidate is its result
        spent = time.perf_counter() - t0
        message = f"{type(e).__name__}: {e}".splitlines()[0][:500]
        result = MeasureResult.failure(stage, message, build_s, spent - build_s)
    finally:
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    elapsed = time.perf_counter() - t0
    _freeze_once()
    if not armed and timeout_s > 0 and elapsed > timeout_s and result.ok:
        # no alarm off the main thread (Dask workers): a late result is still a timeout
        late = f"took {elapsed:.1f} s, more than {timeout_s:g} s"
        result = MeasureResult.failure("timeout", late, result.build_s, result.run_s)
    return result.to_json()


_FROZEN = [False]


def _freeze_once() -> None:
    """After a process's first candidate (its imports, JIT and caches made), move what lives
    to the collector's permanent generation: a build allocates hundreds of thousands of IR
    objects, and each full collection would otherwise walk the modules and caches again
    (about 60 ms, in 4 of 20 builds of ResNet-18 C9 candidates). Garbage is collected first."""
    if not _FROZEN[0]:
        import gc

        gc.collect()
        gc.freeze()
        _FROZEN[0] = True


#: Reference programs' outputs by program (each program is kept alive by the compiler's cache
#: of reference programs, so its id is not reused while it is here).
_REFERENCE_OUTPUTS: dict[int, tuple[Any, Any]] = {}


def reference_output(program: Any) -> Any:
    """The ``out`` tensor of ``program`` on the simulator, computed once per process."""
    hit = _REFERENCE_OUTPUTS.get(id(program))
    if hit is None or hit[0] is not program:
        import numpy as np

        import vta_sim

        hit = (program, np.asarray(vta_sim.simulate(program, trace=False).read("out")))
        _REFERENCE_OUTPUTS[id(program)] = hit
    return hit[1]


def _doing(stage: str) -> str:
    return "building" if stage == "compile" else "running"


def _run(task: Task, built: Any, build_s: float) -> MeasureResult:
    if task.target == "cpu":
        return _run_cpu(built, build_s)
    import vta_sim
    from compiler.topi.vta.metrics import compulsory_bytes, ideal_cycles, roofline_cycles

    t0 = time.perf_counter()
    r = vta_sim.simulate(built.program, trace=False)
    run_s = time.perf_counter() - t0
    if getattr(built, "expected", None) is None:  # a quantized group: its reference schedule's
        built.expected = reference_output(built.reference)
    if not built.matches(r.read("out")):
        got = built.output_from(r.read("out"))
        wrong = int((got != built.expected).sum())
        return MeasureResult.failure(
            "mismatch", f"{wrong} of {built.expected.size} outputs differ from numpy", build_s,
            run_s,
        )  # fmt: skip
    cfg = built.config
    comp = compulsory_bytes(built.program)
    extra = {
        "ideal_cycles": ideal_cycles(built.macs, cfg),
        "roofline_cycles": roofline_cycles(built.macs, comp, cfg),
        "dram_bytes": int(sum(r.dram_bytes.values())),
        "energy_pj": r.energy().total_pj,
    }
    return MeasureResult(float(r.cycles), build_s=build_s, run_s=run_s, extra=extra)


#: CPU timing: at least this many timed calls and this many seconds (at most MAX_RUNS calls).
MIN_RUNS, MIN_SECONDS, MAX_RUNS = 5, 0.2, 200


def _run_cpu(built: Any, build_s: float) -> MeasureResult:
    """Time a CPU kernel on one pinned core: the median of repeated calls, after a checked
    warm-up call (cost in seconds)."""
    import os

    import numpy as np

    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[os.getpid() % len(cores)]})
    t0 = time.perf_counter()
    got = built.func(*built.inputs)
    if not built.matches(np.asarray(got)):
        wrong = int((~np.isclose(got, built.expected, rtol=1e-3, atol=1e-3)).sum())
        return MeasureResult.failure(
            "mismatch", f"{wrong} of {built.expected.size} outputs differ from numpy", build_s,
            time.perf_counter() - t0,
        )  # fmt: skip
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < MAX_RUNS and (
        len(times) < MIN_RUNS or time.perf_counter() - start < MIN_SECONDS
    ):
        t = time.perf_counter()
        built.func(*built.inputs)
        times.append(time.perf_counter() - t)
    median = float(np.median(times))
    extra = {"runs": len(times), "gflops": 2 * built.macs / median / 1e9}
    return MeasureResult(median, build_s=build_s, run_s=time.perf_counter() - t0, extra=extra)


def _warm() -> None:
    """Import the compiler and the simulator once per worker (not inside a timed candidate)."""
    import compiler.topi.vta  # noqa: F401
    import vta_sim  # noqa: F401


class LocalRunner:
    """Measure candidates in ``workers`` local processes (see the module docstring).

    Example:
        >>> from compiler.tune import conv2d_task
        >>> t = conv2d_task(4, 4, 4, 4, 1)
        >>> with LocalRunner(workers=1) as runner:                         # doctest: +SKIP
        ...     [r.ok for r in runner.measure(t, [t.default_config().index])]
        [True]
    """

    def __init__(
        self, workers: int = 1, timeout_s: float = DEFAULT_TIMEOUT_S, seed: int = 0
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self._workers = workers
        self.timeout_s = timeout_s
        self.seed = seed
        self._pool: cf.ProcessPoolExecutor | None = None
        #: the current pool's worker processes, as last seen (the executor forgets a broken
        #: pool's workers before it is discarded)
        self._procs: list[Any] = []

    @property
    def workers(self) -> int:
        return self._workers

    def _executor(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            # spawn: workers start clean (no inherited threads from the cost model's library)
            ctx = multiprocessing.get_context("spawn")
            self._pool = cf.ProcessPoolExecutor(self._workers, mp_context=ctx, initializer=_warm)
        return self._pool

    def _workers_of(self, pool: cf.ProcessPoolExecutor) -> list[Any]:
        """The pool's worker processes: those it lists now and those last seen."""
        procs = {id(p): p for p in self._procs}
        procs.update({id(p): p for p in getattr(pool, "_processes", {}).values()})
        return list(procs.values())

    def _discard_pool(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        # the executor cannot stop a running call; its processes are ended by their ids
        for proc in self._workers_of(pool):
            if proc.is_alive():
                proc.terminate()
        self._procs = []
        pool.shutdown(wait=True, cancel_futures=True)

    def measure(self, task: Task, indices: Sequence[int]) -> list[MeasureResult]:
        tj = task.to_json()
        results: dict[int, MeasureResult] = {}
        crashes: dict[int, int] = {}
        pending = list(range(len(indices)))
        while pending:
            pool = self._executor()
            futs = {
                pool.submit(measure_one, tj, int(indices[k]), self.timeout_s, self.seed): k
                for k in pending
            }
            self._procs = self._workers_of(pool)
            rounds = -(-len(futs) // self._workers)
            deadline = time.monotonic() + rounds * (self.timeout_s + GRACE_S) + 60.0
            broken = False
            not_done = set(futs)
            while not_done:
                left = deadline - time.monotonic()
                done, not_done = cf.wait(not_done, timeout=max(left, 0.0),
                                         return_when=cf.FIRST_EXCEPTION)  # fmt: skip
                for f in done:
                    k = futs[f]
                    try:
                        results[k] = MeasureResult.from_json(f.result())
                    except cf.process.BrokenProcessPool:
                        broken = True
                        crashes[k] = crashes.get(k, 0) + 1
                    except Exception as e:  # noqa: BLE001 - e.g. a result that cannot travel
                        results[k] = MeasureResult.failure("run", f"{type(e).__name__}: {e}"[:500])
                if broken or left <= 0:
                    break
            if not_done and not broken:
                # past every alarm and grace: whatever still runs is stuck; cut it off
                for f in not_done:
                    if f.running():
                        results[futs[f]] = MeasureResult.failure(
                            "timeout", f"no result from its worker after {self.timeout_s:g} s"
                        )
            if not_done or broken:
                self._discard_pool()
            pending = []
            for k in sorted(set(range(len(indices))) - set(results)):
                if crashes.get(k, 0) >= 2:
                    results[k] = MeasureResult.failure(
                        "worker_lost", "its worker process died twice while measuring it"
                    )
                else:
                    pending.append(k)
        return [results[k] for k in range(len(indices))]

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        procs, self._procs = self._workers_of(pool), []
        pool.shutdown(wait=False, cancel_futures=True)
        # a worker killed while it held the pool's call-queue lock leaves the others blocked on
        # it for ever (the executor then never finishes joining them): after a grace period,
        # whatever has not exited is ended
        deadline = time.monotonic() + CLOSE_GRACE_S
        for proc in procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
        pool.shutdown(wait=True)

    def __enter__(self) -> LocalRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class DaskRunner:
    """Measure candidates on a Dask cluster at ``address`` (``tcp://host:port``) or through
    an existing ``distributed.Client``."""

    def __init__(self, address: Any, timeout_s: float = DEFAULT_TIMEOUT_S, seed: int = 0) -> None:
        from distributed import Client

        self._own = not isinstance(address, Client)
        if self._own:
            try:
                self.client = Client(address, timeout="10s")
            except (OSError, TimeoutError, ValueError) as e:
                from compiler.errors import CompilerError

                raise CompilerError(f"Dask scheduler {address!r}: cannot connect ({e})") from None
        else:
            self.client = address
        self.timeout_s = timeout_s
        self.seed = seed

    @property
    def workers(self) -> int:
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def measure(self, task: Task, indices: Sequence[int]) -> list[MeasureResult]:
        tj = task.to_json()
        futs = [
            self.client.submit(measure_one, tj, int(i), self.timeout_s, self.seed, pure=False)
            for i in indices
        ]
        out = []
        for f in futs:
            try:
                out.append(MeasureResult.from_json(f.result()))
            except Exception as e:  # noqa: BLE001 - KilledWorker and the like
                out.append(MeasureResult.failure("worker_lost", f"{type(e).__name__}: {e}"[:500]))
        return out

    def close(self) -> None:
        if self._own:
            self.client.close()

    def __enter__(self) -> DaskRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["DEFAULT_TIMEOUT_S", "DaskRunner", "LocalRunner", "measure_one", "reference_output"]
