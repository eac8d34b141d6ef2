"""The candidates of one task share its seeded data and numpy reference (``Task.build``):
what they share is what ``compiler.topi.vta.testing.build`` computes for each, it is computed
once per workload and seed, no candidate can change it, and every candidate still gets its own
program."""

import numpy as np
import pytest

import isa
import vta_sim
from compiler.topi.vta import Conv2dLayer, DenseLayer, compile_conv2d, compile_dense
from compiler.topi.vta.testing import build
from compiler.tune import conv2d_task, dense_task
from compiler.tune.task import bind_reference


def _points(task, n):
    valid = task.space().valid_indices()
    return [int(valid[k]) for k in np.random.default_rng(0).choice(len(valid), n, replace=False)]


@pytest.mark.parametrize(
    "task",
    [
        conv2d_task(6, 6, 8, 8, 3, 1, 1, relu=True, name="c3"),
        conv2d_task(4, 4, 8, 8, 1, 1, 0, residual=True, name="c1-res"),
        dense_task(2, 24, 12, relu=True),
    ],
    ids=["conv3x3", "conv1x1-residual", "dense"],
)
def test_built_points_equal_the_per_point_build(task):
    a, b = _points(task, 2)
    first, second = task.build(a, seed=5), task.build(b, seed=5)
    # one reference and one set of inputs for the workload, none of them writable
    assert first.expected is second.expected
    assert first.data is second.data
    assert not first.expected.flags.writeable
    assert not any(v.flags.writeable for v in first.data.packed.values())
    with pytest.raises(ValueError):
        first.expected[(0,) * first.expected.ndim] = 1
    # each point has its own program, bound exactly as the per-point build binds it
    assert first.program is not second.program
    for index, built in ((a, first), (b, second)):
        fresh = build(built.compiled, seed=5)
        assert np.array_equal(fresh.expected, built.expected)
        assert np.array_equal(fresh.program.dram, built.program.dram)
        assert fresh.data.packed.keys() == built.data.packed.keys()
        out = vta_sim.simulate(built.program).read("out")
        assert built.matches(out), f"point {index} of {task.label()} does not match numpy"


def test_reference_depends_on_the_seed_and_the_workload():
    cfg = isa.load_config("default")
    c = compile_dense(DenseLayer(1, 16, 8), cfg, relu=True)
    assert bind_reference(c, 1).expected is bind_reference(c, 1).expected
    assert not np.array_equal(bind_reference(c, 1).data.natural["data"],
                              bind_reference(c, 2).data.natural["data"])  # fmt: skip
    # the same layer without relu, and with another shift, has its own reference
    plain = compile_dense(DenseLayer(1, 16, 8), cfg)
    shifted = compile_dense(DenseLayer(1, 16, 8), cfg, relu=True, shift=3)
    assert bind_reference(plain, 1).expected is not bind_reference(c, 1).expected
    assert np.array_equal(bind_reference(shifted, 1).expected, build(shifted, 1).expected)
    assert np.array_equal(bind_reference(plain, 1).expected, build(plain, 1).expected)


def test_conv2d_reference_follows_the_layer():
    cfg = isa.load_config("default")
    small = compile_conv2d(Conv2dLayer("s", 4, 4, 4, 4, 3, 1, 1), cfg)
    strided = compile_conv2d(Conv2dLayer("s", 4, 4, 4, 4, 3, 2, 1), cfg)
    assert bind_reference(small, 0).expected.shape == (1, 4, 4, 4)
    assert bind_reference(strided, 0).expected.shape == (1, 4, 2, 2)
    assert np.array_equal(bind_reference(strided, 0).expected, build(strided, 0).expected)
