"""Convolutions with a non-square kernel, unequal strides or padding that differs between sides
(a text recognizer's 3x1 stride (2, 1), Inception's 1x7 / 7x1) run on the accelerator: placed
there by the partition, bit for bit against the quantized graph's integer reference on two
presets, each group's heuristic schedule a point of its tuning task's space, and a tuned point
of that space compiling to the same results."""

import numpy as np
import pytest
from onnx import helper

import isa
import vta_sim
from compiler import registry
from compiler.frontend.onnx_import import from_onnx
from runtime.vta_target import compile_network
from tests.compiler.frontend.helpers import make_model

H, W = 12, 16

#: name, kernel, strides, pads (top, left, bottom, right), output channels, depthwise
CONVS = [
    ("c1x3", (1, 3), (1, 1), (0, 1, 0, 1), 8, False),
    ("c3x1_s21", (3, 1), (2, 1), (1, 0, 1, 0), 8, False),
    ("c3x3_s21", (3, 3), (2, 1), (1, 1, 1, 1), 12, False),
    ("c1x7", (1, 7), (1, 1), (0, 3, 0, 3), 8, False),
    ("c7x1", (7, 1), (1, 1), (3, 0, 3, 0), 8, False),
    ("c2x3_uneven", (2, 3), (1, 2), (0, 1, 1, 0), 8, False),
    ("dw1x3_s12", (1, 3), (1, 2), (0, 1, 0, 1), 8, True),
]


def _model():
    rng = np.random.default_rng(7)
    nodes, inits, cur, c = [], {}, "x", 4
    for k, (name, (kh, kw), strides, pads, out_c, depthwise) in enumerate(CONVS):
        group = c if depthwise else 1
        inits[f"w{k}"] = (rng.standard_normal((out_c, c // group, kh, kw)) * 0.4).astype(np.float32)
        inits[f"b{k}"] = (rng.standard_normal(out_c) * 0.1).astype(np.float32)
        nodes.append(
            helper.make_node(
                "Conv",
                [cur, f"w{k}", f"b{k}"],
                [f"{name}_y"],
                name=name,
                kernel_shape=[kh, kw],
                strides=list(strides),
                pads=list(pads),
                group=group,
            )
        )
        nodes.append(helper.make_node("Relu", [f"{name}_y"], [f"{name}_r"], name=f"{name}_relu"))
        cur, c = f"{name}_r", out_c
    return make_model(nodes, {"x": np.zeros((1, 4, H, W), np.float32)}, [cur], inits)


def _feeds(seed, count):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((1, 4, H, W)).astype(np.float32)} for _ in range(count)]


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_non_square_kernels_and_unequal_strides_run_on_the_accelerator_bit_exact(preset):
    net = compile_network(from_onnx(_model()), preset, calibration=_feeds(1, 2))
    placed = {p.node: (p.device, p.rule) for p in net.partition.placements}
    for name, *_, depthwise in CONVS:
        rule = "depthwise-group" if depthwise else "conv2d-group"
        assert placed[name] == ("vta", rule), (name, placed[name])
    host = [p.op for p in net.partition.host_nodes()]
    # the input packed once, the output read back once
    assert host == ["quantize", "pack", "unpack", "dequantize"], host
    # the output shapes follow each axis's kernel, stride and padding
    shapes = {g.name: g.anchor.type.shape[2:] for g in net.partition.groups}
    assert shapes["c3x1_s21"] == (6, 16) and shapes["c3x3_s21"] == (3, 16)
    assert shapes["c2x3_uneven"] == (3, 8) and shapes["dw1x3_s12"] == (3, 4)
    for feed in _feeds(2, 2):
        result = net.run(feed)
        np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
    assert all(r.cycles > 0 for r in result.layers if r.device == "vta")


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_each_groups_heuristic_schedule_is_a_point_of_its_tasks_space(preset):
    from compiler.model.vta import quantize_partition
    from tests.compiler.vta.helpers import heuristic_points

    cfg = isa.load_config(preset)
    _, part, _ = quantize_partition(from_onnx(_model()), cfg, calibration=_feeds(1, 2))
    keys = set()
    for group, task, layer in heuristic_points(part, cfg):
        assert task.knobs(task.default_config()) == layer.knobs, group.name
        keys.add(task.key)
    # every shape is a task of its own: kernels, strides and padding are in the key
    assert len(keys) == len(CONVS)


def test_tuned_points_of_a_non_square_groups_space_compile_to_the_same_results():
    """Seeded points of the spaces of three groups (3x1 stride (2, 1), 1x7, a depthwise 1x3
    of stride (1, 2)) on the simulator: each point's output equals the heuristic schedule's
    (which the first test checks against the integer reference)."""
    from compiler.model.vta import quantize_partition
    from runtime.measure import reference_output

    cfg = isa.load_config("default")
    _, part, _ = quantize_partition(from_onnx(_model()), cfg, calibration=_feeds(1, 2))
    groups = {g.name: g for g in part.groups}
    rng = np.random.default_rng(3)
    for name in ("c3x1_s21", "c1x7", "dw1x3_s12"):
        task, _ = registry.lookup("vta", "conv2d").task(groups[name], cfg)
        knobs = {k.name for k in task.space().knobs}
        # a kernel of several rows may step one row at a time; a one-row kernel may not
        assert ("kernel_step" in knobs) == (task.kernel[0] > 1), name
        valid = task.space().valid_indices()
        for i in rng.choice(valid, size=3, replace=False).tolist():
            built = task.build(i)
            built.expected = reference_output(built.reference)
            got = np.asarray(vta_sim.simulate(built.program).read("out"))
            assert built.matches(got), (name, task.space().config(i).describe())
