"""Valid models at the edges of what a graph can be: scalar tensors, constant outputs."""

from __future__ import annotations

import numpy as np
from onnx import helper

from runtime.session import InferenceSession
from tests.compiler.frontend.helpers import check_against_onnxruntime, make_model


def test_a_rank_0_input_and_output_run_on_the_cpu():
    model = make_model([helper.make_node("Relu", ["s"], ["y"])], {"s": np.float32(0)}, ["y"])
    for v in (-1.5, 2.25):
        (y,) = InferenceSession(model.SerializeToString()).run(None, {"s": np.array(v, np.float32)})
        assert y.shape == () and y == max(v, 0.0)
    check_against_onnxruntime(model, {"s": np.array(3.5, np.float32)})
