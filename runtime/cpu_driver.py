"""One native call per run of a CPU program: a driver function, LLVM IR compiled like the
kernels, calls every kernel in order and times each one.

Called from Python, each kernel cost its argument list, a ctypes call, two clock reads and a
profile record: a run of ddddocr's CRNN (532 groups, its LSTM unrolled) took 16.2 ms, of which
its kernels 13.9, about 4 us a group on top of the kernels. The driver reads every pointer from
one table (an ``int64`` array: the kernels' entry points first, then each distinct argument:
the arena's tensors and the constants, written when the executor is built, the inputs and
outputs, written at each run), calls the kernels one after another and stores each one's
``CLOCK_MONOTONIC`` nanoseconds into a second array, from which the profile's records are made
only when the profile is read.

The IR depends only on the program's shape (which table slots each kernel reads), never on
addresses, so it is compiled once and kept in the object cache like a kernel.

Example:
    >>> text = driver_ir([[0, 1], [1, 2]])
    >>> text.count("call void %"), "clock_gettime" in text
    (2, True)
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence

#: The driver's symbol.
DRIVER = "vtac_driver"
#: ``CLOCK_MONOTONIC`` on Linux.
CLOCK_MONOTONIC = 1


def driver_ir(kernel_slots: Sequence[Sequence[int]]) -> str:
    """LLVM IR of ``void vtac_driver(i64* table, i64* times)``: kernel ``i`` is the function at
    ``table[i]``, called with the pointers at ``table[len(kernel_slots) + s]`` for each ``s`` of
    ``kernel_slots[i]``; its nanoseconds go to ``times[i]``."""
    n = len(kernel_slots)
    lines = [
        "declare i32 @clock_gettime(i32, ptr)",
        "",
        "define internal i64 @now(ptr %ts) alwaysinline {",
        f"  call i32 @clock_gettime(i32 {CLOCK_MONOTONIC}, ptr %ts)",
        "  %sp = getelementptr inbounds i64, ptr %ts, i64 0",
        "  %s = load i64, ptr %sp, align 8",
        "  %np = getelementptr inbounds i64, ptr %ts, i64 1",
        "  %ns = load i64, ptr %np, align 8",
        "  %sn = mul i64 %s, 1000000000",
        "  %t = add i64 %sn, %ns",
        "  ret i64 %t",
        "}",
        "",
        f"define void @{DRIVER}(ptr noalias %table, ptr noalias %times) {{",
        "entry:",
        "  %ts = alloca [2 x i64], align 8",
    ]
    for i, slots in enumerate(kernel_slots):
        lines += [
            f"  %fp{i} = getelementptr inbounds ptr, ptr %table, i64 {i}",
            f"  %f{i} = load ptr, ptr %fp{i}, align 8",
        ]
        args = []
        for j, s in enumerate(slots):
            lines += [
                f"  %a{i}_{j}p = getelementptr inbounds ptr, ptr %table, i64 {n + s}",
                f"  %a{i}_{j} = load ptr, ptr %a{i}_{j}p, align 8",
            ]
            args.append(f"ptr %a{i}_{j}")
        lines += [
            f"  %t{i}a = call i64 @now(ptr %ts)",
            f"  call void %f{i}({', '.join(args)})",
            f"  %t{i}b = call i64 @now(ptr %ts)",
            f"  %d{i} = sub i64 %t{i}b, %t{i}a",
            f"  %dp{i} = getelementptr inbounds i64, ptr %times, i64 {i}",
            f"  store i64 %d{i}, ptr %dp{i}, align 8",
        ]
    lines += ["  ret void", "}", ""]
    return "\n".join(lines)


def compile_driver(kernel_slots: Sequence[Sequence[int]]) -> Callable[[int, int], None]:
    """The compiled driver of :func:`driver_ir`, called with the two arrays' addresses."""
    from compiler.targets.cpu.jit import compile_llvm

    address = compile_llvm(driver_ir(kernel_slots), DRIVER)
    return ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(address)


__all__ = ["CLOCK_MONOTONIC", "DRIVER", "compile_driver", "driver_ir"]
