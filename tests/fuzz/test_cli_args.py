"""Fuzzing ``vtac``'s argument lists: every command with random flags, values and paths either
succeeds or exits non-zero with one line naming the fault; a failed command leaves no output.
"""

from __future__ import annotations

import os
import stat

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.harness import assert_clean, example_program, run_vtac

FUZZ = settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    example_program().save(d / "prog.npz")
    example_program("deadlock").save(d / "deadlock.npz")
    (d / "prog.vasm").write_text(_example_text())
    (d / "adir").mkdir()
    return d


def _example_text() -> str:
    from tests.fuzz.harness import EXAMPLES

    return (EXAMPLES / "matmul16.vasm").read_text()


INTS = st.sampled_from(
    ["0", "1", "-1", "2", "16", "3", "1e3", "x", "", "99999999999999999999", "7"]
)
OUT_NAMES = st.sampled_from(
    ["out.npz", "out.bin", "out.npy", "t.json", "g.png", "g.svg", "g.xyz", "g", "adir",
     "missing/x.npz", "adir/", "prog.npz"]
)  # fmt: skip
INPUTS = st.sampled_from(["prog.npz", "deadlock.npz", "prog.vasm", "adir", "nope.npz", ""])
BAD_INPUTS = st.sampled_from(["prog.vasm", "adir", "nope.npz", ""])


@st.composite
def argv(draw) -> list[str]:
    cmd = draw(st.sampled_from(["sim", "disasm", "asm", "layer", "bench", "rtl", "nope"]))
    args = [cmd]
    if cmd in ("sim", "disasm", "asm", "rtl"):
        # rtl only on inputs it refuses before building anything (an RTL build takes minutes)
        args.append(draw(INPUTS if cmd != "rtl" else BAD_INPUTS))
        flags = {
            "sim": ["--json", "--dram-out", "--trace", "--plot", "--max-cycles"],
            "disasm": ["-o", "--insns-only"],
            "asm": ["-o", "--config", "--check"],
            "rtl": ["--max-cycles", "--simulator"],
        }[cmd]
        if cmd == "asm":
            args += ["-o", draw(OUT_NAMES)]
        for flag in draw(st.lists(st.sampled_from(flags), max_size=3, unique=True)):
            args.append(flag)
            if flag in ("--dram-out", "--trace", "--plot", "-o"):
                args.append(draw(OUT_NAMES))
            elif flag == "--max-cycles":
                args.append(draw(INTS))
            elif flag == "--config":
                args.append(draw(st.sampled_from(["default", "nope", "adir", "prog.npz"])))
            elif flag == "--simulator":
                args.append(draw(st.sampled_from(["icarus", "ghdl"])))
    elif cmd == "layer":
        args.append(draw(st.sampled_from(["conv2d", "dense", "pool"])))
        small = {"--h": "4", "--w": "4", "--in-c": "4", "--out-c": "4", "--k": "1"}
        for flag in draw(
            st.lists(
                st.sampled_from(list(small) + ["--stride", "--pad", "--batch", "--seed",
                                               "--shift", "--vthreads"]),
                max_size=3,
                unique=True,
            )
        ):  # fmt: skip
            small[flag] = draw(INTS)
        for flag, value in small.items():
            args += [flag, value]
        if draw(st.booleans()):
            args.append("--check")
        if draw(st.booleans()):
            args += ["-o", draw(OUT_NAMES)]
    elif cmd == "bench":
        args += ["resnet18-layers", "--layers", draw(st.sampled_from(["C99", "", ",", "c9"]))]
    return args


def _entries(d) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


@FUZZ
@given(args=argv())
def test_vtac_arguments(workdir, args):
    here = os.getcwd()
    os.chdir(workdir)
    try:
        before = _entries(workdir)
        out = run_vtac(args)
        after = _entries(workdir)
    finally:
        os.chdir(here)
    assert_clean(out)
    assert not [n for n in after if ".tmp" in n], "a temporary file was left behind"
    if out.code != 0:
        assert after <= before, f"{args} failed but wrote {sorted(after - before)}"
    for name in after - before:  # new outputs get the usual permissions, then go
        mode = stat.S_IMODE(os.stat(workdir / name).st_mode)
        assert mode == 0o666 & ~_umask(), (name, oct(mode))
        (workdir / name).unlink()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


WORDS = st.sampled_from(
    ["sim", "disasm", "asm", "generate", "layer", "conv2d", "dense", "--json", "-o", "--check",
     "--config", "--max-cycles", "--root", "--insns-only", "--plot", "--trace", "--dram-out",
     "-1", "0", "1", "4", "default", "prog.npz", "prog.vasm", "adir", "out.npz", "--help",
     "--seed", "--batch", "--k", "--stride"]
)  # fmt: skip


@FUZZ
@given(args=st.lists(WORDS | st.text(max_size=6), min_size=1, max_size=6))
def test_vtac_word_soup(workdir, args):
    if "generate" in args and "--root" not in args:
        return  # it would write the checkout's generated files
    here = os.getcwd()
    os.chdir(workdir)
    try:
        out = run_vtac(args)
    finally:
        os.chdir(here)
    assert_clean(out)
