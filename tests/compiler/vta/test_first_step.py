"""reset_at_first_step: the reset joins the first reduction step's compute block, so the
virtual threads interleave reset and GEMM per thread; the results stay exact."""

import pytest

import isa
from compiler.topi.vta import Conv2dKnobs, Conv2dLayer
from compiler.topi.vta import testing as vt

from .helpers import PRESETS, lower_dumps, run, run_in_order, small_conv


def _calls(text: str) -> list[str]:
    """The reset and GEMM micro-op calls, in program order."""
    out = []
    for ln in text.splitlines():
        if "vta.uop_gemm_reset(" in ln:
            out.append("reset")
        elif "vta.uop_gemm(" in ln:
            out.append("gemm")
    return out


def test_threads_interleave_reset_and_first_gemm():
    # 2 row tiles (rounds) per thread, 2 input-channel steps each
    knobs = Conv2dKnobs(tile_h=3, tile_w=6, tile_ci=1, tile_co=2, oc_nthread=2)
    tgt, s, args = small_conv(knobs=knobs)
    dumps = lower_dumps(tgt, s, args)[1]
    before = dumps["coproc_scopes"]
    after = dumps["reset_at_first_step"]
    # before: the reset comes before the step loop; after: the first step is peeled off, its
    # load first, then one compute block with the reset and the first GEMM
    assert before.index("uop_gemm_reset") < before.index("for rcb.outer in range(2)")
    assert "for rcb.outer in range(2)" not in after
    block = after[after.index("uop_gemm_reset") :]
    assert "coproc_scope" not in block[: block.index("vta.uop_gemm(")]
    assert after.index("vta.load_inp") < after.index("uop_gemm_reset")
    expanded = dumps["expand_virtual_threads"]
    # thread 0's reset and first GEMM, then thread 1's (not both resets first)
    assert _calls(expanded)[:4] == ["reset", "gemm", "reset", "gemm"]
    assert _calls(dumps["coproc_sync"])[:2] == ["reset", "gemm"]


def test_a_reset_that_runs_once_stays_before_the_loads():
    # one row tile per thread: no store before the reset to wait for
    tgt, s, args = small_conv()
    text = lower_dumps(tgt, s, args)[1]["reset_at_first_step"]
    assert text.index("uop_gemm_reset") < text.index("vta.load_inp")


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(
    "knobs",
    [
        Conv2dKnobs(tile_h=3, tile_w=6, tile_ci=1, tile_co=2, oc_nthread=2),
        Conv2dKnobs(tile_h=2, tile_w=6, tile_ci=1, tile_co=1, oc_nthread=2, kernel_step="row"),
        Conv2dKnobs(tile_h=3, tile_w=3, tile_ci=2, tile_co=1, h_nthread=2),
    ],
    ids=["co-threads", "kernel-rows", "h-threads"],
)
def test_peeled_programs_are_exact_and_race_free(preset, knobs):
    cfg = isa.load_config(preset)
    layer = Conv2dLayer("t", 6, 6, 2 * cfg.block_in, 4 * cfg.block_out, 3, 1, 1)
    built = vt.build_conv2d(layer, cfg, knobs, relu=True, residual=True)
    sim = run(built.program)
    assert built.matches(sim.read("out"))
    # the concurrent machine ends in the in-order machine's state: no token is missing
    assert (sim.dram == run_in_order(built.program)).all()
