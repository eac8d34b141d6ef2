"""``vtac layer conv2d|dense ... --target gpu [--check] [--ptx FILE] [--json]``: one float32
layer compiled for the GPU with its default schedule.

It prints each kernel's launch configuration, shared memory per block, registers per thread
(from ``ptxas -v`` when the CUDA assembler is installed, otherwise marked unavailable with the
reason) and the occupancy on an H100-class device. ``--ptx FILE`` writes the kernels' PTX for
sm_90; ``--check`` runs the layer on seeded random data and compares with numpy: on the GPU
when numba finds one, else on numba's CUDA simulator (the output says which).

Example:
    >>> import argparse
    >>> args = argparse.Namespace(kind="dense", h=1, w=1, in_c=8, out_c=4, k=1, stride=1,
    ...     pad=0, batch=None, relu=True, residual=False, seed=0, check=False, json=False,
    ...     ptx=None, output=None)
    >>> layer = build_gpu_layer(args)
    >>> [k.launch.block for k in layer.module.kernels]
    [(4, 1, 1)]
"""

from __future__ import annotations

import argparse
import ctypes.util
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass
class GpuLayer:
    """A compiled GPU layer with its inputs and the numpy result."""

    name: str
    module: Any
    inputs: list[np.ndarray]
    expected: np.ndarray


def _conv2d_ref(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    n, _, h, wd = x.shape
    o, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - k) // stride + 1
    ow = (wd + 2 * pad - k) // stride + 1
    out = np.zeros((n, o, oh, ow), np.float32)
    for ky in range(k):
        for kx in range(k):
            patch = xp[:, :, ky : ky + stride * (oh - 1) + 1 : stride,
                       kx : kx + stride * (ow - 1) + 1 : stride]  # fmt: skip
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx])
    return out


def build_gpu_layer(args: argparse.Namespace) -> GpuLayer:
    """Compile the layer ``args`` describes for the GPU (float32, seeded random data)."""
    from compiler import te, topi
    from compiler.build import build
    from compiler.topi.gpu import schedule_gpu

    rng = np.random.default_rng(args.seed)
    batch = args.batch or 1
    if args.kind == "conv2d":
        x = te.placeholder((batch, args.in_c, args.h, args.w), name="data")
        w = te.placeholder((args.out_c, args.in_c, args.k, args.k), name="weight")
        anchor = topi.conv2d_nchw(x, w, args.stride, args.pad)
        xa = rng.standard_normal(x.shape).astype("float32")
        wa = (rng.standard_normal(w.shape) / np.sqrt(args.in_c * args.k * args.k)).astype("float32")
        expected = _conv2d_ref(xa, wa, args.stride, args.pad)
        name = f"conv2d_{args.h}x{args.w}x{args.in_c}_{args.out_c}_k{args.k}s{args.stride}"
    else:
        x = te.placeholder((batch, args.in_c), name="data")
        w = te.placeholder((args.out_c, args.in_c), name="weight")
        anchor = topi.dense(x, w)
        xa = rng.standard_normal(x.shape).astype("float32")
        wa = (rng.standard_normal(w.shape) / np.sqrt(args.in_c)).astype("float32")
        expected = xa @ wa.T
        name = f"dense_{args.in_c}_{args.out_c}"
    params = [x, w]
    inputs = [xa, wa]
    out = anchor
    if getattr(args, "residual", False):
        res = te.placeholder(anchor.shape, name="residual")
        ra = rng.standard_normal(res.shape).astype("float32")
        out = topi.add(out, res)
        params.append(res)
        inputs.append(ra)
        expected = expected + ra
    if args.relu:
        out = topi.relu(out)
        expected = np.maximum(expected, 0)
    s = schedule_gpu([out], anchor=anchor)
    module = build(s, params + [out], target="gpu", name=name)
    return GpuLayer(name, module, inputs, expected.astype("float32"))


