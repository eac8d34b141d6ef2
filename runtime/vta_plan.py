"""Runs an accelerator network's :class:`~compiler.model.program.Program`
(:func:`compiler.model.vta_program.plan_network`): :class:`VtaExecutor`.

It runs the kernels in order as :meth:`runtime.vta_target.VtaNetwork.run` does: a ``vta``
kernel writes its host tensors into its program's symbols and runs the group on the simulator
or the RTL (an ``out`` held in the image is read back into its arena place only when a later
kernel needs it), a ``cpu`` kernel runs on the host arena, a ``copy`` kernel (done in place by
the DRAM plan) only shows in the per-layer table; it returns a
:class:`~runtime.vta_target.NetworkRun`: the same outputs, bit for bit, and the same cycles.

Example:
    >>> import numpy as np
    >>> from compiler.graph import Constant, Graph, Node, TensorType, Var
    >>> from compiler.model.vta_program import plan_network
    >>> from runtime.vta_target import compile_network
    >>> x = Var("x", TensorType((1, 3, 6, 6), "float32", "NCHW"))
    >>> w = Constant(np.random.default_rng(0).normal(size=(8, 3, 3, 3)).astype(np.float32),
    ...              name="w")
    >>> g = Graph.from_outputs([x], [Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)},
    ...                                   name="conv")])
    >>> feed = {"x": np.random.default_rng(1).normal(size=(1, 3, 6, 6)).astype(np.float32)}
    >>> net = compile_network(g, "default", calibration=feed)
    >>> program = plan_network(net)
    >>> a, b = VtaExecutor(program).run(feed), net.run(feed)
    >>> bool((a.outputs[0] == b.outputs[0]).all()), a.total_cycles == b.total_cycles
    (True, True)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from compiler.model.program import AccelKernel, InPlaceCopy, KernelSpec, Program
from compiler.model.vta_program import ReferenceKernel, accel_module, out_of, writes_of
from compiler.partition.partition import IN_PLACE
from isa.errors import IsaError
from runtime.errors import SessionError
from runtime.executor import aligned_empty
from runtime.vta_target import IN_PLACE_DEVICE, LayerRecord, NetworkRun


class VtaExecutor:
    """Runs a program with accelerator groups (the module docstring). The host arena is made at
    the first run and reused; a run that finds it in use by another thread runs on an arena of
    its own. Each group's instructions are decoded and checked once, at its first run on the
    simulator (they lie in the image's static part, which no run writes:
    :func:`compiler.targets.vta.link.check_plan`)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.accel = accel_module(program)
        self._functions: list[Any] = []
        for kernel in program.kernels:
            fn = None
            if kernel.target == "cpu":
                fn = program.modules.get(kernel.symbol)
                if fn is None:
                    fn = _host_function(kernel)
            self._functions.append(fn)
        self._decoded: dict[int, tuple[Any, Any]] = {}
        self._arena: tuple[np.ndarray, dict[str, np.ndarray]] | None = None
        self._arena_lock = threading.Lock()

    @property
    def batch(self) -> int:
        inputs = self.program.inputs
        return inputs[0].shape[0] if inputs and inputs[0].shape else 1

    def _arena_views(self, arena: np.ndarray) -> dict[str, np.ndarray]:
        return {
            t: np.ndarray(p.shape, p.dtype, buffer=arena, offset=p.offset)
            for t, p in self.program.placements.items()
            if p.kind == "arena"
        }

    @contextmanager
    def _host_arena(self) -> Iterator[dict[str, np.ndarray]]:
        if not self._arena_lock.acquire(blocking=False):
            yield self._arena_views(aligned_empty(self.program.arena_bytes))
            return
        try:
            if self._arena is None:
                arena = aligned_empty(self.program.arena_bytes)
                self._arena = (arena, self._arena_views(arena))
            yield self._arena[1]
        finally:
            self._arena_lock.release()

    def run(
        self,
        feeds: Mapping[str, np.ndarray],
        *,
        trace: bool = False,
        device: str = "sim",
        simulator: str | None = None,
        progress: bool = False,
        rtl: Any = None,
    ) -> NetworkRun:
        """Run every kernel on ``feeds`` (by input name; already checked against the program's
        inputs): accelerator groups on the simulator or the RTL (under ``simulator``, each group
        checked against the simulator; ``rtl``: a :class:`runtime.vta_rtl.RtlDevice` whose
        build is reused), host kernels on the CPU; ``progress`` shows a bar of the accelerator
        groups on stderr."""
        with self._host_arena() as views:
            return self._run(feeds, views, trace, device, simulator, progress, rtl)

    def _run(
        self,
        feeds: Mapping[str, np.ndarray],
        views: dict[str, np.ndarray],
        trace: bool,
        device: str,
        simulator: str | None,
        progress: bool,
        rtl: Any,
    ) -> NetworkRun:
        from runtime.vta_target import execute_group, progress_bar, rtl_device, run_record

        prog, accel = self.program, self.accel
        cfg = accel.config
        rtl = rtl_device(device, simulator, trace, rtl)
        groups = sum(k.target == "vta" for k in prog.kernels)
        bar = progress_bar(groups, prog.name) if progress else None
        places = prog.placements
        env: dict[str, np.ndarray] = {}
        for t, p in places.items():
            if p.kind == "input":
                env[t] = feeds[p.key]
            elif p.kind == "constant":
                env[t] = prog.constants[p.key]
        in_dram: dict[str, tuple[str, Any]] = {}  # tensor -> (group, its image)
        dram = accel.dram.copy()
        copies: dict[str, float] = {}
        clock = time.perf_counter
        fresh: dict[str, np.ndarray] = {}

        def value(tensor: str) -> np.ndarray:
            if tensor not in env:
                producer = in_dram.get(tensor)
                if producer is None:
                    raise SessionError(f"tensor {tensor} is read before any kernel made it")
                group, image = producer
                t0 = clock()
                # the group's ``out`` tensor as it lies in the image (its ``store``'s value:
                # a host ``unpack`` node makes the logical value), copied into its place
                sym = image.symbols["out"]
                raw = dram[sym.offset : sym.offset + sym.nbytes].view(np.dtype(sym.dtype))
                dst = views.get(tensor)
                if dst is None:
                    dst = fresh[tensor] = raw.reshape(sym.shape).copy()
                else:
                    dst.reshape(-1)[...] = raw
                env[tensor] = dst
                copies[group] = copies.get(group, 0.0) + clock() - t0
            return env[tensor]

        records: list[LayerRecord] = []
        traces: list[tuple[str, int, Any]] = []
        host_slices: list[tuple[str, str, int, float]] = []
        cycles_so_far = 0
        host_cycles = 0  # the host kernels' wall time so far, at the accelerator's clock
        chained = 0
        for k, (kernel, step) in enumerate(zip(prog.kernels, accel.steps, strict=True)):
            if isinstance(step, InPlaceCopy):
                records.append(LayerRecord(kernel.name, kernel.ops[0], IN_PLACE_DEVICE, IN_PLACE,
                                           reason=step.reason))  # fmt: skip
                continue
            if isinstance(step, AccelKernel):
                chained += len(step.image.aliased)
                group = step.image.program(cfg, dram)
                try:
                    for symbol, tensor in writes_of(kernel):
                        x = value(tensor)
                        t0 = clock()
                        group.write(symbol, x)
                        copies[kernel.name] = copies.get(kernel.name, 0.0) + clock() - t0
                    # the run owns ``dram`` (a copy of the image): each group runs on it in
                    # place, with its instructions decoded once per executor
                    static = self._decoded.get(k)
                    if static is None and device == "sim":
                        static = self._decoded[k] = _decode(group)
                    res = execute_group(group, device, trace, rtl, kernel.name, bar,
                                        table=static[0] if static else None,
                                        in_place=device == "sim")  # fmt: skip
                except IsaError as e:
                    # a program that cannot run (a deadlock, a bad instruction: a corrupted
                    # image) is refused naming its group, in one line (the simulator's
                    # diagnosis spans several: one per module)
                    detail = "; ".join(ln.strip() for ln in str(e).splitlines() if ln.strip())
                    raise SessionError(f"group {kernel.name}: {detail}") from None
                dram = res.dram
                if trace:
                    traces.append((kernel.name, cycles_so_far + host_cycles, res.trace))
                cycles_so_far += res.cycles
                in_dram[out_of(kernel)] = (kernel.name, step.image)
                records.append(run_record(step.record, res, static[1] if static else None))
                continue
            # reading an input out of the image counts as its producer's copy, not host time
            ins, dests = [], []
            for arg, tensor in zip(kernel.args, kernel.tensors, strict=True):
                if arg.is_output:
                    dst = views.get(tensor)
                    if dst is None:  # a network output: an array this run returns
                        p = places[tensor]
                        dst = fresh[tensor] = np.empty(p.shape, p.dtype)
                    env[tensor] = dst
                    dests.append(dst)
                else:
                    ins.append(np.asarray(value(tensor), arg.dtype, order="C"))
            if any(n.op == "quantize" for n in step.nodes):
                _check_finite(kernel.name, ins)
            t0 = clock()
            _call_host(self._functions[k], kernel, ins, dests)
            seconds = clock() - t0
            if trace:
                ops = "+".join(n.op for n in step.nodes)
                host_slices.append((kernel.name, ops, cycles_so_far + host_cycles, seconds))
                host_cycles += max(1, round(seconds * cfg.clock_mhz * 1e6))
            for j, n in enumerate(step.nodes):
                records.append(LayerRecord(n.name, n.op, "cpu", n.rule, host=step.how,
                                           host_seconds=seconds if j == 0 else 0.0,
                                           reason=n.reason))  # fmt: skip
        outs: list[np.ndarray] = []
        for spec in prog.outputs:
            tensor = prog.output_tensors[spec.name]
            # a network output a kernel wrote is this run's own array; any other (an input, a
            # constant, an output given twice) is copied
            arr = fresh.pop(tensor, None)
            outs.append(arr if arr is not None else np.array(value(tensor)))
        if bar is not None:
            bar.close()
        return NetworkRun(
            outs, records, cfg, self.batch, device, int(accel.dram.size), chained, traces,
            activation_bytes=accel.activation_bytes,
            activation_bytes_unshared=accel.activation_bytes_unshared, copy_seconds=copies,
            scheme=accel.scheme,
            rtl_checks=list(rtl.checks) if rtl is not None else [],
            simulator=rtl.simulator if rtl is not None else None, host_slices=host_slices,
        )  # fmt: skip


