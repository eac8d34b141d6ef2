"""Two hardware configurations compile side by side in one process.

Each target instance owns its scopes and GEMM intrinsic; schedules written against one are
lowered and built interleaved with schedules of the other, and every program is bit-exact on
the simulator.
"""

from __future__ import annotations

import numpy as np
import pytest

from compiler.build import build
from compiler.errors import LoweringError
from compiler.targets.vta import VTATarget
from compiler.topi.vta import Conv2dKnobs
from compiler.topi.vta.layer import Conv2dLayer
from compiler.topi.vta.testing import build_conv2d

from .helpers import run
from .test_tvm_tutorials import matrix_multiply

LAYER = Conv2dLayer("c", 6, 6, 32, 32, 3, 1, 1)


def _gemm_inputs(env, m, n, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (1, n, env.BATCH, env.BLOCK_IN), dtype=np.int8)
    b = rng.integers(-128, 128, (m, n, env.BLOCK_OUT, env.BLOCK_IN), dtype=np.int8)
    ref = np.einsum("okbi,mkci->ombc", a.astype(np.int32), b.astype(np.int32)).astype(np.int8)
    return a, b, ref


def test_schedules_of_two_configs_build_interleaved():
    small, big = VTATarget("default"), VTATarget("vta-1x16x16")
    assert small.acc_scope is not big.acc_scope and small.gemm is not big.gemm
    # schedules for both exist before either is built; build in the other order
    s_small, args_small = matrix_multiply(small, m=4, n=4)
    s_big, args_big = matrix_multiply(big, m=4, n=4)
    prog_big = build(s_big, args_big, big)
    prog_small = build(s_small, args_small, small)
    for env, prog, seed in ((small, prog_small, 0), (big, prog_big, 1)):
        a, b, ref = _gemm_inputs(env, 4, 4, seed)
        prog.write("A", a)
        prog.write("B", b)
        np.testing.assert_equal(run(prog).read("C"), ref)
    # a schedule holding one configuration's scope objects is refused by the other target
    with pytest.raises(LoweringError, match="stage A_buf: scope local.inp_buffer was made for"):
        build(s_small, args_small, big)


def test_the_same_layer_for_two_configs_alternately():
    knobs = Conv2dKnobs(tile_h=3, tile_w=6, tile_ci=1, tile_co=1, oc_nthread=2)
    built = []
    for preset in ("default", "vta-1x16x16", "default", "vta-1x16x16"):
        built.append(build_conv2d(LAYER, preset, knobs, nthreads=2, seed=len(built)))
    for b in built:
        np.testing.assert_array_equal(b.output_from(run(b.program).read("out")), b.expected)
    assert built[0].program.config.block_in == 4 and built[1].program.config.block_in == 16
