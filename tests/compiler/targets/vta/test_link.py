"""The network's DRAM plan: a static part that is never reused, activations placed by liveness
in one shared region, and every relocated LOAD/STORE still right (bit for bit against the
quantized graph's integer reference)."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import isa
from compiler.frontend.onnx_import import from_onnx
from compiler.frontend.zoo import load_zoo
from compiler.graph import Constant, Graph, Node, TensorType, Var
from compiler.graph.memory import first_fit
from compiler.targets.vta.errors import LinkError
from compiler.targets.vta.link import ActivationTensor, Segment, check_plan, grain, relocate
from runtime.vta_target import compile_network


def _feed(graph, seed=0):
    rng = np.random.default_rng(seed)
    return {v.name: rng.standard_normal(v.type.shape).astype(np.float32) for v in graph.inputs}


def _assert_no_live_overlap(tensors):
    for k, a in enumerate(tensors):
        for b in tensors[k + 1 :]:
            live = a.first <= b.last and b.first <= a.last
            apart = a.offset + a.nbytes <= b.offset or b.offset + b.nbytes <= a.offset
            assert not live or apart, (a, b)


@pytest.fixture(scope="module")
def resnet18_small():
    graph = from_onnx(load_zoo("resnet18", batch=1, image_size=32))
    feed = _feed(graph)
    return compile_network(graph, "vta-1x16x16", calibration=feed), feed


def test_resnet18_small_reuses_activation_memory_and_stays_bit_exact(resnet18_small):
    net, feed = resnet18_small
    plan = net.dram_plan
    result = net.run(feed)
    np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
    # smaller than the programs' images one after the other, and the activations share
    assert plan.nbytes < plan.programs_bytes
    assert plan.programs_bytes == sum(-(-p.program.dram.size // 4096) * 4096
                                      for p in net.layers.values())  # fmt: skip
    assert plan.activation_bytes < plan.activation_bytes_unshared
    assert plan.activation_base >= plan.static_bytes
    assert plan.nbytes >= plan.activation_base + plan.activation_bytes
    doc = result.to_json()
    assert doc["dram_image_bytes"] == plan.nbytes
    assert (doc["activation_bytes"], doc["activation_bytes_unshared"]) == (
        plan.activation_bytes,
        plan.activation_bytes_unshared,
    )
    assert f"activations {plan.activation_bytes:,}, " in result.table()
    # one output per group; an input of its own only where it is not read in place
    outs = [t for t in plan.activations if t.symbol == "out"]
    assert len(outs) == len(net.partition.groups)
    inputs = {(t.group, t.symbol) for t in plan.activations if t.symbol != "out"}
    assert ("conv1", "data") in inputs and ("fc", "data") in inputs
    assert all(s not in plan.groups[g].aliased for g, s in inputs)


def test_no_two_tensors_live_at_the_same_step_share_a_byte(resnet18_small):
    net, _ = resnet18_small
    plan = net.dram_plan
    _assert_no_live_overlap(plan.activations)
    check_plan(plan)
    # the static part: every group's pieces apart from each other and from the activations
    static = sorted(
        (s.to, s.to + s.end - s.start)
        for img in plan.groups.values()
        for s in img.segments
        if s.to < plan.activation_base
    )
    assert all(
        a_end <= b_start for (_, a_end), (b_start, _) in zip(static, static[1:], strict=False)
    )
    assert static[-1][1] <= plan.static_bytes <= plan.activation_base
    # an output read in place is live until its last reader runs, and is where it reads
    outs = {t.group: t for t in plan.activations if t.symbol == "out"}
    for name, img in plan.groups.items():
        for sym in img.aliased:
            src = outs[img.producers[sym]]
            assert src.first < outs[name].first <= src.last
            assert img.symbols[sym].offset == src.offset


def test_a_plan_with_live_tensors_sharing_bytes_is_refused(resnet18_small):
    net, _ = resnet18_small
    plan = net.dram_plan
    by_name = {(t.group, t.symbol): t for t in plan.activations}
    a, b = by_name["conv1", "data"], by_name["conv1", "out"]  # both live when conv1 runs
    clash = dataclasses.replace(b, offset=a.offset)
    bad = dataclasses.replace(plan, activations=tuple(clash if t is b else t
                                                      for t in plan.activations))  # fmt: skip
    with pytest.raises(LinkError, match="conv1.data .*conv1.out .*share bytes"):
        check_plan(bad)


def test_an_accelerator_output_read_late_by_the_host_is_not_overwritten():
    # a's output is a graph output (its dequantize runs last) and b's input: the two groups
    # after it must not take its bytes
    rng = np.random.default_rng(3)
    x = Var("x", TensorType((1, 16, 8, 8), "float32", "NCHW"))
    ws = [Constant(rng.normal(size=(16, 16, 3, 3)).astype(np.float32), name=f"w{k}")
          for k in range(3)]  # fmt: skip
    pad = {"padding": (1, 1, 1, 1)}
    a = Node("conv2d", (x, ws[0]), pad, name="a")
    b = Node("conv2d", (Node("relu", (a,), name="ra"), ws[1]), pad, name="b")
    c = Node("conv2d", (Node("relu", (b,), name="rb"), ws[2]), pad, name="c")
    graph = Graph.from_outputs([x], [c, a])
    feed = _feed(graph, seed=4)
    net = compile_network(graph, "default", calibration=feed)
    plan = net.dram_plan
    out_a = next(t for t in plan.activations if (t.group, t.symbol) == ("a", "out"))
    out_c = next(t for t in plan.activations if (t.group, t.symbol) == ("c", "out"))
    # its read-back and dequantize run last (the plan's steps are those of the graph it was
    # made on, before the build's pack pass added nodes)
    assert out_a.last == max(t.last for t in plan.activations) > out_c.first
    _assert_no_live_overlap(plan.activations)
    result = net.run(feed)
    for got, want in zip(result.outputs, net.reference(feed), strict=True):
        np.testing.assert_array_equal(got, want)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 5000), st.integers(0, 30), st.integers(0, 10)),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from([16, 64, 256]),
)
def test_first_fit_never_puts_two_live_tensors_on_the_same_bytes(specs, alignment):
    tensors = [(n, f, f + d) for n, f, d in specs]
    offsets, size = first_fit(tensors, alignment)
    placed = [
        ActivationTensor("g", str(k), off, -(-n // alignment) * alignment, f, last)
        for k, ((n, f, last), off) in enumerate(zip(tensors, offsets, strict=True))
    ]
    assert all(t.offset % alignment == 0 and t.offset + t.nbytes <= size for t in placed)
    _assert_no_live_overlap(placed)
    # never larger than every tensor at its own place, never smaller than the busiest step
    assert size <= sum(t.nbytes for t in placed)
    steps = range(min(t.first for t in placed), max(t.last for t in placed) + 1)
    assert size >= max(sum(t.nbytes for t in placed if t.first <= s <= t.last) for s in steps)


def test_relocate_names_an_address_outside_every_piece():
    cfg = isa.load_config("default")
    load = isa.Load(memory_type=isa.MemType.INP, dram_base=20, x_size=1, y_size=1, x_stride=1)
    prog = isa.Program.build(cfg, [load, isa.Finish()], dram_bytes=128)
    with pytest.raises(LinkError, match="instruction 0 \\(Load INP\\): DRAM byte 80 lies in no"):
        relocate(prog, [Segment(0, 64, 4096), Segment(96, 128, 8192)])
    code, _ = relocate(prog, [Segment(0, 64, 4096), Segment(64, 128, 8192)])
    assert isa.encoding.decode_stream(code, cfg)[0].dram_base * 4 == 8192 + 16
    assert grain(cfg) % 16 == 0
