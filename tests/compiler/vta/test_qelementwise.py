"""Elementwise int8 groups (relu, clip, unfused qadd, a fused PReLU) on the simulator, bit for
bit against the integer reference (``compiler.graph.evaluate``) on the int8 graph node they
compile."""

import numpy as np
import pytest

import isa
import vta_sim
from compiler.errors import ShapeError
from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.quantize import quantize_graph  # noqa: F401  (registers qadd and its reference)
from compiler.topi.vta.packing import pack_nchw_out, pack_rows, unpack_nchw, unpack_rows
from compiler.topi.vta.qelementwise import (
    ElementwiseTiles,
    compile_qelementwise,
    elementwise_steps,
    elementwise_tiles,
    prelu_slope,
)

PRESETS = ["default", "vta-1x16x16", "4x4x4"]

NODES = [
    ("relu", {}),
    ("clip", {"a_min": -37.0, "a_max": 90.0}),
    ("clip", {"a_min": 0.0, "a_max": float("inf")}),
    # shifts below and above the 15-bit rounding immediate, a relu clip and a narrow one
    ("qadd", {"lhs_multiplier": 17000, "rhs_multiplier": 12000, "shift": 15}),
    ("qadd", {"lhs_multiplier": 32767, "rhs_multiplier": 1, "shift": 21, "out_min": 0}),
    (
        "qadd",
        {"lhs_multiplier": 3, "rhs_multiplier": 5, "shift": 2, "out_min": -100, "out_max": 60},
    ),
]


def _pack(x, cfg):
    return pack_nchw_out(x, cfg) if x.ndim == 4 else pack_rows(x, cfg, out=True)


def _unpack(p, shape):
    return unpack_nchw(p, *shape[:2]) if len(shape) == 4 else unpack_rows(p, *shape)


def _run(op, attrs, shape, cfg, seed=0, nthreads=2):
    """(accelerator result, reference, compiled layer) of ``op`` over random int8 operands."""
    rng = np.random.default_rng(seed)
    layout = "NCHW" if len(shape) == 4 else ""
    xs = [Var(n, TensorType(shape, "int8", layout)) for n in ("a", "b")[: 2 if op == "qadd" else 1]]
    node = Node(op, tuple(xs), attrs, name=op)
    feeds = {v.name: rng.integers(-128, 128, shape, dtype=np.int8) for v in xs}
    want = evaluate(Graph.from_outputs(xs, [node]), feeds)[0]
    layer = compile_qelementwise(op, cfg, elementwise_steps(op, node.attrs), shape=shape,
                                 binary=op == "qadd", nthreads=nthreads)  # fmt: skip
    prog = layer.program.copy()
    prog.write("data", _pack(feeds["a"], cfg))
    if op == "qadd":
        prog.write("residual", _pack(feeds["b"], cfg))
    result = vta_sim.simulate(prog)
    return _unpack(result.read("out"), shape), want, layer, result


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("op,attrs", NODES, ids=lambda v: v if isinstance(v, str) else "")
def test_elementwise_group_is_bit_exact(preset, op, attrs):
    cfg = isa.load_config(preset)
    # channels that do not fill a block, a batch that does not fill the 4x4x4 core's
    for k, shape in enumerate([(2, 20, 5, 7), (cfg.batch, 8, 6, 6), (3, 40)]):
        got, want, _, _ = _run(op, attrs, shape, cfg, seed=k)
        np.testing.assert_array_equal(got, want, err_msg=f"{op} {attrs} {shape} on {preset}")


PRELUS = [
    # MTCNN's shape of it: the negative part below 0, the qmul's full range
    {"neg_min": -128, "neg_max": 0, "slope_multiplier": 20000, "slope_shift": 21,
     "slope_min": -128, "slope_max": 127, "pos_multiplier": 16384, "neg_multiplier": 11000,
     "shift": 14},
    # multipliers of 1 (no step), a bound at the int8 edge (a copy), narrow clips
    {"neg_min": -128, "neg_max": 127, "slope_multiplier": 1, "slope_shift": 3,
     "slope_min": -50, "slope_max": 40, "pos_multiplier": 1, "neg_multiplier": 7,
     "shift": 2, "out_min": -90, "out_max": 100},
    {"neg_min": -100, "neg_max": 5, "slope_multiplier": 32767, "slope_shift": 30,
     "slope_min": -128, "slope_max": 127, "pos_multiplier": 32767, "neg_multiplier": 32767,
     "shift": 16, "out_min": 0},
]  # fmt: skip


