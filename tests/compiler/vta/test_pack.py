"""The ``pack`` pass: every accelerator group input that the DRAM plan does not read in place
becomes a ``pack`` node on the host and an ``unpack`` in its group, and every group output the
host reads a ``pack`` in the group (its store) and an ``unpack`` on the host, with the same
integers; one
``pack`` serves every group reading the value in the same layout; an input read twice (a
LeakyReLU's) is written from one pack into both of its program's tensors; and the build refuses
a program input that nothing writes."""

import numpy as np
import pytest

import isa
from compiler.errors import CompilerError, ModelError
from compiler.graph import Graph, Node, TensorType, Var, evaluate
from compiler.partition import partition_graph
from compiler.targets.vta.pack import (
    PACK_RULE,
    PACKED_INPUT_RULE,
    PACKED_OUTPUT_RULE,
    READ_BACK_RULE,
    group_writes,
    insert_packs,
)
from runtime.vta_target import compile_network


def _x(shape=(1, 16, 5, 5), dtype="int8"):
    return Var("x", TensorType(shape, dtype, "NCHW"))


def test_two_groups_reading_one_host_value_share_its_pack():
    cfg = isa.load_config("vta-1x16x16")
    x = _x()
    a = Node("relu", (x,), name="a")
    b = Node("clip", (x,), {"a_min": -3.0, "a_max": 7.0}, name="b")
    graph = Graph.from_outputs([x], [a, b])
    new, part = insert_packs(graph, partition_graph(graph, cfg), {}, cfg)
    packs = [n for n in new.nodes if n.op == "pack" and part.placement(n.name).device == "cpu"]
    assert [p.name for p in packs] == ["a.data.pack"]
    assert packs[0].attrs == {"layout": "nchw", "blocks": (1, 16)}
    placed = part.placement("a.data.pack")
    assert (placed.device, placed.rule) == ("cpu", PACK_RULE)
    assert "for a.data, b.data" in placed.reason
    for g in part.groups:
        (unpack,) = [n for n in g.nodes if n.op == "unpack"]
        assert part.placement(unpack.name).rule == PACKED_INPUT_RULE
        assert part.placement(unpack.name).group == g.name
        assert g.anchor.inputs[0] is unpack and group_writes(g) == [("data", packs[0])]
    feed = {"x": np.random.default_rng(0).integers(-128, 128, (1, 16, 5, 5)).astype(np.int8)}
    for got, want in zip(evaluate(new, feed), evaluate(graph, feed), strict=True):
        np.testing.assert_array_equal(got, want)


def test_an_input_read_in_place_gets_no_pack():
    cfg = isa.load_config("default")
    x = _x()
    graph = Graph.from_outputs([x], [Node("relu", (x,), name="r")])
    new, part = insert_packs(graph, partition_graph(graph, cfg), {"r": ("data",)}, cfg)
    (group,) = part.groups
    assert group.anchor.inputs[0] is x and not group_writes(group)
    assert [n.name for n in new.nodes if part.placement(n.name).device == "cpu"] == ["r.read"]


def test_an_output_the_host_reads_is_stored_packed_and_unpacked_on_the_host():
    cfg = isa.load_config("vta-1x16x16")
    x = _x((1, 3, 4, 4))
    r = Node("relu", (x,), name="r")
    graph = Graph.from_outputs([x], [Node("transpose", (r,), {"axes": (0, 2, 3, 1)}, name="t")])
    new, part = insert_packs(graph, partition_graph(graph, cfg), {}, cfg)
    (group,) = part.groups
    store = group.store
    assert store is not None and store.inputs[0] is group.output and store in group.nodes
    assert (store.attrs["layout"], store.type.shape) == ("nchw", (1, 1, 4, 4, 1, 16))
    placed = {n.name: (part.placement(n.name).device, part.placement(n.name).rule)
              for n in new.nodes}  # fmt: skip
    assert placed["r.out"] == ("vta", PACKED_OUTPUT_RULE)
    assert placed["r.read"] == ("cpu", READ_BACK_RULE)
    t = next(n for n in new.nodes if n.name == "t")
    assert t.inputs[0].name == "r.read" and t.inputs[0].type == r.type
    feed = {"x": np.random.default_rng(3).integers(-128, 128, (1, 3, 4, 4)).astype(np.int8)}
    np.testing.assert_array_equal(evaluate(new, feed)[0], evaluate(graph, feed)[0])


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_a_leaky_relu_of_a_host_value_reads_one_pack_as_data_and_residual(preset):
    """A LeakyReLU loads its input twice (``data`` and ``residual``); over the network's input
    the host packs it once and writes it into both tensors."""
    x = _x((1, 3, 4, 6), "float32")
    graph = Graph.from_outputs([x], [Node("leaky_relu", (x,), {"alpha": 0.5}, name="leaky")])
    rng = np.random.default_rng(1)
    feeds = [{"x": rng.standard_normal((1, 3, 4, 6)).astype(np.float32)} for _ in range(3)]
    net = compile_network(graph, preset, calibration=feeds, cache=False)
    (group,) = net.partition.groups
    writes = group_writes(group)
    assert [s for s, _ in writes] == ["data", "residual"]
    assert writes[0][1] is writes[1][1]  # one pack node
    for feed in feeds:
        got = net.run(feed).outputs[0]
        np.testing.assert_array_equal(got, net.reference(feed)[0])
        # both halves of the activation survive: no tensor of the program left as zeros
        assert np.count_nonzero(got < 0) and np.count_nonzero(got > 0)


def test_the_build_refuses_a_program_input_that_nothing_writes(monkeypatch):
    from compiler.targets.vta import pack

    monkeypatch.setattr(pack, "_second_read", lambda group, aliased: False)
    x = _x((1, 3, 4, 6), "float32")
    graph = Graph.from_outputs([x], [Node("leaky_relu", (x,), {"alpha": 0.5}, name="leaky")])
    feed = {"x": np.random.default_rng(2).standard_normal((1, 3, 4, 6)).astype(np.float32)}
    with pytest.raises(
        ModelError,
        match=r"group leaky: input tensor\(s\) \['residual'\] of its "
        "program are neither read in place nor written",
    ):
        compile_network(graph, "default", calibration=feed, cache=False)


@pytest.mark.parametrize(
    ("attrs", "shape", "message"),
    [
        ({"layout": "nhwc", "blocks": (1, 4)}, (1, 3, 2, 2), "layout 'nhwc' is not one of"),
        ({"layout": "nchw", "blocks": (0, 4)}, (1, 3, 2, 2), "blocks \\(0, 4\\) must be >= 1"),
        ({"layout": "rows", "blocks": (1, 4)}, (1, 3, 2, 2), "rows packs a value of 2 axes"),
    ],
)
def test_a_malformed_pack_is_refused_naming_the_node(attrs, shape, message):
    with pytest.raises(CompilerError, match=f"'p'.*{message}"):
        Node("pack", (_x(shape),), attrs, name="p")


def test_an_unpack_of_a_value_of_another_shape_is_refused():
    p = Node("pack", (_x((1, 3, 2, 2)),), {"layout": "nchw", "blocks": (1, 4)}, name="p")
    Node("unpack", (p,), {"layout": "nchw", "shape": (1, 3, 2, 2)}, name="u")  # fine
    with pytest.raises(CompilerError, match=r"'u'.*is not shape \(1, 5, 2, 2\) packed"):
        Node("unpack", (p,), {"layout": "nchw", "shape": (1, 5, 2, 2)}, name="u")
