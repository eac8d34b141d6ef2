"""The conv2d template's ``kernel_step`` knob (a reduction step covers the kernel's whole
window or one of its rows): bit-exact against numpy on the simulator on every preset, with
strides, virtual threads, a residual, resident weights and every GEMM fold; what a step loads;
the knobs it rejects; the space's rules."""

import math

import pytest

import isa
import vta_sim
from compiler.errors import ScheduleError
from compiler.topi.vta import Conv2dKnobs, Conv2dLayer
from compiler.topi.vta.conv2d import GEMM_FOLDS
from compiler.topi.vta.testing import build_conv2d
from compiler.tune import conv2d_task
from isa import Load, MemType

from .helpers import PRESETS


def _run(layer: Conv2dLayer, preset: str, knobs: Conv2dKnobs, **kw):
    built = build_conv2d(layer, preset, knobs, relu=True, seed=9, **kw)
    r = vta_sim.simulate(built.program)
    assert built.matches(r.read("out")), (preset, knobs)
    return built, r


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("stride", [1, 2])
def test_one_kernel_row_per_step_is_bit_exact_with_threads(preset, stride):
    cfg = isa.load_config(preset)
    layer = Conv2dLayer("row", 8, 8, 2 * cfg.block_in, 4 * cfg.block_out, 3, stride, 1, cfg.batch)
    th, tw = 4 // stride, 8 // stride
    for oc_n, h_n, tile_h in ((1, 1, th), (2, 1, th), (1, 2, 1)):
        knobs = Conv2dKnobs(tile_h=tile_h, tile_w=tw, tile_ci=1, tile_co=2, oc_nthread=oc_n,
                            h_nthread=h_n, kernel_step="row")  # fmt: skip
        _run(layer, preset, knobs)


@pytest.mark.parametrize("fold", [f.value for f in GEMM_FOLDS])
def test_every_fold_with_one_kernel_row_per_step(fold):
    cfg = isa.load_config("default")
    layer = Conv2dLayer("rowfold", 6, 8, 2 * cfg.block_in, 4 * cfg.block_out, 3, 1, 1)
    knobs = Conv2dKnobs(tile_h=3, tile_w=4, tile_ci=2, tile_co=2, oc_nthread=2,
                        gemm_fold=fold, kernel_step="row")  # fmt: skip
    _run(layer, "default", knobs)


def test_one_kernel_row_per_step_with_a_residual_and_resident_weights():
    cfg = isa.load_config("vta-1x16x16")
    layer = Conv2dLayer("rowres", 4, 4, 2 * cfg.block_in, 2 * cfg.block_out, 3, 1, 1)
    _run(layer, "vta-1x16x16",
         Conv2dKnobs(tile_h=2, tile_w=4, tile_ci=1, tile_co=2, h_nthread=2, kernel_step="row"),
         residual=True)  # fmt: skip
    _run(layer, "vta-1x16x16",
         Conv2dKnobs(tile_h=2, tile_w=4, tile_ci=1, tile_co=2, h_nthread=2, loop_order="co_h",
                     weights_resident=True, kernel_step="row"))  # fmt: skip


def test_a_row_step_loads_one_kernel_row_and_its_input_rows():
    cfg = isa.load_config("default")
    k, stride, th, tw = 3, 1, 4, 8
    layer = Conv2dLayer("rowload", 8, 8, cfg.block_in, cfg.block_out, k, stride, 1)
    loads = {}
    for step in ("window", "row"):
        knobs = Conv2dKnobs(tile_h=th, tile_w=tw, tile_ci=1, tile_co=1, kernel_step=step)
        built, _ = _run(layer, "default", knobs)
        insns = built.program.instructions()
        # (a LOAD of x_size 0 is a NOP that only carries dependency tokens)
        data = [i for i in insns if isinstance(i, Load) and i.x_size > 0]
        inp = [i for i in data if i.memory_type == MemType.INP]
        wgt = [i for i in data if i.memory_type == MemType.WGT]
        rows = {i.y_pad_0 + i.y_size + i.y_pad_1 for i in inp}
        loads[step] = (len(inp), rows, len(wgt), sum(i.y_size * i.x_size for i in wgt))
    tiles = (8 // th) * (8 // tw)
    assert loads["window"][:2] == (tiles, {(th - 1) * stride + k})
    assert loads["row"][:2] == (tiles * k, {(th - 1) * stride + 1})
    # the same weight elements, k times as many loads
    assert loads["row"][2] == k * loads["window"][2] and loads["row"][3] == loads["window"][3]


def test_a_one_row_kernel_has_no_row_step():
    cfg = isa.load_config("default")
    layer = Conv2dLayer("one", 4, 4, cfg.block_in, cfg.block_out, 1, 1, 0)
    with pytest.raises(ScheduleError, match="kernel_step='row' needs a kernel of more than one"):
        knobs = Conv2dKnobs(tile_h=2, tile_w=4, tile_ci=1, tile_co=1, kernel_step="row")
        build_conv2d(layer, "default", knobs)
    with pytest.raises(ScheduleError, match="kernel_step must be one of"):
        Conv2dKnobs(tile_h=2, tile_w=4, tile_ci=1, tile_co=1, kernel_step="rows")


def test_the_space_counts_a_row_steps_buffers():
    task = conv2d_task(8, 8, 16, 16, 3, 1, 1, hw="default")
    space = task.space()
    assert "kernel_step" in {k.name for k in space.knobs}
    # 1x1 layers have no such knob, and values named before it keep their point
    assert "kernel_step" not in {k.name for k in conv2d_task(8, 8, 16, 16, 1, 1, 0).space().knobs}
    base = task.default_config().values
    old = {k: v for k, v in base.items() if k != "kernel_step"}
    assert space.index_of(old) == task.default_config().index
    assert math.prod(len(k.choices) for k in space.knobs) == len(space)
    # 56x56, 64 -> 64 on default: a 2-row tile of all 16 input blocks over whole rows needs
    # 16 x 4 x 58 input entries for the whole window (over the 2048 of the inp buffer) and
    # 16 x 2 x 58 for one kernel row
    big = conv2d_task(56, 56, 64, 64, 3, 1, 1, hw="default")
    bs = big.space()
    point = dict(big.default_config().values, tile_h=2, tile_w=56, tile_ci=16, tile_co=1,
                 vthreads=(1, 1), gemm_fold="co_h")  # fmt: skip
    window = bs.index_of(point | {"kernel_step": "window"})
    row = bs.index_of(point | {"kernel_step": "row"})
    assert "input window overflows" in (bs.reason_invalid(window) or "")
    assert bs.reason_invalid(row) is None