def _run_prelu(attrs, shape, cfg, seed=0):
    """(accelerator result, reference, simulation) of a ``qprelu`` over random int8 data."""
    rng = np.random.default_rng(seed)
    attrs = {"out_min": -128, "out_max": 127, **attrs}
    layout = "NCHW" if len(shape) == 4 else ""
    x = Var("x", TensorType(shape, "int8", layout))
    per_channel = (shape[0], shape[1], 1, 1) if len(shape) == 4 else shape
    row = rng.integers(-128, 128, (1, shape[1], *per_channel[2:]))
    slope = np.broadcast_to(row, per_channel).astype(np.int8)
    node = Node("qprelu", (x, Constant(slope)), attrs, name="prelu")
    data = rng.integers(-128, 128, shape, dtype=np.int8)
    want = evaluate(Graph.from_outputs([x], [node]), {"x": data})[0]
    steps = elementwise_steps("qprelu", attrs)
    layer = compile_qelementwise("prelu", cfg, steps, shape=shape, binary=True,
                                 channel_tiles={"slope": prelu_slope(slope)})  # fmt: skip
    prog = layer.program.copy()
    for key, value in layer.params.items():
        prog.write(key, value)
    prog.write("data", _pack(data, cfg))
    prog.write("residual", _pack(data, cfg))
    result = vta_sim.simulate(prog)
    return _unpack(result.read("out"), shape), want, result


LEAKY = [
    {"pos_multiplier": 20000, "neg_multiplier": 2000, "shift": 15},
    {"pos_multiplier": 1, "neg_multiplier": 32767, "shift": 17, "out_min": -60, "out_max": 90},
]


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("attrs", LEAKY, ids=["slope-0.1", "narrow"])
def test_leaky_relu_group_is_bit_exact(preset, attrs):
    cfg = isa.load_config(preset)
    attrs = {"out_min": -128, "out_max": 127, **attrs}
    for k, shape in enumerate([(2, 20, 5, 7), (cfg.batch, 8, 6, 6), (3, 40)]):
        rng = np.random.default_rng(k)
        x = Var("x", TensorType(shape, "int8", "NCHW" if len(shape) == 4 else ""))
        node = Node("qleaky_relu", (x,), attrs, name="leaky")
        data = rng.integers(-128, 128, shape, dtype=np.int8)
        want = evaluate(Graph.from_outputs([x], [node]), {"x": data})[0]
        layer = compile_qelementwise("leaky", cfg, elementwise_steps("qleaky_relu", attrs),
                                     shape=shape, binary=True)  # fmt: skip
        prog = layer.program.copy()
        prog.write("data", _pack(data, cfg))
        prog.write("residual", _pack(data, cfg))
        got = _unpack(vta_sim.simulate(prog).read("out"), shape)
        np.testing.assert_array_equal(got, want, err_msg=f"{attrs} {shape} on {preset}")


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("attrs", PRELUS, ids=["mtcnn", "ones", "wide"])
def test_fused_prelu_group_is_bit_exact(preset, attrs):
    cfg = isa.load_config(preset)
    for k, shape in enumerate([(2, 20, 5, 7), (cfg.batch, 8, 6, 6), (3, 40)]):
        got, want, _ = _run_prelu(attrs, shape, cfg, seed=k)
        np.testing.assert_array_equal(got, want, err_msg=f"{attrs} {shape} on {preset}")


