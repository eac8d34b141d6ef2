"""ResNet-18 from the zoo through the graph pipeline: golden text of the fused graph (conv+bn+relu
in one group, the residual add+relu in the second conv's group), results preserved at every
stage, and the static memory plan's target: peak activation bytes at most half the naive sum.
"""

from __future__ import annotations

import numpy as np
import pytest

from compiler.frontend.onnx_import import from_onnx
from compiler.frontend.zoo import load_zoo
from compiler.graph import PatternKind, evaluate, graph_pipeline, run_pipeline, to_text
from compiler.passes.pipeline import PassOptions

VERIFY = PassOptions(verify=True, dump=frozenset())


@pytest.fixture(scope="module")
def resnet18_32():
    model = load_zoo("resnet18", image_size=32)
    return model, from_onnx(model, name="resnet18")


@pytest.mark.parametrize("block_c", [None, 16])
def test_golden_fused_resnet18(resnet18_32, graph_golden, block_c):
    _, graph = resnet18_32
    fused = run_pipeline(graph, graph_pipeline(block_c=block_c), VERIFY)
    suffix = "nchw" if block_c is None else f"nchw1n{block_c}c"
    graph_golden(f"resnet18_32_fused_{suffix}", to_text(fused))


def test_resnet18_fusion_shape(resnet18_32):
    _, graph = resnet18_32
    fused = run_pipeline(graph, graph_pipeline(), VERIFY)
    ops = [[n.op for n in g.nodes] for g in fused.groups]
    assert ops[0] == ["conv2d", "relu"]  # conv1 + bn1 (folded) + relu
    assert ops.count(["conv2d", "add", "relu"]) == 8  # each block's conv2 + bn2 + residual + relu
    assert ops.count(["conv2d", "relu"]) == 9
    assert ops.count(["conv2d"]) == 3  # the downsample convs (+ bn)
    assert ["global_avg_pool2d", "reshape"] in ops and ["dense"] in ops
    anchors = {g.pattern for g in fused.groups}
    assert anchors == {PatternKind.COMPLEX_OUT_FUSABLE, PatternKind.REDUCTION}


@pytest.mark.parametrize("block_c", [None, 16])
def test_resnet18_results_at_every_stage(resnet18_32, block_c):
    model, graph = resnet18_32
    x = np.random.default_rng(0).normal(size=(1, 3, 32, 32)).astype(np.float32)
    import onnxruntime as ort

    expected = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, {"data": x})[0]
    pipeline = graph_pipeline(block_c=block_c)
    stages = {}
    opts = PassOptions(verify=True, dump=frozenset({"all"}),
                       on_dump=lambda name, text: None)  # fmt: skip
    for name in pipeline.names():
        g = run_pipeline(graph, pipeline, opts, stop_after=name)
        stages[name] = evaluate(g, {"data": x})[0]
    for name, got in stages.items():
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("block_c", [None, 16])
def test_resnet18_memory_plan_target(block_c):
    # full size: only the structure is needed, nothing is evaluated
    graph = from_onnx(load_zoo("resnet18"), name="resnet18")
    plan = run_pipeline(graph, graph_pipeline(block_c=block_c), VERIFY).memory_plan
    assert plan.peak_bytes * 2 <= plan.naive_bytes, plan.summary()
    # the largest activation (conv1's 64x112x112 output) must fit, and its reader's output too
    assert plan.peak_bytes >= 64 * 112 * 112 * 4 + 64 * 56 * 56 * 4