def _host_function(kernel: KernelSpec) -> Any:
    """A host kernel rebuilt from its code (the machine code from the object cache when it
    holds it), called with every argument in order."""
    from compiler.ir.stmt import ArgInfo
    from compiler.targets.cpu.jit import make_function

    if not kernel.code:
        raise SessionError(f"host kernel {kernel.name}: no code, and no callable in the "
                           "program's modules")  # fmt: skip
    args = [ArgInfo(a.name, a.shape, a.dtype, a.is_output) for a in kernel.args]
    return make_function(kernel.symbol, args, kernel.code, "")


def _call_host(fn: Any, kernel: KernelSpec, ins: list[np.ndarray], dests: list[np.ndarray]) -> None:
    """Run a host kernel on ``ins``, its results written into ``dests``."""
    if isinstance(fn, ReferenceKernel):
        res = fn(*ins)
        for dst, arr in zip(dests, res if isinstance(res, tuple) else (res,), strict=True):
            dst[...] = arr
        return
    it_in, it_out = iter(ins), iter(dests)
    fn(*(next(it_out) if a.is_output else next(it_in) for a in kernel.args))


def _decode(prog: Any) -> tuple[Any, Any]:
    """A group program's decoded, checked instruction table and its event counts."""
    from isa.energy import count_events
    from vta_sim.decode import instruction_table

    return instruction_table(prog), count_events(prog)


def _check_finite(name: str, args: list[np.ndarray]) -> None:
    """A value about to be quantized to int8 must be finite: NaN and Inf have no int8 code,
    and rounding them would give confident garbage instead of an error."""
    for arr in args:
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            bad = int(np.count_nonzero(~np.isfinite(arr)))
            raise SessionError(
                f"host group {name}: {bad} of {arr.size} values to quantize are NaN or "
                "Inf: int8 cannot represent them (the cpu target computes in float)"
            )


__all__ = ["VtaExecutor"]
