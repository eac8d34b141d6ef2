"""Scheduling primitives: effects on the loop axes and errors naming the stage and axis."""

from __future__ import annotations

import pytest

from compiler import te, topi
from compiler.build import lower
from compiler.errors import LoweringError, ScheduleError
from compiler.ir.printer import to_text
from compiler.schedule import create_schedule, decl_tensor_intrin, parse_trace, replay


def matmul(n=16):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    C = topi.matmul(A, B, name="C")
    return A, B, C


def test_split_tile_fuse_reorder_shape_the_loops():
    A, B, C = matmul()
    s = create_schedule(C)
    st = s[C]
    st.tile("i", "j", 4, 8)
    assert st.axis_names() == ["i.outer", "j.outer", "i.inner", "j.inner", "k"]
    st.fuse("i.outer", "j.outer")
    st.reorder("k", "i.inner")
    assert st.axis_names() == ["i.outer.j.outer.fused", "k", "j.inner", "i.inner"]


@pytest.mark.parametrize(
    "action,message",
    [
        (lambda st: st.split("i", factor=0), r"split on stage C, axis i: factor/nparts must be"),
        (lambda st: st.split("i"), r"give exactly one of factor= and nparts="),
        (lambda st: st.split("q", factor=2), r"stage C has no axis named 'q'"),
        (lambda st: st.fuse("i", "k"), r"fuse on stage C: axes \['i', 'k'\] must be adjacent"),
        (lambda st: st.fuse("j", "k"), r"cannot fuse data-parallel and reduction axes"),
        (lambda st: st.vectorize("k"), r"vectorize on stage C: axis k is a reduction axis"),
        (lambda st: st.parallel("k"), r"parallel on stage C: axis k is a reduction axis"),
        (lambda st: st.bind("i", "warp.x"), r"unknown thread axis 'warp.x'"),
        (lambda st: st.reorder("i", "i"), r"reorder on stage C: an axis is listed twice"),
        (lambda st: st.pragma("i", "not an identifier"), r"key must be an identifier"),
        (lambda st: st.tensorize("i", "no_such_intrin"), r"unknown tensor intrinsic"),
        (lambda st: st.compute_inline(), r"stage C is an output"),
    ],
)
def test_illegal_primitives_name_stage_and_axis(action, message):
    A, B, C = matmul()
    s = create_schedule(C)
    with pytest.raises(ScheduleError, match=message):
        action(s[C])


def test_transforming_a_split_or_annotated_axis_is_rejected():
    A, B, C = matmul()
    s = create_schedule(C)
    s[C].split("i", factor=4)
    with pytest.raises(
        ScheduleError, match=r"axis i is no longer a loop \(it became i.outer, i.inner\)"
    ):
        s[C].split("i", factor=2)
    s[C].vectorize("j")
    with pytest.raises(ScheduleError, match="already vectorized"):
        s[C].parallel("j")
    with pytest.raises(ScheduleError, match="axis j is already annotated"):
        s[C].split("j", factor=2)


def test_attach_errors():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((16,), lambda i: B[i] + 1.0, name="C")
    D = te.compute((16,), lambda i: B[i] - 1.0, name="D")
    E = te.compute((16,), lambda i: C[i] + D[i], name="E")
    s = create_schedule(E)
    with pytest.raises(ScheduleError, match="placeholder"):
        s[A].compute_at(s[E], "i")
    with pytest.raises(ScheduleError, match="cannot be computed at itself"):
        s[B].compute_at(s[B], "i")
    s[B].compute_at(s[C], "i")
    # B is also read by D, which runs outside C's loop.
    with pytest.raises(LoweringError, match="consumer D runs outside that loop"):
        lower(s, [A, E])
    s[B].compute_root()
    s[C].compute_at(s[D], "i")
    with pytest.raises(ScheduleError, match="would form a cycle"):
        s[D].compute_at(s[C], "i")


