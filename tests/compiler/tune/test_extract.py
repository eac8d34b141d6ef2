import pytest

from compiler.tune.extract import extract_tasks
from compiler.tune.measure import MeasureResult
from compiler.tune.records import Record, apply_best


@pytest.fixture(scope="module")
def resnet18():
    from compiler.frontend.zoo import load_zoo

    return load_zoo("resnet18", image_size=32)


def test_accelerator_tasks_of_resnet18(resnet18):
    from compiler.frontend.onnx_import import from_onnx

    found = extract_tasks(from_onnx(resnet18), "vta-1x16x16")
    assert found.skipped == []
    assert sum(t.weight for t in found.tasks) == 21  # 20 convolutions and the classifier
    assert len({t.key for t in found.tasks}) == len(found.tasks) == 12
    assert {t.kind for t in found.tasks} == {"conv2d", "dense"}
    assert all(t.hw == "vta-1x16x16" for t in found.tasks)


def test_cpu_tasks_and_apply_best_per_group(resnet18):
    from compiler.model.cpu import optimize

    graph = optimize(resnet18)
    found = extract_tasks(graph, target="cpu")
    assert sum(t.weight for t in found.tasks) == 21 and found.skipped == []
    task = next(t for t in found.tasks if t.weight == 4)  # layer1's four 3x3 convolutions
    # a point with knobs the strategy's defaults do not set: they reach the group's schedule
    added = dict(reduce_order="kh_ic_kw", ic_inner=4, unroll_kw=True, outer_order="h_oc")
    idx = task.space().index_of(task.default_config().values | added)
    ctx = apply_best([Record(task, task.space().config(idx), MeasureResult(1e-4))])
    anchors = [g.anchor for g in graph.groups if g.anchor is not None]
    knobs = {a.label: ctx.group_knobs(a) for a in anchors}
    tuned = [name for name, k in knobs.items() if k]
    assert len(tuned) == 4
    assert all(knobs[n] == {k: v for k, v in task.knobs(idx).items() if k != "parallel"}
               for n in tuned)  # fmt: skip
    assert all(knobs[n][k] == v for n in tuned for k, v in added.items())
    assert "fc" in ctx.fell_back and len(ctx.used) == 4


def test_cpu_tasks_of_depthwise_convolutions():
    """A packed depthwise convolution is a ``depthwise`` task; one whose channels do not fill
    blocks runs in NCHW and is skipped with the reason."""
    import numpy as np

    from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    from compiler.graph.pipeline import graph_pipeline, run_pipeline
    from compiler.model.cpu import CPU_BLOCK_C
    from compiler.tune.extract import cpu_task_of_node

    nodes = []
    for c in (32, 24):
        x = Var(f"x{c}", TensorType((1, c, 9, 9), "float32", "NCHW"))
        w = Constant(np.ones((c, 1, 3, 3), np.float32), name=f"w{c}")
        dw = Node("conv2d", (x, w), {"groups": c, "padding": (1, 1, 1, 1), "strides": (2, 2)},
                  name=f"dw{c}")  # fmt: skip
        nodes.append((x, dw))
    graph = Graph.from_outputs([x for x, _ in nodes], [d for _, d in nodes])
    graph = run_pipeline(graph, graph_pipeline(block_c=CPU_BLOCK_C))
    convs = {n.label: n for n in graph.nodes if n.op == "conv2d"}
    task, reason = cpu_task_of_node(convs["dw32"])
    assert task is not None and reason == "", reason
    assert task.key == "cpu/cpu/depthwise/b1_h9_w9_c32_k3_s2_p1"
    task, reason = cpu_task_of_node(convs["dw24"])
    assert task is None and "not packed" in reason
    found = extract_tasks(graph, target="cpu")
    assert [t.kind for t in found.tasks] == ["depthwise"]
    assert [label for label, _ in found.skipped] == ["dw24"]
