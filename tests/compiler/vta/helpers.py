"""Shared builders of the accelerator target's tests."""

from __future__ import annotations

import numpy as np

import isa
import vta_sim
from compiler import te
from compiler.build import lower
from compiler.ir import PrimFunc
from compiler.passes import PassOptions
from compiler.schedule import Schedule
from compiler.targets.vta import VTATarget, get_vta_target
from compiler.topi.vta import Conv2dKnobs, conv2d_packed, schedule_conv2d_packed
from compiler.topi.vta.accesses import conv2d_accesses
from compiler.topi.vta.conv2d import conv2d_shapes
from isa.energy import count_events

PRESETS = ("default", "vta-1x16x16", "4x4x4")


def small_conv(
    preset: str = "default",
    knobs: Conv2dKnobs | None = None,
    *,
    h: int = 6,
    c_blocks: int = 2,
    o_blocks: int = 4,
    k: int = 3,
    stride: int = 1,
    pad: int = 1,
    shift: int = 4,
    relu: bool = False,
) -> tuple[VTATarget, Schedule, list[te.Tensor]]:
    """A small packed conv2d layer scheduled with the template."""
    tgt = get_vta_target(preset)
    cfg = tgt.config
    dshape, kshape = conv2d_shapes(cfg, cfg.batch, c_blocks * cfg.block_in,
                                   o_blocks * cfg.block_out, h, h, k)  # fmt: skip
    x = te.placeholder(dshape, "int8", name="X")
    w = te.placeholder(kshape, "int8", name="W")
    out = conv2d_packed(x, w, stride, pad, shift=shift, relu=relu)
    oh = (h + 2 * pad - k) // stride + 1
    if knobs is None:
        knobs = Conv2dKnobs(tile_h=oh, tile_w=oh, tile_ci=1, tile_co=2, oc_nthread=2)
    return tgt, schedule_conv2d_packed(out, knobs, cfg), [x, w, out]


def lower_dumps(tgt: VTATarget, s: Schedule, args: list, verify: bool = True
                ) -> tuple[PrimFunc, dict[str, str]]:  # fmt: skip
    """Lower through the target's pipeline, keeping the IR text after every pass."""
    dumps: dict[str, str] = {}
    opts = PassOptions(verify=verify, dump=frozenset({"all"}),
                       on_dump=lambda name, text: dumps.__setitem__(name, text))  # fmt: skip
    return lower(s, args, target=tgt, options=opts), dumps


def run(prog: isa.Program) -> vta_sim.SimResult:
    return vta_sim.simulate(prog, trace=False)


def run_in_order(prog: isa.Program) -> np.ndarray:
    """The final DRAM of the in-order reference machine (isa.Machine)."""
    m = isa.Machine(prog.config, prog.dram.copy())
    m.run(prog.instructions())
    return m.dram


def random_int8(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, shape, dtype=np.int8)


def access_mismatches(
    program, cfg, layer, knobs, residual: bool = False
) -> list[tuple[str, int, int]]:
    """``(what, counted, analytical)`` where the program's events and the analytical access
    count of the same schedule differ (empty: they agree)."""
    ev = count_events(program)
    a = conv2d_accesses(cfg, layer, knobs, residual=residual)
    pairs = [("gemm_uops", ev.gemm_uops, a.gemm_uops),
             ("reset_uops", ev.gemm_reset_uops, a.reset_uops)]  # fmt: skip
    pairs += [(f"dram {k}", ev.dram_bytes[k], v) for k, v in a.dram_bytes.items()]
    pairs += [(f"{b} written", ev.sram_writes[b], v) for b, v in a.sram_writes.items()]
    pairs += [(f"{b} read", ev.sram_reads[b], v) for b, v in a.sram_reads.items()]
    return [p for p in pairs if p[1] != p[2]]


def heuristic_points(part, cfg) -> list[tuple[object, object, object]]:
    """``(group, task, layer)`` for every gemm group of ``part``: the group compiled with the
    heuristic's knobs and those knobs as a point of the space of its registered template's
    task (asserting each group has a task and its point is valid: the heuristic and the tuner
    cannot drift)."""
    from compiler import registry
    from compiler.model.vta import compile_group

    found = []
    for group in part.groups:
        impl = registry.lookup("vta", group.anchor.op)
        if impl.kind != "gemm":
            continue
        task, why = impl.task(group, cfg)
        assert task is not None, f"{group.name}: {why}"
        layer = compile_group(group, cfg)
        point = task.config_of(layer.knobs, getattr(layer, "inp_fetch", "window"))
        reason = task.space().reason_invalid(point.index)
        assert reason is None, f"{group.name}: heuristic {point.describe()}: {reason}"
        found.append((group, task, layer))
    return found