def select_cuda_backend(command: str | None = None) -> str:
    """Run kernels on numba's CUDA simulator when this machine has no NVIDIA driver and the
    choice was not made already (``NUMBA_ENABLE_CUDASIM`` set, or ``numba.cuda`` imported).
    With ``command`` given, a fallback to the simulator is said in one line on stderr."""
    from compiler.targets.gpu.module import cuda_backend

    if "NUMBA_ENABLE_CUDASIM" not in os.environ and "numba.cuda" not in sys.modules:
        if not (Path("/dev/nvidiactl").exists() and ctypes.util.find_library("cuda")):
            os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
            if "numba" in sys.modules:
                import numba.core.config

                numba.core.config.reload_config()
            if command:
                print(
                    f"{command}: no NVIDIA GPU here: the kernels run on numba's CUDA simulator "
                    "(slow; its times are not a GPU's)",
                    file=sys.stderr,
                )
    return cuda_backend()


def run_gpu_layer(args: argparse.Namespace) -> int:
    """The ``vtac layer --target gpu`` command; returns the exit status."""
    from compiler.errors import CompilerError
    from compiler.targets.gpu import H100

    if getattr(args, "output", None):
        raise CompilerError(
            f"vtac layer --target gpu: -o {args.output} writes an accelerator program file; "
            "a GPU layer's code is written with --ptx FILE"
        )
    # decided before anything imports numba.cuda (PTX compilation would import the real one)
    backend = select_cuda_backend("vtac layer") if args.check else None
    layer = build_gpu_layer(args)
    module = layer.module
    report: dict[str, Any] = {"layer": layer.name, "device": H100.name, "kernels": []}
    for r in module.resources(H100):
        regs = "unavailable" if r.registers is None else str(r.registers)
        report["kernels"].append(
            {
                "kernel": r.kernel,
                "stage": r.stage,
                "grid": list(r.grid),
                "block": list(r.block),
                "shared_bytes": r.shared_bytes,
                "registers": r.registers,
                "registers_unavailable": r.unavailable,
                "blocks_per_sm": r.occupancy.blocks_per_sm,
                "occupancy": round(r.occupancy.occupancy, 4),
                "limited_by": r.occupancy.limited_by,
            }
        )
        if not args.json:
            print(
                f"{r.kernel} ({r.stage}): grid {r.grid} block {r.block}, "
                f"{r.shared_bytes} B shared/block, registers/thread {regs}, "
                f"occupancy on {H100.name} {r.occupancy.occupancy:.0%} "
                f"({r.occupancy.blocks_per_sm} blocks/SM, limited by {r.occupancy.limited_by}"
                f"{'' if r.occupancy.registers_known else ', registers not counted'})"
            )
            if r.unavailable is not None:
                print(f"  registers unavailable: {r.unavailable}")
    if args.ptx:
        ptx = module.ptx(H100.compute_capability)
        Path(args.ptx).write_text("\n".join(ptx[k.name] for k in module.kernels))
        if not args.json:
            print(f"wrote the PTX of {len(ptx)} kernel(s) for {H100.arch} to {args.ptx}")
    status = 0
    if args.check:
        from vta_sim.progress import elapsed

        # one launch per kernel, about 10 s on numba's CUDA simulator: no steps to count
        show = True if getattr(args, "progress", False) else None
        with elapsed(f"running {layer.name} on {backend}", show):
            got = module(*layer.inputs)
        match = bool(np.allclose(got, layer.expected, rtol=1e-4, atol=1e-4))
        err = float(np.max(np.abs(got - layer.expected)))
        report.update(match=match, max_abs_error=err, ran_on=backend)
        if not args.json:
            verdict = "matches" if match else "DOES NOT match"
            print(f"ran on {backend}: output {verdict} numpy (max abs error {err:.3g})")
        status = 0 if match else 1
    if args.json:
        print(json.dumps(report))
    return status
