"""Runs a :class:`~compiler.model.program.Program`: its kernels in order over one activation arena.

At construction the executor allocates the arena once (the static memory plan's peak bytes),
binds the constants, rebuilds every kernel (for the CPU, LLVM IR text compiled by llvmlite, the
machine code coming from the on-disk cache when it holds it) and resolves the address of every
argument that does not change between runs. A run then only allocates the outputs, points the
input and output arguments at the caller's arrays and calls the kernels: a cpu program's through
one native driver that calls and times them all (:mod:`runtime.cpu_driver`; one ctypes call per
run, the profile's records made only when read), a run with a progress callback and a gpu
program's one by one from Python. There is no per-element Python and no allocation beyond the
outputs.

A gpu program keeps its tensors on the device (:class:`DeviceTensors`): the arena, the
constants and a buffer for each model input and output live there for the executor's lifetime,
so every kernel launch is bound to its arguments when the executor is built. A run copies its
inputs in, queues every group's kernels without waiting between groups, waits once, and copies
its outputs out; each group's time in the profile is read from CUDA events recorded between
the groups.

Example:
    >>> import numpy as np
    >>> from compiler import te
    >>> from compiler.build import build
    >>> from compiler.schedule import create_schedule
    >>> from compiler.model.program import KernelArg, KernelSpec, MemoryStats, Placement, Program
    >>> from compiler.model.program import TensorSpec
    >>> X = te.placeholder((4,), "float32", name="X")
    >>> Y = te.compute((4,), lambda i: X[i] * 2.0, name="Y")
    >>> f = build(create_schedule(Y), [X, Y], name="double")
    >>> args = tuple(KernelArg(a.name, a.shape, a.dtype, a.is_output) for a in f.args)
    >>> k = KernelSpec("double", ("multiply",), "cpu", "double", args, ("x", "y"), f.llvm_ir)
    >>> places = {"x": Placement("input", "x", 0, (4,), "float32"),
    ...           "y": Placement("output", "y", 0, (4,), "float32")}
    >>> prog = Program("m", "cpu", 1, (TensorSpec("x", (4,), "float32"),),
    ...                (TensorSpec("y", (4,), "float32"),), places, (k,), {}, 0,
    ...                MemoryStats(0, 0), output_tensors={"y": "y"})
    >>> outs, profile = Executor(prog).run({"x": np.arange(4, dtype="float32")})
    >>> outs["y"], [g.name for g in profile.groups]
    (array([0., 2., 4., 6.], dtype=float32), ['double'])
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from compiler.model.program import KernelSpec, Placement, Program
from runtime.cpu_driver import compile_driver
from runtime.errors import SessionError
from runtime.profile import GroupRecord, Profile

#: Byte alignment of the arena's start (a cache line; also what 512-bit vectors want).
ARENA_ALIGN = 64


def aligned_empty(nbytes: int, align: int = ARENA_ALIGN) -> np.ndarray:
    """A zeroed byte array of ``nbytes`` whose data pointer is a multiple of ``align``.

    Example:
        >>> aligned_empty(100).ctypes.data % ARENA_ALIGN, aligned_empty(100).nbytes
        (0, 100)
    """
    raw = np.zeros(nbytes + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start : start + nbytes]


def _cpu_function(kernel: KernelSpec, program: Program) -> Callable[..., None]:
    from compiler.targets.cpu.jit import compile_llvm

    address = compile_llvm(kernel.code, kernel.symbol)
    return ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(kernel.args)))(address)


def _gpu_function(kernel: KernelSpec, program: Program) -> Callable[..., Any]:
    """A GPU module's binder: called once with its arguments on the device (see
    :class:`DeviceTensors`), it returns the call that queues the module's kernels on them
    (:meth:`compiler.targets.gpu.module.GpuModule.bind`); the executor times the queued
    kernels with CUDA events."""
    module = program.modules.get(kernel.symbol)
    if module is None:
        raise SessionError(
            f"group {kernel.name}: GPU kernels are compiled in the session that runs them; "
            "compile the model again for --target gpu"
        )
    module.load()  # JIT now: a run's time is the kernels', not their compilation
    return module.bind


class DeviceTensors:
    """A GPU program's tensors in device memory, so that a run copies only its inputs in and
    its outputs out: the arena mirrored once on the device (each tensor a typed view of its
    bytes, as on the host), the constants the kernels read copied there once, and one buffer
    for each model input and output the kernels read or write, all made when the executor is
    built.

    Example (numba's CUDA simulator where there is no GPU):
        >>> import numpy as np
        >>> from compiler.model.program import MemoryStats, Placement, Program
        >>> prog = Program("m", "gpu", 1, (), (), {}, (), {}, 64, MemoryStats(0, 0))
        >>> dev = DeviceTensors(prog, {})
        >>> view = dev.view(Placement("arena", "t", 16, (2, 3), "float32"))
        >>> view.shape, np.dtype(view.dtype).name
        ((6,), 'float32')
    """

    def __init__(self, program: Program, constants: dict[str, np.ndarray]) -> None:
        from numba import cuda

        from compiler.targets.gpu.module import cuda_backend

        self._cuda = cuda
        self.arena = cuda.device_array(max(program.arena_bytes, 1), dtype=np.uint8)
        self.constants: dict[str, Any] = {}
        self._host = constants
        #: the model's inputs and outputs the kernels read or write, on the device: allocated
        #: once, so every kernel's arguments are fixed when the executor is built
        self.run_buffers: dict[tuple[str, str], Any] = {}
        #: one event before the first group and one after each, on a GPU (the CUDA simulator's
        #: events record no time: there the groups are timed on the host, each synchronous)
        self.events: list[Any] | None = None
        if cuda_backend() == "cuda":
            self.events = [cuda.event() for _ in range(len(program.kernels) + 1)]

    def view(self, p: Placement) -> Any:
        """The flat device array of a tensor: a typed view of the arena's bytes, a constant
        (copied to the device the first time a kernel asks for it), or the buffer of a model
        input or output (allocated the first time)."""
        dtype = np.dtype(p.dtype)
        if p.kind == "constant":
            if p.key not in self.constants:
                host = np.ascontiguousarray(self._host[p.key]).reshape(-1)
                self.constants[p.key] = self._cuda.to_device(host)
            return self.constants[p.key]
        count = int(np.prod(p.shape, dtype=np.int64))
        if p.kind in ("input", "output"):
            buf = self.run_buffers.get((p.kind, p.key))
            if buf is None:
                buf = self._cuda.device_array(count, dtype=dtype)
                self.run_buffers[(p.kind, p.key)] = buf
            if buf.size != count or np.dtype(buf.dtype) != dtype:
                raise SessionError(
                    f"{p.kind} {p.key}: kernels take it as {dtype.name}[{count}] and as "
                    f"{np.dtype(buf.dtype).name}[{buf.size}]"
                )
            return buf
        if p.offset % dtype.itemsize:
            raise SessionError(
                f"tensor {p.key}: arena offset {p.offset} is not a multiple of its "
                f"{dtype.itemsize}-byte {dtype.name} elements"
            )
        return self.arena[p.offset : p.offset + count * dtype.itemsize].view(dtype)

    def upload(self, feeds: dict[str, np.ndarray]) -> None:
        """A run's inputs copied into their device buffers."""
        for (kind, key), buf in self.run_buffers.items():
            if kind == "input":
                buf.copy_to_device(feeds[key].reshape(-1))

    def synchronize(self) -> None:
        """Wait for every kernel queued so far."""
        self._cuda.synchronize()

    def download(self, outs: dict[str, np.ndarray]) -> None:
        """A run's outputs copied from their device buffers (after the kernels finished)."""
        for (kind, key), buf in self.run_buffers.items():
            if kind == "output":
                buf.copy_to_host(outs[key].reshape(-1))


#: How each target turns a kernel's stored code into something callable: a function called with
#: raw pointers (cpu), or a binder called once with device arrays (:class:`DeviceTensors`) that
#: returns the group's launches (gpu).
KERNEL_LOADERS: dict[str, Callable[[KernelSpec, Program], Callable[..., Any]]] = {
    "cpu": _cpu_function,
    "gpu": _gpu_function,
}


class Executor:
    """Binds a program once; :meth:`run` executes it on checked, contiguous feeds."""

    def __init__(self, program: Program) -> None:
        self.program = program
        targets = {k.target for k in program.kernels}
        if "gpu" in targets and len(targets) > 1:
            raise SessionError(
                f"program {program.name} mixes gpu kernels with {sorted(targets - {'gpu'})} "
                "kernels; a gpu program runs every group on the GPU"
            )
        # a gpu program's arena lives on the device (DeviceTensors), none on the host
        self.arena = aligned_empty(0 if "gpu" in targets else program.arena_bytes)
        for name, p in program.placements.items():
            if p.kind not in ("input", "constant", "arena", "output"):
                raise SessionError(f"tensor {name}: unknown placement kind {p.kind!r}")
            if p.kind == "arena" and p.offset + p.nbytes > program.arena_bytes:
                raise SessionError(
                    f"tensor {name}: bytes [{p.offset}, {p.offset + p.nbytes}) lie outside the "
                    f"{program.arena_bytes}-byte arena"
                )
            if p.kind == "constant" and p.key not in program.constants:
                raise SessionError(f"tensor {name}: constant {p.key!r} is missing")
        # Constants are bound once: contiguous arrays kept alive for the session's lifetime.
        self.constants = {
            k: np.asarray(v, order="C") for k, v in program.constants.items()
        }  # fmt: skip
        #: the tensors on the device, for a gpu program (kernel arguments are device arrays)
        self._device = DeviceTensors(program, self.constants) if "gpu" in targets else None
        self._functions: list[Callable[..., Any]] = []
        self._static: list[list[Any]] = []
        self._dynamic: list[list[tuple[int, str, str]]] = []
        loaded: dict[tuple[str, str, str], Callable[..., Any]] = {}
        for kernel in program.kernels:
            loader = KERNEL_LOADERS.get(kernel.target)
            if loader is None:
                raise SessionError(
                    f"group {kernel.name}: no runtime for target {kernel.target!r} "
                    f"(known: {sorted(KERNEL_LOADERS)})"
                )
            key = (kernel.target, kernel.symbol, kernel.code)
            if key not in loaded:
                loaded[key] = loader(kernel, program)
            self._functions.append(loaded[key])
            if len(kernel.args) != len(kernel.tensors):
                raise SessionError(
                    f"group {kernel.name}: {len(kernel.args)} kernel arguments but "
                    f"{len(kernel.tensors)} tensors"
                )
            static: list[Any] = []
            dynamic: list[tuple[int, str, str]] = []
            for pos, (arg, tensor) in enumerate(zip(kernel.args, kernel.tensors, strict=True)):
                place = program.placements.get(tensor)
                if place is None:
                    raise SessionError(f"group {kernel.name}: tensor {tensor} has no placement")
                self._check_arg(kernel, arg.name, arg.shape, arg.dtype, place)
                if self._device is not None:
                    static.append(self._device.view(place))
                elif place.kind in ("input", "output"):
                    static.append(None)
                    dynamic.append((pos, place.kind, place.key))
                else:
                    static.append(self._address(place))
            self._static.append(static)
            self._dynamic.append(dynamic)
        #: a gpu program's groups, each its kernels' launches bound to their device arrays
        self._launches: list[Callable[[], None]] = []
        if self._device is not None:
            self._launches = [
                bind(*static) for bind, static in zip(self._functions, self._static, strict=True)
            ]
        #: a cpu program's kernels are called by one native driver (:mod:`runtime.cpu_driver`)
        self._driver: Callable[[int, int], None] | None = None
        if program.kernels and targets == {"cpu"}:
            self._bind_driver()

    def _bind_driver(self) -> None:
        """The driver's pointer table: the kernels' entry points, then one slot per distinct
        argument (an address fixed now, or an input or output written at each run)."""
        from compiler.targets.cpu.jit import compile_llvm

        n = len(self._functions)
        fixed: dict[int, int] = {}  # address -> slot
        at_run: dict[tuple[str, str], int] = {}  # (input|output, name) -> slot
        kernel_slots: list[list[int]] = []
        for static, dynamic in zip(self._static, self._dynamic, strict=True):
            run_time = {pos: (kind, key) for pos, kind, key in dynamic}
            row = []
            for pos, address in enumerate(static):
                if pos in run_time:
                    slot = at_run.setdefault(run_time[pos], len(fixed) + len(at_run))
                else:
                    slot = fixed.setdefault(int(address), len(fixed) + len(at_run))
                row.append(slot)
            kernel_slots.append(row)
        table = np.zeros(n + len(fixed) + len(at_run), np.int64)
        # the entry points (compiled when the kernels were loaded: these are cache lookups)
        table[:n] = [compile_llvm(k.code, k.symbol) for k in self.program.kernels]
        for address, slot in fixed.items():
            table[n + slot] = address
        self._run_slots = [(n + slot, kind, key) for (kind, key), slot in at_run.items()]
        self._table, self._times = table, np.zeros(n, np.int64)
        self._driver = compile_driver(kernel_slots)

    def _run_gpu(self, device: DeviceTensors, progress: Callable[[], Any] | None) -> np.ndarray:
        """Queue every group's kernels and wait for them once; each group's time is read from
        the CUDA events recorded between the groups (the GPU's own time from the end of the
        group before to the end of this one). With ``progress`` (a bar), or on the CUDA
        simulator, each group is waited for and timed on the host instead."""
        nanoseconds = np.zeros(len(self._launches), np.int64)
        events = device.events
        if events is not None and progress is None:
            events[0].record()
            for launch, event in zip(self._launches, events[1:], strict=True):
                launch()
                event.record()
            events[-1].synchronize()
            for i in range(len(self._launches)):
                nanoseconds[i] = round(events[i].elapsed_time(events[i + 1]) * 1e6)
            return nanoseconds
        synchronize = device.synchronize
        clock = time.perf_counter_ns
        for i, launch in enumerate(self._launches):
            t0 = clock()
            launch()
            synchronize()
            nanoseconds[i] = clock() - t0
            if progress is not None:
                progress()
        return nanoseconds

    def _records(self, nanoseconds: np.ndarray) -> list[GroupRecord]:
        return [
            GroupRecord(k.name, k.ops, k.target, float(t) / 1e3, device=_device(k.target))
            for k, t in zip(self.program.kernels, nanoseconds.tolist(), strict=True)
        ]

    @staticmethod
    def _check_arg(
        kernel: KernelSpec, arg: str, shape: tuple[int, ...], dtype: str, p: Placement
    ) -> None:
        n_arg = int(np.prod(shape, dtype=np.int64))
        n_p = int(np.prod(p.shape, dtype=np.int64))
        if np.dtype(dtype) != np.dtype(p.dtype) or n_arg != n_p:
            raise SessionError(
                f"group {kernel.name}: argument {arg} is {dtype}{list(shape)} but its tensor "
                f"({p.kind} {p.key}) is {p.dtype}{list(p.shape)}"
            )

    def _address(self, p: Placement) -> int:
        if p.kind == "arena":
            return int(self.arena.ctypes.data) + p.offset
        return int(self.constants[p.key].ctypes.data)

    def view(self, p: Placement, feeds: dict[str, np.ndarray], outs: dict[str, np.ndarray]):  # noqa: ANN201
        """The array a placement denotes during a run (a view, never a copy)."""
        if p.kind == "arena":
            return np.ndarray(p.shape, p.dtype, buffer=self.arena, offset=p.offset)
        base = {"input": feeds, "output": outs, "constant": self.constants}[p.kind][p.key]
        return base.reshape(p.shape)

    def run(
        self, feeds: dict[str, np.ndarray], progress: Callable[[], Any] | None = None
    ) -> tuple[dict[str, np.ndarray], Profile]:
        """Run every kernel on ``feeds`` (already checked: C-contiguous, right shape and dtype);
        ``progress`` is called after each kernel (a bar's update, where a run takes seconds).

        Returns the model outputs by name and the per-group profile.
        """
        prog = self.program
        outs: dict[str, np.ndarray] = {}
        for spec in prog.outputs:
            p = prog.placements[prog.output_tensors[spec.name]]
            if p.kind == "output":
                outs[p.key] = np.empty(spec.shape, spec.dtype)
        device = self._device
        profile: Profile
        if device is not None:
            device.upload(feeds)
            profile = Profile(self._records(self._run_gpu(device, progress)))
            device.download(outs)
        elif self._driver is not None and progress is None:
            table = self._table
            for slot, kind, key in self._run_slots:
                table[slot] = (feeds if kind == "input" else outs)[key].ctypes.data
            self._driver(table.ctypes.data, self._times.ctypes.data)
            times = self._times.copy()
            profile = Profile.deferred(lambda: self._records(times))
        else:
            pointers = {
                "input": {k: int(v.ctypes.data) for k, v in feeds.items()},
                "output": {k: int(v.ctypes.data) for k, v in outs.items()},
            }
            nanoseconds = np.zeros(len(prog.kernels), np.int64)
            clock = time.perf_counter_ns
            for i, (fn, static, dynamic) in enumerate(
                zip(self._functions, self._static, self._dynamic, strict=True)
            ):
                args = list(static)
                for pos, kind, key in dynamic:
                    args[pos] = pointers[kind][key]
                t0 = clock()
                fn(*args)
                nanoseconds[i] = clock() - t0
                if progress is not None:
                    progress()
            profile = Profile(self._records(nanoseconds))
        result: dict[str, np.ndarray] = {}
        for spec in prog.outputs:
            p = prog.placements[prog.output_tensors[spec.name]]
            if p.kind == "output" and p.key == spec.name:
                result[spec.name] = outs[spec.name]
            elif p.kind == "arena" and device is not None:  # a tensor left on the device
                result[spec.name] = device.view(p).copy_to_host().reshape(spec.shape)
            else:  # an output that is an input, a constant or another output: a copy of it
                result[spec.name] = self.view(p, feeds, outs).reshape(spec.shape).copy()
        return result, profile


def _device(target: str) -> str:
    """Where a group of ``target`` runs: the target itself, except a gpu group, which runs on
    ``cuda`` or on numba's ``cuda-simulator``."""
    if target != "gpu":
        return target
    from compiler.targets.gpu.module import cuda_backend

    return cuda_backend()
