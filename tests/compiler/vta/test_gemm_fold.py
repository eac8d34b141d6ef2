"""The conv2d template's ``gemm_fold`` knob (which two loops of a reduction step's GEMM the
instruction folds) and its four-thread splits of one tile axis: bit-exact against numpy on the
simulator on every preset, with virtual threads, a batch tile, a residual and resident weights;
the micro-op kernel each choice builds; the knobs they reject."""

import pytest

import isa
import vta_sim
from compiler import te
from compiler.errors import ScheduleError
from compiler.topi.vta import Conv2dKnobs, Conv2dLayer, conv2d_packed
from compiler.topi.vta.conv2d import (
    GEMM_FOLDS,
    GemmFold,
    check_knobs,
    conv2d_shapes,
    find_stages,
    gemm_loops,
    max_vthreads,
)
from compiler.topi.vta.testing import build_conv2d
from isa import Gemm

from .helpers import PRESETS

FOLDS = [f.value for f in GEMM_FOLDS]


def _run(layer: Conv2dLayer, preset: str, knobs: Conv2dKnobs, **kw):
    built = build_conv2d(layer, preset, knobs, relu=True, seed=5, **kw)
    r = vta_sim.simulate(built.program)
    assert built.matches(r.read("out")), (preset, knobs)
    return built, r


def _gemm_kernels(built) -> set[tuple[int, int, int]]:
    """(micro-ops, iter_out, iter_in) of the accumulating GEMMs of a program."""
    insns = built.program.instructions()
    return {(i.uop_end - i.uop_begin, i.iter_out, i.iter_in)
            for i in insns if isinstance(i, Gemm) and not i.reset}  # fmt: skip


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("fold", FOLDS)
def test_every_fold_is_bit_exact_with_threads(preset, fold):
    cfg = isa.load_config(preset)
    layer = Conv2dLayer("fold", 6, 8, 2 * cfg.block_in, 4 * cfg.block_out, 3, 1, 1, cfg.batch)
    for oc_n, h_n in ((1, 1), (2, 1), (1, 2)):
        knobs = Conv2dKnobs(tile_h=3, tile_w=4, tile_ci=2, tile_co=2, oc_nthread=oc_n,
                            h_nthread=h_n, gemm_fold=fold)  # fmt: skip
        _run(layer, preset, knobs)


@pytest.mark.parametrize("fold", FOLDS)
def test_each_fold_builds_its_own_kernel(fold):
    # every loop of the step has extent > 1: the instruction folds the two named loops and
    # the kernel unrolls the others (GemmFold's table)
    cfg = isa.load_config("default")
    layer = Conv2dLayer("kern", 6, 8, 4 * cfg.block_in, 4 * cfg.block_out, 3, 1, 1)
    tiles = {"co": 2, "h": 3, "w": 4, "ci": 2}
    knobs = Conv2dKnobs(tile_h=3, tile_w=4, tile_ci=2, tile_co=2, gemm_fold=fold)
    built, _ = _run(layer, "default", knobs)
    outer, inner = GemmFold(fold).folded
    uops = 9 * tiles["co"] * tiles["h"] * tiles["w"] * tiles["ci"] // (tiles[outer] * tiles[inner])
    assert _gemm_kernels(built) == {(uops, tiles[outer], tiles[inner])}


def test_a_one_block_axis_folds_the_next_loop():
    # tile_co = 1: co_h folds (h, ci) and keeps k*k*tile_w micro-ops, as VTA's template does
    ext = dict(b=1, co=1, h=3, w=4, ci=2, ky=3, kx=3)
    assert gemm_loops("co_h", ext)[:2] == ("h", "ci")
    cfg = isa.load_config("default")
    layer = Conv2dLayer("one", 6, 8, 2 * cfg.block_in, 2 * cfg.block_out, 3, 1, 1)
    built, _ = _run(layer, "default", Conv2dKnobs(tile_h=3, tile_w=4, tile_ci=2, tile_co=1))
    assert _gemm_kernels(built) == {(9 * 4, 3, 2)}


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("fold", ["co_w", "h_w", "w_ci"])
def test_folds_with_a_batch_tile_and_a_residual(preset, fold):
    cfg = isa.load_config(preset)
    layer = Conv2dLayer("batch", 4, 4, 2 * cfg.block_in, 2 * cfg.block_out, 3, 1, 1,
                        2 * cfg.batch)  # fmt: skip
    knobs = Conv2dKnobs(tile_h=2, tile_w=4, tile_ci=1, tile_co=1, tile_b=2, oc_nthread=2,
                        gemm_fold=fold)  # fmt: skip
    _run(layer, preset, knobs, residual=True)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("fold", ["co_w", "h_w", "co_ci", "h_ci"])
