"""Quantized groups and whole networks on the accelerator's simulator, bit for bit against the
quantized graph's integer reference (``compiler.graph.evaluate``)."""

import json

import numpy as np
import pytest

import isa
import vta_sim
from compiler.frontend.onnx_import import from_onnx
from compiler.frontend.zoo import load_zoo
from compiler.graph import Constant, Graph, Node, TensorType, Var
from compiler.quantize import choose_requant, requantize_int
from compiler.quantize.requant import add_int
from compiler.topi.vta.packing import pack_nchw, pack_nchw_out, pack_rows, unpack_nchw, unpack_rows
from compiler.topi.vta.qnn import (
    QAdd,
    QEpilogue,
    compile_qconv2d,
    compile_qdense,
    compile_qpool,
)
from runtime.cli import main
from runtime.vta_target import compile_network

PRESETS = ["default", "vta-1x16x16", "4x4x4"]


def _conv_acc(x, w, bias, stride, pad):
    n, c, h, wd = x.shape
    o, _, k, _ = w.shape
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    acc = np.zeros((n, o, oh, ow), np.int64)
    for dy in range(k):
        for dx in range(k):
            win = xp[:, :, dy : dy + stride * oh : stride, dx : dx + stride * ow : stride]
            acc += np.einsum("nchw,oc->nohw", win, w[:, :, dy, dx].astype(np.int64))
    return (acc + bias.reshape(1, -1, 1, 1)).astype(np.int32)


def _run(layer, writes):
    prog = layer.program.copy()
    for key, value in {**layer.params, **writes}.items():
        prog.write(key, value)
    return vta_sim.simulate(prog).read("out")


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("fused_add", [False, True])
def test_quantized_conv2d_group_is_bit_exact(preset, fused_add):
    cfg = isa.load_config(preset)
    rng = np.random.default_rng(1)
    n, c, o, h, stride = cfg.batch, 3, 20, 6, 2 if fused_add else 1
    x = rng.integers(-128, 128, (n, c, h, h), dtype=np.int8)
    w = rng.integers(-127, 128, (o, c, 3, 3), dtype=np.int8)
    bias = rng.integers(-5000, 5000, o).astype(np.int32)
    params = choose_requant(rng.uniform(0.0005, 0.05, o))
    add = QAdd(17000, 12000, 15, 0, 127) if fused_add else None
    ep = QEpilogue(bias, params, -128, 127, add)
    layer = compile_qconv2d("c", cfg, w, ep, in_shape=x.shape, stride=(stride, stride),
                            padding=(1, 1, 1, 1), residual=fused_add)  # fmt: skip
    acc = _conv_acc(x, w, bias, stride, 1)
    want = requantize_int(acc, params.multiplier, params.shift, params.post_shift, -128, 127)
    writes = {"data": pack_nchw(x, cfg)}
    if fused_add:
        res = rng.integers(-128, 128, want.shape, dtype=np.int8)
        writes["residual"] = pack_nchw_out(res, cfg)
        want = add_int(want, res, 17000, 12000, 15, 0, 127)
    got = unpack_nchw(_run(layer, writes), n, o)
    np.testing.assert_array_equal(got, want)


#: (bias of 8 channels, shared shift or None for per-channel shifts, the epilogue's first steps)
BIAS_CASES = {
    "shared": (np.full(8, 1234), 9, ["ADD 1490", "SHR 9"]),
    "zero-with-round": (np.zeros(8), 9, ["ADD 256", "SHR 9"]),
    "zero-no-shift": (np.zeros(8), 0, ["MAX -128", "MIN 127"]),
    "past-16-bits": (np.full(8, 40000), 9, ["ADD bias", "SHR 9"]),
    "per-channel": (np.arange(8) * 300 - 1000, 9, ["ADD bias", "SHR 9"]),
    "shared-per-channel-shift": (np.full(8, -77), None, ["ADD bias", "SHR shift"]),
}


