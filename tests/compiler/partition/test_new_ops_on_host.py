"""A quantized graph holding the float operators of detectors, OCR and transformers (resize,
slices, reductions, comparisons, where, layer norm, transposed convolutions...): quantization
leaves them in float32 with dequantize before them, the partition keeps them on the host naming
the rule, the convolutions around them still go to the accelerator, and the host groups
compile."""

import numpy as np
from onnx import helper

import isa
from compiler.frontend.onnx_import import from_onnx
from compiler.graph.reference import evaluate
from compiler.model.host_groups import compile_host_groups
from compiler.partition import partition_graph
from compiler.quantize import quantize_graph
from tests.compiler.frontend.helpers import make_model

NEW_OPS = {
    "resize", "strided_slice", "take", "mean", "max", "argmax", "greater", "where", "power",
    "erf", "tanh", "dilate", "tile", "broadcast_to", "logical_not", "log",
}  # fmt: skip


def _model():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 16, 6, 6)).astype(np.float32)
    inits = {
        "w1": rng.normal(size=(16, 16, 3, 3)).astype(np.float32) * 0.2,
        "w2": rng.normal(size=(16, 16, 3, 3)).astype(np.float32) * 0.2,
        "wt": rng.normal(size=(16, 16, 2, 2)).astype(np.float32) * 0.2,
        "scales": np.array([1, 1, 2, 2], np.float32),
        "s": np.array([1]), "e": np.array([11]), "a": np.array([2]), "idx": np.array([0, 2]),
        "half": np.array(0.5, np.float32), "two": np.array(2.5, np.float32),
        "reps": np.array([1, 1, 1, 2]), "shape": np.array([1, 16, 10, 12]),
    }  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Resize", ["r1", "", "scales"], ["up"], mode="linear", name="up"),
        helper.make_node("Slice", ["up", "s", "e", "a"], ["sl"], name="cut"),
        helper.make_node("Conv", ["sl", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("ReduceMean", ["c2"], ["m"], axes=[1], name="chan_mean"),
        helper.make_node("Greater", ["c2", "m"], ["g"], name="above"),
        helper.make_node("Not", ["g"], ["ng"], name="below"),
        helper.make_node("Erf", ["c2"], ["er"], name="erf"),
        helper.make_node("Where", ["ng", "er", "c2"], ["wh"], name="pick"),
        helper.make_node("Sigmoid", ["wh"], ["sg"], name="positive"),
        helper.make_node("Pow", ["sg", "two"], ["pw"], name="pow"),
        helper.make_node("Tanh", ["pw"], ["th"], name="tanh"),
        # padded (cropped), so it is not one 1x1 convolution: dilate, then conv2d
        helper.make_node(
            "ConvTranspose", ["th", "wt"], ["ct"], strides=[2, 2], pads=[0, 0, 1, 1], name="deconv"
        ),
        helper.make_node("Gather", ["ct", "idx"], ["ga"], axis=1, name="pick_channels"),
        helper.make_node("ReduceMax", ["ga"], ["mx"], axes=[1], keepdims=1, name="chan_max"),
        helper.make_node("ArgMax", ["ct"], ["am"], axis=1, name="best"),
        helper.make_node("Tile", ["mx", "reps"], ["tl"], name="tile"),
        helper.make_node("Expand", ["m", "shape"], ["ex"], name="expand"),
        helper.make_node("Log", ["half"], ["lg"]),
        helper.make_node("Mul", ["ex", "lg"], ["y"], name="scale"),
    ]
    return make_model(nodes, {"x": x}, ["tl", "am", "y"], inits), x


def test_new_operators_stay_in_float_on_the_host_and_the_convs_go_to_the_accelerator():
    model, x = _model()
    graph = from_onnx(model)
    quantized = quantize_graph(graph, {"x": x})
    ops = {n.op for n in quantized.nodes}
    assert {"resize", "strided_slice", "argmax", "where", "power", "dilate"} <= ops
    for n in quantized.nodes:
        if n.op in NEW_OPS:
            assert n.type.dtype in ("float32", "bool", "int64"), (n.label, n.type)
    part = partition_graph(quantized, isa.load_config("default"))
    assert part.placement("conv2").device == "vta"
    for p in part.placements:
        if p.op in NEW_OPS:
            assert p.device == "cpu" and p.rule in ("float-op", "no-rule") and p.reason, p
    hosts = compile_host_groups(
        quantized.nodes,
        quantized.outputs,
        lambda n: part.placement(n.label).device == "cpu",
    )
    assert all(h.compiled for h in hosts), [(h.name, h.reason) for h in hosts if not h.compiled]
    # the quantized graph still computes roughly what the float one does
    (ref_tile, ref_arg, _), (q_tile, _, _) = (
        evaluate(graph, {"x": x}),
        evaluate(quantized, {"x": x}),
    )
    assert ref_arg.dtype == np.int64
    assert np.abs(q_tile - ref_tile).max() <= 0.25 * np.abs(ref_tile).max() + 0.05


def test_calibration_leaves_out_values_outside_an_operators_domain():
    from compiler.quantize.calibrate import AbsHistogram

    h = AbsHistogram.of(np.array([np.nan, -2.0, np.inf, 1.0, 0.5]), bins=4)
    assert h.absmax == 2.0 and h.counts.sum() == 3
