"""Random valid schedule knobs compile to programs that run bit-exact (hypothesis)."""

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import isa
from compiler.topi.vta import Conv2dKnobs, Conv2dLayer
from compiler.topi.vta.conv2d import GEMM_FOLDS
from compiler.topi.vta.heuristic import divisors
from compiler.topi.vta.testing import build_conv2d

from .helpers import PRESETS, run


def fits(cfg, layer, knobs, residual):
    """The per-thread buffer shares the tiles need (as the heuristic counts them)."""
    n = knobs.nthreads
    ky = 1 if knobs.kernel_step == "row" else layer.k  # the kernel rows a step covers
    in_h = (knobs.tile_h - 1) * layer.stride + ky
    in_w = (knobs.tile_w - 1) * layer.stride + layer.k
    acc = knobs.tile_co * knobs.tile_h * knobs.tile_w * (2 if residual else 1)
    inp = knobs.tile_ci * in_h * in_w
    wgt = knobs.tile_co * knobs.tile_ci * ky * layer.k
    # the GEMM kernel unrolls the loops its instruction does not fold (gemm_fold)
    ext = {"co": knobs.tile_co, "h": knobs.tile_h, "w": knobs.tile_w, "ci": knobs.tile_ci}
    kept = [a for a in ext if a not in knobs.gemm_fold.folded]
    uops = ky * layer.k * int(np.prod([ext[a] for a in kept]))
    reset = int(np.prod([ext[a] for a in kept if a != "ci"]))
    return (
        n * acc <= cfg.acc_depth
        and n * inp <= cfg.inp_depth
        and n * wgt <= cfg.wgt_depth
        and n * (uops + reset + 8) <= cfg.uop_depth
    )


def _split(draw, tiles: int, most: int) -> int:
    """A thread count (1, 2 or 4) that divides ``tiles``, at most ``most``."""
    return draw(st.sampled_from([n for n in (1, 2, 4) if tiles % n == 0 and n <= most]))


@st.composite
def cases(draw):
    preset = draw(st.sampled_from(PRESETS))
    cfg = isa.load_config(preset)
    k = draw(st.sampled_from([1, 3, 5]))
    stride = draw(st.sampled_from([1, 2]))
    pad = draw(st.integers(0, k // 2))
    h = draw(st.integers(max(1, k - 2 * pad), 9))
    w = draw(st.integers(max(1, k - 2 * pad), 9))
    icb, ocb = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    layer = Conv2dLayer("random", h, w, icb * cfg.block_in, ocb * cfg.block_out, k, stride, pad,
                        cfg.batch)  # fmt: skip
    tile_co = draw(st.sampled_from(divisors(ocb)))
    tile_h = draw(st.sampled_from(divisors(layer.out_h)))
    oc_n = _split(draw, ocb // tile_co, 4)
    h_n = _split(draw, layer.out_h // tile_h, 4 // oc_n)
    knobs = Conv2dKnobs(
        tile_h=tile_h,
        tile_w=draw(st.sampled_from(divisors(layer.out_w))),
        tile_ci=draw(st.sampled_from(divisors(icb))),
        tile_co=tile_co,
        oc_nthread=oc_n,
        h_nthread=h_n,
        loop_order=draw(st.sampled_from(["h_co", "co_h"])),
        gemm_fold=draw(st.sampled_from(GEMM_FOLDS)),
        kernel_step=draw(st.sampled_from(["window", "row"] if k > 1 else ["window"])),
    )
    relu, residual = draw(st.booleans()), draw(st.booleans())
    return cfg, layer, knobs, relu, residual


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(cases())
def test_random_knobs_run_bit_exact(case):
    cfg, layer, knobs, relu, residual = case
    assume(fits(cfg, layer, knobs, residual))
    built = build_conv2d(layer, cfg, knobs, relu=relu, residual=residual, seed=3)
    got = built.output_from(run(built.program).read("out"))
    np.testing.assert_array_equal(got, built.expected)
