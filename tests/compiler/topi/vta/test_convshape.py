"""The conv2d template with a non-square kernel, unequal strides or padding that differs between
sides: whole layers bit for bit against the numpy reference on the simulator, the analytical
access count equal to the events read off the programs (heuristic schedules, seeded points of
the tuner's spaces, one-row steps and resident weights), the tasks' keys and records, and the
partition placing such convolutions on the accelerator while what is still out of reach keeps
a named reason."""

import numpy as np
import pytest

import isa
from compiler.errors import ScheduleError
from compiler.graph import Constant, Graph, Node, TensorType, Var
from compiler.partition import partition_graph
from compiler.quantize import quantize_graph
from compiler.topi.vta import testing as vt
from compiler.topi.vta.conv2d import Conv2dKnobs
from compiler.topi.vta.heuristic import conv2d_knobs
from compiler.topi.vta.layer import Conv2dLayer, compile_conv2d
from compiler.tune.task import Task, conv2d_task
from tests.compiler.vta.helpers import access_mismatches, run

LAYERS = [
    Conv2dLayer("1x3", 6, 10, 8, 8, (1, 3), 1, (0, 1, 0, 1)),
    Conv2dLayer("3x1_s21", 9, 7, 8, 12, (3, 1), (2, 1), (1, 0, 1, 0)),
    Conv2dLayer("3x3_s21", 9, 8, 8, 8, 3, (2, 1), 1),
    Conv2dLayer("1x7", 8, 12, 4, 8, (1, 7), 1, (0, 3, 0, 3)),
    Conv2dLayer("7x1", 12, 6, 4, 8, (7, 1), 1, (3, 0, 3, 0)),
    Conv2dLayer("2x3_uneven", 9, 8, 8, 8, (2, 3), (1, 2), (0, 1, 1, 0)),
]


