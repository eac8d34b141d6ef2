"""Build small ONNX models with onnx.helper and compare the frontend with onnxruntime."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from compiler.frontend.onnx_import import from_onnx
from compiler.graph import Graph, evaluate, graph_pipeline, run_pipeline
from compiler.passes.pipeline import PassOptions

_TYPES = {"float32": onnx.TensorProto.FLOAT, "int64": onnx.TensorProto.INT64,
          "int32": onnx.TensorProto.INT32, "int8": onnx.TensorProto.INT8,
          "uint8": onnx.TensorProto.UINT8, "bool": onnx.TensorProto.BOOL}  # fmt: skip


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Mapping[str, np.ndarray],
    outputs: Sequence[str],
    initializers: Mapping[str, np.ndarray] | None = None,
    opset: int = 13,
    output_shapes: Mapping[str, Sequence[int]] | None = None,
) -> onnx.ModelProto:
    """A model whose inputs have the shapes and dtypes of the given arrays; output types are
    left for onnx shape inference."""
    ins = [
        helper.make_tensor_value_info(k, _TYPES[str(v.dtype)], list(v.shape))
        for k, v in inputs.items()
    ]
    outs = [helper.make_empty_tensor_value_info(o) for o in outputs]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in (initializers or {}).items()]
    graph = helper.make_graph(list(nodes), "test", ins, outs, inits)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8 if opset < 15 else 10
    )
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except onnx.shape_inference.InferenceError:  # e.g. an operator of an unknown domain
        inferred = model
    types = {vi.name: vi.type for vi in inferred.graph.value_info}
    types.update(
        {vi.name: vi.type for vi in inferred.graph.output if vi.type.HasField("tensor_type")}
    )
    for vi in model.graph.output:
        if vi.name in types:
            vi.type.CopyFrom(types[vi.name])
        else:
            vi.CopyFrom(helper.make_tensor_value_info(vi.name, onnx.TensorProto.FLOAT, None))
        if output_shapes and vi.name in output_shapes:
            elem = vi.type.tensor_type.elem_type
            vi.CopyFrom(helper.make_tensor_value_info(vi.name, elem, output_shapes[vi.name]))
    return model


def run_onnxruntime(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, dict(feeds))


def check_against_onnxruntime(
    model: onnx.ModelProto,
    feeds: Mapping[str, np.ndarray],
    *,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    pipeline: bool = True,
) -> Graph:
    """Import ``model``, evaluate it with the reference executor (as imported and after the
    whole graph pipeline, NCHW and packed) and compare each with onnxruntime."""
    graph = from_onnx(model)
    expected = run_onnxruntime(model, feeds)
    stages = [("imported", graph)]
    if pipeline:
        opts = PassOptions(verify=True, dump=frozenset())
        stages.append(("pipeline", run_pipeline(graph, graph_pipeline(), opts)))
        stages.append(("packed", run_pipeline(graph, graph_pipeline(block_c=8), opts)))
    for stage, g in stages:
        got = evaluate(g, feeds)
        assert len(got) == len(expected)
        for k, (a, b) in enumerate(zip(got, expected, strict=True)):
            assert a.shape == b.shape, f"{stage} output {k}: shape {a.shape} != {b.shape}"
            assert str(a.dtype) == str(b.dtype), f"{stage} output {k}: {a.dtype} != {b.dtype}"
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"{stage} output {k}")
    return graph
