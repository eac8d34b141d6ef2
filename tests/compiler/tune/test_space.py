import json

import numpy as np
import pytest

from compiler.errors import CompilerError, ScheduleError
from compiler.tune import ConfigSpace, Knob, conv2d_task, dense_task, resnet18_tasks
from compiler.tune.task import tasks_from_workload_file


def test_space_indices_round_trip():
    space = ConfigSpace((Knob("a", (1, 2, 3)), Knob("b", ("x", "y")), Knob("c", ((1, 2), (2, 1)))))
    assert len(space) == 12
    for i in range(len(space)):
        assert space.index_of(space.config(i).values) == i


def test_invalid_points_are_never_handed_out():
    space = ConfigSpace(
        (Knob("t", (1, 2, 4, 8)), Knob("u", (1, 2))),
        lambda v: "too big" if v["t"] * v["u"] > 4 else None,
    )
    assert space.num_valid == 5
    rng = np.random.default_rng(0)
    assert all(space.is_valid(i) for i in space.sample(rng, 100))
    for i in space.valid_indices():
        j = space.neighbor(int(i), rng)
        assert space.is_valid(j)
        assert (
            sum(a != b for a, b in zip(space.unravel(j), space.unravel(int(i)), strict=True)) <= 1
        )
    with pytest.raises(ScheduleError, match="too big"):
        space.config(space.index_of({"t": 8, "u": 2}))
    with pytest.raises(ScheduleError, match="knob 't'"):
        space.index_of({"t": 3, "u": 1})
    with pytest.raises(ScheduleError, match="missing knobs"):
        space.index_of({"t": 1})


def test_knob_errors():
    with pytest.raises(ScheduleError, match="no choices"):
        Knob("k", ())
    with pytest.raises(ScheduleError, match="distinct names"):
        ConfigSpace((Knob("k", (1,)), Knob("k", (2,))))


def test_conv2d_space_rejects_overflow_naming_the_buffer():
    t = conv2d_task(56, 56, 64, 64, 3, 1, 1, hw="default")
    space = t.space()
    big = {"tile_b": 1, "tile_co": 16, "tile_h": 56, "tile_w": 56, "tile_ci": 16,
           "vthreads": (1, 1), "loop_order": "h_co"}  # fmt: skip
    with pytest.raises(ScheduleError, match="overflows"):
        space.config(space.index_of(big))
    odd = dict(big, tile_co=16, tile_h=56, tile_w=1, tile_ci=1, vthreads=(2, 1))
    assert "do not split" in space.reason_invalid(space.index_of(odd))


@pytest.mark.parametrize(
    "task",
    [conv2d_task(6, 6, 8, 8, 3, 1, 1, relu=True), conv2d_task(7, 7, 8, 4, 1, 2, 0, residual=True),
     dense_task(1, 32, 16, relu=True)],
    ids=["conv3x3", "conv1x1s2res", "dense"],
)  # fmt: skip
def test_every_valid_point_compiles(task):
    # a spread of valid points: each builds, and the heuristic's choice is a point of the space
    valid = task.space().valid_indices()
    assert len(valid) > 4
    for i in valid[:: max(1, len(valid) // 12)]:
        built = task.build(int(i))
        assert built.program.insn_count > 0
    assert task.space().is_valid(task.default_config().index)


def test_resnet18_tasks_spaces_are_large():
    tasks = resnet18_tasks("vta-1x16x16")
    assert [t.name for t in tasks] == [f"C{k}" for k in range(1, 13)]
    sizes = {t.name: t.space().num_valid for t in tasks}
    assert sizes["C2"] > 1000 and sizes["C9"] > 1000, sizes
    for t in tasks:  # the heuristic's choice lies in every space
        assert t.space().is_valid(t.default_config().index)


def test_tasks_from_workload_file_dedups_with_weights(tmp_path):
    f = tmp_path / "w.json"
    layer = {"name": "A", "h": 8, "w": 8, "in_c": 16, "out_c": 16, "k": 3, "stride": 1, "pad": 1}
    f.write_text(json.dumps({"layers": [layer, dict(layer, name="B")]}))
    (task,) = tasks_from_workload_file(f)
    assert task.weight == 2 and task.name == "A"
    with pytest.raises(CompilerError, match="w2.json"):
        tasks_from_workload_file(tmp_path / "w2.json")


def test_task_json_round_trip_and_errors():
    t = conv2d_task(8, 8, 16, 16, 3, 1, 1, hw="default", relu=True, name="x", weight=3)
    assert type(t).from_json(t.to_json()) == t
    with pytest.raises(CompilerError, match="malformed"):
        type(t).from_json({"kind": "conv2d", "shape": {"h": 1}})
    with pytest.raises(CompilerError, match="kind"):
        type(t)("pool", (), "default")


def test_cpu_spaces_hold_the_strategy_defaults():
    from compiler.tune.task import cpu_task

    for t in (cpu_task("matmul", m=64, k=64, n=64),
              cpu_task("dense", in_features=256, out_features=128),
              cpu_task("conv2d", h=14, w=14, in_c=64, out_c=64, k=3, pad=1),
              # one output-channel block: the default tile is the whole 28-column row
              cpu_task("conv2d", h=28, w=28, in_c=1, out_c=16, k=3, pad=1)):  # fmt: skip
        d = t.default_config()
        assert t.knobs(d)["parallel"] is False
        assert type(t).from_json(t.to_json()) == t
        assert t.loop_program(d) is not None
    with pytest.raises(CompilerError, match="missing sizes"):
        cpu_task("matmul", m=4)
    with pytest.raises(CompilerError, match="CPU only"):
        type(t)("matmul", (("m", 1), ("k", 1), ("n", 1)), "default", "vta")
