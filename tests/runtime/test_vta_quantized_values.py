"""Trained-model values on the accelerator: dead channels and large pools, bit-exact against
the quantized graph's integer reference."""

from __future__ import annotations

import numpy as np
import pytest

import isa
import vta_sim
from compiler.graph import Constant, Graph, Node, TensorType, Var
from compiler.quantize import choose_requant, requantize_int
from compiler.topi.vta.packing import pack_nchw_out, unpack_nchw
from compiler.topi.vta.qnn import QEpilogue, compile_qpool
from runtime.vta_target import compile_network

PRESETS = ["default", "vta-1x16x16"]


@pytest.mark.parametrize("preset", PRESETS)
def test_a_conv_with_a_dead_output_channel_runs_bit_exact_giving_zeros(preset):
    rng = np.random.default_rng(1)
    w = (rng.normal(size=(16, 8, 3, 3)) * 0.3).astype(np.float32)
    w[3] = 0.0  # a dead channel
    w[9] = 1e-13 * np.sign(rng.normal(size=(8, 3, 3)))  # nearly dead, with a large bias
    b = (rng.normal(size=16) * 0.1).astype(np.float32)
    b[3], b[9] = 0.0, -1.19453
    x = Var("x", TensorType((1, 8, 8, 8), "float32", "NCHW"))
    conv = Node("conv2d", (x, Constant(w, name="w"), Constant(b, name="b")),
                {"padding": (1, 1, 1, 1)}, name="conv")  # fmt: skip
    graph = Graph.from_outputs([x], [Node("relu", (conv,), name="relu")])
    feed = {"x": rng.normal(size=(1, 8, 8, 8)).astype(np.float32)}
    net = compile_network(graph, preset, calibration=feed)
    assert [g.kind for g in net.partition.groups] == ["conv2d"]
    got = net.run(feed).outputs[0]
    np.testing.assert_array_equal(got, net.reference(feed)[0])
    assert not got[:, 3].any() and not got[:, 9].any()  # relu of 0 and of a negative bias
    assert got.any()


def _simulate(layer, writes):
    prog = layer.program.copy()
    for key, value in {**layer.params, **writes}.items():
        prog.write(key, value)
    return vta_sim.simulate(prog).read("out")


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("hw", [1, 7, 14, 28])
def test_global_sum_pools_of_any_size_are_one_program_and_bit_exact(preset, hw):
    cfg = isa.load_config(preset)
    rng = np.random.default_rng(hw)
    n, c = cfg.batch, 2 * cfg.block_out
    x = rng.integers(-128, 128, (n, c, hw, hw), dtype=np.int8)
    ep = QEpilogue(None, choose_requant(np.full(c, 0.5 / (hw * hw))), -128, 127)
    layer = compile_qpool("gap", cfg, "sum", in_shape=x.shape, pool=(hw, hw), stride=(1, 1), ep=ep)
    got = unpack_nchw(_simulate(layer, {"data": pack_nchw_out(x, cfg)}), n, c)
    acc = x.astype(np.int64).sum((2, 3), keepdims=True).astype(np.int32)
    p = ep.requant
    np.testing.assert_array_equal(
        got, requantize_int(acc, p.multiplier, p.shift, p.post_shift, -128, 127)
    )
    if hw == 1:
        return  # no window loop at all
    # the window is looped over by the ALU: the program is the same size for every window
    small = compile_qpool("gap", cfg, "sum", in_shape=(n, c, 2, 2), pool=(2, 2), stride=(1, 1),
                          ep=ep)  # fmt: skip
    assert layer.program.insn_count == small.program.insn_count


@pytest.mark.parametrize("preset", PRESETS)
def test_a_strided_window_sum_is_bit_exact(preset):
    cfg = isa.load_config(preset)
    rng = np.random.default_rng(3)
    n, c = cfg.batch, cfg.block_out
    x = rng.integers(-128, 128, (n, c, 9, 9), dtype=np.int8)
    ep = QEpilogue(None, choose_requant(np.full(c, 1 / 9)), -128, 127)
    layer = compile_qpool("avg", cfg, "sum", in_shape=x.shape, pool=(3, 3), stride=(2, 2), ep=ep)
    got = unpack_nchw(_simulate(layer, {"data": pack_nchw_out(x, cfg)}), n, c)
    acc = np.zeros((n, c, 4, 4), np.int64)
    for ky in range(3):
        for kx in range(3):
            acc += x[:, :, ky : ky + 8 : 2, kx : kx + 8 : 2]
    p = choose_requant(np.full(c, 1 / 9))
    want = requantize_int(acc.astype(np.int32), p.multiplier, p.shift, p.post_shift, -128, 127)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("hw", [14, 28])
def test_a_network_ending_in_a_global_average_pool_is_bit_exact(preset, hw):
    rng = np.random.default_rng(hw)
    w = (rng.normal(size=(16, 4, 1, 1)) * 0.5).astype(np.float32)
    x = Var("x", TensorType((1, 4, hw, hw), "float32", "NCHW"))
    conv = Node("conv2d", (x, Constant(w, name="w")), {}, name="conv")
    relu = Node("relu", (conv,), name="relu")
    graph = Graph.from_outputs([x], [Node("global_avg_pool2d", (relu,), name="gap")])
    feed = {"x": rng.normal(size=(1, 4, hw, hw)).astype(np.float32)}
    net = compile_network(graph, preset, calibration=feed)
    assert [g.kind for g in net.partition.groups] == ["conv2d", "global_sum_pool2d"]
    got = net.run(feed).outputs[0]
    np.testing.assert_array_equal(got, net.reference(feed)[0])
    assert got.shape == (1, 16, 1, 1) and got.any()
