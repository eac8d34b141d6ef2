"""Every supported ONNX operator against onnxruntime, on random shapes and attributes.

Each case builds a one- or few-node model with onnx.helper from a seeded generator, imports it,
and compares the reference executor with onnxruntime on the imported graph and after the whole
graph pipeline (NCHW and packed), so the passes are checked on every operator too.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

from tests.compiler.frontend.helpers import check_against_onnxruntime, make_model

SEEDS = range(4)


def rand(rng, *shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, size=shape).astype(np.float32)


@pytest.mark.parametrize("seed", range(8))
def test_conv(seed):
    rng = np.random.default_rng(seed)
    n, c = int(rng.integers(1, 3)), int(rng.choice([2, 4, 6, 8]))
    groups = int(rng.choice([1, 2, c]))
    o = groups * int(rng.integers(1, 4))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    h, w = int(rng.integers(kh + 2, 12)), int(rng.integers(kw + 2, 12))
    attrs = {
        "strides": [int(rng.integers(1, 3)), int(rng.integers(1, 3))],
        "dilations": [int(rng.integers(1, 3)), 1],
        "group": groups,
    }
    auto = ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"][seed % 4]
    if auto == "NOTSET":
        attrs["pads"] = [int(v) for v in rng.integers(0, 3, size=4)]
        attrs["kernel_shape"] = [kh, kw]
    else:
        attrs["auto_pad"] = auto
        attrs["dilations"] = [1, 1]
    inits = {"w": rand(rng, o, c // groups, kh, kw)}
    names = ["x", "w"]
    if seed % 2:
        inits["b"] = rand(rng, o)
        names.append("b")
    node = helper.make_node("Conv", names, ["y"], name="conv", **attrs)
    model = make_model(
        [node], {"x": rand(rng, n, c, h, w)}, ["y"], inits, opset=[11, 13, 18][seed % 3]
    )
    check_against_onnxruntime(model, {"x": rand(rng, n, c, h, w)})


@pytest.mark.parametrize("seed", SEEDS)
def test_batch_norm_after_conv_and_alone(seed):
    rng = np.random.default_rng(seed)
    c = int(rng.choice([3, 8, 16]))
    x = rand(rng, 1, c, 5, 6)
    inits = {
        "w": rand(rng, c, c, 3, 3),
        "s": rand(rng, c), "bb": rand(rng, c), "m": rand(rng, c),
        "v": rand(rng, c, low=0.1, high=2),
    }  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["y"], name="bn",
                         epsilon=float(rng.uniform(1e-5, 1e-2))),
        helper.make_node("BatchNormalization", ["x", "s", "bb", "m", "v"], ["z"], name="bn2"),
    ]  # fmt: skip
    check_against_onnxruntime(
        make_model(nodes, {"x": x}, ["y", "z"], inits, opset=[9, 14][seed % 2]), {"x": x}
    )


UNARY = [
    ("Relu", {}, 9), ("Sigmoid", {}, 13), ("Exp", {}, 13), ("Neg", {}, 13), ("HardSwish", {}, 14),
    ("LeakyRelu", {"alpha": 0.2}, 11), ("LeakyRelu", {}, 16), ("HardSigmoid", {}, 13),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, 6 + 7),
]  # fmt: skip


@pytest.mark.parametrize("op,attrs,opset", UNARY, ids=[f"{u[0]}-{u[2]}" for u in UNARY])
def test_unary(op, attrs, opset):
    rng = np.random.default_rng(len(op))
    x = rand(rng, 2, 16, 3, 4, low=-8, high=8)
    node = helper.make_node(op, ["x"], ["y"], name="u", **attrs)
    check_against_onnxruntime(make_model([node], {"x": x}, ["y"], opset=opset), {"x": x})


def test_sqrt():
    x = np.random.default_rng(0).uniform(0, 4, size=(3, 5)).astype(np.float32)
    node = helper.make_node("Sqrt", ["x"], ["y"])
    check_against_onnxruntime(make_model([node], {"x": x}, ["y"]), {"x": x})


@pytest.mark.parametrize("seed", SEEDS)
def test_clip(seed):
    rng = np.random.default_rng(seed)
    x = rand(rng, 1, 16, 4, 4, low=-10, high=10)
    lo, hi = float(rng.uniform(-5, 0)), float(rng.uniform(0, 5))
    if seed == 0:  # opset < 11: bounds are attributes
        node = helper.make_node("Clip", ["x"], ["y"], min=lo, max=hi)
        model = make_model([node], {"x": x}, ["y"], opset=9)
    else:  # bounds are (optional) inputs
        names = ["x", "lo" if seed != 2 else "", "hi" if seed != 3 else ""]
        inits = {k: np.array(v, np.float32) for k, v in (("lo", lo), ("hi", hi)) if k in names}
        node = helper.make_node("Clip", names, ["y"])
        model = make_model([node], {"x": x}, ["y"], inits, opset=[11, 12, 13][seed - 1])
    check_against_onnxruntime(model, {"x": x})


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("seed", SEEDS)
def test_binary_broadcasting(op, seed):
    rng = np.random.default_rng(seed)
    full = [int(rng.integers(1, 4)), 16, int(rng.integers(1, 5)), int(rng.integers(1, 5))]
    other = [d if rng.random() < 0.5 else 1 for d in full][int(rng.integers(0, 4)) :]
    a = rand(rng, *full)
    b = rand(rng, *other, low=0.5, high=2.0) if op == "Div" else rand(rng, *other)
    first, second = (a, b) if seed % 2 else (b, a)
    if seed >= 2:  # the second operand a constant (per-channel and friends)
        node = helper.make_node(op, ["a", "k"], ["y"], name="bin")
        model = make_model([node], {"a": first}, ["y"], {"k": second})
        check_against_onnxruntime(model, {"a": first})
    else:
        node = helper.make_node(op, ["a", "b"], ["y"], name="bin")
        model = make_model([node], {"a": first, "b": second}, ["y"])
        check_against_onnxruntime(model, {"a": first, "b": second})


@pytest.mark.parametrize("op", ["Max", "Min", "Sum"])
def test_variadic(op):
    rng = np.random.default_rng(1)
    feeds = {"a": rand(rng, 2, 16, 3, 3), "b": rand(rng, 16, 1, 1), "c": rand(rng, 1, 16, 3, 3)}
    node = helper.make_node(op, ["a", "b", "c"], ["y"])
    check_against_onnxruntime(make_model([node], feeds, ["y"], opset=13), feeds)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pool(op, seed):
    rng = np.random.default_rng(seed)
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(2, 4))
    x = rand(rng, 1, 8, int(rng.integers(kh + 3, 13)), int(rng.integers(kw + 3, 13)))
    attrs = {
        "kernel_shape": [kh, kw],
        "strides": [int(rng.integers(1, 3)), int(rng.integers(1, 4))],
    }
    if seed % 6 == 5:
        attrs["auto_pad"] = "SAME_UPPER" if seed < 6 else "SAME_LOWER"
        attrs["strides"] = [min(attrs["strides"][0], kh), min(attrs["strides"][1], kw)]
    else:
        attrs["pads"] = [int(rng.integers(0, kh)), int(rng.integers(0, kw)),
                         int(rng.integers(0, kh)), int(rng.integers(0, kw))]  # fmt: skip
        attrs["ceil_mode"] = int(seed % 2)  # with and without count_include_pad below
    if op == "AveragePool":
        attrs["count_include_pad"] = int(seed // 2 % 2)
    elif seed % 3 == 0 and "auto_pad" not in attrs:
        attrs["dilations"] = [2, 1]
    node = helper.make_node(op, ["x"], ["y"], name="pool", **attrs)
    check_against_onnxruntime(
        make_model([node], {"x": x}, ["y"], opset=[11, 13, 18][seed % 3]), {"x": x}
    )


def test_global_average_pool_and_reduce_mean():
    rng = np.random.default_rng(0)
    x = rand(rng, 2, 16, 5, 7)
    nodes = [
        helper.make_node("GlobalAveragePool", ["x"], ["g"]),
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[2, 3]),
        helper.make_node("ReduceMean", ["x"], ["k"], axes=[-1, -2], keepdims=0),
    ]
    check_against_onnxruntime(make_model(nodes, {"x": x}, ["g", "m", "k"], opset=13), {"x": x})
    node = helper.make_node("ReduceMean", ["x", "axes"], ["m"])
    model = make_model([node], {"x": x}, ["m"], {"axes": np.array([2, 3])}, opset=18)
    check_against_onnxruntime(model, {"x": x})


@pytest.mark.parametrize("seed", SEEDS)
def test_flatten_reshape_transpose(seed):
    rng = np.random.default_rng(seed)
    x = rand(rng, 2, 4, 3, 5)
    perm = [int(p) for p in rng.permutation(4)]
    nodes = [
        helper.make_node("Flatten", ["x"], ["f"], axis=int(rng.integers(-4, 5))),
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Transpose", ["x"], ["t"], perm=perm),
        helper.make_node("Transpose", ["x"], ["t2"]),
    ]
    shape = [[0, -1, 5], [2, 0, 15], [-1, 60], [2, 0, 0, 5, 1]][seed]
    if seed == 3:
        nodes[1] = helper.make_node("Reshape", ["x", "shape"], ["r0"])
        nodes.append(helper.make_node("Reshape", ["r0", "shape2"], ["r"]))
    inits = {"shape": np.array(shape, np.int64), "shape2": np.array([2, 60], np.int64)}
    if seed != 3:
        inits.pop("shape2")
    model = make_model(nodes, {"x": x}, ["f", "r", "t", "t2"], inits)
    check_against_onnxruntime(model, {"x": x})


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze(opset):
    x = rand(np.random.default_rng(0), 1, 3, 1, 4)
    if opset == 11:
        nodes = [helper.make_node("Squeeze", ["x"], ["s"], axes=[0, -2]),
                 helper.make_node("Unsqueeze", ["s"], ["u"], axes=[-1, 0]),
                 helper.make_node("Squeeze", ["x"], ["all"])]  # fmt: skip
        inits = {}
    else:
        nodes = [helper.make_node("Squeeze", ["x", "a"], ["s"]),
                 helper.make_node("Unsqueeze", ["s", "b"], ["u"]),
                 helper.make_node("Squeeze", ["x"], ["all"])]  # fmt: skip
        inits = {"a": np.array([0, -2]), "b": np.array([-1, 0])}
    check_against_onnxruntime(
        make_model(nodes, {"x": x}, ["u", "all"], inits, opset=opset), {"x": x}
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_concat(seed):
    rng = np.random.default_rng(seed)
    axis = int(rng.integers(-4, 4))
    shapes = []
    for _ in range(3):
        s = [2, 16, 3, 4]
        s[axis % 4] = int(rng.integers(1, 4)) * (16 if axis % 4 == 1 else 1)
        shapes.append(s)
    feeds = {f"x{k}": rand(rng, *s) for k, s in enumerate(shapes)}
    node = helper.make_node("Concat", list(feeds), ["y"], axis=axis)
    check_against_onnxruntime(make_model([node], feeds, ["y"]), feeds)


@pytest.mark.parametrize("seed", SEEDS)
def test_pad(seed):
    rng = np.random.default_rng(seed)
    x = rand(rng, 1, 16, 4, 5)
    pads = [0, 0, int(rng.integers(0, 3)), int(rng.integers(0, 3)),
            0, 0, int(rng.integers(0, 3)), int(rng.integers(0, 3))]  # fmt: skip
    if seed == 0:
        pads[1], pads[5] = 1, 2  # channels too
    value = float(rng.uniform(-1, 1))
    if seed == 3:  # opset 18: pads over the given axes only
        node = helper.make_node("Pad", ["x", "p", "v", "axes"], ["y"])
        inits = {"p": np.array(pads[2:4] + pads[6:8]), "v": np.array(value, np.float32),
                 "axes": np.array([2, -1])}  # fmt: skip
        model = make_model([node], {"x": x}, ["y"], inits, opset=18)
    else:
        node = helper.make_node("Pad", ["x", "p", "v"], ["y"], mode="constant")
        inits = {"p": np.array(pads), "v": np.array(value, np.float32)}
        model = make_model([node], {"x": x}, ["y"], inits, opset=[11, 13, 13][seed])
    check_against_onnxruntime(model, {"x": x})


@pytest.mark.parametrize("seed", range(6))
def test_gemm(seed):
    rng = np.random.default_rng(seed)
    m, k, n = int(rng.integers(1, 4)), int(rng.integers(2, 9)), int(rng.integers(2, 9))
    ta, tb = seed % 2, seed // 2 % 2
    a = rand(rng, *((k, m) if ta else (m, k)))
    b = rand(rng, *((n, k) if tb else (k, n)))
    c = [rand(rng, n), rand(rng, 1, n), rand(rng, m, n), rand(rng, m, 1), None, rand(rng, n)][seed]
    attrs = {"transA": ta, "transB": tb}
    if seed >= 4:
        attrs.update(alpha=0.5, beta=2.0)
    inits = {"b": b} | ({"c": c} if c is not None else {})
    node = helper.make_node("Gemm", ["a", "b"] + (["c"] if c is not None else []), ["y"], **attrs)
    check_against_onnxruntime(make_model([node], {"a": a}, ["y"], inits), {"a": a})


MATMUL_SHAPES = [((3, 4), (4, 5)), ((2, 3, 4), (4, 6)), ((2, 1, 3, 4), (5, 4, 2)),
                 ((4,), (4, 3)), ((2, 3, 4), (4,))]  # fmt: skip


@pytest.mark.parametrize("shapes", MATMUL_SHAPES)
def test_matmul(shapes):
    rng = np.random.default_rng(0)
    feeds = {"a": rand(rng, *shapes[0]), "b": rand(rng, *shapes[1])}
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    check_against_onnxruntime(make_model([node], feeds, ["y"]), feeds)


@pytest.mark.parametrize("opset,axis", [(11, 1), (11, 3), (11, -2), (13, 1), (13, -1), (13, 2)])
def test_softmax(opset, axis):
    x = rand(np.random.default_rng(0), 2, 3, 4, 5, low=-4, high=4)
    node = helper.make_node("Softmax", ["x"], ["y"], axis=axis)
    check_against_onnxruntime(make_model([node], {"x": x}, ["y"], opset=opset), {"x": x})


def test_constant_identity_dropout_cast():
    x = rand(np.random.default_rng(0), 2, 16, 2, 2)
    nodes = [
        helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.float32([2.0]))),
        helper.make_node("Constant", [], ["kf"], value_float=0.5),
        helper.make_node("Mul", ["x", "k"], ["m"]),
        helper.make_node("Add", ["m", "kf"], ["a"]),
        helper.make_node("Identity", ["a"], ["i"]),
        helper.make_node("Dropout", ["i"], ["d"], name="drop"),
        helper.make_node("Cast", ["d"], ["c"], to=6),
        helper.make_node("Cast", ["c"], ["y"], to=1),
    ]
    check_against_onnxruntime(make_model(nodes, {"x": x}, ["y", "c"], opset=13), {"x": x})


@pytest.mark.parametrize("beta", [0.75, 0.5, 1.0])
def test_lrn(beta):
    x = rand(np.random.default_rng(0), 1, 7, 3, 3, low=-3, high=3)
    size = [5, 3, 1][int(4 * beta) % 3]
    node = helper.make_node("LRN", ["x"], ["y"], size=size, alpha=1e-2, beta=beta, bias=2.0)
    check_against_onnxruntime(make_model([node], {"x": x}, ["y"], opset=13), {"x": x})


def test_shape_subgraph_folds_to_constants():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters emit before a classifier,
    plus Slice, ConstantOfShape, Range, Expand, Equal, Where, Size on the way."""
    x = rand(np.random.default_rng(0), 2, 8, 3, 3)
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
        helper.make_node("Slice", ["s", "one", "big"], ["rest"]),
        helper.make_node(
            "ConstantOfShape",
            ["three"],
            ["ones"],
            value=numpy_helper.from_array(np.array([1], np.int64)),
        ),  # fmt: skip
        helper.make_node("Range", ["r0", "r1", "r2"], ["rng"]),
        helper.make_node("Equal", ["rng", "rng"], ["eq"]),
        helper.make_node("Where", ["eq", "ones", "ones"], ["w"]),
        helper.make_node("Expand", ["neg1", "one"], ["m1"]),
        helper.make_node("Size", ["x"], ["size"]),
        helper.make_node("Cast", ["size"], ["sizef"], to=1),
        helper.make_node("Concat", ["n1", "m1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["flat"]),
        helper.make_node("Div", ["flat", "sizef"], ["y"]),
    ]
    inits = {
        "zero": np.array(0), "zero1": np.array([0]), "one": np.array([1]),
        "big": np.array([1 << 62]), "three": np.array([3]), "neg1": np.array([-1]),
        "r0": np.array(0), "r1": np.array(3), "r2": np.array(1),
    }  # fmt: skip
    g = check_against_onnxruntime(
        make_model(nodes, {"x": x}, ["y", "rest", "w"], inits, output_shapes={"y": (2, 72)}),
        {"x": x},
    )
    assert [n.op for n in g.nodes] == ["reshape", "divide"]
