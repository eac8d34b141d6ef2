"""JIT compilation of LLVM IR text with llvmlite, and the numpy-facing compiled function.

Modules are optimised at -O3 for the host CPU and added to one process-wide MCJIT engine.
Identical IR text is compiled once per process, and machine code is kept on disk between
processes in ``$VTAC_CACHE_DIR`` (default ``~/.cache/vtac/llvm``; ``VTAC_CACHE_DIR=off``
disables it). The cache key covers the IR text, the LLVM version and the host CPU and features.

Example:
    >>> import numpy as np
    >>> from compiler import te
    >>> from compiler.build import build
    >>> from compiler.schedule import create_schedule
    >>> A = te.placeholder((4,), "float32", name="A")
    >>> B = te.compute((4,), lambda i: A[i] * 2.0, name="B")
    >>> f = build(create_schedule(B), [A, B])
    >>> f(np.arange(4, dtype="float32"))
    array([0., 2., 4., 6.], dtype=float32)
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from compiler.errors import CodegenError, CompilerError
from compiler.ir.stmt import ArgInfo
from compiler.targets.cpu.signature import SIGNATURE_SUFFIX, ArgSignature, decode_signature

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}
_CACHE: dict[str, int] = {}
#: the address of each compiled kernel's signature function, by the kernel's address (0: none)
_SIGNATURES: dict[int, int] = {}
#: each record once read, by the kernel's address
_DECODED: dict[int, tuple[ArgSignature, ...]] = {}


def cache_dir() -> Path | None:
    """Directory of the on-disk object cache, or None when disabled."""
    raw = os.environ.get("VTAC_CACHE_DIR")
    if raw is not None and raw.strip().lower() in ("", "0", "off", "none"):
        return None
    if raw:
        return Path(raw)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "vtac" / "llvm"


def _cache_path(module: Any) -> Path | None:
    root = cache_dir()
    name = getattr(module, "name", "")
    if root is None or not name.startswith("vtac_"):
        return None
    return root / f"{name}.o"


def _cache_load(module: Any) -> bytes | None:
    path = _cache_path(module)
    if path is None or not path.is_file():
        return None
    return path.read_bytes()


def _cache_store(module: Any, buf: bytes) -> None:
    path = _cache_path(module)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename, so a concurrent reader never sees a partial object file.
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(buf)
        os.replace(tmp, path)
    except OSError:
        pass  # the cache is an optimisation; an unwritable directory only costs compile time


def _engine() -> tuple[Any, Any, Any]:
    """The process-wide (engine, target machine, pass builder), created on first use."""
    if "engine" not in _STATE:
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        tm = target.create_target_machine(
            cpu=llvm.get_host_cpu_name(),
            features=llvm.get_host_cpu_features().flatten(),
            opt=3,
        )
        empty = llvm.parse_assembly("")
        engine = llvm.create_mcjit_compiler(empty, tm)
        engine.set_object_cache(_cache_store, _cache_load)
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        identity = "|".join(
            [str(llvm.llvm_version_info), tm.triple, llvm.get_host_cpu_name(),
             llvm.get_host_cpu_features().flatten()]
        )  # fmt: skip
        _STATE.update(engine=engine, tm=tm, pto=pto, llvm=llvm, identity=identity)
        _add_pool(llvm, engine, tm, pto)
    return _STATE["engine"], _STATE["tm"], _STATE["pto"]


def _add_pool(llvm: Any, engine: Any, tm: Any, pto: Any) -> None:
    """Compile the parallel loops' thread pool (:mod:`compiler.targets.cpu.pool`) into the
    engine and publish its entry point, which every kernel's parallel loop calls."""
    from compiler.targets.cpu.pool import POOL_ENTRY, POOL_INIT, POOL_IR

    mod = llvm.parse_assembly(POOL_IR)
    mod.verify()
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    mod.name = "vtacrt_pool"  # not a kernel: never in the object cache
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    engine.add_module(mod)
    engine.finalize_object()
    llvm.add_symbol(POOL_ENTRY, engine.get_function_address(POOL_ENTRY))
    ctypes.CFUNCTYPE(None)(engine.get_function_address(POOL_INIT))()


def compile_llvm(ir_text: str, symbol: str) -> int:
    """Compile ``ir_text`` and return the address of ``symbol`` (cached by content).

    Example:
        >>> addr = compile_llvm("define i32 @seven() {\\n  ret i32 7\\n}\\n", "seven")
        >>> ctypes.CFUNCTYPE(ctypes.c_int32)(addr)()
        7
    """
    with _LOCK:
        engine, tm, pto = _engine()
        llvm = _STATE["llvm"]
        key = hashlib.sha256(
            (_STATE["identity"] + "\n" + symbol + "\n" + ir_text).encode()
        ).hexdigest()
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
        # Symbols must be unique in the shared engine: rename the entry point per module (with
        # its outlined workers and its signature function).
        unique = f"{symbol}_{key[:16]}"
        text = (
            ir_text.replace(f"@{symbol}(", f"@{unique}(")
            .replace(f"@{symbol}_par", f"@{unique}_par")
            .replace(f"@{symbol}{SIGNATURE_SUFFIX}", f"@{unique}{SIGNATURE_SUFFIX}")
        )
        try:
            mod = llvm.parse_assembly(text)
            mod.verify()
        except RuntimeError as exc:
            raise CodegenError(f"generated LLVM IR for {symbol} is invalid: {exc}") from None
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        mod.name = f"vtac_{key[:32]}"
        if _cache_load(mod) is None:
            # Optimise only what MCJIT will compile; a cached object skips both steps.
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
        engine.add_module(mod)
        engine.finalize_object()
        addr = engine.get_function_address(unique)
        if not addr:
            raise CodegenError(f"symbol {symbol} not found after compilation")
        _CACHE[key] = addr
        _SIGNATURES[addr] = engine.get_function_address(f"{unique}{SIGNATURE_SUFFIX}")
        return addr


