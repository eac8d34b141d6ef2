"""Run an ONNX model through ``runtime.InferenceSession`` on the cpu and gpu targets and compare
every output with onnxruntime (the gpu target on numba's CUDA simulator under the suite)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
import pytest

from tests.compiler.frontend.helpers import check_against_onnxruntime, run_onnxruntime

#: The fp32 targets; the gpu case carries the ``gpu`` marker.
TARGETS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]


def check_on_target(
    model: onnx.ModelProto,
    feeds: Mapping[str, np.ndarray],
    target: str,
    *,
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> None:
    """The reference executor (imported, after the pipeline) and the compiled model on
    ``target`` both match onnxruntime."""
    from runtime.session import InferenceSession

    check_against_onnxruntime(model, feeds, rtol=rtol, atol=atol)
    expected = run_onnxruntime(model, feeds)
    got = InferenceSession(model.SerializeToString(), target=target).run(None, dict(feeds))
    assert len(got) == len(expected)
    for k, (a, b) in enumerate(zip(got, expected, strict=True)):
        assert a.shape == b.shape, f"{target} output {k}: shape {a.shape} != {b.shape}"
        assert str(a.dtype) == str(b.dtype), f"{target} output {k}: {a.dtype} != {b.dtype}"
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"{target} output {k}")
