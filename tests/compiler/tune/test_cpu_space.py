"""The CPU templates' spaces: their sizes at ResNet-18's shapes, the default point as the
strategy's schedule, random points against numpy, refused points and records written before
the knobs existed."""

import json

import numpy as np
import pytest

from compiler.errors import CompilerError, ScheduleError
from compiler.topi.vta import RESNET18
from compiler.tune.cpu import cpu_build, cpu_schedule
from compiler.tune.measure import MeasureResult
from compiler.tune.records import Record, apply_best
from compiler.tune.space import REQUIRED
from compiler.tune.task import cpu_task


def resnet18_conv(name):
    lay = RESNET18[name]
    return cpu_task("conv2d", h=lay.h, w=lay.w, in_c=lay.in_c, out_c=lay.out_c, k=lay.k,
                    stride=lay.stride, pad=lay.pad, name=name)  # fmt: skip


SMALL = [
    cpu_task("conv2d", h=6, w=6, in_c=32, out_c=32, k=3, pad=1),
    cpu_task("conv2d", h=4, w=4, in_c=32, out_c=64, k=1, stride=2),
    cpu_task("dense", batch=2, in_features=64, out_features=40),
    cpu_task("matmul", m=20, k=64, n=48),
    cpu_task("depthwise", h=10, w=10, channels=48, k=3, pad=1),
    cpu_task("depthwise", h=17, w=17, channels=32, k=5, stride=2, pad=2),
]


@pytest.mark.parametrize(
    "task",
    [resnet18_conv(n) for n in ("C2", "C6", "C9", "C12")]
    + [cpu_task("dense", in_features=512, out_features=1000, name="fc"),
       cpu_task("matmul", m=1024, k=1024, n=1024, name="matmul1024")],
    ids=lambda t: t.name,
)  # fmt: skip
def test_resnet18_tasks_have_thousands_of_valid_points(task):
    space = task.space()
    assert 2000 <= space.num_valid < len(space)
    assert space.is_valid(task.default_config().index)


@pytest.mark.parametrize("task", SMALL, ids=lambda t: t.key)
def test_the_default_point_is_the_strategy_schedule(task):
    """Without records compilation uses the strategy's choice; the space's default is that
    choice and schedules the same loops, and the knobs added to the template sit at the values
    that leave today's loop nest unchanged."""
    default = task.default_config()
    knobs = task.knobs(default)
    tuned, _ = cpu_schedule(task.kind, task.shape, knobs)
    plain, _ = cpu_schedule(task.kind, task.shape, {"parallel": False})
    assert tuned.trace_text() == plain.trace_text()
    # oh_block is part of the strategy's register tile (topi.cpu.conv2d.default_oh_block); its
    # knob's default, 1, is what a record that does not name it means
    added = [k for k in task.space().knobs if k.default is not REQUIRED and k.name != "oh_block"]
    assert added and all(knobs[k.name] == k.default == k.choices[0] for k in added)


@pytest.mark.parametrize("task", SMALL, ids=lambda t: t.key)
def test_random_valid_points_build_and_match_numpy(task):
    space = task.space()
    rng = np.random.default_rng(7)
    for index in space.sample(rng, 4):
        built = cpu_build(task.kind, task.shape, task.knobs(index))
        got = built.func(*built.inputs)
        assert built.matches(got), space.config(index).describe()


def test_every_new_knob_changes_the_loops():
    """Each knob is a schedule decision: moving it off its default changes the trace."""
    task = SMALL[0]
    space = task.space()
    default = task.default_config().values
    base, _ = cpu_schedule(task.kind, task.shape, task.knobs(task.default_config()))
    for knob, value in (("oh_block", 2), ("ic_block", 1), ("ic_inner", 4),
                        ("reduce_order", "kh_ic_kw"), ("unroll_kw", True), ("ow_block", 3),
                        ("lanes", 8), ("outer_order", None)):  # fmt: skip
        if knob == "outer_order":  # the order the default does not take
            value = "oc_h" if default["outer_order"] == "h_oc" else "h_oc"
        values = dict(default, **{knob: value})
        if knob == "ic_block":  # with the channel loops outermost the split changes nothing
            values["reduce_order"] = "kh_kw_ic"
        if knob == "ow_block":  # and unroll_ic: 3 x 2 x 16 unrolled FMAs
            values["unroll_ic"] = True
        index = space.index_of(values)
        sched, _ = cpu_schedule(task.kind, task.shape, task.knobs(index))
        assert sched.trace_text() != base.trace_text(), knob


