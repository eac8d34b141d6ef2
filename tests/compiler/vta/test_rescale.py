"""Rescale groups: an int8 value rescaled in the integer domain (a ``cast`` to int32 read by one
``requantize``, as the quantizer writes a concat's operand at another scale) runs on the ALU,
bit for bit against the graph's integer reference; the casts it does not take stay on the
host with their rule."""

import numpy as np
import pytest

import isa
import vta_sim
from compiler.graph import Graph, Node, TensorType, Var, evaluate
from compiler.partition import partition_graph
from compiler.quantize import choose_requant
from compiler.quantize.realize import requantize_node
from compiler.targets.vta.ops import compile_group, rescale_fits
from compiler.topi.vta.packing import pack_nchw_out, pack_rows, unpack_blocks


def _graph(shape, ratio, mode="multiplier", readers=1, dtype="int8"):
    layout = "NCHW" if len(shape) == 4 else ""
    x = Var("x", TensorType(shape, dtype, layout))
    axis = 1 if len(shape) > 1 else 0
    params = choose_requant(np.full(shape[axis], ratio), mode=mode)
    wide = Node("cast", (x,), {"dtype": "int32"}, name="x.int32")
    outs = [requantize_node(wide, params, (-128, 127), "x", axis)]
    if readers > 1:
        outs.append(Node("relu", (wide,), name="other"))
    return x, Graph.from_outputs([x], outs)


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16", "4x4x4"])
@pytest.mark.parametrize(
    "shape,ratio,mode",
    [
        ((1, 20, 5, 7), 0.731, "multiplier"),
        ((2, 8, 3, 3), 1.9, "multiplier"),  # scaled up: the concat's scale is below the operand's
        ((3, 40), 0.25, "shift"),  # (N, C) rows; VTA's shift-only scheme
    ],
)
def test_rescale_group_is_bit_exact(preset, shape, ratio, mode):
    cfg = isa.load_config(preset)
    x, graph = _graph(shape, ratio, mode)
    part = partition_graph(graph, cfg)
    rules = {p.node: p.rule for p in part.placements}
    assert rules == {"x.int32": "rescale-group", "x.requantize": "requantize-fused"}
    (group,) = part.groups
    layer = compile_group(group, cfg)
    feed = np.random.default_rng(1).integers(-128, 128, shape, dtype=np.int8)
    prog = layer.program.copy()
    packed = pack_nchw_out(feed, cfg) if len(shape) == 4 else pack_rows(feed, cfg, out=True)
    prog.write("data", packed)
    layout = "nchw" if len(shape) == 4 else "rows"
    got = unpack_blocks(vta_sim.simulate(prog).read("out"), layout, shape)
    np.testing.assert_array_equal(got, evaluate(graph, {"x": feed})[0])


def test_casts_it_does_not_take_keep_their_rule():
    cfg = isa.load_config("default")
    # read by another node too: the int32 value itself is needed
    _, graph = _graph((1, 8, 4, 4), 0.5, readers=2)
    rules = {p.node: (p.device, p.rule) for p in partition_graph(graph, cfg).placements}
    assert rules["x.int32"] == ("cpu", "requantize-host")
    assert rules["x.requantize"] == ("cpu", "requantize-host")
    # other casts and tensors
    for src, dst, shape, rule, words in [
        ("int32", "int32", (1, 8, 4, 4), "requantize-host", "widens int8 only"),
        ("float32", "int32", (1, 8, 4, 4), "float-op", "computes integers"),
        ("int8", "int32", (1, 8, 4), "requantize-host", "take NCHW or (N, C)"),
    ]:
        x = Var("x", TensorType(shape, src, "NCHW" if len(shape) == 4 else ""))
        got = rescale_fits(Node("cast", (x,), {"dtype": dst}), cfg)
        assert got is not None and got[0] == rule and words in got[1], got