def test_cache_primitives_check_their_arguments():
    A, B, C = matmul()
    # a scope name is the target's to resolve (scopes belong to target instances): an unknown
    # one is refused when lowering for that target, naming the stage
    s0 = create_schedule(C)
    s0.cache_read(A, "sram", [C])
    with pytest.raises(LoweringError, match="stage A.sram: unknown memory scope 'sram' for target"):
        lower(s0, [A, B, C])
    with pytest.raises(ScheduleError, match="cache_read of A: invalid memory scope 'no sram'"):
        create_schedule(C).cache_read(A, "no sram", [C])
    s = create_schedule(C)
    with pytest.raises(ScheduleError, match="stage C does not read X directly"):
        X = te.placeholder((4,), name="X")
        Y = te.compute((4,), lambda i: X[i] + 1.0, name="Y")
        s2 = create_schedule([C, Y])
        s2.cache_read(X, "local", [C])
    s[C].split("i", factor=4)
    with pytest.raises(ScheduleError, match="already has loop transformations"):
        s.cache_write(C, "local")


def test_trace_prints_parses_and_replays_to_the_same_ir():
    A, B, C = matmul()
    s = create_schedule(C)
    cl = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile("i", "j", 4, 8)
    s[cl].compute_at(s[C], jo)
    al = s.cache_read(A, "local", [cl])
    s[al].compute_at(s[cl], "k")
    s[al].pragma("ax0", "dma_copy")
    s[C].vectorize(ji)
    s[C].bind(io, "cthread")
    text = s.trace_text()
    assert text.splitlines()[0] == 's.cache_write("C", "local")'
    assert 's["C"].bind("i.outer", "cthread")' in text
    steps = parse_trace(text)
    assert [st.primitive for st in steps][:3] == ["cache_write", "tile", "compute_at"]
    again = replay(C, text)
    assert again.trace_text() == text
    assert to_text(lower(again, [A, B, C])) == to_text(lower(s, [A, B, C]))


def test_trace_parser_rejects_code():
    with pytest.raises(ScheduleError, match="is not a call"):
        parse_trace("import os")
    with pytest.raises(ScheduleError, match="must call"):
        parse_trace("os.system('ls')")
    with pytest.raises(ScheduleError, match="literals"):
        parse_trace('s["C"].split(open("x"), factor=2)')
    with pytest.raises(ScheduleError, match="unknown stage primitive"):
        parse_trace('s["C"].explode("i")')


def test_tensorize_records_the_intrinsic_and_checks_extents():
    a = te.placeholder((1, 4), name="a")
    w = te.placeholder((4, 4), name="w")
    k = te.reduce_axis(4, name="k")
    decl = te.compute((1, 4), lambda i, j: te.sum(a[i, k] * w[j, k], axis=k), name="out")
    intrin = decl_tensor_intrin("test_gemm_1x4x4", decl.op)
    A = te.placeholder((2, 8), name="A")
    W = te.placeholder((8, 8), name="W")
    kk = te.reduce_axis(8, name="k")
    C = te.compute((2, 8), lambda i, j: te.sum(A[i, kk] * W[j, kk], axis=kk), name="C")
    s = create_schedule(C)
    io, ii = s[C].split("i", factor=1)
    jo, ji = s[C].split("j", factor=4)
    ko, ki = s[C].split("k", factor=4)
    s[C].reorder(io, jo, ko, ii, ji, ki)
    s[C].tensorize(ii, intrin)
    assert 's["C"].tensorize("i.inner", "test_gemm_1x4x4")' in s.trace_text()
    lower(s, [A, W, C])  # extents (1, 4, 4) match the declaration
    s2 = create_schedule(C)
    jo, ji = s2[C].split("j", factor=2)
    s2[C].reorder(jo, "i", ji, "k")
    s2[C].tensorize("i", intrin)
    with pytest.raises(
        LoweringError, match=r"extents \[2, 2, 8\] but the intrinsic covers \[1, 4, 4\]"
    ):
        lower(s2, [A, W, C])
