"""The conv2d space's ``gemm_fold`` knob and four-thread splits: the knob's default names the
template's point (old values keep their knobs and streams), its rules name what they reject,
ResNet-18's spaces on vta-1x16x16 have thousands of valid points (the 7x7 layers C10 and C12
about 1,200), and random valid points of ResNet-18-like small layers run bit-exact."""

import numpy as np
import pytest

import isa
import vta_sim
from compiler.errors import ScheduleError
from compiler.topi.vta import RESNET18_LAYERS, Conv2dKnobs
from compiler.tune import conv2d_task
from compiler.tune.task import hw_spec, resnet18_tasks

#: valid points per ResNet-18 task on vta-1x16x16 (docs/tuning.md, "Spaces")
RESNET18_VALID = {
    "C1": 9737, "C2": 32793, "C3": 15186, "C4": 21055, "C5": 32604, "C6": 31387,
    "C7": 11764, "C8": 20818, "C9": 15830, "C10": 2652, "C11": 4662, "C12": 3194,
}  # fmt: skip


def test_resnet18_spaces_have_thousands_of_valid_points():
    counts = {t.name: t.space().num_valid for t in resnet18_tasks("vta-1x16x16")}
    assert counts == RESNET18_VALID
    assert all(n >= 2000 for n in counts.values())


def test_the_default_fold_is_the_templates_point():
    for t in resnet18_tasks("vta-1x16x16"):
        d = t.default_config()
        assert d["gemm_fold"] == "co_h"
        old = {k: v for k, v in d.values.items() if k not in ("gemm_fold", "kernel_step")}
        if d.values.get("kernel_step", "window") == "window":
            # the heuristic takes kernel rows on some layers (compiler/topi/vta/heuristic.py);
            # a window point is named by the values given before the knobs existed
            assert t.space().index_of(old) == d.index
        assert t.config_of(t.knobs(d)) == d


def test_fold_points_round_trip_and_name_their_rule():
    t = conv2d_task(8, 8, 32, 32, 3, 1, 1, hw="default", relu=True)
    space = t.space()
    base = {"tile_b": 1, "tile_co": 2, "tile_h": 4, "tile_w": 4, "tile_ci": 2,
            "vthreads": (2, 1), "loop_order": "h_co", "weights_resident": False}  # fmt: skip
    for fold in ("co_h", "co_w", "h_w", "co_ci", "h_ci", "w_ci"):
        c = space.config(space.index_of(dict(base, gemm_fold=fold)))
        assert str(t.knobs(c).gemm_fold) == fold
        assert t.config_of(t.knobs(c)) == c
    # one row per tile: co_h already folds (co, ci), so co_ci is not a point of its own
    dup = space.index_of(dict(base, tile_h=1, gemm_fold="co_ci"))
    with pytest.raises(ScheduleError, match="gemm_fold co_ci folds the same loops .co, ci. as "
                                            "gemm_fold co_h"):  # fmt: skip
        space.config(dup)


def test_four_thread_splits_and_the_queue_rule():
    t = conv2d_task(8, 8, 32, 32, 3, 1, 1, hw="default", relu=True)
    space = t.space()
    base = {"tile_b": 1, "tile_co": 2, "tile_h": 2, "tile_w": 8, "tile_ci": 2,
            "loop_order": "h_co"}  # fmt: skip
    for vt in ((4, 1), (1, 4)):
        c = space.config(space.index_of(dict(base, vthreads=vt)))
        knobs = t.knobs(c)
        assert (knobs.oc_nthread, knobs.h_nthread) == vt
    with pytest.raises(ScheduleError, match="2 channel tiles do not split between 4 threads"):
        space.config(space.index_of(dict(base, tile_co=4, vthreads=(4, 1))))
    shallow = isa.load_config("default").replace(name="shallow", dep_queue_depth=4)
    ts = conv2d_task(8, 8, 32, 32, 3, 1, 1, hw=hw_spec(shallow), relu=True)
    sp = ts.space()
    reason = sp.reason_invalid(sp.index_of(dict(base, vthreads=(2, 2))))
    assert reason == "4 virtual threads overflow the dependency queues (at most 2)"


def _small_layers():
    # ResNet-18's layer kinds at a small size on the default core: 7x7/2, 3x3/1, 1x1/1,
    # 3x3/2 and 1x1/2
    picks = {"C1", "C2", "C3", "C4", "C5"}
    return [layer.scaled(8, 32) for layer in RESNET18_LAYERS if layer.name in picks]


@pytest.mark.parametrize("layer", _small_layers(), ids=lambda layer: layer.name)
def test_random_valid_points_run_bit_exact(layer):
    t = conv2d_task(layer.h, layer.w, layer.in_c, layer.out_c, layer.k, layer.stride, layer.pad,
                    hw="default", relu=True, name=layer.name)  # fmt: skip
    space = t.space()
    rng = np.random.default_rng(7)
    # half the sample among the points the new knob values name
    new = [int(i) for i in space.valid_indices()
           if space.values_at(int(i))["gemm_fold"] != "co_h"
           or 4 in space.values_at(int(i))["vthreads"]]  # fmt: skip
    picks = list(rng.choice(new, 4, replace=False)) + space.sample(rng, 4)
    for i in picks:
        built = t.build(int(i))
        r = vta_sim.simulate(built.program)
        assert built.matches(r.read("out")), space.config(int(i)).describe()
    assert isinstance(t.knobs(int(picks[0])), Conv2dKnobs)
