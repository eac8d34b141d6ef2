"""Generated ONNX models and run-time feeds: every case either runs on the cpu target equal to
onnxruntime (where onnxruntime accepts the model) or is refused with a compiler error whose
message is one line; nothing ends in another exception.

The generator chains operators an exporter writes (Conv with random kernel, stride, padding,
dilation and groups, pools, activations, broadcast arithmetic, Concat, Transpose, Slice,
reductions, Softmax, Flatten) over a random NCHW input.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import CompilerError
from runtime.session import InferenceSession

OPSET = 13


class _Builder:
    def __init__(self, draw, shape: tuple[int, ...]) -> None:
        self.draw = draw
        self.shape = shape
        self.nodes: list = []
        self.inits: list = []
        self.name = "x"
        self.rng = np.random.default_rng(draw(st.integers(0, 2**16)))

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{len(self.nodes)}_{len(self.inits)}"

    def const(self, arr: np.ndarray) -> str:
        name = self.fresh("c")
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def add(self, op: str, inputs: list[str], shape: tuple[int, ...], **attrs) -> None:
        out = self.fresh("t")
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        self.name, self.shape = out, shape

    # every step keeps the NCHW rank so that any step can follow any other
    def conv(self) -> None:
        n, c, h, w = self.shape
        d = self.draw
        groups = d(st.sampled_from([g for g in (1, 2, c) if c % g == 0]))
        oc = groups * d(st.integers(1, 3))
        k = d(st.integers(1, min(3, h, w)))
        stride = d(st.integers(1, 2))
        dil = d(st.integers(1, 2)) if k > 1 and min(h, w) >= 2 * k else 1
        pads = [d(st.integers(0, k - 1)) for _ in range(4)]
        span = dil * (k - 1) + 1
        oh = (h + pads[0] + pads[2] - span) // stride + 1
        ow = (w + pads[1] + pads[3] - span) // stride + 1
        if oh < 1 or ow < 1:
            return
        wt = self.rng.normal(size=(oc, c // groups, k, k)).astype(np.float32)
        ins = [self.name, self.const(wt)]
        if d(st.booleans()):
            ins.append(self.const(self.rng.normal(size=oc).astype(np.float32)))
        self.add("Conv", ins, (n, oc, oh, ow), kernel_shape=[k, k], strides=[stride, stride],
                 pads=pads, dilations=[dil, dil], group=groups)  # fmt: skip

    def pool(self) -> None:
        n, c, h, w = self.shape
        d = self.draw
        op = d(st.sampled_from(["MaxPool", "AveragePool", "GlobalAveragePool"]))
        if op == "GlobalAveragePool":
            self.add(op, [self.name], (n, c, 1, 1))
            return
        k = d(st.integers(1, min(3, h, w)))
        stride = d(st.integers(1, 2))
        pads = [d(st.integers(0, k - 1)) for _ in range(4)]
        oh = (h + pads[0] + pads[2] - k) // stride + 1
        ow = (w + pads[1] + pads[3] - k) // stride + 1
        extra = {"count_include_pad": d(st.integers(0, 1))} if op == "AveragePool" else {}
        self.add(op, [self.name], (n, c, oh, ow), kernel_shape=[k, k], strides=[stride, stride],
                 pads=pads, **extra)  # fmt: skip

    def activation(self) -> None:
        op = self.draw(st.sampled_from(["Relu", "Sigmoid", "Tanh", "Clip", "LeakyRelu"]))
        if op == "Clip":
            lo, hi = sorted(self.draw(st.lists(st.floats(-3, 3), min_size=2, max_size=2)))
            ins = [self.name, self.const(np.float32(lo)), self.const(np.float32(hi))]
            self.add(op, ins, self.shape)
        elif op == "LeakyRelu":
            self.add(op, [self.name], self.shape, alpha=self.draw(st.floats(0.0, 0.5)))
        else:
            self.add(op, [self.name], self.shape)

    def arithmetic(self) -> None:
        n, c, h, w = self.shape
        op = self.draw(st.sampled_from(["Add", "Mul", "Sub", "Max"]))
        other = self.draw(st.sampled_from([(1,), (1, c, 1, 1), (n, c, h, w), (w,)]))
        self.add(op, [self.name, self.const(self.rng.normal(size=other).astype(np.float32))],
                 self.shape)  # fmt: skip

    def concat(self) -> None:
        n, c, h, w = self.shape
        self.add("Concat", [self.name, self.name], (n, 2 * c, h, w), axis=1)

    def transpose(self) -> None:
        n, c, h, w = self.shape
        self.add("Transpose", [self.name], (n, c, w, h), perm=[0, 1, 3, 2])

    def slice(self) -> None:
        n, c, h, w = self.shape
        if h < 2:
            return
        start = self.draw(st.integers(0, h - 1))
        bounds = [self.const(np.array([v], np.int64)) for v in (start, h, 2)]
        ins = [self.name, *bounds]
        self.add("Slice", ins, (n, c, h - start, w))

    def reduce(self) -> None:
        n, c, h, w = self.shape
        op = self.draw(st.sampled_from(["ReduceMean", "ReduceMax", "ReduceSum"]))
        self.add(op, [self.name], (n, c, 1, w), axes=[2], keepdims=1)

    def softmax(self) -> None:
        self.add("Softmax", [self.name], self.shape, axis=self.draw(st.integers(-4, 3)))


STEPS = ["conv", "conv", "pool", "activation", "arithmetic", "concat", "transpose", "slice",
         "reduce", "softmax"]  # fmt: skip


@st.composite
def models(draw):
    shape = (1, draw(st.integers(1, 6)), draw(st.integers(1, 10)), draw(st.integers(1, 10)))
    b = _Builder(draw, shape)
    for _ in range(draw(st.integers(1, 5))):
        getattr(b, draw(st.sampled_from(STEPS)))()
    if not b.nodes:
        b.activation()
    if draw(st.booleans()):
        n, c, h, w = b.shape
        b.add("Flatten", [b.name], (n, c * h * w), axis=1)
    graph = helper.make_graph(
        b.nodes, "fuzz",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info(b.name, TensorProto.FLOAT, list(b.shape))],
        b.inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model.SerializeToString(), shape


def _ours(data: bytes, x: np.ndarray) -> np.ndarray | str:
    try:
        (y,) = InferenceSession(data, num_threads=1).run(None, {"x": x})
    except CompilerError as e:
        assert "\n" not in str(e).strip(), str(e)
        return str(e)
    return y


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(case=models(), seed=st.integers(0, 2**16))
def test_generated_models_match_onnxruntime_or_are_refused_in_one_line(case, seed):
    data, shape = case
    x = np.random.default_rng(seed).normal(size=shape).astype(np.float32)
    ours = _ours(data, x)
    try:
        (want,) = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    except Exception:  # onnxruntime refuses the model: ours may refuse it or run it
        return
    if isinstance(ours, str):
        pytest.fail(f"onnxruntime runs the model, vtac refuses it: {ours}")
    assert ours.shape == want.shape
    np.testing.assert_allclose(ours, want, rtol=1e-4, atol=1e-4)


@settings(max_examples=30)
@given(
    dtype=st.sampled_from(["float32", "float64", "int32", "int8", "bool"]),
    shape=st.lists(st.integers(0, 5), min_size=0, max_size=5),
    value=st.sampled_from([0.0, np.nan, np.inf, -1e38, 3.0]),
)
def test_run_time_feeds_are_checked_before_any_kernel(dtype, shape, value):
    """A feed of another dtype or shape is refused naming the input; NaN and Inf in a float
    feed of the right shape run as onnxruntime runs them (the cpu target computes in float)."""
    from runtime.errors import FeedError

    sess = _small_session()
    with np.errstate(invalid="ignore"):  # NaN and Inf cast to integers: any value will do
        x = np.full(shape, value).astype(dtype) if dtype != "bool" else np.zeros(shape, bool)
    right = dtype == "float32" and tuple(shape) == (1, 2, 4, 4)
    if not right:
        with pytest.raises(FeedError, match="input 'x'"):
            sess.run(None, {"x": x})
        return
    (y,) = sess.run(None, {"x": x})
    (want,) = ort.InferenceSession(_SMALL, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=1e-5, equal_nan=True)


def _small_model() -> bytes:
    w = numpy_helper.from_array(np.ones((3, 2, 3, 3), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])], [w],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model.SerializeToString()


_SMALL = _small_model()
_SESSIONS: dict[str, InferenceSession] = {}


def _small_session() -> InferenceSession:
    if "s" not in _SESSIONS:
        _SESSIONS["s"] = InferenceSession(_SMALL, num_threads=1)
    return _SESSIONS["s"]
