"""The trained digits CNN from the zoo, imported and run through the whole graph pipeline on its
held-out MNIST images by the reference executor: the same predictions as onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.frontend.onnx_import import from_onnx
from compiler.frontend.zoo import digits_test, load_zoo
from compiler.graph import evaluate, graph_pipeline, run_pipeline

BATCH = 250


@pytest.mark.parametrize("block_c", [None, 16])
def test_digits_predictions_match_onnxruntime(block_c):
    import onnxruntime as ort

    images, labels = digits_test()
    images, labels = images[:BATCH], labels[:BATCH]
    model = load_zoo("digits", batch=BATCH)
    fused = run_pipeline(from_onnx(model), graph_pipeline(block_c=block_c))
    logits = evaluate(fused, {"data": images})[0]
    expected = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, {"data": images})[0]
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)
    assert (logits.argmax(1) == expected.argmax(1)).all()
    assert (logits.argmax(1) == labels).mean() > 0.9  # a trained network, on held-out digits
