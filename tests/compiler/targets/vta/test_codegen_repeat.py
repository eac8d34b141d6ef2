"""Loops whose iterations repeat one pattern of instructions are issued from the difference of
two (``StreamBuilder.repeat``): the programs must be byte for byte those issued one iteration
at a time."""

import numpy as np
import pytest

import isa
from compiler.ir import Evaluate, For, ForKind, If, IntImm, LetStmt, Var
from compiler.targets.vta import codegen
from compiler.targets.vta.stream import StreamBuilder
from compiler.tune import conv2d_task, dense_task

TASKS = [
    # padded 3x3 (probes on the tile's edges), virtual threads, 1x1 stride 2, dense
    conv2d_task(14, 14, 64, 64, 3, 1, 1, hw="vta-1x16x16", name="c3"),
    conv2d_task(14, 14, 32, 32, 3, 1, 1, hw="default", name="c3d", relu=True),
    conv2d_task(14, 14, 32, 64, 1, 2, 0, hw="default", name="c1s2", residual=True),
    conv2d_task(7, 7, 32, 32, 3, 1, 1, hw="4x4x4", name="c3s"),
    dense_task(4, 256, 128, hw="default", name="fc"),
]


def _program_bytes(task, index):
    return np.asarray(task.build(index).program.dram).tobytes()


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_repeated_iterations_equal_one_at_a_time(task, monkeypatch):
    valid = task.space().valid_indices()
    picks = np.random.default_rng(0).choice(len(valid), size=min(4, len(valid)), replace=False)
    indices = [int(valid[k]) for k in picks] + [task.default_config().index]
    repeats = []
    real = StreamBuilder.repeat

    def counting(self, *args):
        done = real(self, *args)
        repeats.append(done)
        return done

    monkeypatch.setattr(StreamBuilder, "repeat", counting)
    fast = [_program_bytes(task, i) for i in indices]
    monkeypatch.setattr(codegen, "REPEAT_MIN_ITERATIONS", 10**9)
    slow = [_program_bytes(task, i) for i in indices]
    assert fast == slow
    assert any(repeats)  # the fast path was taken


def test_probes_and_refusals():
    i, j, k = Var("i"), Var("j"), Var("k")
    nop = Evaluate(IntImm(0))

    def loop(body, var=i, extent=8):
        return For(var, IntImm(0), IntImm(extent), ForKind.SERIAL, body)

    assert codegen._stepping_probes(loop(nop)) == []
    # a condition on the variable is a probe, also over an inner loop of fixed range
    (p,) = codegen._stepping_probes(loop(loop(If(i + j < 3, nop), var=j, extent=2)))
    assert p.loops and p.loops[0].var is j
    # ... but not over a loop whose range is bound inside the body
    inner = For(k, IntImm(0), j, ForKind.SERIAL, If(i + k < 3, nop))
    assert codegen._stepping_probes(loop(loop(inner, var=j))) is None
    # a let steps with its value (affine where the probes keep theirs); a decision on a let
    # that steps refuses
    x = Var("x")
    assert codegen._stepping_probes(loop(LetStmt(x, i * 4 + 1, nop))) == []
    (p,) = codegen._stepping_probes(loop(LetStmt(x, i * 4 + i // 2, nop)))
    assert str(p.atom) == str(i // 2)
    assert codegen._stepping_probes(loop(LetStmt(x, i * 4 + 1, If(x < 3, nop)))) is None


def _body(b, i, kern):
    """One iteration: a compute push that flags the previous GEMM, a load, a GEMM."""
    b.push_flag("compute", b.push_flag_for("compute", "load"))
    b.pop_flag("load", b.pop_flag_for("compute", "load"))
    b.load(isa.MemType.INP, 2 * i % 2, 16 + 3 * i, 1, 2, 2)
    b.push_flag("load", b.push_flag_for("load", "compute"))
    b.pop_flag("compute", b.pop_flag_for("load", "compute"))
    b.gemm(kern)


@pytest.mark.parametrize("n", [4, 5, 9])
def test_builder_repeat_flags_each_iterations_last_instruction(n):
    cfg = isa.load_config("default")
    plain, fast = StreamBuilder(cfg), StreamBuilder(cfg)
    kp, kf = (b.uop_kernel([(0, 0, 0)], loops=[(2, 1, 0, 0)]) for b in (plain, fast))
    for i in range(n):
        _body(plain, i, kp)
    _body(fast, 0, kf)
    first = len(fast.insns)
    _body(fast, 1, kf)
    second, last_issued = len(fast.insns), fast.insns[-1]
    _body(fast, 2, kf)
    assert fast.repeat(first, second, last_issued, n - 3)
    code = isa.encode_stream(fast.finish().insns, cfg)
    assert code.tobytes() == isa.encode_stream(plain.finish().insns, cfg).tobytes()


def _repeats(task, index, monkeypatch):
    """The program's bytes and how many of its instructions the builder issued by repeating
    a loop body."""
    done = []
    real = StreamBuilder.repeat

    def counting(self, *args):
        before = len(self.insns)
        ok = real(self, *args)
        done.append(isa.stream_length(self.insns[before:]))
        return ok

    monkeypatch.setattr(StreamBuilder, "repeat", counting)
    return _program_bytes(task, index), sum(done)


def test_loops_whose_probes_cost_too_much_run_one_by_one(monkeypatch):
    # ResNet-18's C9 with one-column tiles: its loops over rows and columns of tiles have
    # probes on the edges (the padding)
    task = conv2d_task(14, 14, 256, 256, 3, 1, 1, hw="vta-1x16x16", name="C9")
    index = 11669
    fast, repeated = _repeats(task, index, monkeypatch)
    monkeypatch.setattr(codegen, "PROBE_EVALUATIONS", 0)
    limited, fewer = _repeats(task, index, monkeypatch)
    assert limited == fast
    # the loops with probes are issued one iteration at a time (their inner loops still repeat)
    assert 0 < fewer < repeated
