"""Fuzzing the assembler: instruction lines with random keywords and numbers, data sections with
random shapes, dtypes and values, non-UTF-8 text. Every text assembles or is refused with one
line naming the line at fault; what assembles disassembles to text that assembles back to the
same program (the documented round trip).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isa import AsmError, IsaError
from isa.asm import _ALU_FIELDS, _GEMM_FIELDS, _MEM_FIELDS, assemble, disassemble
from tests.fuzz.harness import EXAMPLES, assert_clean, run_vtac

FUZZ = settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])


def _mostly(valid, invalid):
    """Draw from ``valid`` most of the time and from ``invalid`` now and then."""
    return st.integers(0, 7).flatmap(lambda k: invalid if k == 0 else valid)


NUMBERS = _mostly(
    st.integers(0, 40).map(str),
    st.one_of(
        st.sampled_from([-1, 2**14, 2**16, 2**16 - 1, 2**31, 2**32, 2**64, -(2**15) - 1, 2**15]),
        st.integers(-(2**70), 2**70),
    ).map(str)
    | st.sampled_from(["0x10", "1e3", "", "@A", "@A+1", "@nope", "@A+x", "--1", "0b11"]),
)
VALID_INSNS = st.sampled_from(
    [
        ("load inp", _MEM_FIELDS),
        ("load wgt", _MEM_FIELDS),
        ("load uop", _MEM_FIELDS),
        ("load acc", _MEM_FIELDS),
        ("load acc8", _MEM_FIELDS),
        ("store out", _MEM_FIELDS),
        ("gemm", _GEMM_FIELDS),
        ("gemm reset", _GEMM_FIELDS),
        ("alu add", _ALU_FIELDS),
        ("alu shr", _ALU_FIELDS),
        ("alu max reset", _ALU_FIELDS),
    ]
)
BAD_HEADS = st.sampled_from(
    ["load", "load out", "store acc", "alu", "alu bogus", "nop", "raw", "raw 0x3", "finish x"]
)
BAD_KEYS = st.sampled_from(
    ["reset", "reset=2", "memory_type=1", "foo=1", "use_imm=3", "pop_prev_dep=5", "x_size=1"]
)
FLAGS = st.sampled_from(["pop_prev", "pop_next", "push_prev", "push_next", "push_next_dep=1"])


@st.composite
def insn_lines(draw) -> str:
    head, fields = draw(VALID_INSNS)
    parts = [draw(_mostly(st.just(head), BAD_HEADS))]
    for _ in range(draw(st.integers(0, 4))):
        key = draw(st.sampled_from(fields))
        parts.append(draw(_mostly(st.just(f"{key}={draw(NUMBERS)}"), BAD_KEYS)))
    if draw(st.integers(0, 3)) == 0:
        parts.append(draw(FLAGS))
    return " ".join(parts)


DTYPES = _mostly(
    st.sampled_from(["int8", "uint8", "int32", "float32", "float16", "bool", "complex64"]),
    st.sampled_from(["O", "V0", "U2", "S0", "int8,int8", "datetime64", "nonsense"]),
)
SHAPES = _mostly(
    st.lists(st.integers(1, 6), min_size=1, max_size=3).map(lambda s: ",".join(map(str, s))),
    st.sampled_from(["0", "-1,2", "1099511627776,1099511627776", "x", "2,,2", "2,0"]),
)
BODIES = _mostly(
    st.sampled_from(["zeros", "random 1", "random 7 -8 8", "random 3 0 1", ""]),
    st.sampled_from(
        [
            "random 1 0 1000",
            "random -1",
            "random 1 5 2",
            "random 1 -1e3 1e3",
            "1 2 3 4",
            "1e999 0 0 0",
            "nan inf -inf 0",
            "bits 0x7fc00001",
            "bits 1 2 3 4",
            "True False",
            "(1+2j) 0 0 0",
        ]
    ),  # fmt: skip
)


@st.composite
def programs(draw) -> str:
    lines = [".config default"]
    if draw(st.integers(0, 5)) == 0:
        lines.append(f".dram {draw(NUMBERS)}")
    text_at = draw(_mostly(st.sampled_from(["", "0", "16"]), st.sampled_from(["8", "auto", "0 x"])))
    lines.append(f".text {text_at}")
    lines += ["  " + draw(insn_lines()) for _ in range(draw(st.integers(0, 4)))]
    lines.append("  finish")
    lines.append(f".tensor A input {draw(DTYPES)} {draw(SHAPES)} auto")
    lines.append("  " + draw(BODIES))
    if draw(st.booleans()):
        at = draw(
            _mostly(st.sampled_from(["auto", "4096"]), st.sampled_from(["0", "-4", "9" * 12]))
        )
        lines.append(f".uops {at} name=K")
        lines.append(f"  {draw(NUMBERS)} 0 0")
    if draw(st.booleans()):
        at = draw(_mostly(st.sampled_from(["auto", "8192"]), st.sampled_from(["99999999999"])))
        lines.append(f".bytes {at}")
        lines.append("  " + draw(_mostly(st.sampled_from(["de ad", "ff"]), st.just("0xzz 100"))))
    return "\n".join(lines) + "\n"


def _round_trip(prog) -> None:
    text = disassemble(prog)
    again = assemble(text)
    assert np.array_equal(again.dram, prog.dram), text
    assert (again.insn_base, again.insn_count) == (prog.insn_base, prog.insn_count)
    assert again.config == prog.config and again.symbols == prog.symbols


@FUZZ
@given(text=programs())
def test_assembler_text(text):
    try:
        prog = assemble(text)
    except AsmError as e:
        assert "\n" not in str(e)
        return
    _round_trip(prog)


@FUZZ
@given(text=programs(), data=st.data())
def test_vtac_asm_then_disasm(tmp_path_factory, text, data):
    d = tmp_path_factory.mktemp("asm")
    src = d / "p.vasm"
    raw = text.encode()
    if data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(raw)))
        raw = (
            raw[:at]
            + data.draw(st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\xe2\x82"]))
            + raw[at:]
        )
    src.write_bytes(raw)
    out = run_vtac(["asm", str(src), "-o", str(d / "p.npz"), "--check"])
    assert_clean(out)
    if out.code == 0:
        assert_clean(run_vtac(["disasm", str(d / "p.npz")]))
    else:
        assert not (d / "p.npz").exists()


def test_examples_round_trip():
    for path in sorted(EXAMPLES.glob("*.vasm")):
        _round_trip(assemble(path.read_text(), source=str(path)))


def test_float_payloads_and_bools_round_trip():
    """Values that decimal text cannot give back bit for bit are written as bit patterns."""
    from isa import Program, Symbol, load_config

    cfg = load_config("default")
    f = np.array([np.nan, -0.0, 1e-45, np.inf], np.float32)
    f.view(np.uint32)[0] = 0x7FC00001  # a NaN with a payload
    data = {0: f, 64: np.array([True, False, True]), 128: np.array([np.nan + 1j], np.complex64)}
    syms = [
        Symbol("f", 0, "float32", (4,)),
        Symbol("b", 64, "bool", (3,)),
        Symbol("c", 128, "complex64", (1,)),
    ]
    prog = Program.build(cfg, [], data=data, symbols=syms, insn_base=192)
    _round_trip(prog)


def test_unwritable_symbol_names_are_refused_by_name():
    from isa import Program, Symbol, load_config

    prog = Program.build(load_config("default"), [], symbols=[Symbol("a b", 0, "int8", (2,))])
    try:
        disassemble(prog)
    except IsaError as e:
        assert "'a b'" in str(e)
    else:
        raise AssertionError("a name with a space was written")
