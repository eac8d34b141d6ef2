"""Tasks of quantized accelerator groups: the epilogue's step structure in the key, the space
the quantized templates compile, the heuristic's point as the default, and candidates checked
against the heuristic schedule's output."""

import numpy as np
import pytest

import isa
from compiler.errors import CompilerError, ScheduleError
from compiler.quantize.requant import AluStep
from compiler.topi.vta import Conv2dKnobs, DenseKnobs
from compiler.topi.vta.qnn import compile_qconv2d, compile_qdense
from compiler.tune import conv2d_task, dense_task
from compiler.tune.measure import MeasureResult
from compiler.tune.quantized import (
    compile_task_group,
    epilogue_structure,
    structure_steps,
    synthetic_epilogue,
)
from compiler.tune.records import Record
from compiler.tune.task import Task
from runtime.measure import measure_one, reference_output

EP = "ADD:t.bias;SHR:t.shift;MAX:i;MIN:i;MUL:t.multiplier;SHR:i;ADD:i;SHR:i;MAX:i;MIN:i"
RES = EP + ";MUL:i;MUL@rhs:i;ADD:r;ADD:i;SHR:i;MAX:i;MIN:i"
#: a hard swish fused after the requantization: a copy of the tile for its gate
HSWISH = EP + (";COPY@rhs:l;MUL@rhs:i;ADD@rhs:i;SHR@rhs:i;ADD@rhs:i;MAX@rhs:i;MIN@rhs:i;MUL:r;"
               "MUL:i;SHR:i;ADD:i;SHR:i;MAX:i;MIN:i")  # fmt: skip
CFG = "vta-1x16x16"


def test_structure_round_trips_without_values():
    steps = [AluStep("ADD", tensor="bias"), AluStep("SHR", imm=9), AluStep("MUL", imm=7),
             AluStep("MUL", imm=5, dst="rhs"), AluStep("ADD", tensor="rhs")]  # fmt: skip
    text = epilogue_structure(steps)
    assert text == "ADD:t.bias;SHR:i;MUL:i;MUL@rhs:i;ADD:r"
    back = structure_steps(text)
    assert epilogue_structure(back) == text
    # values do not enter the structure
    other = [AluStep("ADD", tensor="bias"), AluStep("SHR", imm=3), AluStep("MUL", imm=1),
             AluStep("MUL", imm=2, dst="rhs"), AluStep("ADD", tensor="rhs")]  # fmt: skip
    assert epilogue_structure(other) == text


@pytest.mark.parametrize("bad", ["ADD", "XOR:i", "ADD:q", "MUL@rhs:t.bias", "ADD@lhs:i", "SHR:t."])
def test_a_malformed_structure_is_refused_naming_the_step(bad):
    with pytest.raises(CompilerError, match=f"step 0 '{bad}'"):
        structure_steps(bad)


def test_the_key_holds_shapes_residual_depthwise_and_the_structure():
    plain = conv2d_task(8, 8, 32, 32, 3, 1, 1, hw=CFG, epilogue=EP)
    res = conv2d_task(8, 8, 32, 32, 3, 1, 1, hw=CFG, epilogue=RES, residual=True)
    dw = conv2d_task(8, 8, 32, 32, 3, 1, 1, hw=CFG, epilogue=EP, depthwise=True)
    shr = conv2d_task(8, 8, 32, 32, 3, 1, 1, hw=CFG, epilogue=EP.replace("SHR:t.shift", "SHR:i"))
    template = conv2d_task(8, 8, 32, 32, 3, 1, 1, hw=CFG)
    keys = [t.key for t in (plain, res, dw, shr, template)]
    assert len(set(keys)) == 5
    assert keys[0].startswith("vta/vta-1x16x16/conv2d/b1_h8_w8_ci32_co32_k3_s1_p1_q")
    assert "_res_q" in keys[1] and "_dw_q" in keys[2]
    assert keys[4] == "vta/vta-1x16x16/conv2d/b1_h8_w8_ci32_co32_k3_s1_p1"
    for t in (plain, res, dw):
        back = Task.from_json(t.to_json())
        assert back == t and back.key == t.key
    # the template layer's records keep their form
    assert "epilogue" not in template.to_json()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(epilogue=RES), "reads the residual"),
        (dict(epilogue=EP, residual=True), "does not read"),
        (dict(epilogue=HSWISH, residual=True), "does not read"),
        (dict(epilogue=EP, relu=True), "clip is in its epilogue"),
        (dict(depthwise=True), "give its epilogue"),
    ],
)
def test_inconsistent_quantized_tasks_are_refused(kwargs, message):
    with pytest.raises(CompilerError, match=message):
        conv2d_task(8, 8, 32, 32, 3, 1, 1, hw=CFG, **kwargs)
    with pytest.raises(CompilerError, match="in_c == out_c"):
        conv2d_task(8, 8, 32, 64, 3, 1, 1, hw=CFG, epilogue=EP, depthwise=True)