def test_the_layer_takes_a_size_per_axis_and_a_padding_per_side():
    lay = Conv2dLayer("r", 9, 7, 8, 12, (3, 1), (2, 1), (1, 0, 1, 0))
    assert (lay.kernel, lay.strides, lay.pads) == ((3, 1), (2, 1), (1, 0, 1, 0))
    assert (lay.out_h, lay.out_w, lay.macs) == (5, 7, 5 * 7 * 8 * 12 * 3)
    assert not lay.square and Conv2dLayer("s", 8, 8, 4, 4, 3, 2, 1).square
    assert lay.describe().endswith("3x1/(2, 1) pad (1, 0, 1, 0)")
    assert Conv2dLayer("s", 8, 8, 4, 4, 3, 2, 1).describe().endswith("3x3/2 pad 1")


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_layers_run_bit_exact_on_the_simulator(preset):
    for k, layer in enumerate(LAYERS):
        residual = k == 1  # one of them adds a residual in the accumulator
        compiled = compile_conv2d(layer, preset, relu=k % 2 == 0, residual=residual)
        data = vt.layer_data(layer, compiled.config, seed=k, residual=residual)
        got = compiled.output_from(run(vt.bind(compiled, data)).read("out"))
        want = vt.expected(compiled, data)
        assert got.shape == (1, layer.out_c, layer.out_h, layer.out_w), layer.name
        np.testing.assert_array_equal(got, want, err_msg=f"{layer.name} {compiled.knobs}")


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16", "4x4x4"])
def test_the_access_count_equals_the_programs_events(preset):
    cfg = isa.load_config(preset)
    for layer in LAYERS:
        compiled = compile_conv2d(layer, cfg, relu=True, residual=True)
        mism = access_mismatches(compiled.program, cfg, layer, compiled.knobs, residual=True)
        assert mism == [], (layer.name, compiled.knobs)
    # one-kernel-row steps and resident weights, each on purpose
    layer = LAYERS[1]
    for knobs in (Conv2dKnobs(tile_h=5, tile_w=7, tile_ci=1, tile_co=1, oc_nthread=1,
                              kernel_step="row"),
                  Conv2dKnobs(tile_h=5, tile_w=7, tile_ci=8 // cfg.block_in or 1,
                              tile_co=-(-12 // cfg.block_out), loop_order="co_h",
                              weights_resident=True)):  # fmt: skip
        compiled = compile_conv2d(layer, cfg, knobs, relu=True)
        assert access_mismatches(compiled.program, cfg, layer, knobs) == [], knobs


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_the_access_count_on_seeded_points_of_the_tuners_spaces(preset):
    cfg = isa.load_config(preset)
    rng = np.random.default_rng(len(preset))
    for layer in (LAYERS[1], LAYERS[3], LAYERS[5]):
        task = conv2d_task(layer.h, layer.w, layer.in_c, layer.out_c, layer.k, layer.stride,
                           layer.pad, hw=preset)  # fmt: skip
        space = task.space()
        valid = space.valid_indices()
        for i in rng.choice(valid, size=min(4, len(valid)), replace=False).tolist():
            built = task.build(space.config(i))
            assert built.matches(run(built.program).read("out")), space.config(i).describe()
            mism = access_mismatches(built.program, cfg, layer, task.knobs(i))
            assert mism == [], space.config(i).describe()


def test_a_non_square_task_keys_its_shape_and_round_trips_a_square_one_keeps_its_key():
    t = conv2d_task(9, 7, 8, 12, (3, 1), (2, 1), (1, 0, 1, 0), hw="default")
    assert t.key == "vta/default/conv2d/b1_h9_w7_ci8_co12_k3_s2_p1_kw1_sw1_pl0_pb1_pr0"
    assert (t.kernel, t.strides, t.pads) == ((3, 1), (2, 1), (1, 0, 1, 0))
    assert Task.from_json(t.to_json()) == t
    square = conv2d_task(8, 8, 16, 16, 3, 1, 1)
    assert square.key == "vta/default/conv2d/b1_h8_w8_ci16_co16_k3_s1_p1"
    assert conv2d_task(8, 8, 16, 16, (3, 3), (1, 1), (1, 1, 1, 1)) == square
    # the space is the template's: rows and columns tiled with their own kernel and stride
    point = t.default_config()
    assert t.space().reason_invalid(point.index) is None
    knobs = t.knobs(point)
    assert knobs == conv2d_knobs(isa.load_config("default"), ocb=3, icb=2, oh=5, ow=7,
                                 k=(3, 1), stride=(2, 1), alu_ops=3)  # fmt: skip


def test_the_heuristic_names_the_kernel_and_strides_it_cannot_tile():
    cfg = isa.load_config("default").replace(name="tiny", inp_buf_bytes=64)
    with pytest.raises(ScheduleError, match=r"kernel 1x17, stride \(1, 2\)"):
        conv2d_knobs(cfg, ocb=1, icb=1, oh=4, ow=4, k=(1, 17), stride=(1, 2), nthreads=1)


def _graph(kernel, strides, padding, in_c=8):
    rng = np.random.default_rng(1)
    x = Var("x", TensorType((1, in_c, 9, 10), "float32", "NCHW"))
    w = Constant(rng.standard_normal((8, in_c, *kernel)).astype(np.float32), name="w")
    conv = Node("conv2d", (x, w), {"strides": strides, "padding": padding}, name="conv")
    relu = Node("relu", (conv,), name="relu")
    graph = Graph.from_outputs([x], [relu])
    feed = {"x": rng.standard_normal((1, in_c, 9, 10)).astype(np.float32)}
    return quantize_graph(graph, feed)


@pytest.mark.parametrize(
    ("kernel", "strides", "padding"),
    [((1, 3), (1, 1), (0, 1, 0, 1)), ((3, 1), (2, 1), (1, 0, 1, 0)),
     ((3, 3), (2, 1), (1, 1, 1, 1)), ((1, 7), (1, 1), (0, 3, 0, 3)),
     ((2, 3), (1, 2), (0, 1, 1, 0))],
)  # fmt: skip
def test_the_partition_places_them_on_the_accelerator(kernel, strides, padding):
    p = partition_graph(_graph(kernel, strides, padding), isa.load_config("default"))
    place = p.placement("conv")
    assert (place.device, place.rule) == ("vta", "conv2d-group"), place


def test_what_is_still_out_of_reach_keeps_a_named_reason():
    cfg = isa.load_config("default")
    pad_max = isa.limits(cfg).max("mem", "y_pad_0")
    p = partition_graph(_graph((1, 3), (1, 1), (0, pad_max + 1, 0, 1)), cfg)
    place = p.placement("conv")
    assert (place.device, place.rule) == ("cpu", "conv2d-padding"), place
    # a window of more taps than half the weight buffer
    wide = cfg.replace(name="small-wgt", wgt_buf_bytes=256)
    place = partition_graph(_graph((3, 7), (1, 1), (1, 3, 1, 3)), wide).placement("conv")
    assert (place.device, place.rule) == ("cpu", "conv2d-window") and "3x7" in place.reason