@pytest.mark.parametrize("case", list(BIAS_CASES))
def test_a_bias_all_channels_share_is_an_immediate_with_the_same_bits(case):
    """The bias joins the pre-shift's rounding offset; shared, it is an immediate ADD (or none)."""
    cfg = isa.load_config("vta-1x16x16")
    bias_values, shift, head = BIAS_CASES[case]
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (1, 16, 5, 5), dtype=np.int8)
    w = rng.integers(-127, 128, (8, 16, 3, 3), dtype=np.int8)
    bias = bias_values.astype(np.int32)
    if shift is None:
        scales = 2.0 ** -rng.integers(6, 12, 8)
    else:
        scales = np.full(8, 2.0**-shift)
    params = choose_requant(scales, mode="shift")
    ep = QEpilogue(bias, params, -128, 127)
    assert [str(st) for st in ep.steps()][:2] == head
    layer = compile_qconv2d("c", cfg, w, ep, in_shape=x.shape, stride=(1, 1),
                            padding=(1, 1, 1, 1))  # fmt: skip
    assert ("c_bias" in layer.params) == ("ADD bias" in head)
    acc = _conv_acc(x, w, bias, 1, 1)
    want = requantize_int(acc, params.multiplier, params.shift, params.post_shift, -128, 127)
    got = unpack_nchw(_run(layer, {"data": pack_nchw(x, cfg)}), 1, 8)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("preset", PRESETS)
def test_max_pool_and_global_sum_pool_on_the_alu_are_bit_exact(preset):
    cfg = isa.load_config(preset)
    rng = np.random.default_rng(5)
    n, c = cfg.batch, 8
    x = rng.integers(-128, 128, (n, c, 9, 9), dtype=np.int8)
    layer = compile_qpool("p", cfg, "max", in_shape=x.shape, pool=(3, 3), stride=(2, 2))
    got = unpack_nchw(_run(layer, {"data": pack_nchw_out(x, cfg)}), n, c)
    want = np.full((n, c, 4, 4), -128, np.int8)
    for ky in range(3):
        for kx in range(3):
            want = np.maximum(want, x[:, :, ky : ky + 8 : 2, kx : kx + 8 : 2])
    np.testing.assert_array_equal(got, want)
    # LOAD's zero padding, for a non-negative input
    xp = np.maximum(x, 0)
    layer = compile_qpool("z", cfg, "max", in_shape=(n, c, 8, 8), pool=(3, 3), stride=(2, 2),
                          zero_padding=(1, 1, 1, 1))  # fmt: skip
    got = unpack_nchw(_run(layer, {"data": pack_nchw_out(xp[:, :, :8, :8], cfg)}), n, c)
    padded = np.pad(xp[:, :, :8, :8], ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-128)
    want = np.full((n, c, 4, 4), -128, np.int8)
    for ky in range(3):
        for kx in range(3):
            want = np.maximum(want, padded[:, :, ky : ky + 7 : 2, kx : kx + 7 : 2])
    np.testing.assert_array_equal(got, want)
    ep = QEpilogue(None, choose_requant(np.full(c, 0.013)), -128, 127)
    x = np.ascontiguousarray(x[:, :, :4, :4])
    layer = compile_qpool("g", cfg, "sum", in_shape=x.shape, pool=(4, 4), stride=(1, 1), ep=ep)
    got = unpack_nchw(_run(layer, {"data": pack_nchw_out(x, cfg)}), n, c)
    acc = x.astype(np.int64).sum((2, 3), keepdims=True).astype(np.int32)
    p = ep.requant
    want = requantize_int(acc, p.multiplier, p.shift, p.post_shift, -128, 127)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("preset", PRESETS)
