"""What exported YOLO-family detectors are made of, on small synthetic graphs against
onnxruntime: YOLOv4's Mish (the opset-18 operator and the Softplus/Tanh/Mul older exporters
write), YOLOv5's Focus slices and five-dimensional head, YOLOX's box decoding, NanoDet's
distribution-to-distance MatMul, and the refusal of an end-to-end export whose NMS stays
in the graph: every node the frontend cannot import named once, one line each."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler.errors import FrontendError
from compiler.frontend.onnx_import import from_onnx
from tests.compiler.frontend.backends import TARGETS, check_on_target
from tests.compiler.frontend.helpers import check_against_onnxruntime, make_model

H = helper.make_node


def _x(seed: int, *shape: int, scale: float = 4.0) -> np.ndarray:
    return (np.random.default_rng(seed).normal(size=shape) * scale).astype(np.float32)


@pytest.mark.parametrize("target", TARGETS)
def test_softplus_matches_onnxruntime_far_out(target):
    # far past where exp(x) overflows float32 (x > 88) and far below where it underflows
    x = _x(0, 2, 8, 5, 5)
    x[0, 0, 0, :] = [-200.0, -30.0, 0.0, 30.0, 200.0]
    model = make_model([H("Softplus", ["x"], ["y"])], {"x": x}, ["y"])
    check_on_target(model, {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
def test_mish_operator_opset18(target):
    x = _x(1, 1, 8, 6, 6)
    x[0, 0, 0, :] = [-150.0, -20.0, -1.0, 1.0, 20.0, 150.0]
    model = make_model([H("Mish", ["x"], ["y"])], {"x": x}, ["y"], opset=18)
    check_on_target(model, {"x": x}, target)


def test_mish_as_older_exporters_write_it():
    """Conv -> Softplus -> Tanh -> Mul, YOLOv4's block before opset 18."""
    x = _x(2, 1, 3, 8, 8, scale=1.0)
    w = _x(3, 8, 3, 3, 3, scale=0.5)
    nodes = [
        H("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        H("Softplus", ["c"], ["sp"]),
        H("Tanh", ["sp"], ["t"]),
        H("Mul", ["c", "t"], ["y"]),
    ]
    graph = check_against_onnxruntime(make_model(nodes, {"x": x}, ["y"], {"w": w}), {"x": x})
    assert {n.op for n in graph.nodes} >= {"conv2d", "exp", "log", "tanh", "multiply"}


def test_focus_slices():
    """YOLOv5's Focus: four stride-2 slices of the image concatenated on channels."""
    x = _x(4, 1, 3, 8, 10)
    nodes = [H("Slice", ["x", f"b{k}", "e", "ax", "st"], [f"s{k}"]) for k in range(4)]
    nodes.append(H("Concat", [f"s{k}" for k in range(4)], ["y"], axis=1))
    inits = {f"b{k}": np.array([k % 2, k // 2]) for k in range(4)}
    inits.update(e=np.array([2**62, 2**62]), ax=np.array([2, 3]), st=np.array([2, 2]))
    check_against_onnxruntime(make_model(nodes, {"x": x}, ["y"], inits), {"x": x})


@pytest.mark.parametrize("target", TARGETS)
def test_c2f_split_and_fpn_upsampling(target):
    """YOLOv8's C2f (a Split of a convolution's output into channel halves, a bottleneck on
    one, the Concat of all) and its FPN step (nearest Resize x2, Concat with an earlier map):
    on the cpu target the slices and the resize run in the packed layout, between
    convolutions with no transform to NCHW."""
    rng = np.random.default_rng(5)
    w = lambda *s: (rng.normal(size=s) * 0.2).astype(np.float32)  # noqa: E731
    x = _x(6, 1, 8, 6, 6, scale=1.0)
    inits = {"w1": w(64, 8, 1, 1), "w2": w(32, 32, 3, 3), "w3": w(32, 96, 1, 1),
             "w4": w(16, 8, 3, 3), "split": np.array([32, 32]),
             "scales": np.array([1, 1, 2, 2], np.float32)}  # fmt: skip
    nodes = [
        H("Conv", ["x", "w1"], ["c1"]),
        H("Split", ["c1", "split"], ["a", "b"], axis=1),
        H("Conv", ["b", "w2"], ["c2"], pads=[1] * 4),
        H("Concat", ["a", "b", "c2"], ["cat"], axis=1),
        H("Conv", ["cat", "w3"], ["c3"]),
        H("Resize", ["c3", "", "scales"], ["up"], mode="nearest",
          coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        H("Conv", ["x", "w4"], ["c4"], pads=[1] * 4, strides=[1, 1]),
        H("Resize", ["c4", "", "scales"], ["c4up"], mode="nearest",
          coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        H("Concat", ["up", "c4up"], ["y"], axis=1),
    ]  # fmt: skip
    model = make_model(nodes, {"x": x}, ["y"], inits, opset=13)
    check_on_target(model, {"x": x}, target)
    if target == "cpu":
        from compiler.model.cpu import optimize

        moved = [n for n in optimize(model).nodes if n.op in ("strided_slice", "resize")]
        assert len(moved) == 4 and all(n.type.layout == "NCHW1n16c" for n in moved)


@pytest.mark.parametrize("target", TARGETS)
def test_yolov5_head(target):
    """A detection level of YOLOv5: (1, 3 * (5 + classes), H, W) to a five-dimensional
    (1, 3, H, W, 5 + classes), sigmoid, then ``xy * 2 + grid`` and ``(wh * 2) ** 2 * anchor``
    (Pow), concatenated and flattened to (1, 3 * H * W, 5 + classes)."""
    x = _x(5, 1, 21, 4, 6, scale=1.0)
    grid = _x(6, 1, 3, 4, 6, 2)
    anchors = np.abs(_x(7, 1, 3, 1, 1, 2))
    nodes = [
        H("Reshape", ["x", "s5"], ["r"]),
        H("Transpose", ["r"], ["t"], perm=[0, 1, 3, 4, 2]),
        H("Sigmoid", ["t"], ["sg"]),
        H("Split", ["sg", "sp"], ["xy", "wh", "conf"], axis=4),
        H("Mul", ["xy", "two"], ["xy2"]),
        H("Add", ["xy2", "grid"], ["xy3"]),
        H("Mul", ["xy3", "stride"], ["xy4"]),
        H("Mul", ["wh", "two"], ["wh2"]),
        H("Pow", ["wh2", "two"], ["wh3"]),
        H("Mul", ["wh3", "anchors"], ["wh4"]),
        H("Concat", ["xy4", "wh4", "conf"], ["c"], axis=4),
        H("Reshape", ["c", "s3"], ["y"]),
    ]
    inits = {
        "s5": np.array([1, 3, 7, 4, 6]),
        "sp": np.array([2, 2, 3]),
        "two": np.array(2, np.float32),
        "stride": np.array(8, np.float32),
        "grid": grid,
        "anchors": anchors,
        "s3": np.array([1, -1, 7]),
    }
    check_on_target(make_model(nodes, {"x": x}, ["y"], inits), {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
def test_yolox_decode(target):
    """YOLOX with its decoding in the graph: ``(xy + grid) * stride``, ``exp(wh) * stride``,
    sigmoid scores, over (1, anchors, 5 + classes)."""
    x = _x(8, 1, 21, 7, scale=1.0)
    nodes = [
        H("Slice", ["x", "z", "two", "last"], ["xy"]),
        H("Slice", ["x", "two", "four", "last"], ["wh"]),
        H("Slice", ["x", "four", "end", "last"], ["scores"]),
        H("Add", ["xy", "grid"], ["a"]),
        H("Mul", ["a", "strides"], ["b"]),
        H("Exp", ["wh"], ["e"]),
        H("Mul", ["e", "strides"], ["f"]),
        H("Sigmoid", ["scores"], ["s"]),
        H("Concat", ["b", "f", "s"], ["y"], axis=-1),
    ]
    inits = {
        "z": np.array([0]),
        "two": np.array([2]),
        "four": np.array([4]),
        "end": np.array([7]),
        "last": np.array([-1]),
        "grid": _x(9, 1, 21, 2),
        "strides": np.repeat(np.array([8, 16, 32], np.float32), 7).reshape(1, 21, 1),
    }
    check_on_target(make_model(nodes, {"x": x}, ["y"], inits), {"x": x}, target)


def test_distribution_to_distance():
    """NanoDet / PicoDet's box regression: a softmax over the bins of each side, then a MatMul
    by the one-dimensional bin positions (0..reg_max)."""
    x = _x(10, 1, 30, 4, 8, scale=1.0)
    nodes = [H("Softmax", ["x"], ["p"], axis=-1), H("MatMul", ["p", "bins"], ["y"])]
    inits = {"bins": np.arange(8, dtype=np.float32)}
    check_against_onnxruntime(make_model(nodes, {"x": x}, ["y"], inits), {"x": x})


def test_end_to_end_export_names_every_unsupported_node_once():
    """A YOLOv8/YOLOv10-style export with selection and NMS in the graph: TopK,
    GatherElements and NonMaxSuppression are refused before any conversion, each on one line,
    and the supported nodes around them are not listed."""
    boxes = np.abs(_x(11, 1, 20, 4))
    scores = _x(12, 1, 20, 3)
    nodes = [
        H("Sigmoid", ["scores"], ["p"], name="sigmoid"),
        H("ReduceMax", ["p"], ["best"], axes=[2], keepdims=0, name="best"),
        H("TopK", ["best", "k"], ["top", "index"], axis=1, name="topk"),
        H("Unsqueeze", ["index", "last"], ["index3"], name="index3"),
        H("Tile", ["index3", "reps"], ["index4"], name="index4"),
        H("GatherElements", ["boxes", "index4"], ["picked"], axis=1, name="picked"),
        H("Transpose", ["p"], ["pt"], perm=[0, 2, 1], name="pt"),
        H("NonMaxSuppression", ["boxes", "pt", "most", "iou", "thr"], ["keep"], name="nms"),
    ]
    inits = {
        "k": np.array([5]),
        "last": np.array([2]),
        "reps": np.array([1, 1, 4]),
        "most": np.array([10]),
        "iou": np.array([0.5], np.float32),
        "thr": np.array([0.2], np.float32),
    }
    feeds = {"boxes": boxes, "scores": scores}
    model = make_model(nodes, feeds, ["top", "picked", "keep"], inits)
    with pytest.raises(FrontendError) as err:
        from_onnx(model)
    lines = str(err.value).splitlines()
    assert lines[0].endswith("3 unsupported node(s):"), lines[0]
    assert len(lines) == 4, lines
    for name, op in (("topk", "TopK"), ("picked", "GatherElements"), ("nms", "NonMaxSuppression")):
        assert (
            sum(line.strip().startswith(f"{name} ({op}, ai.onnx opset 13)") for line in lines) == 1
        )


def _block_indices(shape: tuple[int, ...], block: list[tuple[int, int] | None]) -> np.ndarray:
    """Indices writing the block ``block`` (per indexed axis ``(begin, end)``, None: the whole
    axis) of a tensor of ``shape``, one index tuple per position, in row-major order, as
    PyTorch exports ``y[..., a:b] = v``."""
    ranges = [range(*(r or (0, n))) for r, n in zip(block, shape, strict=False)]
    return np.stack(np.meshgrid(*ranges, indexing="ij"), -1).astype(np.int64)


SCATTER_BLOCKS = {
    # YOLOv7's y[..., 0:2] = (xy * 2 - 0.5 + grid) * stride and y[..., 2:4] = (wh * 2) ** 2 * a
    "xy": ((1, 3, 4, 5, 7), [None, None, None, None, (0, 2)]),
    "wh": ((1, 3, 4, 5, 7), [None, None, None, None, (2, 4)]),
    "inner": ((4, 5, 6), [None, (1, 2), (0, 3)]),  # inside several axes
    "trailing": ((4, 5, 6), [(0, 1), (2, 3)]),  # whole trailing axis
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", list(SCATTER_BLOCKS))
def test_scatter_nd_block(target, case):
    """``ScatterND`` with constant indices that write one block, the updates computed from the
    data (the decoding YOLOv5 before 6.1 and YOLOv7 exports write in place)."""
    shape, block = SCATTER_BLOCKS[case]
    x = _x(13, *shape, scale=1.0)
    bounds = {k: r for k, r in enumerate(block) if r is not None}
    nodes = [
        H("Sigmoid", ["x"], ["s"]),
        H("Slice", ["s", "starts", "ends", "axes"], ["part"]),
        H("Mul", ["part", "two"], ["upd"]),
        H("ScatterND", ["s", "idx", "upd"], ["y"]),
    ]
    inits = {
        "starts": np.array([r[0] for r in bounds.values()]),
        "ends": np.array([r[1] for r in bounds.values()]),
        "axes": np.array(list(bounds)),
        "two": np.array(2, np.float32),
        "idx": _block_indices(shape, block),
    }
    model = make_model(nodes, {"x": x}, ["y"], inits)
    graph = check_against_onnxruntime(model, {"x": x})
    assert {n.op for n in graph.nodes} <= {"sigmoid", "strided_slice", "multiply", "concat"}
    check_on_target(model, {"x": x}, target)


def test_scatter_nd_on_constants_folds():
    data = _x(16, 3, 4)
    idx = np.array([[2, 1], [0, 3]])
    nodes = [H("ScatterND", ["d", "idx", "u"], ["c"]), H("Add", ["x", "c"], ["y"])]
    x = _x(17, 3, 4)
    inits = {"d": data, "idx": idx, "u": np.array([5.0, -5.0], np.float32)}
    graph = check_against_onnxruntime(make_model(nodes, {"x": x}, ["y"], inits), {"x": x})
    assert [n.op for n in graph.nodes] == ["add"]


def test_scatter_nd_refusals():
    """Indices that are not one row-major block, or a reduction, are named, one line each."""
    x = _x(14, 2, 6)
    scattered = np.array([[0, 1], [1, 4]])  # two elements, not a block
    nodes = [
        H("ScatterND", ["x", "scattered", "u"], ["y"], name="scattered"),
        H("ScatterND", ["y", "one", "u"], ["z"], name="adding", reduction="add"),
    ]
    inits = {"scattered": scattered, "one": np.array([[0, 0], [0, 1]]), "u": _x(15, 2)}
    model = make_model(nodes, {"x": x}, ["z"], inits, opset=16)
    with pytest.raises(FrontendError) as err:
        from_onnx(model)
    assert "adding (ScatterND, ai.onnx opset 16): reduction 'add' (only none)" in str(err.value)
    model = make_model(nodes[:1], {"x": x}, ["y"], inits, opset=16)
    with pytest.raises(FrontendError, match="'scattered' .*not one block in row-major order"):
        from_onnx(model)
