"""PTX from the generated kernel source, and what the CUDA assembler says about it.

``numba.cuda.compile_ptx`` needs numba's real CUDA target, which cannot be loaded in a process
where numba's CUDA simulator is active (``NUMBA_ENABLE_CUDASIM=1``, as in the test suite).
Such a process compiles in a child Python process started without that variable; any other
process compiles in place. Both run :func:`compile_here` on the same kernel source.

``ptxas`` (the CUDA assembler, from a CUDA toolkit) is optional: when it is on ``PATH`` or in
``$CUDA_HOME/bin``, :func:`ptxas_info` assembles a kernel and returns its register, spill
and shared-memory figures; otherwise they are unavailable and say why.

Example:
    >>> info = parse_ptxas_output("ptxas info    : Used 30 registers, used 1 barriers, "
    ...                           "4096 bytes smem, 400 bytes cmem[0]")
    >>> info.registers, info.shared_bytes, info.barriers
    (30, 4096, 1)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from compiler.errors import CodegenError


class PtxUnavailable(CodegenError):
    """PTX cannot be produced on this machine (numba's CUDA compiler cannot load NVVM or
    NVRTC); the message says which library is missing."""


def simulator_active() -> bool:
    """True when numba's CUDA simulator is (or will be) this process's ``numba.cuda``."""
    if "numba.cuda" in sys.modules:
        from numba.core import config

        # numba.core.config sets its settings from the environment at import time; no stub
        # declares them.
        return bool(config.ENABLE_CUDASIM)  # type: ignore[attr-defined]
    return _env_sim()


def _env_sim() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def check_numba_cuda() -> None:
    """Refuse, naming both versions, a numba-cuda whose real CUDA target cannot load beside
    this numpy.

    numba-cuda 0.30 registers ``np.row_stack`` when its array support is imported, the first
    time a kernel is compiled; numpy 2.5 removed that name, so every kernel compile failed with
    an ``AttributeError`` deep inside numba (seen on an H100 with numpy 2.5.2). Only the real
    target is checked: the simulator never loads that module.
    """
    import importlib

    try:
        importlib.import_module("numba.cuda.np.arrayobj")
    except AttributeError as exc:
        import numpy
        from numba_cuda import __version__ as numba_cuda_version

        raise CodegenError(
            f"numba-cuda {numba_cuda_version} cannot compile kernels with numpy "
            f"{numpy.__version__} ({exc}); install the versions the gpu extra pins "
            "(pip install 'vtac[gpu]')"
        ) from None


def compile_here(source: str, kernels: list[tuple[str, str]], cc: tuple[int, int]) -> dict:
    """Compile each ``(name, signature)`` kernel of ``source`` to PTX in this process."""
    from numba import cuda

    check_numba_cuda()

    namespace: dict = {}
    exec(compile(source, "<vtac-gpu-kernels>", "exec"), namespace)  # noqa: S102
    out = {}
    for name, sig in kernels:
        try:
            ptx, _ = cuda.compile_ptx(namespace[name], sig, cc=cc)
        except Exception as exc:  # numba raises many types; report which library is missing
            text = f"{type(exc).__name__}: {exc}"
            if "DynamicLibNotFound" in text or "NvvmSupportError" in text or "libnv" in text:
                raise PtxUnavailable(
                    f"numba's CUDA compiler cannot produce PTX here: {text.splitlines()[0]}"
                ) from None
            raise CodegenError(f"kernel {name}: PTX compilation failed: {text}") from None
        out[name] = ptx
    return out


def compile_ptx(
    source: str, kernels: list[tuple[str, str]], cc: tuple[int, int] = (9, 0)
) -> dict[str, str]:
    """PTX of each ``(name, signature)`` kernel in ``source`` for compute capability ``cc``."""
    if not simulator_active():
        return compile_here(source, kernels, cc)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    request = json.dumps({"source": source, "kernels": kernels, "cc": list(cc)})
    proc = subprocess.run(
        [sys.executable, "-m", "compiler.targets.gpu.ptx"],
        input=request,
        capture_output=True,
        text=True,
        env=env,
        cwd=str(Path(__file__).resolve().parents[3]),
        timeout=600,
    )
    if proc.returncode != 0:
        raise CodegenError(f"PTX compilation process failed:\n{proc.stderr[-2000:]}")
    reply = json.loads(proc.stdout)
    if "unavailable" in reply:
        raise PtxUnavailable(reply["unavailable"])
    if "error" in reply:
        raise CodegenError(reply["error"])
    return reply["ptx"]


@dataclass(frozen=True)
class PtxasInfo:
    """Resource use of one kernel as reported by ``ptxas -v``."""

    arch: str
    registers: int
    shared_bytes: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int
    barriers: int
    text: str


def ptxas_path() -> str | None:
    """The CUDA assembler, or None when it is not installed."""
    found = shutil.which("ptxas")
    if found:
        return found
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and (Path(home) / "bin" / "ptxas").is_file():
        return str(Path(home) / "bin" / "ptxas")
    return None


def ptxas_unavailable_reason() -> str | None:
    """Why ``ptxas`` figures are unavailable, or None when they are available."""
    if ptxas_path() is None:
        return "ptxas (the CUDA assembler) is not on PATH or in $CUDA_HOME/bin"
    return None


def parse_ptxas_output(text: str, arch: str = "") -> PtxasInfo:
    """Read the figures of the (single) entry function in ``ptxas -v`` output."""

    def num(pattern: str) -> int:
        m = re.search(pattern, text)
        return int(m.group(1)) if m else 0

    if not re.search(r"Used (\d+) registers", text):
        raise CodegenError(f"ptxas -v printed no register count:\n{text}")
    return PtxasInfo(
        arch=arch,
        registers=num(r"Used (\d+) registers"),
        shared_bytes=num(r"(\d+) bytes smem"),
        spill_stores=num(r"(\d+) bytes spill stores"),
        spill_loads=num(r"(\d+) bytes spill loads"),
        stack_bytes=num(r"(\d+) bytes stack frame"),
        barriers=num(r"used (\d+) barriers"),
        text=text,
    )


def ptxas_info(ptx: str, arch: str) -> PtxasInfo:
    """Assemble ``ptx`` for ``arch`` (e.g. ``sm_90``) with ``ptxas -v``."""
    exe = ptxas_path()
    if exe is None:
        raise PtxUnavailable(ptxas_unavailable_reason() or "ptxas is missing")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.ptx"
        src.write_text(ptx)
        proc = subprocess.run(
            [exe, "-v", f"-arch={arch}", str(src), "-o", str(Path(tmp) / "kernel.cubin")],
            capture_output=True,
            text=True,
            timeout=300,
        )
    if proc.returncode != 0:
        if "Unsupported .version" in proc.stderr:
            # NVRTC/NVVM newer than the CUDA assembler: a mismatched installation, not a bug
            raise PtxUnavailable(
                f"ptxas at {exe} is older than the PTX numba produced ({proc.stderr.strip()}); "
                "install NVRTC of the same CUDA version as ptxas"
            )
        raise CodegenError(f"ptxas rejected the PTX for {arch}:\n{proc.stderr[-2000:]}")
    return parse_ptxas_output(proc.stdout + proc.stderr, arch)


def main() -> int:
    """Child-process entry: JSON request on stdin, JSON reply on stdout."""
    request = json.loads(sys.stdin.read())
    try:
        ptx = compile_here(request["source"], [tuple(k) for k in request["kernels"]],
                           tuple(request["cc"]))  # fmt: skip
    except PtxUnavailable as exc:
        print(json.dumps({"unavailable": str(exc)}))
        return 0
    except CodegenError as exc:
        print(json.dumps({"error": str(exc)}))
        return 0
    print(json.dumps({"ptx": ptx}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