def test_quantized_dense_group_is_bit_exact(preset):
    cfg = isa.load_config(preset)
    rng = np.random.default_rng(2)
    n, k, m = 2, 40, 10
    x = rng.integers(-128, 128, (n, k), dtype=np.int8)
    w = rng.integers(-127, 128, (m, k), dtype=np.int8)
    bias = rng.integers(-5000, 5000, m).astype(np.int32)
    params = choose_requant(rng.uniform(0.001, 0.05, m))
    layer = compile_qdense("fc", cfg, w, QEpilogue(bias, params, 0, 127), batch=n)
    got = unpack_rows(_run(layer, {"data": pack_rows(x, cfg)}), n, m)
    acc = (x.astype(np.int64) @ w.astype(np.int64).T + bias).astype(np.int32)
    want = requantize_int(acc, params.multiplier, params.shift, params.post_shift, 0, 127)
    np.testing.assert_array_equal(got, want)


def _feed(graph, seed=0):
    rng = np.random.default_rng(seed)
    return {v.name: rng.standard_normal(v.type.shape).astype(np.float32) for v in graph.inputs}


@pytest.mark.parametrize("preset", PRESETS)
def test_digits_network_on_the_simulator_equals_the_integer_reference(preset):
    from compiler.frontend.zoo import digits_test

    graph = from_onnx(load_zoo("digits", batch=2))
    images, _ = digits_test()
    feed = {graph.inputs[0].name: images[:2]}
    net = compile_network(graph, preset, calibration=feed)
    result = net.run(feed)
    np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
    vta = [r for r in result.layers if r.device == "vta"]
    assert len(vta) == 10 and all(r.cycles > 0 and r.dram_bytes >= r.compulsory_bytes for r in vta)
    assert result.total_cycles == sum(r.cycles for r in vta)
    assert all(0 < r.roofline_fraction <= r.alu_roofline_fraction <= 1 for r in vta)
    # every group's energy is its program's events priced at the run's cycles (docs/energy.md)
    from isa.energy import count_events, estimate_energy

    for r in vta:
        layer = net.layers[r.name]
        want = estimate_energy(count_events(layer.program), net.config, r.cycles).total_pj
        assert r.energy_pj == pytest.approx(want) and r.energy_pj > 0
    table = result.table()
    assert f"{result.total_cycles:,}" in table and "energy uJ" in table and "pJ per MAC" in table
    assert "  util: " in table and "  placement: " in table  # the legend
    assert result.to_json()["energy_uj"] == pytest.approx(result.energy_pj * 1e-6)


def test_resnet18_small_on_the_simulator_equals_the_integer_reference():
    graph = from_onnx(load_zoo("resnet18", batch=1, image_size=32))
    feed = _feed(graph)
    net = compile_network(graph, "default", calibration=feed)
    convs = [g for g in net.partition.groups if g.kind == "conv2d"]
    assert len(convs) == 20 and sum(g.qadd is not None for g in convs) == 8
    result = net.run(feed)
    np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
    # activations pass from group to group in the packed layout, in the one DRAM image: every
    # group but the first convolution (its input is the host's quantize) and the classifier
    # (after the host's reshape) reads its input in place; the max pool follows a relu, so
    # LOAD's zero padding stands for the reference's -128
    plan = net.dram_plan
    chained = [n for n, g in plan.groups.items() if "data" in g.aliased]
    assert "conv1" not in chained and "maxpool" in chained and len(chained) == 21
    assert sum("residual" in g.aliased for g in plan.groups.values()) == 8
    assert result.to_json()["chained_inputs"] == 29


