"""The onnx wheel's model-zoo topologies (opset 9, IR 3) import and go through the whole graph
pipeline; a few also run on the reference executor against onnxruntime.

Their weights are ConstantOfShape fills, so the classifier's softmax is flat: the numeric check
compares the logits before it (added as an extra model output), which are not.
"""

from __future__ import annotations

import collections

import numpy as np
import onnx
import pytest
from onnx import helper

from compiler.frontend.onnx_import import from_onnx
from compiler.frontend.zoo import wheel_models
from compiler.graph import PatternKind, evaluate, graph_pipeline, run_pipeline
from compiler.passes.pipeline import PassOptions
from tests.compiler.frontend.helpers import run_onnxruntime

MODELS = wheel_models()
NUMERIC = ("bvlc_alexnet", "inception_v2", "shufflenet", "squeezenet")


def test_the_wheel_has_its_models():
    assert {"resnet50", "squeezenet", "densenet121", "inception_v1", "vgg19"} <= set(MODELS)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_imports_and_runs_the_pipeline(name):
    model = onnx.load(MODELS[name])
    onnx_ops = collections.Counter(n.op_type for n in model.graph.node)
    graph = from_onnx(model)
    # every ONNX Conv is a conv2d (LRN adds one window-sum conv2d each)
    convs = sum(n.op == "conv2d" for n in graph.nodes)
    assert convs == onnx_ops["Conv"] + onnx_ops["LRN"]
    opts = PassOptions(verify=True, dump=frozenset())
    for block_c in (None, 16):
        fused = run_pipeline(graph, graph_pipeline(block_c=block_c), opts)
        assert not any(n.op == "batch_norm" for n in fused.nodes)
        anchors = [g for g in fused.groups if g.pattern is PatternKind.COMPLEX_OUT_FUSABLE]
        assert len(anchors) == convs + onnx_ops["Gemm"]
        plan = fused.memory_plan
        assert 0 < plan.peak_bytes < plan.naive_bytes


def with_logits_output(model: onnx.ModelProto) -> onnx.ModelProto:
    softmax = [n for n in model.graph.node if n.op_type == "Softmax"][-1]
    out = helper.make_tensor_value_info(softmax.input[0], onnx.TensorProto.FLOAT, None)
    model.graph.output.append(out)
    return model


@pytest.mark.parametrize("name", NUMERIC)
def test_logits_match_onnxruntime(name):
    model = with_logits_output(onnx.load(MODELS[name]))
    graph = from_onnx(model, check=False)
    x = np.random.default_rng(0).normal(size=graph.inputs[0].type.shape).astype(np.float32)
    expected = run_onnxruntime(model, {graph.inputs[0].name: x})[-1]
    fused = run_pipeline(graph, graph_pipeline(block_c=16))
    for g in (graph, fused):
        got = evaluate(g, [x])[-1]
        scale = float(np.abs(expected).max())
        assert scale > 0
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5 * scale)


def backend_test_dirs():
    import os

    base = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    dirs = []
    for kind in ("pytorch-converted", "pytorch-operator", "simple"):
        root = os.path.join(base, kind)
        if os.path.isdir(root):
            dirs += sorted(os.path.join(root, d) for d in os.listdir(root))
    return [d for d in dirs if os.path.isfile(os.path.join(d, "model.onnx"))]


def test_every_backend_test_model_imports_exactly_or_is_refused_by_name():
    """The wheel's small backend test models (mostly opset 6 PyTorch exports, sequence and
    string operators): each one either imports and reproduces its stored outputs, or is refused
    with a FrontendError (never another exception)."""
    import glob

    from onnx import numpy_helper

    from compiler.errors import FrontendError

    dirs = backend_test_dirs()
    assert len(dirs) > 50
    imported = 0
    for d in dirs:
        try:
            graph = from_onnx(f"{d}/model.onnx")
        except FrontendError as e:
            assert str(e).strip(), d
            continue
        data = f"{d}/test_data_set_0"
        feeds = [numpy_helper.to_array(onnx.load_tensor(f))
                 for f in sorted(glob.glob(f"{data}/input_*.pb"))]  # fmt: skip
        expected = [numpy_helper.to_array(onnx.load_tensor(f))
                    for f in sorted(glob.glob(f"{data}/output_*.pb"))]  # fmt: skip
        for g in (graph, run_pipeline(graph, graph_pipeline(block_c=8))):
            for got, want in zip(evaluate(g, feeds), expected, strict=True):
                np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4, err_msg=d)
        imported += 1
    assert imported >= 3
