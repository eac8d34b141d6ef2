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
    """Two trillion cycles of GEMM, in 10-million-micro-op steps: minutes of work even where
    the simulator runs a step's repeated micro-op as one product (about 2 ms a step)."""
    cfg = isa.load_config("default")
    step = isa.Gemm(uop_begin=0, uop_end=1, iter_out=10_000, iter_in=1_000)
    isa.Program.build(cfg, [step] * 200_000 + [isa.Finish()]).save(path)


def _interrupt(argv: list[str], wait) -> tuple[subprocess.Popen, str, str]:
    """Start ``argv``, ``wait(proc)``, send SIGINT and collect its output (killed after 90 s)."""
    proc = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait(proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc, out, err


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is POSIX")
@pytest.mark.parametrize("delay_s", [0.3, 1.5, 4.0])
def test_ctrl_c_stops_a_long_run_at_any_moment(tmp_path, delay_s):
    """Whenever Ctrl-C comes (interpreter start, imports, the engine's compile, the run), the
    command stops: with its one ``interrupted`` line and 130 once its handler is installed, or
    killed by the signal itself if it came before Python had run any of the command."""
    _long_program(tmp_path / "long.npz")
    argv = VTAC + ["sim", str(tmp_path / "long.npz"), "--max-cycles", str(10**13)]
    # the run alone would take minutes; the watchdog forces an exit 10 s after the signal
    proc, out, err = _interrupt(argv, lambda p: time.sleep(delay_s))
    if proc.returncode == -signal.SIGINT:
        return  # interrupted before the interpreter had imported the command
    assert proc.returncode == 130, (out, err)
    assert err.strip() in ("vtac sim: interrupted", "vtac: interrupted"), err


def test_an_interrupt_a_library_swallowed_still_stops_the_simulator(tmp_path):
    """The request is sticky: the simulator's wait for its event loop asks for it."""
    import vta_sim
    from isa import interrupt

    _long_program(tmp_path / "long.npz")
    interrupt.request()
    try:
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            vta_sim.simulate(str(tmp_path / "long.npz"), max_cycles=10**13)
        assert time.monotonic() - t0 < 60
    finally:
        interrupt.clear()


_SWALLOWS = """
import sys, threading
from isa import interrupt
interrupt.install("swallower", grace_s=float(sys.argv[1]))
try:
    print("ready", flush=True)  # inside the try: the signal may come as soon as it is read
    threading.Event().wait()
except KeyboardInterrupt:
    pass  # a library that loses the interrupt
threading.Event().wait()  # and then hangs
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is POSIX")
def test_the_watchdog_ends_a_process_whose_interrupt_was_lost():
    def ready(p: subprocess.Popen) -> None:
        assert p.stdout.readline().strip() == "ready"

    proc, _, err = _interrupt([sys.executable, "-c", _SWALLOWS, "1.0"], ready)
    assert proc.returncode == 130 and err.strip() == "swallower: interrupted", err