def test_padded_max_pool_over_signed_values_gets_its_padding_from_the_host():
    x = Var("x", TensorType((1, 4, 6, 6), "float32", "NCHW"))
    w = Constant(np.random.default_rng(8).normal(size=(8, 4, 3, 3)).astype(np.float32), name="w")
    conv = Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)}, name="conv")  # no relu: signed
    attrs = {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1, 1, 1)}
    pool = Node("max_pool2d", (conv,), attrs, name="pool")
    graph = Graph.from_outputs([x], [pool])
    feed = _feed(graph, seed=9)
    net = compile_network(graph, "default", calibration=feed)
    # the padding is a host node of the graph (the host_steps pass), the pool runs unpadded
    nodes = {n.name: n for n in net.graph.nodes}
    pad = nodes["pool.pad"]
    # the pool reads the padded value packed by the host (a pack node and the group's unpack)
    unpack = nodes["pool"].inputs[0]
    assert (unpack.op, unpack.inputs[0].op, unpack.inputs[0].inputs[0]) == ("unpack", "pack", pad)
    assert (pad.op, pad.attrs["pad_value"]) == ("pad", -128.0)
    assert nodes["pool"].attrs["padding"] == (0, 0, 0, 0)
    assert net.partition.placement("pool.pad").device == "cpu"
    assert net.dram_plan.groups["pool"].aliased == ()
    result = net.run(feed)
    np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
    # the host rows: the input's quantize and the conv's pack; the conv's output read back,
    # padded and packed for the pool (one host group); the pool's output read back and
    # dequantized
    host = [r.name for r in result.layers if r.device == "cpu"]
    assert host[2:5] == ["conv.read", "pool.pad", "pool.data.pack"], host
    # the pad is a compiled host kernel of the artifact: it runs from one as it ran here
    from compiler.model.vta_program import plan_network
    from runtime.vta_artifact import load_vta_artifact, vta_artifact_bytes
    from runtime.vta_plan import VtaExecutor

    again = VtaExecutor(load_vta_artifact(vta_artifact_bytes(plan_network(net)))).run(feed)
    np.testing.assert_array_equal(again.outputs[0], result.outputs[0])
    assert again.total_cycles == result.total_cycles


def test_softmax_runs_on_the_host_and_the_table_says_so():
    x = Var("x", TensorType((1, 3, 6, 6), "float32", "NCHW"))
    w = Constant(np.random.default_rng(0).normal(size=(8, 3, 3, 3)).astype(np.float32), name="w")
    conv = Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)}, name="conv")
    prob = Node("softmax", (conv,), {"axis": 1}, name="prob")
    graph = Graph.from_outputs([x], [prob])
    feed = _feed(graph)
    net = compile_network(graph, "default", calibration=feed)
    result = net.run(feed)
    np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
    rows = {r.name: r for r in result.layers}
    assert rows["conv"].device == "vta" and (rows["prob"].device, rows["prob"].rule) == (
        "cpu",
        "float-op",
    )
    assert "prob" in result.table() and "float-op" in result.table()


