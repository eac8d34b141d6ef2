"""Calibration data for a model's inputs (:mod:`compiler.model.calibration`)."""

import numpy as np
import pytest

from compiler.errors import ModelError
from compiler.model.calibration import calibration_feeds
from compiler.model.program import TensorSpec


def test_calibration_forms():
    specs = [TensorSpec("a", (1, 2), "float32"), TensorSpec("b", (1, 3), "float32")]
    feeds = calibration_feeds(specs, {"a": np.ones((2, 2)), "b": np.ones((2, 3))})
    assert len(feeds) == 2 and feeds[1]["b"].dtype == np.float32
    with pytest.raises(ModelError, match="the model has 2 inputs"):
        calibration_feeds(specs, np.ones((1, 2)))
    with pytest.raises(ModelError, match="input 'b' has no data"):
        calibration_feeds(specs, {"a": np.ones((1, 2))})
    with pytest.raises(ModelError, match="unknown input 'c'"):
        calibration_feeds(specs, {"c": np.ones((1, 2))})
    assert len(calibration_feeds(specs, None)) == 1