@pytest.mark.parametrize(
    "task, values, knob",
    [
        (resnet18_conv("C9"), dict(oh_block=2, ow_block=14, oc_blocks=2), "oh_block"),
        (resnet18_conv("C9"), dict(lanes=8, ow_block=14, oc_blocks=2), "lanes"),
        (resnet18_conv("C9"), dict(ic_block=4), "ic_block"),
        (resnet18_conv("C9"), dict(ic_inner=4, reduce_order="kh_kw_ic"), "ic_inner"),
        (
            resnet18_conv("C9"),
            dict(unroll_ic=True, unroll_kw=True, ow_block=14, oc_blocks=2),
            "unroll_ic",
        ),
        (cpu_task("dense", in_features=512, out_features=1000), dict(unit_groups=5), "unit_groups"),
        (cpu_task("dense", in_features=512, out_features=1000), dict(k_block=4), "k_block"),
        (cpu_task("matmul", m=64, k=64, n=64), dict(lanes=8, rows=8, cols=48), "lanes"),
        (cpu_task("matmul", m=64, k=256, n=64), dict(unroll_k=True, rows=6, cols=32), "unroll_k"),
        (cpu_task("matmul", m=4, k=64, n=64), dict(rows=6), "rows"),
        (
            cpu_task("depthwise", h=16, w=16, channels=64, k=3, pad=1),
            dict(cb_block=4, ow_block=8),
            "cb_block",
        ),
        (
            cpu_task("depthwise", h=16, w=16, channels=64, k=5, pad=2),
            dict(unroll_window=True, ow_block=8),
            "unroll_window",
        ),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_invalid_points_are_refused_naming_the_knob(task, values, knob):
    space = task.space()
    first = space.values_at(int(space.valid_indices()[0]))
    index = space.index_of(first | values)
    assert not space.is_valid(index)
    assert index not in set(int(i) for i in space.valid_indices())
    with pytest.raises(ScheduleError, match=knob):
        space.config(index)


@pytest.mark.parametrize(
    "task, knobs, knob",
    [
        (SMALL[0], dict(ic_block=3), "ic_block"),
        (SMALL[0], dict(oh_block=4), "oh_block"),
        (SMALL[0], dict(reduce_order="kw_kh"), "reduce_order"),
        (SMALL[2], dict(k_block=3), "k_block"),
        (SMALL[2], dict(unit_groups=3), "unit_groups"),
        (SMALL[3], dict(k_block=5), "k_block"),
        (SMALL[3], dict(k_order="k"), "k_order"),
        (SMALL[4], dict(ow_block=3), "ow_block"),
        (SMALL[4], dict(cb_block=2), "cb_block"),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_the_schedules_refuse_knobs_that_do_not_fit(task, knobs, knob):
    with pytest.raises(ScheduleError, match=knob):
        cpu_schedule(task.kind, task.shape, {"parallel": False, **knobs})


def line(task, index, values):
    return json.dumps({"task": task.to_json(), "config": {"index": index, "values": values},
                       "result": MeasureResult(1e-3).to_json(), "time": 0.0})  # fmt: skip


@pytest.mark.parametrize(
    "task, index, old",
    [
        # (index, values) as the spaces of the strategy's knobs only wrote them
        (cpu_task("matmul", m=1024, k=1024, n=1024), 17, {"rows": 6, "cols": 48}),
        (cpu_task("dense", in_features=512, out_features=1000), 4, {"units_block": 8}),
        (cpu_task("conv2d", h=14, w=14, in_c=64, out_c=64, k=3, pad=1), 7,
         {"ow_block": 7, "oc_blocks": 2}),
    ],
)  # fmt: skip
def test_records_written_before_the_knobs_still_load(task, index, old):
    record = Record.from_line(line(task, index, old))
    assert record.config.index == index
    assert {k: record.config.values[k] for k in old} == old
    added = [k for k in task.space().knobs if k.name not in old]
    assert all(record.config.values[k.name] == k.default for k in added)
    # the values decide: a record whose index is stale still names its own schedule
    moved = Record.from_line(line(task, index + 1, old))
    assert moved.config.index == index
    with pytest.raises(CompilerError, match="different space version"):
        Record.from_line(line(task, index, dict(old, no_such_knob=1)))
    with pytest.raises(CompilerError, match="different space version"):
        Record.from_line(line(task, index, dict(old, **{next(iter(old)): 10_000})))


def test_apply_best_passes_the_new_knobs_to_graph_compilation():
    from compiler import te
    from compiler.build import build
    from compiler.strategy import compute
    from compiler.strategy.schedule import schedule_group

    task = cpu_task("matmul", m=20, k=64, n=48)
    space = task.space()
    index = space.index_of(task.default_config().values | dict(k_block=16, k_order="rows_k",
                                                               pack_b=False, lanes=8,
                                                               rows=6))  # fmt: skip
    best = apply_best([Record(task, space.config(index), MeasureResult(1e-5))])
    a, b = te.placeholder((20, 64), name="a"), te.placeholder((64, 48), name="b")
    mm = compute("matmul", [a, b], {}, "mm")

    knobs = best.knobs(task)
    assert knobs["k_order"] == "rows_k" and knobs["pack_b"] is False
    g = schedule_group([mm], mm, knobs={k: v for k, v in knobs.items() if k != "parallel"})
    assert g.knobs["k_block"] == 16 and g.knobs["lanes"] == 8
    av = np.random.default_rng(0).standard_normal((20, 64)).astype(np.float32)
    bv = np.random.default_rng(1).standard_normal((64, 48)).astype(np.float32)
    got = build(g.schedule, [a, b, mm], target="cpu")(av, bv)
    np.testing.assert_allclose(got, av @ bv, rtol=1e-4, atol=1e-4)
