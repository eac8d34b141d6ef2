"""Nearest int8 resize groups on the simulator: each row and column repeated a whole number of
times by ALU copies in the accumulator, bit for bit against the graph's reference of the
``resize`` node; which index maps qualify (computed from the node's own coordinate mode and
rounding); and the same program on the RTL."""

import numpy as np
import pytest

import isa
import vta_sim
from compiler.graph import Graph, Node, TensorType, Var, evaluate
from compiler.registry import lookup
from compiler.targets.vta.ops import resize_factors, resize_fits
from compiler.topi.vta.packing import pack_nchw_out, unpack_nchw
from compiler.topi.vta.qelementwise import compile_qresize

PRESETS = ["default", "vta-1x16x16", "4x4x4"]


def _node(shape, out_hw, mode="asymmetric", nearest="floor", dtype="int8", method="nearest"):
    n, c, h, w = shape
    x = Var("x", TensorType(shape, dtype, "NCHW"))
    attrs = {
        "sizes": (n, c, *out_hw),
        "scales": (1.0, 1.0, out_hw[0] / h, out_hw[1] / w),
        "method": method,
        "coordinate_transformation_mode": mode,
        "nearest_mode": nearest,
    }
    return x, Node("resize", (x,), attrs, name="up")


def _run(shape, factors, cfg, seed=0):
    x, node = _node(shape, (shape[2] * factors[0], shape[3] * factors[1]))
    feed = np.random.default_rng(seed).integers(-128, 128, shape, dtype=np.int8)
    want = evaluate(Graph.from_outputs([x], [node]), {"x": feed})[0]
    layer = compile_qresize("up", cfg, shape=shape, factors=factors)
    prog = layer.program.copy()
    prog.write("data", pack_nchw_out(feed, cfg))
    result = vta_sim.simulate(prog)
    return unpack_nchw(result.read("out"), *shape[:2]), want, layer, result


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(
    "shape,factors",
    [
        ((2, 20, 5, 7), (2, 2)),  # channels that fill no block, a batch that fills none
        ((1, 8, 6, 6), (1, 2)),  # columns only
        ((1, 4, 3, 3), (4, 8)),  # PP-OCR's detector head upsamples by 4 and 8
        ((1, 3, 2, 900), (1, 2)),  # rows longer than a thread's share: column tiles
    ],
)
def test_nearest_resize_is_bit_exact(preset, shape, factors):
    cfg = isa.load_config(preset)
    got, want, layer, _ = _run(shape, factors, cfg)
    np.testing.assert_array_equal(got, want, err_msg=f"{shape} x{factors} on {preset}")
    n, c, h, w = shape
    b, bo = cfg.batch, cfg.block_out
    assert layer.out_shape == (-(-n // b), -(-c // bo), h * factors[0], w * factors[1], b, bo)


def test_two_threads_overlap_loads_with_copies():
    cfg = isa.load_config("default")
    shape = (1, 8, 40, 40)
    got, want, layer, two = _run(shape, (2, 2), cfg, seed=2)
    np.testing.assert_array_equal(got, want)
    assert layer.knobs.nthreads == 2 and layer.knobs.entries * 5 * 2 <= cfg.acc_depth
    one = compile_qresize("up", cfg, shape=shape, factors=(2, 2), nthreads=1).program.copy()
    one.write("data", two.program.read("data"))
    single = vta_sim.simulate(one)
    np.testing.assert_array_equal(single.read("out"), two.read("out"))
    assert two.cycles < single.cycles


@pytest.mark.parametrize(
    "mode,nearest,out_hw,want",
    [
        ("asymmetric", "floor", (8, 12), (2, 3)),  # as YOLO, PP-OCR and PicoDet export it
        ("half_pixel", "round_prefer_floor", (8, 8), (2, 2)),  # ONNX's defaults
        ("pytorch_half_pixel", "round_prefer_ceil", (4, 8), (1, 2)),
        ("asymmetric", "floor", (4, 4), (1, 1)),
    ],
)
def test_modes_that_repeat_each_element_give_whole_factors(mode, nearest, out_hw, want):
    _, node = _node((1, 8, 4, 4), out_hw, mode, nearest)
    assert resize_factors(node) == want
    assert resize_fits(node, isa.load_config("default")) is None


@pytest.mark.parametrize(
    "shape,out_hw,mode,nearest,dtype,method,rule,words",
    [
        ((1, 8, 4, 4), (8, 8), "align_corners", "floor", "int8", "nearest", "resize-shape",
         "axis 2 (H, 4 -> 8, mode align_corners/floor) does not repeat"),
        ((1, 8, 4, 4), (6, 8), "asymmetric", "floor", "int8", "nearest", "resize-shape",
         "axis 2 (H, 4 -> 6"),
        ((1, 8, 4, 4), (8, 8), "asymmetric", "floor", "float32", "nearest", "float-op",
         "float32 resize"),
        ((1, 8, 4, 4), (8, 8), "asymmetric", "floor", "float32", "linear", "float-op",
         "float32 resize"),
        ((1, 8, 1, 40000), (1, 80000), "asymmetric", "floor", "int8", "nearest", "resize-shape",
         "rows of 80000 columns exceed the DMA stride field"),
    ],
)  # fmt: skip
def test_other_resizes_stay_on_the_host_with_their_reason(
    shape, out_hw, mode, nearest, dtype, method, rule, words
):
    _, node = _node(shape, out_hw, mode, nearest, dtype, method)
    got = resize_fits(node, isa.load_config("default"))
    assert got is not None and got[0] == rule and words in got[1], got
    assert lookup("vta", "resize").kind == "elementwise"


@pytest.mark.rtl
def test_resize_group_on_the_rtl_equals_the_simulator():
    from hw.coverify import run_rtl
    from hw.sim import missing_simulator

    why = missing_simulator("icarus")
    if why:
        pytest.skip(f"icarus unavailable: {why}")
    cfg = isa.load_config("default")
    _, _, _, sim = _run((1, 8, 4, 6), (2, 2), cfg, seed=5)
    rtl = run_rtl(sim.program)
    assert rtl.finished and rtl.cycles == sim.cycles
    np.testing.assert_array_equal(sim.program.read("out", dram=rtl.dram), sim.read("out"))
