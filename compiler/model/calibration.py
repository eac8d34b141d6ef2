"""Calibration data for a model's inputs: what a whole-model build for the accelerator
quantizes on.

``calibration``: a float array (a single-input model: a multiple of the batch along axis 0),
a mapping of input name to such arrays (every input, the same number of batches), or None:
seeded standard normal data (:data:`CALIBRATION_SEED`), which gives scales unrelated to real
inputs (calibrate on real data for real accuracy).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from compiler.errors import ModelError
from compiler.model.program import TensorSpec

#: Seed of the calibration data when none is given.
CALIBRATION_SEED = 0


def calibration_feeds(
    inputs: Sequence[TensorSpec], calibration: Any, what: str = "calibration"
) -> list[dict[str, np.ndarray]]:
    """Calibration feeds of the model's input shapes from ``calibration`` (see the module
    docstring), one mapping of input name to array per batch; ``what`` names the data in
    errors (an option, ``--calibrate``).

    Example:
        >>> spec = [TensorSpec("x", (2, 3), "float32")]
        >>> [f["x"].shape for f in calibration_feeds(spec, np.zeros((4, 3), np.float32))]
        [(2, 3), (2, 3)]
        >>> calibration_feeds(spec, np.zeros((3, 3), np.float32))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        compiler.errors.ModelError: calibration: input 'x' is [2, 3]; ... got [3, 3]
    """
    if calibration is None:
        rng = np.random.default_rng(CALIBRATION_SEED)
        return [{s.name: rng.standard_normal(s.shape).astype(np.float32) for s in inputs}]
    if isinstance(calibration, np.ndarray):
        if len(inputs) != 1:
            names = ", ".join(s.name for s in inputs)
            raise ModelError(
                f"{what}: the model has {len(inputs)} inputs ({names}): give a mapping of "
                "input name to array"
            )
        calibration = {inputs[0].name: calibration}
    if not isinstance(calibration, Mapping):
        raise ModelError(
            f"{what}: an array or a mapping of input name to array, not "
            f"{type(calibration).__name__}"
        )
    known = {s.name for s in inputs}
    for name in calibration:
        if name not in known:
            raise ModelError(f"{what}: unknown input {name!r} (inputs: {sorted(known)})")
    split: dict[str, list[np.ndarray]] = {}
    for s in inputs:
        if s.name not in calibration:
            raise ModelError(f"{what}: input {s.name!r} has no data")
        data = np.asarray(calibration[s.name])
        shape = s.shape
        if data.ndim != len(shape) or data.shape[1:] != shape[1:] or data.shape[0] % shape[0]:
            raise ModelError(
                f"{what}: input {s.name!r} is {list(shape)}; the calibration data must be "
                f"a multiple of its batch ({shape[0]}) along axis 0 with the same other dims, "
                f"got {list(data.shape)}"
            )
        data = data.astype(np.float32)
        split[s.name] = [data[k : k + shape[0]] for k in range(0, data.shape[0], shape[0])]
    counts = {len(v) for v in split.values()}
    if len(counts) > 1:
        raise ModelError(f"{what}: the inputs have different numbers of batches {counts}")
    return [{n: v[k] for n, v in split.items()} for k in range(counts.pop())]


__all__ = ["CALIBRATION_SEED", "calibration_feeds"]
