"""ALU injection: elementwise accumulator stages as ALU micro-ops, run bit-exact, and errors."""

import numpy as np
import pytest

import isa
from compiler import te
from compiler.build import lower
from compiler.ir import Buffer, BufferStore, For, ForKind, IntImm, Var, to_text
from compiler.schedule import create_schedule
from compiler.targets.vta import VTATargetError, get_vta_target
from compiler.targets.vta.passes.inject_alu import lower_alu

from .helpers import PRESETS, run, run_in_order


def alu_program(fn, preset="default", n=6, two=False, b_range=(-1000, 1000), seed=0):
    """out = int8(fn(A, B)) computed by the ALU on accumulator copies of A (and B)."""
    tgt = get_vta_target(preset)
    lanes = tgt.config.batch * tgt.config.block_out
    shape = (n, lanes)
    A = te.placeholder(shape, "int32", name="A")
    B = te.placeholder(shape, "int32", name="B")
    a_acc = te.compute(shape, lambda i, j: A[i, j], name="A_acc")
    b_acc = te.compute(shape, lambda i, j: B[i, j], name="B_acc")
    if two:
        r = te.compute(shape, lambda i, j: fn(a_acc[i, j], b_acc[i, j]), name="R")
    else:
        r = te.compute(shape, lambda i, j: fn(a_acc[i, j], None), name="R")
    out = te.compute(shape, lambda i, j: r[i, j].astype("int8"), name="out")
    s = create_schedule(out)
    for t in (a_acc, b_acc) if two else (a_acc,):
        s[t].set_scope(tgt.sram.acc)
        s[t].pragma(s[t].leaf_iter_vars[0], "dma_copy")
    s[r].set_scope(tgt.sram.acc)
    s[r].pragma(s[r].leaf_iter_vars[0], "alu")
    s[out].pragma(s[out].leaf_iter_vars[0], "dma_copy")
    args = [A, B, out] if two else [A, out]
    func = lower(s, args, target=tgt)
    prog = tgt.codegen(func)
    rng = np.random.default_rng(seed)
    a = rng.integers(-100000, 100000, shape).astype(np.int32)
    b = rng.integers(*b_range, shape).astype(np.int32)
    prog.write("A", a)
    if two:
        prog.write("B", b)
    return prog, a.astype(np.int64), b.astype(np.int64), func


def wrap8(v):
    v = ((v + (1 << 31)) % (1 << 32)) - (1 << 31)
    return v.astype(np.int64).astype(np.int8)


ONE = [
    ("add_imm", lambda a, b: a + 5, lambda a, b: a + 5),
    ("sub_imm", lambda a, b: a - 7, lambda a, b: a - 7),
    ("max_imm", lambda a, b: te.maximum(a, -3), lambda a, b: np.maximum(a, -3)),
    ("min_imm", lambda a, b: te.minimum(a, 100), lambda a, b: np.minimum(a, 100)),
    ("shr_imm", lambda a, b: a >> 3, lambda a, b: a >> 3),
    ("shl_imm", lambda a, b: a << 2, lambda a, b: a << 2),
    ("mul_imm", lambda a, b: a * 3, lambda a, b: a * 3),
    ("copy", lambda a, b: a, lambda a, b: a),
    (
        "clip",
        lambda a, b: te.minimum(te.maximum(a >> 2, -128), 127),
        lambda a, b: np.clip(a >> 2, -128, 127),
    ),  # fmt: skip
]
TWO = [
    ("add", lambda a, b: a + b, lambda a, b: a + b),
    ("add_swapped", lambda a, b: b + a, lambda a, b: a + b),
    ("max", lambda a, b: te.maximum(a, b), lambda a, b: np.maximum(a, b)),
    ("min", lambda a, b: te.minimum(b, a), lambda a, b: np.minimum(a, b)),
    ("mul", lambda a, b: a * b, lambda a, b: a * b),
]


@pytest.mark.parametrize("name, fn, ref", ONE, ids=[c[0] for c in ONE])
def test_immediate_operations_run_bit_exact(name, fn, ref):
    prog, a, b, _ = alu_program(fn)
    np.testing.assert_array_equal(run(prog).read("out"), wrap8(ref(a, b)))


@pytest.mark.parametrize("name, fn, ref", TWO, ids=[c[0] for c in TWO])
def test_tensor_operations_run_bit_exact(name, fn, ref):
    prog, a, b, _ = alu_program(fn, two=True)
    np.testing.assert_array_equal(run(prog).read("out"), wrap8(ref(a, b)))


def test_shift_by_a_tensor():
    prog, a, b, _ = alu_program(lambda a, b: a >> b, two=True, b_range=(0, 24))
    np.testing.assert_array_equal(run(prog).read("out"), wrap8(a >> b))


@pytest.mark.parametrize("preset", PRESETS)
def test_alu_on_every_preset(preset):
    prog, a, b, _ = alu_program(lambda a, b: te.maximum(a + b, 0), preset, two=True)
    want = wrap8(np.maximum(a + b, 0))
    np.testing.assert_array_equal(run(prog).read("out"), want)
    np.testing.assert_array_equal(prog.read("out", run_in_order(prog)), want)


