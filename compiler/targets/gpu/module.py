"""A compiled GPU function: kernel sources, launch configurations, and a numpy-facing call.

Calling it copies the inputs to the device, launches the kernels in order and copies the
outputs back, like the CPU target's compiled function. It runs on a real GPU through
``numba.cuda``, or on numba's CUDA simulator when ``NUMBA_ENABLE_CUDASIM=1`` was set before
``numba.cuda`` was first imported: one code path, one switch.

Example:
    >>> import numpy as np
    >>> from compiler import te
    >>> from compiler.build import build
    >>> from compiler.schedule import create_schedule
    >>> A = te.placeholder((64,), name="A")
    >>> B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
    >>> s = create_schedule(B)
    >>> bo, bi = s[B].split("i", factor=32)
    >>> s[B].bind(bo, "blockIdx.x"); s[B].bind(bi, "threadIdx.x")
    >>> f = build(s, [A, B], target="gpu")
    >>> [str(k.launch) for k in f.kernels]
    ['grid=(2, 1, 1) block=(32, 1, 1)']
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from compiler.errors import CompilerError
from compiler.ir.buffer import Buffer
from compiler.ir.stmt import ArgInfo
from compiler.targets.gpu.codegen import KernelSource, module_source
from compiler.targets.gpu.device import GpuDevice, Occupancy
from compiler.targets.gpu.kernels import Kernel, KernelPlan
from compiler.targets.gpu.ptx import (
    PtxasInfo,
    PtxUnavailable,
    compile_ptx,
    ptxas_info,
    ptxas_unavailable_reason,
)


def cuda_backend() -> str:
    """``"cuda-simulator"`` or ``"cuda"``: where kernels run in this process."""
    from compiler.targets.gpu.ptx import simulator_active

    return "cuda-simulator" if simulator_active() else "cuda"


@dataclass(frozen=True)
class KernelResources:
    """Launch configuration and resource use of one kernel on one device.

    ``registers`` and ``ptxas`` are None when ``ptxas`` could not run; ``unavailable`` then
    says why. ``shared_bytes`` is the static shared memory of the lowered buffers (ptxas
    reports the same figure when it runs).
    """

    kernel: str
    stage: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    registers: int | None
    occupancy: Occupancy
    ptxas: PtxasInfo | None
    unavailable: str | None


@dataclass
class GpuModule:
    """The compiled form of a GPU function."""

    name: str
    args: tuple[ArgInfo, ...]
    params: tuple[Buffer, ...]
    plan: KernelPlan
    sources: tuple[KernelSource, ...]
    ir_text: str
    device: GpuDevice
    _jitted: dict[str, Any] = field(default_factory=dict, repr=False)
    _ptx: dict[tuple[int, int], dict[str, str]] = field(default_factory=dict, repr=False)
    #: device arrays of the intermediates, allocated by the first :meth:`launch`, then reused
    _scratch: dict[Buffer, Any] = field(default_factory=dict, repr=False)

    @property
    def kernels(self) -> tuple[Kernel, ...]:
        return self.plan.kernels

    @property
    def source(self) -> str:
        """The Python source of every kernel (what numba compiles and the simulator runs)."""
        return module_source(list(self.sources))

    @property
    def inputs(self) -> list[ArgInfo]:
        return [a for a in self.args if not a.is_output]

    @property
    def outputs(self) -> list[ArgInfo]:
        return [a for a in self.args if a.is_output]

    # Running ----------------------------------------------------------------------------------
    def load(self) -> None:
        """Compile every kernel for the device now, so the first call runs no JIT: on a GPU each
        kernel is compiled eagerly for its parameter signature (``void(float32[::1], ...)``);
        the CUDA simulator has nothing to compile."""
        self._kernels()

    def _kernels(self) -> dict[str, Any]:
        if not self._jitted:
            from numba import cuda

            if cuda_backend() == "cuda" and not cuda.is_available():
                raise CompilerError(
                    f"{self.name}: no CUDA GPU is available to numba; set NUMBA_ENABLE_CUDASIM=1 "
                    "before numba.cuda is imported to run the kernels on numba's CUDA simulator"
                )
            if cuda_backend() == "cuda":
                from compiler.targets.gpu.ptx import check_numba_cuda

                check_numba_cuda()
            namespace: dict[str, Any] = {}
            exec(compile(self.source, f"<{self.name}-kernels>", "exec"), namespace)  # noqa: S102
            eager = cuda_backend() == "cuda"
            for src in self.sources:
                # a signature makes numba compile at once rather than at the first launch
                jit = cuda.jit(src.signature) if eager else cuda.jit
                self._jitted[src.name] = jit(namespace[src.name])
        return self._jitted

    def _check(self, info: ArgInfo, arr: Any) -> np.ndarray:
        if not isinstance(arr, np.ndarray):
            raise CompilerError(f"{self.name}: argument {info.name} must be a numpy array")
        if arr.dtype != np.dtype(info.dtype):
            raise CompilerError(
                f"{self.name}: argument {info.name} has dtype {arr.dtype}, expected {info.dtype}"
            )
        if tuple(arr.shape) != tuple(info.shape):
            raise CompilerError(
                f"{self.name}: argument {info.name} has shape {arr.shape}, expected {info.shape}"
            )
        return arr

    def __call__(self, *arrays: np.ndarray) -> Any:
        """Run with every argument (outputs written in place) or the inputs only."""
        if len(arrays) == len(self.inputs) and len(self.inputs) != len(self.args):
            it = iter(arrays)
            full = [
                np.empty(a.shape, dtype=a.dtype) if a.is_output else next(it) for a in self.args
            ]
        elif len(arrays) == len(self.args):
            full = list(arrays)
        else:
            names = [a.name for a in self.args]
            raise CompilerError(
                f"{self.name} takes {len(self.inputs)} inputs or all {len(self.args)} arguments "
                f"{names}, got {len(arrays)}"
            )
        checked = [self._check(info, a) for info, a in zip(self.args, full, strict=True)]
        from numba import cuda

        dev = [
            cuda.device_array(buf.size, dtype=np.dtype(info.dtype))
            if info.is_output
            else cuda.to_device(np.ascontiguousarray(arr).reshape(-1))
            for buf, info, arr in zip(self.params, self.args, checked, strict=True)
        ]
        self.launch(*dev)
        outs = []
        for d, info, arr in zip(dev, self.args, checked, strict=True):
            if info.is_output:
                np.copyto(arr, d.copy_to_host().reshape(info.shape))
                outs.append(arr)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def launch(self, *device_arrays: Any) -> None:
        """Launch the kernels on arguments already on the device: one flat (1-d, C-order)
        device array per parameter, in :attr:`args` order, outputs written in place. Nothing
        is copied and nothing waits for the kernels (they queue on the default stream); the
        intermediates are allocated on the device once, by the first launch."""
        self.bind(*device_arrays)()

    def bind(self, *device_arrays: Any) -> Callable[[], None]:
        """The kernels' launches bound to these device arrays (as :meth:`launch` takes them),
        as one call that queues them all and returns at once.

        The arguments are checked and each kernel's launch configuration made here, once. On a
        GPU the compiled overload is picked and its arguments converted here too
        (:func:`_prepared_launch`), so a call is the driver's launch alone: 5 us a kernel on an
        H200, against 21 us through numba's ``kernel[grid, block](...)``. On the CUDA simulator
        a call goes through the configured launch (the simulator has no compiled overloads)."""
        if len(device_arrays) != len(self.params):
            raise CompilerError(
                f"{self.name} takes all {len(self.params)} arguments on the device, "
                f"got {len(device_arrays)}"
            )
        kernels = self._kernels()
        if len(self._scratch) != len(self.plan.intermediates):
            from numba import cuda

            for buf in self.plan.intermediates:
                self._scratch[buf] = cuda.device_array(buf.size, dtype=np.dtype(buf.dtype.name))
        dev = dict(self._scratch)
        for buf, info, arr in zip(self.params, self.args, device_arrays, strict=True):
            if tuple(arr.shape) != (buf.size,) or np.dtype(arr.dtype) != np.dtype(info.dtype):
                raise CompilerError(
                    f"{self.name}: argument {info.name} on the device is {arr.dtype}"
                    f"{list(arr.shape)}, expected {info.dtype}[{buf.size}]"
                )
            dev[buf] = arr
        calls: list[Callable[[], None]] = []
        for k in self.plan.kernels:
            args = tuple(dev[b] for b in k.params)
            # numba's launch configuration, made once (its grid and block checked, its stream)
            configured = kernels[k.name][k.launch.grid, k.launch.block]
            if cuda_backend() == "cuda":
                # compiled eagerly for one signature (:meth:`_kernels`): its only overload
                (overload,) = kernels[k.name].overloads.values()
                calls.append(
                    _prepared_launch(overload, configured, args)
                    or functools.partial(
                        overload.launch, args, configured.griddim, configured.blockdim,
                        configured.stream, configured.sharedmem,
                    )
                )  # fmt: skip
            else:
                calls.append(functools.partial(configured, *args))
        if len(calls) == 1:
            return calls[0]

        def queue() -> None:
            for call in calls:
                call()

        return queue

    # PTX and resources --------------------------------------------------------------------
    def ptx(self, cc: tuple[int, int] | None = None) -> dict[str, str]:
        """PTX of every kernel for compute capability ``cc`` (default: the device's)."""
        cc = cc or self.device.compute_capability
        if cc not in self._ptx:
            self._ptx[cc] = compile_ptx(
                self.source, [(s.name, s.signature) for s in self.sources], cc
            )
        return self._ptx[cc]

    def resources(self, device: GpuDevice | None = None) -> list[KernelResources]:
        """Per kernel: launch configuration, shared memory, registers (from ``ptxas -v`` when
        it can run) and the resulting occupancy on ``device``."""
        device = device or self.device
        reason = ptxas_unavailable_reason()
        ptx: dict[str, str] = {}
        if reason is None:
            try:
                ptx = self.ptx(device.compute_capability)
            except PtxUnavailable as exc:
                reason = str(exc)
        infos: dict[str, PtxasInfo] = {}
        for k in self.plan.kernels if reason is None else ():
            try:
                infos[k.name] = ptxas_info(ptx[k.name], device.arch)
            except PtxUnavailable as exc:
                reason = str(exc)
                break
        out = []
        for k in self.plan.kernels:
            info = None if reason is not None else infos[k.name]
            regs = None if info is None else info.registers
            out.append(
                KernelResources(
                    kernel=k.name,
                    stage=k.stage,
                    grid=k.launch.grid,
                    block=k.launch.block,
                    shared_bytes=k.shared_bytes,
                    registers=regs,
                    occupancy=device.occupancy(k.launch.threads_per_block, k.shared_bytes, regs),
                    ptxas=info,
                    unavailable=reason,
                )
            )
        return out


def _prepared_launch(
    overload: Any, configured: Any, args: tuple[Any, ...]
) -> Callable[[], None] | None:
    """One kernel's launch with its arguments converted once: the driver's launch (``cuda.core``)
    of the overload's function with the values numba's own launch would pass (pointer, shape
    and strides of each device array), so a call does no conversion. ``None`` where the
    installed numba-cuda does not have the parts this uses (those of 0.30, which the gpu extra
    pins), or where its launch would do more than convert (a debug or cooperative kernel,
    argument extensions, arrays copied back after the launch): the overload's own launch is
    used then, which converts the arguments at every call."""
    try:
        from cuda.core import LaunchConfig, launch
        from numba.cuda._compat import CUDA_CORE_GE_1_0

        function = overload._codelibrary.get_cufunc().kernel
        prepare = overload._prepare_args
        types = overload.argument_types
        plain = not (overload.debug or overload.cooperative or overload.extensions)
    except (ImportError, AttributeError):
        return None
    if not plain:
        return None
    values: list[Any] = []
    writeback: list[Any] = []
    for ty, value in zip(types, args, strict=True):
        prepare(ty, value, configured.stream, writeback, values)
    if writeback:
        return None
    cooperative = {"is_cooperative": False} if CUDA_CORE_GE_1_0 else {"cooperative_launch": False}
    config = LaunchConfig(
        grid=configured.griddim,
        block=configured.blockdim,
        shmem_size=configured.sharedmem,
        **cooperative,
    )
    return functools.partial(launch, configured.stream, config, function, *values)


def make_module(
    name: str,
    args: Sequence[ArgInfo],
    params: Sequence[Buffer],
    plan: KernelPlan,
    sources: Sequence[KernelSource],
    ir_text: str,
    device: GpuDevice,
) -> GpuModule:
    return GpuModule(name, tuple(args), tuple(params), plan, tuple(sources), ir_text, device)