def compiled_signature(ir_text: str, symbol: str) -> tuple[ArgSignature, ...] | None:
    """The argument signature that the module ``ir_text`` records for its kernel ``symbol``
    (:mod:`compiler.targets.cpu.signature`), read from the compiled code; None when the module
    records none (code generated before kernels carried one). Compiles the module as
    :func:`compile_llvm` does (cached: a later call for the kernel costs nothing).

    Example:
        >>> from compiler.targets.cpu.signature import ArgSignature, llvm_signature
        >>> sig = (ArgSignature("x", (2,), "int32", 8, True),)
        >>> ir = "define void @k(ptr %a) #0 {\\n  ret void\\n}\\n" + llvm_signature("k", sig)
        >>> compiled_signature(ir + "\\nattributes #0 = { nounwind }\\n", "k") == sig
        True
        >>> compiled_signature("define void @bare() {\\n  ret void\\n}\\n", "bare") is None
        True
    """
    addr = compile_llvm(ir_text, symbol)
    if addr in _DECODED:
        return _DECODED[addr]
    record = _SIGNATURES.get(addr)
    if not record:
        return None
    text = ctypes.string_at(ctypes.CFUNCTYPE(ctypes.c_void_p)(record)())
    try:
        _DECODED[addr] = decode_signature(text)
    except ValueError as e:
        raise CodegenError(f"kernel {symbol}: {e}") from None
    return _DECODED[addr]


def assembly(ir_text: str) -> str:
    """Native assembly of an LLVM module (for inspection)."""
    _, tm, pto = _engine()
    llvm = _STATE["llvm"]
    mod = llvm.parse_assembly(ir_text)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return tm.emit_assembly(mod)


@dataclass
class CompiledFunction:
    """A compiled kernel taking numpy arrays.

    Call with every argument (outputs are written in place and returned), or with the inputs
    only (outputs are allocated and returned: one array, or a tuple for several outputs).
    """

    name: str
    args: tuple[ArgInfo, ...]
    address: int
    llvm_ir: str
    ir_text: str

    def __post_init__(self) -> None:
        self._fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(self.args)))(self.address)

    @property
    def inputs(self) -> list[ArgInfo]:
        return [a for a in self.args if not a.is_output]

    @property
    def outputs(self) -> list[ArgInfo]:
        return [a for a in self.args if a.is_output]

    def _check(self, info: ArgInfo, arr: Any, writable: bool) -> np.ndarray:
        if not isinstance(arr, np.ndarray):
            raise CompilerError(f"{self.name}: argument {info.name} must be a numpy array")
        want = np.dtype("bool" if info.dtype == "bool" else info.dtype)
        if arr.dtype != want:
            raise CompilerError(
                f"{self.name}: argument {info.name} has dtype {arr.dtype}, expected {want}"
            )
        if tuple(arr.shape) != tuple(info.shape):
            raise CompilerError(
                f"{self.name}: argument {info.name} has shape {arr.shape}, expected {info.shape}"
            )
        if not arr.flags.c_contiguous:
            if writable:
                raise CompilerError(f"{self.name}: output {info.name} must be C-contiguous")
            arr = np.ascontiguousarray(arr)
        if writable and not arr.flags.writeable:
            raise CompilerError(f"{self.name}: output {info.name} is read-only")
        return arr

    def __call__(self, *arrays: np.ndarray) -> Any:
        if len(arrays) == len(self.inputs) and len(self.inputs) != len(self.args):
            it = iter(arrays)
            full: list[np.ndarray] = []
            for info in self.args:
                if info.is_output:
                    full.append(
                        np.empty(info.shape, dtype="bool" if info.dtype == "bool" else info.dtype)
                    )
                else:
                    full.append(next(it))
        elif len(arrays) == len(self.args):
            full = list(arrays)
        else:
            names = [a.name for a in self.args]
            raise CompilerError(
                f"{self.name} takes {len(self.inputs)} inputs or all {len(self.args)} arguments "
                f"{names}, got {len(arrays)}"
            )
        checked = [
            self._check(info, a, info.is_output) for info, a in zip(self.args, full, strict=True)
        ]
        outs = [a for info, a in zip(self.args, checked, strict=True) if info.is_output]
        ins = [a for info, a in zip(self.args, checked, strict=True) if not info.is_output]
        for o in outs:
            for x in ins + [p for p in outs if p is not o]:
                if np.may_share_memory(o, x):
                    raise CompilerError(f"{self.name}: an output array overlaps another argument")
        self._fn(*(a.ctypes.data for a in checked))
        return outs[0] if len(outs) == 1 else tuple(outs)


def make_function(
    name: str, args: Sequence[ArgInfo], llvm_ir: str, ir_text: str
) -> CompiledFunction:
    return CompiledFunction(name, tuple(args), compile_llvm(llvm_ir, name), llvm_ir, ir_text)