def test_vtac_graph_and_run_with_the_vta_target(tmp_path, capsys):
    assert main(["graph", "digits", "--target", "vta", "--config", "4x4x4"]) == 0
    text = capsys.readouterr().out
    assert "conv2d-group" in text and "pool-group" in text and "4x4x4" in text
    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(3).standard_normal((4, 1, 28, 28)).astype(np.float32))
    code = main(["run", "digits", "--target", "vta", "--calibrate", str(calib), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and set(doc) >= {"outputs", "layers", "total_cycles"}
    assert doc["total_cycles"] == sum(r.get("cycles", 0) for r in doc["layers"])
    assert main(["run", "digits", "--target", "vta", "--calibrate", str(tmp_path / "no.npy")]) != 0
    assert "--calibrate" in capsys.readouterr().err
    trace = tmp_path / "net.json"
    assert main(["run", "digits", "--target", "vta", "--trace", str(trace)]) == 0
    events = json.loads(trace.read_text())["traceEvents"]
    slices = [e["name"] for e in events if e.get("tid") == 99 and e["ph"] == "X"]
    assert slices == ["conv1", "pool1", "block1.conv1", "block1.conv2", "pool2", "conv2",
                      "block2.conv1", "block2.conv2", "avgpool.sum", "fc"]  # fmt: skip


@pytest.mark.parametrize(
    ("config", "in_c", "k", "stride", "kind", "kernel_hw"),
    [
        # ResNet's first layer on a 16-wide block: im2col, 147 channels in 10 blocks
        ("vta-1x16x16", 3, 7, 2, "im2col", (1, 1)),
        # a 4x4 stride-2 kernel over one channel on a 4-wide block: space to depth (4 blocks
        # either way; the fold that moves fewer bytes is kept)
        ("default", 1, 4, 2, "space_to_depth", (2, 2)),
    ],
)
def test_first_layer_folded_into_channels_is_bit_exact(config, in_c, k, stride, kind, kernel_hw):
    x = Var("x", TensorType((1, in_c, 20, 20), "float32", "NCHW"))
    rng = np.random.default_rng(6)
    w = Constant(rng.normal(size=(16, in_c, k, k)).astype(np.float32), name="w")
    pad = k // 2
    attrs = {"padding": (pad,) * 4, "strides": (stride, stride)}
    graph = Graph.from_outputs([x], [Node("conv2d", (x, w), attrs, name="conv1")])
    feed = _feed(graph, seed=7)
    net = compile_network(graph, config, calibration=feed)
    # the fold is a host node of the graph, the convolution over its channels a group
    (group,) = net.partition.groups
    (fold,) = [n for n in net.graph.nodes if n.op == "im2col"]
    unpack = group.anchor.inputs[0]  # the group reads the fold packed by the host
    assert fold.name == f"conv1.{kind}" and unpack.inputs[0].inputs[0] is fold
    assert net.partition.placement(fold.name).device == "cpu"
    assert group.anchor.attrs["strides"] == (1, 1) and group.anchor.attrs["padding"] == (0,) * 4
    assert net.layers["conv1"].program.symbols["kernel"].shape[2:4] == kernel_hw
    result = net.run(feed)
    np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
    (conv,) = [r for r in result.layers if r.device == "vta"]
    out_hw = (20 + 2 * pad - k) // stride + 1
    assert conv.macs == 16 * out_hw * out_hw * in_c * k * k


def test_a_model_the_compiler_cannot_handle_fails_naming_every_offending_node(tmp_path, capsys):
    import onnx
    from onnx import helper

    from tests.compiler.frontend.helpers import make_model

    x = np.zeros((1, 4, 8, 8), np.float32)
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="ok"),
        helper.make_node("Resize", ["a", "", "scales"], ["b"], name="up", mode="cubic"),
        helper.make_node("NonZero", ["b"], ["y"], name="nz"),
    ]
    model = make_model(nodes, {"x": x}, ["y"], {"scales": np.ones(4, np.float32)})
    path = tmp_path / "bad.onnx"
    onnx.save(model, path)
    assert main(["run", str(path), "--target", "vta"]) != 0
    err = capsys.readouterr().err
    assert "up (Resize" in err and "nz (NonZero" in err and "Traceback" not in err


def test_a_plan_runs_a_host_group_before_the_group_that_reads_what_it_makes():
    """A group runs at its anchor; a host kernel placed after it in the graph's order that
    makes what the group's host writes read (a pack of a residual made after the anchor) is
    moved before it, the accelerator groups keeping their order; a read of a tensor that no
    earlier kernel makes is refused naming the kernel."""
    from compiler.errors import ModelError
    from compiler.model.program import KernelArg, KernelSpec
    from compiler.model.vta_program import _in_run_order

    def kernel(target, name, reads, makes):
        args = [KernelArg("residual" if target == "vta" else t, (1,), "int8", False)
                for t in reads]  # fmt: skip
        args += [KernelArg("out" if target == "vta" else t, (1,), "int8", True) for t in makes]
        return (KernelSpec(name, (), target, name, tuple(args), (*reads, *makes), ""), None)

    a, g = kernel("vta", "a", (), ("t1",)), kernel("vta", "g", ("t2",), ("t3",))
    h, k = kernel("cpu", "h", ("t1",), ("t2",)), kernel("cpu", "k", ("t3",), ("t4",))
    order = _in_run_order([a, g, h, k], {"t0"}, "net")
    assert [kern.name for kern, _ in order] == ["a", "h", "g", "k"]
    with pytest.raises(ModelError, match="group g reads tensor t2, which no earlier kernel"):
        _in_run_order([g, a], {"t0"}, "net")  # no kernel makes t2
    late = kernel("cpu", "late", ("t3",), ("t2",))  # needs g's own output
    with pytest.raises(ModelError, match="host kernel late reads tensor t3"):
        _in_run_order([a, g, late], {"t0"}, "net")


