"""Compilation apart from data: compile_conv2d/compile_dense declare tensors and write none;
compiler.topi.vta.testing draws the seeded data, binds it and computes the numpy reference."""

import numpy as np
import pytest

from compiler.errors import CompilerError
from compiler.topi.conv2d import unpack_data
from compiler.topi.vta import (
    Conv2dLayer,
    DenseLayer,
    compile_conv2d,
    compile_dense,
)
from compiler.topi.vta import testing as vt
from isa.dram import dram_alignment

from .helpers import PRESETS, run

CONV = Conv2dLayer("t", 5, 5, 20, 12, 3, 2, 1)


def _no_rng(*args, **kwargs):
    raise AssertionError("the compile path drew random numbers")


def test_compiling_writes_no_data_and_draws_no_random_numbers(monkeypatch):
    monkeypatch.setattr(np.random, "default_rng", _no_rng)
    conv = compile_conv2d(CONV, "default", relu=True, residual=True)
    dense = compile_dense(DenseLayer(3, 40, 24), "default", residual=True)
    for c, weights in ((conv, "kernel"), (dense, "weight")):
        prog = c.program
        assert set(prog.symbols) == {"data", weights, "residual", "out"}
        for name in prog.symbols:
            assert not prog.read(name).any(), name
            assert prog.symbols[name].offset % dram_alignment(c.config) == 0
    assert conv.out_shape == (1, 12, 3, 3) and conv.packed_shape == (1, 3, 3, 3, 1, 4)
    assert dense.out_shape == (3, 24) and dense.macs == 3 * 40 * 24


@pytest.mark.parametrize("preset", PRESETS)
def test_compile_bind_expected_equals_the_convenience_and_the_simulator(preset):
    compiled = compile_conv2d(CONV, preset, relu=True, residual=True)
    data = vt.layer_data(CONV, compiled.config, seed=3, residual=True)
    prog = vt.bind(compiled, data)
    assert not compiled.program.read("data").any()  # bind writes a copy
    want = vt.expected(compiled, data)
    built = vt.build_conv2d(CONV, preset, relu=True, residual=True, seed=3)
    np.testing.assert_array_equal(built.program.dram, prog.dram)
    np.testing.assert_array_equal(built.expected, want)
    got = compiled.output_from(run(prog).read("out"))
    np.testing.assert_array_equal(got, want)


def test_layer_data_is_seeded_and_packs_the_natural_arrays():
    a = vt.layer_data(CONV, "vta-1x16x16", seed=5, residual=True)
    b = vt.layer_data(CONV, "vta-1x16x16", seed=5, residual=True)
    c = vt.layer_data(CONV, "vta-1x16x16", seed=6, residual=True)
    for name in a.natural:
        np.testing.assert_array_equal(a.natural[name], b.natural[name])
        assert not np.array_equal(a.natural[name], c.natural[name]), name
    n, ch, h, w = a.natural["data"].shape
    np.testing.assert_array_equal(unpack_data(a.packed["data"])[:n, :ch, :h, :w],
                                  a.natural["data"])  # fmt: skip
    assert not unpack_data(a.packed["data"])[:, ch:].any()  # channel padding is zero
    d = vt.layer_data(DenseLayer(3, 40, 24), "default", seed=1)
    assert d.packed["weight"].shape == (6, 10, 4, 4)
    np.testing.assert_array_equal(
        d.packed["weight"].transpose(0, 2, 1, 3).reshape(24, 40), d.natural["weight"]
    )


def test_dense_round_trip_on_the_simulator():
    built = vt.build_dense(3, 40, 24, "4x4x4", relu=True, residual=True, seed=2)
    assert built.matches(run(built.program).read("out"))
    assert built.output_shape == (1, 6, 4, 4) and built.name == "dense"


def test_bind_refuses_data_of_another_layer():
    compiled = compile_conv2d(CONV, "default")
    with pytest.raises(CompilerError, match=r"layer t: data for \['data', 'kernel', 'residual'\]"):
        vt.bind(compiled, vt.layer_data(CONV, "default", residual=True))
    with pytest.raises(CompilerError, match="not a conv2d or dense layer"):
        vt.layer_data("C9", "default")  # type: ignore[arg-type]
