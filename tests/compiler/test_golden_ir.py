"""Golden text of lowered IR for a few schedules (refresh with ``pytest --update-golden``).

The accelerator-style schedule shows what target passes receive: cache stages as copy loop
nests in typed scopes under ``pragma dma_copy``, padding as ``if_then_else``, virtual threads
as loops bound to ``cthread``.
"""

from __future__ import annotations

from compiler import te, topi
from compiler.build import lower
from compiler.ir import Scope, register_scope, to_text
from compiler.lower import schedule_to_primfunc
from compiler.schedule import create_schedule
from compiler.targets.cpu import CpuTarget
from compiler.topi.cpu import schedule_injective, schedule_matmul

CPU = CpuTarget(num_threads=4)
INP = register_scope(Scope("test.inp_buffer", unit_bits=128, capacity_bits=32 * 1024 * 8))
WGT = register_scope(Scope("test.wgt_buffer", unit_bits=2048, capacity_bits=256 * 1024 * 8))
ACC = register_scope(Scope("test.acc_buffer", unit_bits=512, capacity_bits=128 * 1024 * 8))


def test_golden_matmul_cpu_schedule(golden):
    A = te.placeholder((48, 64), name="A")
    B = te.placeholder((64, 64), name="B")
    C = topi.matmul(A, B)
    s = schedule_matmul(C, rows=6, cols=32)
    golden("matmul_cpu_trace", s.trace_text() + "\n")
    golden("matmul_cpu_lowered", to_text(lower(s, [A, B, C], target=CPU)))


def accelerator_style_conv():
    """An int8 packed conv scheduled the way the accelerator wants it (VTA's conv2d schedule)."""
    X = te.placeholder((1, 2, 8, 8, 1, 16), "int8", name="X")
    W = te.placeholder((4, 2, 3, 3, 16, 16), "int8", name="W")
    conv = topi.conv2d_nchwc(X, W, 1, 1, name="conv")
    shifted = topi.right_shift(conv, 8, name="shr")
    res = topi.clip(shifted, -127, 127, name="clip")
    out = topi.cast(res, "int8", name="out")
    s = create_schedule(out)
    pad = conv.op.input_tensors()[0]
    s[pad].set_scope(INP)
    wl = s.cache_read(W, WGT, [conv])
    s[conv].set_scope(ACC)
    s[shifted].set_scope(ACC)
    s[res].set_scope(ACC)
    n, ob, y, x, bi, oi = s[out].leaf_iter_vars
    obo, obi = s[out].split(ob, factor=2)
    yo, yi = s[out].split(y, factor=4)
    s[out].reorder(n, obo, yo, obi, yi, x, bi, oi)
    s[out].bind(obo, "cthread")
    for st in (conv, shifted, res):
        s[st].compute_at(s[out], yo)
    s[shifted].pragma(s[shifted].leaf_iter_vars[0], "alu")
    s[res].pragma(s[res].leaf_iter_vars[0], "alu")
    s[out].pragma(obi, "dma_copy")
    cn, cob, cy, cx, cbi, coi, rcb, ry, rx, rci = s[conv].leaf_iter_vars
    rco, rcii = s[conv].split(rcb, factor=1)
    s[conv].reorder(cn, rco, rcii, cob, cy, ry, rx, cx, cbi, coi, rci)
    s[pad].compute_at(s[conv], rco)
    s[wl].compute_at(s[conv], rco)
    s[pad].pragma(s[pad].leaf_iter_vars[0], "dma_copy")
    s[wl].pragma(s[wl].leaf_iter_vars[0], "dma_copy")
    return s, [X, W, out]


def test_golden_accelerator_style_conv(golden):
    s, args = accelerator_style_conv()
    golden("conv_accel_trace", s.trace_text() + "\n")
    golden("conv_accel_schedule_ops", to_text(schedule_to_primfunc(s, args)))
    golden("conv_accel_cpu_lowered", to_text(lower(s, args, target=CPU)))


def test_golden_softmax_and_injective(golden):
    X = te.placeholder((4, 10), name="X")
    sm = topi.softmax(X)
    golden("softmax_default", to_text(lower(create_schedule(sm), [X, sm], target=CPU)))
    Y = te.placeholder((3, 5, 32), "int32", name="Y")
    r = topi.relu(Y)
    golden("relu_injective", to_text(lower(schedule_injective(r), [Y, r], target=CPU)))