def test_a_plans_host_values_live_in_one_arena_planned_by_liveness():
    """The values a kernel makes for a later one (a host kernel's results, a group's ``out``
    read back) get bytes of one host arena, planned over the kernels in run order; the program
    runs as the network does, from two threads at once too, and returns arrays of the run's
    own."""
    from concurrent.futures import ThreadPoolExecutor

    from compiler.model.vta_program import check_host_arena, plan_network
    from runtime.vta_plan import VtaExecutor

    graph = from_onnx(load_zoo("resnet18", batch=1, image_size=32))
    feed = _feed(graph)
    net = compile_network(graph, "default", calibration=feed)
    program = plan_network(net)
    kinds = {}
    for t, p in program.placements.items():
        kinds.setdefault(p.kind, []).append(t)
    # the first conv's and the classifier's packed inputs, and the global pool's and the
    # classifier's outputs read back; the 21 other groups' outputs stay in the image
    assert sorted(kinds["arena"]) == ["avgpool.sum.out", "conv1.data.pack", "fc.data.pack",
                                      "fc.out"]  # fmt: skip
    assert len(kinds["image"]) == 21
    assert len(kinds["input"]) == len(kinds["output"]) == 1
    assert check_host_arena(program) is None
    assert 0 < program.arena_bytes <= program.memory.naive_bytes
    want = net.run(feed)
    executor = VtaExecutor(program)
    first = executor.run(feed)
    np.testing.assert_array_equal(first.outputs[0], want.outputs[0])
    assert first.total_cycles == want.total_cycles
    first.outputs[0][...] = 0  # the caller's array: the next run does not see it
    with ThreadPoolExecutor(2) as pool:
        outs = list(pool.map(lambda _: executor.run(feed).outputs[0], range(4)))
    for out in outs:
        np.testing.assert_array_equal(out, want.outputs[0])


def test_the_host_arena_check_refuses_values_live_at_once_that_share_bytes():
    from dataclasses import replace

    from compiler.model.program import (
        KernelArg,
        KernelSpec,
        MemoryStats,
        Placement,
        Program,
        TensorSpec,
    )
    from compiler.model.vta_program import check_host_arena, plan_host_arena

    def host(name, reads, makes):
        args = [KernelArg(t, (64,), "float32", False) for t in reads]
        args += [KernelArg(t, (64,), "float32", True) for t in makes]
        return KernelSpec(name, (), "cpu", name, tuple(args), (*reads, *makes), "")

    # x is the input, a and b are live together at kernel 1, c reuses a's bytes, y the output
    kernels = [host("ka", ["x"], ["a"]), host("kb", ["a"], ["b"]), host("kc", ["b"], ["c"]),
               host("kd", ["c"], ["y"])]  # fmt: skip
    types = {t: ((64,), "float32") for t in "xabcy"}
    offsets, peak, naive = plan_host_arena(kernels, types, {"x": 0, "y": 0})
    assert offsets == {"a": 0, "b": 256, "c": 0} and (peak, naive) == (512, 768)
    spec = TensorSpec("x", (64,), "float32")
    places = {t: Placement("arena", t, offsets[t], (64,), "float32") for t in offsets}
    places["x"] = Placement("input", "x", 0, (64,), "float32")
    places["y"] = Placement("output", "y", 0, (64,), "float32")
    program = Program("p", "vta", 1, (spec,), (replace(spec, name="y"),), places,
                      tuple(kernels), {}, peak, MemoryStats(peak, naive),
                      output_tensors={"y": "y"})  # fmt: skip
    assert check_host_arena(program) is None
    clash = replace(program, placements={**places, "b": replace(places["b"], offset=128)})
    assert check_host_arena(clash) == (
        "tensors 'a' and 'b' share arena bytes at kernel 'kb', where both live"
    )
    unplaced = replace(program, placements={**places, "c": replace(places["c"], kind="image")})
    assert "tensor 'c' is in the image, but it is not a group's out" in str(
        check_host_arena(unplaced)
    )
