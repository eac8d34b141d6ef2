"""The named pass pipeline: extension by name, verification and dumps after each pass."""

from __future__ import annotations

import pytest

from compiler import te
from compiler.errors import CompilerError, IRVerifyError
from compiler.ir import Buffer, BufferStore, For, ForKind, IntImm, PrimFunc, Var
from compiler.lower import schedule_to_primfunc
from compiler.passes import Pass, PassOptions, default_pipeline, verify
from compiler.schedule import create_schedule
from compiler.targets import get_target


def small_func():
    A = te.placeholder((4, 8), name="A")
    B = te.compute((4, 8), lambda i, j: A[i, j] * 2.0, name="B")
    s = create_schedule(B)
    s[B].vectorize("j")
    return schedule_to_primfunc(s, [A, B])


def test_pipeline_is_a_named_list_targets_extend():
    base = default_pipeline()
    assert base.names() == [
        "lower_tensorize",
        "simplify",
        "flatten_buffers",
        "simplify_flat",
        "unroll_loops",
        "vectorize_loops",
        "simplify_final",
        "remove_no_op",
    ]
    cpu = get_target("cpu").pipeline().names()
    assert cpu.index("serialize_virtual_threads") == cpu.index("unroll_loops") - 1
    assert cpu[-1] == "check_cpu_support"
    extended = base.insert_after("flatten_buffers", Pass("inject_dma", lambda f: f))
    assert extended.names()[3] == "inject_dma"
    assert extended.remove("inject_dma").names() == base.names()
    with pytest.raises(CompilerError, match="no pass named 'nope'"):
        base.insert_before("nope", Pass("x", lambda f: f))
    with pytest.raises(CompilerError, match="duplicate pass names"):
        base.append(Pass("simplify", lambda f: f))


def test_dump_by_pass_name_to_callback_and_directory(tmp_path):
    seen: dict[str, str] = {}
    opts = PassOptions(verify=True, dump=frozenset({"flatten_buffers", "vectorize_loops"}),
                       on_dump=lambda name, text: seen.__setitem__(name, text))  # fmt: skip
    default_pipeline().run(small_func(), opts)
    assert set(seen) == {"flatten_buffers", "vectorize_loops"}
    assert "A[i*8 + j]" in seen["flatten_buffers"]
    assert "ramp(" in seen["vectorize_loops"]
    default_pipeline().run(small_func(), PassOptions(dump=frozenset({"all"}), dump_dir=tmp_path))
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files[0] == "00_input.txt" and "06_vectorize_loops.txt" in files


def test_dump_from_environment(monkeypatch, capsys):
    monkeypatch.setenv("VTAC_DUMP_IR", "remove_no_op")
    monkeypatch.setenv("VTAC_VERIFY_IR", "1")
    default_pipeline().run(small_func())
    assert "# ---- after remove_no_op ----" in capsys.readouterr().err


def test_verifier_names_the_pass_that_broke_the_ir():
    def drop_loop(func: PrimFunc) -> PrimFunc:
        # A deliberately broken pass: keeps the body of the outer loop without its variable.
        return func.with_body(func.body.body)  # type: ignore[attr-defined]

    broken = default_pipeline().insert_after("simplify", Pass("drop_loop", drop_loop))
    with pytest.raises(
        IRVerifyError, match="after pass drop_loop: variable i is used but not defined"
    ):
        broken.run(small_func(), PassOptions(verify=True))


def test_verifier_checks_buffers_dtypes_and_shadowing():
    B = Buffer("B", (4,), "float32")
    i = Var("i")
    wrong_dtype = PrimFunc("f", (B,), For(i, IntImm(0), IntImm(4), ForKind.SERIAL,
                                          BufferStore(B, i, (i,))))  # fmt: skip
    with pytest.raises(IRVerifyError, match="store of int32 into B of float32"):
        verify(wrong_dtype)
    T = Buffer("T", (4,), "float32")
    outside = PrimFunc("f", (B,), BufferStore(B, T[IntImm(0)], (IntImm(0),)))
    with pytest.raises(IRVerifyError, match="buffer T is used outside its allocation"):
        verify(outside)
    inner = For(i, IntImm(0), IntImm(2), ForKind.SERIAL, BufferStore(B, B[i], (i,)))
    shadow = PrimFunc("f", (B,), For(i, IntImm(0), IntImm(2), ForKind.SERIAL, inner))
    with pytest.raises(IRVerifyError, match="variable i is redefined"):
        verify(shadow)
