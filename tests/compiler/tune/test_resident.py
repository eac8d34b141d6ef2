"""The tuner's ``weights_resident`` knob (``Conv2dKnobs.weights_resident``): in the conv2d space
only where the weights can fit the wgt buffer, its validity rule, the mapping between points and
knobs, and on ResNet-18's C1 (vta-1x16x16) a resident point that beats the heuristic's choice on
the simulator by loading the weights once instead of once per output tile."""

import pytest

import vta_sim
from compiler.errors import ScheduleError
from compiler.topi.vta import Conv2dKnobs
from compiler.tune import conv2d_task
from compiler.tune.space import Knob
from compiler.tune.task import resnet18_tasks


def _c1():
    return next(t for t in resnet18_tasks("vta-1x16x16") if t.name == "C1")


def _names(task) -> list[str]:
    return [k.name for k in task.space().knobs]


def test_knob_only_where_the_weights_can_fit():
    # C1: 4 x 1 x 7 x 7 = 196 rows; C9 (256 -> 256, 3x3): 16 x 16 x 9 = 2304 > 1024 rows
    tasks = {t.name: t for t in resnet18_tasks("vta-1x16x16")}
    assert "weights_resident" in _names(tasks["C1"])
    assert "weights_resident" not in _names(tasks["C9"])


def test_every_resident_point_obeys_the_rule():
    t = conv2d_task(8, 8, 16, 32, 3, 1, 1, hw="default", relu=True)
    space, p = t.space(), t._packed()
    valid = [int(i) for i in space.valid_indices()]
    resident = [i for i in valid if space.values_at(i)["weights_resident"]]
    assert resident
    for i in resident:
        v = space.values_at(i)
        oc_n, h_n = v["vthreads"]
        assert v["loop_order"] == "co_h" and v["tile_b"] == p["nb"]
        assert v["tile_co"] * oc_n == p["ocb"]
        assert v["tile_co"] * p["icb"] * 9 <= 1024 // (oc_n * h_n)
        assert t.knobs(i).weights_resident is True
    # a rejected point names the rule
    bad = dict(space.values_at(resident[0]), loop_order="h_co")
    with pytest.raises(ScheduleError, match="weights_resident needs loop_order co_h"):
        space.config(space.index_of(bad))
    bad = dict(space.values_at(resident[0]), tile_co=1, vthreads=(1, 1))
    with pytest.raises(ScheduleError, match="one channel tile and one batch tile"):
        space.config(space.index_of(bad))


def test_knobs_and_points_round_trip():
    t = conv2d_task(8, 8, 16, 32, 3, 1, 1, hw="default")
    assert t.knobs(t.default_config()).weights_resident is False
    knobs = Conv2dKnobs(tile_h=4, tile_w=8, tile_ci=1, tile_co=4, oc_nthread=2,
                        loop_order="co_h", weights_resident=True)  # fmt: skip
    assert t.knobs(t.config_of(knobs)) == knobs
    # a space without the knob refuses resident knobs instead of dropping them
    c9 = next(t for t in resnet18_tasks("vta-1x16x16") if t.name == "C9")
    k9 = c9.knobs(c9.default_config())
    with pytest.raises(ScheduleError, match="weights_resident is not a knob"):
        c9.config_of(Conv2dKnobs(**{**k9.__dict__, "weights_resident": True}))


def test_c1_resident_point_loads_the_weights_once_at_the_heuristics_speed():
    t = _c1()
    space, default = t.space(), t.default_config()
    resident = space.config(space.index_of(dict(default.values, loop_order="co_h",
                                                weights_resident=True)))  # fmt: skip
    runs = {}
    for name, cfg in (("heuristic", default), ("resident", resident)):
        built = t.build(cfg)
        r = vta_sim.simulate(built.program)
        assert built.matches(r.read("out")), name
        runs[name] = r
    kernel = t.build(resident).program.symbols["kernel"].nbytes
    assert runs["heuristic"].dram_bytes["wgt"] > 50 * kernel  # reloaded for every output tile
    assert runs["resident"].dram_bytes["wgt"] == 2 * kernel  # once per row thread
    # once a round's first load no longer waits for the previous round's epilogues, the
    # streamed weights hide behind the GEMM as well: both points run within 1% of each other
    assert abs(runs["resident"].cycles - runs["heuristic"].cycles) < 0.01 * runs["heuristic"].cycles


def test_points_named_without_the_knob_default_to_streamed_weights():
    # values written before the knob existed (records, tests) name the streamed point
    t = conv2d_task(8, 8, 16, 32, 3, 1, 1, hw="default")
    space, v = t.space(), t.default_config().values
    old = {k: x for k, x in v.items() if k != "weights_resident"}
    assert space.index_of(old) == t.default_config().index
    with pytest.raises(ScheduleError, match="default .yes. is not one of"):
        Knob("weights_resident", (False, True), default="yes")
