"""``vtac`` as a process: a closed pipe on standard output, Ctrl-C during a long run."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

import isa
from tests.fuzz.harness import ROOT, example_program

VTAC = [sys.executable, "-m", "runtime.cli"]


def test_closed_pipe_is_quiet(tmp_path):
    example_program().save(tmp_path / "p.npz")
    for args in (["sim", str(tmp_path / "p.npz")], ["disasm", str(tmp_path / "p.npz")]):
        proc = subprocess.Popen(
            VTAC + args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        proc.stdout.close()  # the reader went away, as `vtac sim ... | head -0` does
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 141, err
        assert err == "", err


def _long_program(path) -> None:
    """Nine billion cycles of GEMM, in 10-million-micro-op steps: minutes of work."""
    cfg = isa.load_config("default")
    step = isa.Gemm(uop_begin=0, uop_end=1, iter_out=10_000, iter_in=1_000)
    isa.Program.build(cfg, [step] * 900 + [isa.Finish()]).save(path)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is POSIX")
def test_ctrl_c_stops_a_long_run(tmp_path):
    _long_program(tmp_path / "long.npz")
    proc = subprocess.Popen(
        VTAC + ["sim", str(tmp_path / "long.npz"), "--max-cycles", str(10**10)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(4)  # imported, loaded and into the run
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)  # stops long before the run would end
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (out, err)
    assert err.strip() in ("vtac sim: interrupted", "vtac: interrupted"), err
