"""Tuning logs and calibration data as a careless user or an attacker writes them: every case
loads (a log) or compiles (calibration), or is refused with a one-line compiler error that names
the fault; nothing ends in another exception."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.errors import CompilerError
from compiler.tune import conv2d_task
from compiler.tune.measure import MeasureResult
from compiler.tune.records import Record, load_records

TASK = conv2d_task(8, 8, 16, 16, 3, 1, 1, name="t")
GOOD = Record(TASK, TASK.default_config(), MeasureResult(1000.0), 1.0).to_line()

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                               max_size=4),
    max_leaves=20,
)  # fmt: skip


def _mutations():
    record = json.loads(GOOD)
    paths = [("result", "cost"), ("config", "index"), ("config", "values"), ("task",), ("time",)]
    return st.tuples(st.sampled_from(paths), _json).map(lambda pv: _mutate(record, *pv))


def _mutate(record: dict, path: tuple, value) -> str:
    doc = json.loads(json.dumps(record))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return json.dumps(doc)


@settings(max_examples=80)
@given(line=st.one_of(_mutations(), st.text(max_size=200), st.binary(max_size=200)))
def test_a_tuning_log_loads_or_is_refused_by_line(tmp_path_factory, line):
    path = tmp_path_factory.mktemp("log") / "t.jsonl"
    data = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
    path.write_bytes(GOOD.encode() + b"\n" + data + b"\n")
    try:
        records = load_records(path)
    except CompilerError as e:
        assert "\n" not in str(e) and "t.jsonl:" in str(e), str(e)
        return
    assert records[0].result.cost == 1000.0
    for r in records:
        assert r.result.cost is None or r.result.cost >= 0


@settings(max_examples=25, deadline=None)
@given(
    shape=st.sampled_from([(2, 1, 8, 8), (1, 1, 8, 8), (0, 1, 8, 8), (3, 1, 8, 8), (2, 8, 8),
                           (2, 1, 8, 9)]),
    special=st.sampled_from([None, np.nan, np.inf, 1e30, 0.0]),
)  # fmt: skip
def test_calibration_data_compiles_or_is_refused_in_one_line(shape, special):
    from runtime.vta_session import VtaInferenceSession

    data = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    if special is not None and data.size:
        data.flat[0] = special
    try:
        sess = VtaInferenceSession(_MODEL, "vta", calibration=data)
    except CompilerError as e:
        assert "\n" not in str(e), str(e)
        return
    (y,) = sess.run(None, {"x": np.zeros((1, 1, 8, 8), np.float32)})
    assert np.isfinite(y).all()


def _model() -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((4, 1, 3, 3), np.float32) / 9, "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"])], "cal",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


_MODEL = _model()
