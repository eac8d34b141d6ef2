"""Each GPU schedule, run on numba's CUDA simulator (or a GPU), against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import te, topi
from compiler.build import build
from compiler.topi.gpu import schedule_gpu
from tests.compiler.targets.gpu.cases import CASES

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", sorted(CASES))
def test_schedule_matches_numpy(name):
    case = CASES[name]()
    f = build(case.schedule, case.args, target="gpu")
    got = f(*case.inputs)
    if case.exact:
        np.testing.assert_array_equal(got, case.expected)
    else:
        np.testing.assert_allclose(got, case.expected, rtol=1e-4, atol=1e-5)


def test_outputs_written_in_place_and_checked():
    case = CASES["injective"]()
    f = build(case.schedule, case.args, target="gpu")
    out = np.zeros((3, 50), "float32")
    assert f(case.inputs[0], out) is out
    np.testing.assert_allclose(out, case.expected)
    with pytest.raises(Exception, match="argument x has dtype float64, expected float32"):
        f(case.inputs[0].astype("float64"))


def test_schedule_gpu_picks_by_anchor():
    x = te.placeholder((2, 16), name="x")
    w = te.placeholder((8, 16), name="w")
    y = topi.relu(topi.dense(x, w))
    s = schedule_gpu([y], anchor=y.op.input_tensors()[0])
    f = build(s, [x, w, y], target="gpu")
    xa = np.arange(32, dtype="float32").reshape(2, 16) / 32
    wa = np.ones((8, 16), "float32") - 0.5
    np.testing.assert_allclose(f(xa, wa), np.maximum(xa @ wa.T, 0), rtol=1e-5)
    assert [k.launch.block for k in f.kernels] == [(8, 2, 1)]
