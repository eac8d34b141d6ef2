"""Generated ONNX models on the accelerator (``InferenceSession(model, target="vta")``), for the
``default`` and the ``vta-1x16x16`` configs, calibrated on the feed itself: every case either
runs, with outputs of the model's shapes and dtypes, finite where onnxruntime's are and close to
onnxruntime within the int8 tolerance below, or is refused with a one-line compiler or session
error; nothing ends in another exception.

The models are those of :mod:`tests.fuzz.test_models` (convolutions of random geometry, pools,
activations, broadcast arithmetic, Concat, Transpose, Slice, reductions, Softmax, Flatten), at
most five steps deep: quantization error grows with depth. The feeds are normal samples scaled
by 1, 0 (a calibration range of zero), 1e-3 or 1e4, so that the scales span their extremes.

The tolerance: every tensor the accelerator sees is int8, one scale per tensor from the
calibration range, so each quantize or requantize rounds by up to half a step, 1/255 of that
tensor's range; a chain of five steps with a convolution's sums in between compounds that to a
few steps of the output's range. The bound, 10% of the output's range (or magnitude, for a
constant output) plus a small absolute slack, is 25 such steps: loose, yet a wrong layout, a
wrong scale, a swapped channel or a missed requantize is off by the order of the whole range.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.errors import CompilerError
from runtime.session import InferenceSession
from tests.fuzz.test_models import models

CONFIGS = ("default", "vta-1x16x16")
#: the share of the output's range an int8 result may be off by (module docstring)
RANGE_TOLERANCE = 0.1
ABS_TOLERANCE = 1e-3
#: operators that squash their input into a fixed range (see the test)
SQUASHING = {"Softmax", "Sigmoid", "Tanh"}


def _ours(data: bytes, x: np.ndarray, config: str) -> np.ndarray | str:
    try:
        sess = InferenceSession(data, target="vta", config=config, calibration=x)
        (y,) = sess.run(None, {"x": x})
    except CompilerError as e:  # SessionError and ArtifactError included
        message = str(e).strip()
        assert message and "\n" not in message, f"a refusal in more than one line: {message!r}"
        assert "internal error" not in message, message
        return message
    return y


@pytest.mark.parametrize("config", CONFIGS)
@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(case=models(), seed=st.integers(0, 2**16), scale=st.sampled_from([1.0, 1.0, 0.0, 1e-3, 1e4]))
def test_generated_models_run_close_to_onnxruntime_or_are_refused_in_one_line(
    config, case, seed, scale
):
    data, shape = case
    x = (np.random.default_rng(seed).normal(size=shape) * scale).astype(np.float32)
    ours = _ours(data, x, config)
    try:
        (want,) = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    except Exception:  # onnxruntime refuses the model: ours may refuse it or run it
        return
    if isinstance(ours, str):  # refused in one line (checked in _ours), naming the node
        names = [n.name for n in onnx.load_from_string(data).graph.node]
        assert any(f"'{n}" in ours for n in names), f"the refusal names no node: {ours}"
        return
    assert ours.shape == want.shape and ours.dtype == want.dtype, (ours.shape, ours.dtype)
    finite = np.isfinite(want)
    assert np.isfinite(ours[finite]).all(), "non-finite outputs where onnxruntime's are finite"
    if not finite.all():
        return
    if scale > 1 and {n.op_type for n in onnx.load_from_string(data).graph.node} & SQUASHING:
        # these map an input's absolute error, not its error relative to the range, to the
        # output (Softmax by up to half of it): with feeds of 1e4 their input's int8 step
        # exceeds 1, and a saturated or one-hot output may move by half its range however
        # correct the int8 path. Shapes, dtypes and finiteness are checked above; the
        # closeness bound holds where their inputs are small.
        return
    span = max(float(np.ptp(want)), float(np.abs(want).max()))
    err = float(np.abs(ours - want).max())
    assert err <= RANGE_TOLERANCE * span + ABS_TOLERANCE, (
        f"off by {err:.4g}, the output's range is {span:.4g}"
    )