def test_in_place_chain_and_copy_micro_ops():
    _, _, _, func = alu_program(lambda a, b: te.minimum(te.maximum(a, -128), 127))
    text = to_text(func)
    assert "vta.uop_alu_max_imm(address_of(A_acc[" in text
    assert "vta.uop_alu_min_imm(address_of(A_acc[" in text
    _, _, _, func = alu_program(lambda a, b: a)
    assert "vta.uop_alu_shr_imm(" in to_text(func)  # the copy refreshes the out buffer


def test_copy_into_another_buffer_clears_then_adds():
    cfg = isa.load_config("default")
    acc = get_vta_target("default").sram.acc
    S, D = Buffer("S", (32,), "int32", acc), Buffer("D", (32,), "int32", acc)
    i, lane = Var("i"), Var("l")
    body = For(i, IntImm(0), IntImm(8), ForKind.SERIAL, For(lane, IntImm(0), IntImm(4),
               ForKind.SERIAL, BufferStore(D, S[i * 4 + lane], (i * 4 + lane,))))  # fmt: skip
    text = to_text(lower_alu(cfg, body))
    assert "vta.uop_alu_mul_imm(address_of(D[i*4]), 0)" in text
    assert "vta.uop_alu_add(address_of(D[i*4]), address_of(S[i*4]))" in text


@pytest.mark.parametrize(
    "fn, two, message",
    [
        (lambda a, b: a // 2, False, "divides; the ALU has MIN, MAX, ADD, SHR and MUL"),
        (lambda a, b: a - b, True, "subtracts a tensor"),
        (lambda a, b: a << b, True, "shifts left by a tensor"),
        (lambda a, b: a + 70000, False, r"does not fit the ALU's signed imm field \[-32768, 32767"),
        (lambda a, b: (a + 1) * (b + 1), True, "is not a chain of ALU operations"),
    ],
)
def test_what_the_alu_cannot_do_is_named(fn, two, message):
    with pytest.raises(VTATargetError, match=message):
        alu_program(fn, two=two)


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_immediate_range_is_the_format_declarations(preset):
    lo, hi = isa.limits(isa.load_config(preset)).range("alu", "imm")
    prog, a, _, _ = alu_program(lambda x, y: x + hi, preset=preset)
    np.testing.assert_array_equal(run(prog).read("out"), wrap8(a + hi))
    alu_program(lambda x, y: x + lo, preset=preset)
    with pytest.raises(VTATargetError, match=f"immediate {hi + 1} does not fit"):
        alu_program(lambda x, y: x + (hi + 1), preset=preset)


def test_operands_must_be_in_the_accumulator():
    tgt = get_vta_target("default")
    A = te.placeholder((4, 4), "int32", name="A")
    r = te.compute((4, 4), lambda i, j: A[i, j] + 1, name="R")
    out = te.compute((4, 4), lambda i, j: r[i, j].astype("int8"), name="out")
    s = create_schedule(out)
    s[r].set_scope(tgt.sram.acc)
    s[r].pragma(s[r].leaf_iter_vars[0], "alu")
    s[out].pragma(s[out].leaf_iter_vars[0], "dma_copy")
    with pytest.raises(VTATargetError, match="operand A is in scope global; the ALU reads only"):
        lower(s, [A, out], target=tgt)


def test_a_reduction_clears_then_adds_with_the_window_loops_outermost():
    cfg = isa.load_config("default")
    acc = get_vta_target("default").sram.acc
    S, D = Buffer("S", (2 * 16 * 4,), "int32", acc), Buffer("D", (2 * 4,), "int32", acc)
    y, lane, r = Var("y"), Var("l"), Var("r")
    init = BufferStore(D, IntImm(0), (y * 4 + lane,))
    update = BufferStore(D, D[y * 4 + lane] + S[(y * 16 + r) * 4 + lane], (y * 4 + lane,))
    window = For(r, IntImm(0), IntImm(16), ForKind.SERIAL, update)
    from compiler.ir.stmt import seq

    body = For(y, IntImm(0), IntImm(2), ForKind.SERIAL,
               For(lane, IntImm(0), IntImm(4), ForKind.SERIAL, seq(init, window)))  # fmt: skip
    text = to_text(lower_alu(cfg, body))
    clear, add = text.split("vta.uop_alu_mul_imm(address_of(D[y*4]), 0)")
    assert "for y in range(2)" in clear
    # the window loop outside the output loop: it folds into the instruction's loops
    assert add.index("for r in range(16)") < add.index("for y in range(2)")
    assert "vta.uop_alu_add(address_of(D[y*4]), address_of(S[(y*16 + r)*4]))" in add


def test_a_reduction_whose_identity_does_not_fit_the_immediate_is_named():
    cfg = isa.load_config("default")
    acc = get_vta_target("default").sram.acc
    S, D = Buffer("S", (16 * 4,), "int32", acc), Buffer("D", (4,), "int32", acc)
    lane, r = Var("l"), Var("r")
    from compiler.ir.expr import Max
    from compiler.ir.stmt import seq

    init = BufferStore(D, IntImm(-(1 << 31)), (lane,))
    update = BufferStore(D, Max(D[lane], S[r * 4 + lane]), (lane,))
    body = For(lane, IntImm(0), IntImm(4), ForKind.SERIAL,
               seq(init, For(r, IntImm(0), IntImm(16), ForKind.SERIAL, update)))  # fmt: skip
    with pytest.raises(VTATargetError, match=r"the reduction's identity -2147483648 does not fit"):
        lower_alu(cfg, body)