@pytest.mark.parametrize("preset", PRESETS)
def test_many_tiles_split_between_two_virtual_threads(preset):
    cfg = isa.load_config(preset)
    shape = (cfg.batch, 2 * cfg.block_out, 40, 40)  # 2 channel blocks of 1,600 entries
    got, want, layer, two = _run("qadd", NODES[3][1], shape, cfg, seed=3)
    np.testing.assert_array_equal(got, want)
    tiles = layer.knobs
    assert isinstance(tiles, ElementwiseTiles) and tiles.nthreads == 2
    # both operands' tiles of both threads in the accumulator, several tiles per thread
    assert 2 * 2 * tiles.entries <= cfg.acc_depth
    assert 2 * 1600 // tiles.entries > 2
    got, want, _, one = _run("qadd", NODES[3][1], shape, cfg, seed=3, nthreads=1)
    np.testing.assert_array_equal(got, want)
    # one thread's loads and ALU work overlap the other's stores
    assert two.cycles < one.cycles


def test_tiles_keep_whole_rows_and_fall_back_to_one_thread():
    cfg = isa.load_config("default")
    assert elementwise_tiles(cfg, (1, 4, 56, 56, 1, 4), 2) == ElementwiseTiles(1, 8, 56, 2)
    # the whole tensor in one tile for one thread; two threads need two channel tiles
    assert elementwise_tiles(cfg, (1, 2, 4, 4, 1, 4), 1) == ElementwiseTiles(1, 4, 4, 2)
    # an odd number of tiles on every axis: one thread
    assert elementwise_tiles(cfg, (3, 5, 1, 1, 1, 4), 1).nthreads == 1
    # rows longer than a thread's share: part of a row
    assert elementwise_tiles(cfg, (1, 1, 2, 3000, 1, 4), 1) == ElementwiseTiles(1, 1, 1000, 2)


@pytest.mark.parametrize("preset", PRESETS)
def test_rows_longer_than_the_accumulator_are_cut_into_column_tiles(preset):
    cfg = isa.load_config(preset)
    got, want, layer, _ = _run("clip", NODES[1][1], (1, 3, 2, 2500), cfg, seed=4)
    np.testing.assert_array_equal(got, want)
    assert layer.knobs.tile_w < 2500


def test_bad_operands_and_bounds_are_named():
    cfg = isa.load_config("default")
    with pytest.raises(ShapeError, match="NCHW or \\(N, C\\)"):
        compile_qelementwise("r", cfg, elementwise_steps("relu", {}), shape=(1, 2, 3))
    with pytest.raises(ShapeError, match="must be whole"):
        elementwise_steps("clip", {"a_min": 0.5, "a_max": 3.0})
    with pytest.raises(ShapeError, match="second operand"):
        compile_qelementwise("r", cfg, elementwise_steps("relu", {}), shape=(1, 4), binary=True)
    with pytest.raises(ShapeError, match="softmax"):
        elementwise_steps("softmax", {})


@pytest.mark.rtl
@pytest.mark.parametrize("op,attrs", [NODES[1], NODES[3]], ids=["clip", "qadd"])
def test_elementwise_group_on_the_rtl_equals_the_simulator(op, attrs):
    from hw.coverify import run_rtl
    from hw.sim import missing_simulator

    why = missing_simulator("icarus")
    if why:
        pytest.skip(f"icarus unavailable: {why}")
    cfg = isa.load_config("default")
    _, _, layer, sim = _run(op, attrs, (1, 8, 6, 6), cfg, seed=5)
    rtl = run_rtl(sim.program)
    assert rtl.finished and rtl.cycles == sim.cycles
    np.testing.assert_array_equal(sim.program.read("out", dram=rtl.dram), sim.read("out"))


@pytest.mark.rtl
def test_fused_prelu_group_on_the_rtl_equals_the_simulator():
    from hw.coverify import run_rtl
    from hw.sim import missing_simulator

    why = missing_simulator("icarus")
    if why:
        pytest.skip(f"icarus unavailable: {why}")
    _, _, sim = _run_prelu(PRELUS[0], (1, 8, 6, 6), isa.load_config("default"), seed=6)
    rtl = run_rtl(sim.program)
    assert rtl.finished and rtl.cycles == sim.cycles
    np.testing.assert_array_equal(sim.program.read("out", dram=rtl.dram), sim.read("out"))