def test_folds_with_resident_weights(preset, fold):
    cfg = isa.load_config(preset)
    layer = Conv2dLayer("res", 4, 8, 2 * cfg.block_in, 4 * cfg.block_out, 3, 1, 1, cfg.batch)
    knobs = Conv2dKnobs(tile_h=2, tile_w=4, tile_ci=1, tile_co=2, oc_nthread=2, h_nthread=2,
                        loop_order="co_h", weights_resident=True, gemm_fold=fold)  # fmt: skip
    built, r = _run(layer, preset, knobs)
    assert r.dram_bytes["wgt"] == 2 * built.program.symbols["kernel"].nbytes


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("threads", [(4, 1), (1, 4)], ids=["oc4", "h4"])
def test_four_threads_on_one_axis_are_bit_exact(preset, threads):
    cfg = isa.load_config(preset)
    layer = Conv2dLayer("vt4", 8, 4, 2 * cfg.block_in, 4 * cfg.block_out, 3, 1, 1, cfg.batch)
    oc_n, h_n = threads
    knobs = Conv2dKnobs(tile_h=2, tile_w=4, tile_ci=1, tile_co=1, oc_nthread=oc_n,
                        h_nthread=h_n, gemm_fold="h_w")  # fmt: skip
    _run(layer, preset, knobs)


def _stages(cfg: isa.HwConfig):
    dshape, kshape = conv2d_shapes(cfg, 1, 2 * cfg.block_in, 8 * cfg.block_out, 8, 8, 3)
    x = te.placeholder(dshape, "int8", name="x")
    w = te.placeholder(kshape, "int8", name="w")
    return find_stages(conv2d_packed(x, w, 1, 1, shift=8, relu=True))


def test_rejected_knobs_name_the_rule():
    cfg = isa.load_config("default")
    st = _stages(cfg)
    with pytest.raises(ScheduleError, match="gemm_fold must be one of"):
        Conv2dKnobs(tile_h=2, tile_w=8, tile_ci=1, tile_co=1, gemm_fold="ci_w")
    # 8 threads: more tokens in flight than the 8-deep dependency queues hold
    assert max_vthreads(cfg) == 4
    with pytest.raises(ScheduleError, match="8 virtual threads .* at most 4"):
        check_knobs(st, Conv2dKnobs(tile_h=2, tile_w=8, tile_ci=1, tile_co=1, oc_nthread=4,
                                    h_nthread=2), cfg)  # fmt: skip
    with pytest.raises(ScheduleError, match="oc_nthread must be one of"):
        check_knobs(st, Conv2dKnobs(tile_h=2, tile_w=8, tile_ci=1, tile_co=1, oc_nthread=8),
                    cfg)  # fmt: skip
    with pytest.raises(ScheduleError, match="h_nthread=4 needs a multiple of 4 tiles"):
        check_knobs(st, Conv2dKnobs(tile_h=4, tile_w=8, tile_ci=1, tile_co=1, h_nthread=4), cfg)
    shallow = cfg.replace(name="shallow", dep_queue_depth=4)
    with pytest.raises(ScheduleError, match="at most 2"):
        check_knobs(st, Conv2dKnobs(tile_h=2, tile_w=8, tile_ci=1, tile_co=1, oc_nthread=4),
                    shallow)  # fmt: skip


def test_the_default_fold_prints_as_before():
    knobs = Conv2dKnobs(tile_h=2, tile_w=8, tile_ci=1, tile_co=1)
    assert knobs.gemm_fold is GemmFold.CO_H and "gemm_fold" not in repr(knobs)
    assert "gemm_fold" not in knobs.describe()
    other = Conv2dKnobs(tile_h=2, tile_w=8, tile_ci=1, tile_co=1, gemm_fold="h_ci")
    assert "gemm_fold='h_ci'" in repr(other) and other.describe().endswith("gemm_fold=h_ci")
