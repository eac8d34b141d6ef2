"""Trace records, the Chrome/Perfetto export, the command line's outputs, running without JIT."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from simkit import run_both

import isa
import vta_sim
from isa import Finish, Gemm, Load, MemType, Program, Store
from runtime.cli import main as vtac

CFG = isa.load_config("default")
REPO = Path(__file__).resolve().parents[2]


def pipeline(uops_per_gemm: int = 8, tiles: int = 12) -> Program:
    """A load -> compute -> store pipeline over ``tiles`` tiles (tokens in every queue)."""
    insns: list[isa.Insn] = [Load(memory_type=MemType.UOP, x_size=1)]
    for t in range(tiles):
        insns.append(
            Load(memory_type=MemType.INP, x_size=4, push_next_dep=True, pop_next_dep=t > 0)
        )
        insns.append(
            Gemm(
                uop_begin=0,
                uop_end=1,
                iter_out=uops_per_gemm,
                pop_prev_dep=True,
                push_prev_dep=t + 1 < tiles,
                push_next_dep=True,
                pop_next_dep=t > 0,
            )
        )
        insns.append(Store(x_size=2, pop_prev_dep=True, push_prev_dep=True))
    insns.append(Finish(pop_next_dep=True))
    return Program.build(CFG, insns, dram_bytes=8192)


def test_records_describe_every_instruction():
    prog = pipeline()
    r, _ = run_both(prog)
    recs = r.trace.records()
    assert len(recs) == prog.insn_count
    for rec in recs:
        assert rec.dispatch < rec.issue <= rec.last < r.cycles or rec.kind == "FINISH"
        assert rec.token_wait >= 0 and rec.push_wait >= 0
        if rec.grant >= 0:
            assert rec.issue < rec.grant <= rec.last and rec.memory_wait >= 0
    kinds = {(rec.module, rec.kind) for rec in recs}
    assert kinds == {
        ("compute", "LOAD UOP"),
        ("load", "LOAD INP"),
        ("compute", "GEMM"),
        ("store", "STORE OUT"),
        ("compute", "FINISH"),
    }
    # the DRAM port is never held by two transfers at once
    spans = sorted((p.start, p.last) for p in r.trace.port_intervals())
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))
    assert len(spans) == 1 + 2 * 12 + (prog.insn_count + 7) // 8  # DMAs + fetch bursts
    # token counts never leave [0, depth]
    counts = [c for _, _, c in r.trace.token_events()]
    assert min(counts) >= 0 and max(counts) <= CFG.dep_queue_depth


def test_trace_memory_grows_with_instructions_not_micro_ops():
    small, big = pipeline(uops_per_gemm=8), pipeline(uops_per_gemm=800)
    rs, rb = vta_sim.simulate(small), vta_sim.simulate(big)
    assert rb.gemm_uops == 100 * rs.gemm_uops and rb.cycles > 8 * rs.cycles
    for name in ("insns", "port", "tokens"):
        assert getattr(rs.trace, name).nbytes == getattr(rb.trace, name).nbytes


def test_trace_off():
    r = vta_sim.simulate(pipeline(), trace=False)
    assert r.trace is None
    assert r.cycles == vta_sim.simulate(pipeline()).cycles


def _check_chrome(doc: dict) -> None:
    events = doc["traceEvents"]
    assert {e["ph"] for e in events} == {"M", "X", "C"}
    names = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names == {"fetch", "load", "compute", "store", "dram port"}
    assert {e["name"] for e in events if e["ph"] == "C"} == set(isa.DEP_QUEUES)
    tracks = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            assert isinstance(e["ts"], int) and isinstance(e["dur"], int) and e["dur"] > 0
            tracks[e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
    assert set(tracks) == {0, 1, 2, 3, 4}
    # slices on one track nest or are disjoint (what the JSON importer expects)
    for spans in tracks.values():
        stack: list[int] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1], (start, end, stack)
            stack.append(end)


def test_chrome_trace_is_valid_and_well_nested(tmp_path):
    r = vta_sim.simulate(pipeline())
    path = tmp_path / "t.json"
    r.trace.save(path)
    _check_chrome(json.loads(path.read_text()))


# ---- command line -------------------------------------------------------------------------
@pytest.fixture
def prog_file(tmp_path) -> Path:
    path = tmp_path / "prog.npz"
    pipeline().save(path)
    return path


def test_cli_summary(prog_file, capsys):
    assert vtac(["sim", str(prog_file)]) == 0
    out = capsys.readouterr().out
    for word in (
        "cycles",
        "us at 200 MHz",
        "GOPS",
        "utilization",
        "fetch",
        "load",
        "compute",
        "store",
        "DRAM bytes",
        "wait_memory",
    ):
        assert word in out


def test_cli_json_dram_and_trace(prog_file, tmp_path, capsys):
    raw, npy, trace = tmp_path / "dram.bin", tmp_path / "dram.npy", tmp_path / "trace.json"
    assert (
        vtac(["sim", str(prog_file), "--json", "--dram-out", str(raw), "--trace", str(trace)]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert {"cycles", "gemm_uops", "alu_uops", "utilization", "modules", "dram_bytes"} <= set(doc)
    r = vta_sim.simulate(prog_file)
    assert doc["cycles"] == r.cycles and doc["modules"] == r.modules
    assert doc["dram_bytes"] == r.dram_bytes and doc["gemm_uops"] == r.gemm_uops
    assert set(doc["dram_bytes"]) == {"uop", "wgt", "inp", "acc", "acc8", "out", "insn"}
    assert raw.read_bytes() == r.dram.tobytes()
    _check_chrome(json.loads(trace.read_text()))
    assert vtac(["sim", str(prog_file), "--dram-out", str(npy)]) == 0
    np.testing.assert_array_equal(np.load(npy), r.dram)


def test_cli_max_cycles(prog_file, capsys):
    assert vtac(["sim", str(prog_file), "--max-cycles", "100"]) == 1
    assert "max_cycles=100" in capsys.readouterr().err


# ---- without numba's JIT -----------------------------------------------------------------
def test_runs_with_jit_disabled(tmp_path):
    path = tmp_path / "p.npz"
    pipeline(uops_per_gemm=3, tiles=3).save(path)
    script = textwrap.dedent(f"""
        import numba, numpy as np, isa, vta_sim
        assert numba.config.DISABLE_JIT
        r = vta_sim.simulate({str(path)!r})
        p = isa.load_program({str(path)!r})
        m = isa.Machine(p.config, p.dram.copy()); m.run(p.instructions())
        assert np.array_equal(r.dram, m.dram)
        print(r.cycles, r.gemm_uops)
    """)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    r = vta_sim.simulate(path)
    assert proc.stdout.split() == [str(r.cycles), str(r.gemm_uops)]


def test_cli_module_imports_without_numba():
    code = "import sys, vta_sim.cli; assert 'numba' not in sys.modules, 'numba imported'"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