@pytest.mark.parametrize(
    "task",
    [
        conv2d_task(8, 8, 32, 32, 3, 1, 1, hw=CFG, epilogue=RES, residual=True),
        conv2d_task(8, 8, 32, 32, 3, 2, 1, hw=CFG, epilogue=EP, depthwise=True),
        dense_task(1, 256, 96, hw=CFG, epilogue=EP),
        conv2d_task(8, 8, 32, 32, 3, 1, 1, hw=CFG, epilogue=HSWISH),
        dense_task(1, 256, 96, hw=CFG, epilogue=HSWISH),
    ],
    ids=["residual", "depthwise", "dense", "hard-swish", "dense-hard-swish"],
)
def test_the_default_point_is_what_the_quantized_template_chooses(task):
    layer, _ = compile_task_group(task, None)
    assert task.knobs(task.default_config()) == layer.knobs


def test_a_candidate_is_checked_against_the_heuristic_schedules_output():
    t = conv2d_task(8, 8, 32, 32, 3, 1, 1, hw=CFG, epilogue=RES, residual=True)
    default = t.default_config().index
    other = next(int(i) for i in t.space().valid_indices()[::97] if int(i) != default)
    got = [MeasureResult.from_json(measure_one(t.to_json(), i)) for i in (default, other)]
    assert all(r.ok and r.cost > 0 for r in got), got
    built = t.build(other)
    built.expected = reference_output(built.reference)
    assert built.knobs == t.knobs(other) and built.matches(built.expected)
    assert not built.matches(built.expected + 1)


def test_a_fused_hard_swish_task_takes_a_second_tile_and_checks_its_candidates():
    steps = structure_steps(HSWISH)
    assert epilogue_structure(steps) == HSWISH
    # the copy for the gate is an accumulator tile: the space keeps fewer points
    big = conv2d_task(28, 28, 64, 64, 3, 1, 1, hw=CFG, epilogue=HSWISH)
    plain = conv2d_task(28, 28, 64, 64, 3, 1, 1, hw=CFG, epilogue=EP)
    assert 0 < len(big.space().valid_indices()) < len(plain.space().valid_indices())
    t = conv2d_task(8, 8, 32, 32, 3, 1, 1, hw=CFG, epilogue=HSWISH)
    default = t.default_config().index
    other = next(int(i) for i in t.space().valid_indices()[::53] if int(i) != default)
    got = [MeasureResult.from_json(measure_one(t.to_json(), i)) for i in (default, other)]
    assert all(r.ok and r.cost > 0 for r in got), got


def test_records_of_quantized_tasks_round_trip():
    t = dense_task(1, 256, 96, hw=CFG, epilogue=EP, name="fc")
    rec = Record(t, t.default_config(), MeasureResult(581.0), 0.0)
    back = Record.from_line(rec.to_line())
    assert back.task.key == t.key and back.config.index == rec.config.index


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        (Conv2dKnobs(tile_h=3, tile_w=8, tile_ci=1, tile_co=1),
         "conv2d group c: tile_h=3 must divide the axis of extent 32"),
        (Conv2dKnobs(tile_h=32, tile_w=32, tile_ci=8, tile_co=1),
         "conv2d group c: tile_h x tile_w = 32x32 needs an input window of 9248 rows"),
        (Conv2dKnobs(tile_h=8, tile_w=8, tile_ci=1, tile_co=1, oc_nthread=8),
         "conv2d group c: oc_nthread must be one of"),
    ],
)  # fmt: skip
def test_bad_knobs_are_refused_naming_the_group_and_the_knob(knobs, message):
    cfg = isa.load_config("default")
    w = np.random.default_rng(0).integers(-127, 128, (32, 32, 3, 3), dtype=np.int8)
    with pytest.raises(ScheduleError, match=message):
        compile_qconv2d("c", cfg, w, synthetic_epilogue(EP, 32), in_shape=(1, 32, 32, 32),
                        stride=(1, 1), padding=(1, 1, 1, 1), knobs=knobs)  # fmt: skip


def test_bad_dense_knobs_are_refused_naming_the_group_and_the_knob():
    cfg = isa.load_config(CFG)
    w = np.ones((96, 256), np.int8)
    ep = synthetic_epilogue(EP, 96)
    with pytest.raises(ScheduleError, match="dense group fc: .*tile_co=5"):
        compile_qdense("fc", cfg, w, ep, batch=1, knobs=DenseKnobs(tile_co=5, tile_ci=1))
    layer = compile_qdense("fc", cfg, w, ep, batch=1, knobs=DenseKnobs(tile_co=3, tile_ci=2))
    assert layer.knobs == DenseKnobs(tile_co=3, tile_ci=2)
