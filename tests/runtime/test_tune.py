"""Measurement on the simulator (pool and Dask give the same records), failure reasons, and
``vtac tune``."""

import json

import pytest

from compiler.tune import conv2d_task, dense_task
from compiler.tune.records import load_records
from compiler.tune.tuner import ModelTuner, RandomTuner
from runtime.cli import main
from runtime.measure import LocalRunner, measure_one

TINY = conv2d_task(4, 4, 8, 8, 3, 1, 1, relu=True)


def test_measure_one_checks_against_numpy_and_reports_cycles():
    r = measure_one(TINY.to_json(), TINY.default_config().index)
    assert "error" not in r and r["cost"] > 0
    assert r["extra"]["roofline_cycles"] <= r["cost"]
    d = dense_task(1, 32, 16)
    assert "error" not in measure_one(d.to_json(), d.default_config().index)


def test_failures_are_results_with_reasons(monkeypatch):
    invalid = next(i for i in range(len(TINY.space())) if not TINY.space().is_valid(i))
    r = measure_one(TINY.to_json(), invalid)
    assert r["error"] == "compile" and "invalid" in r["message"]
    r = measure_one(TINY.to_json(), TINY.default_config().index, timeout_s=1e-4)
    assert r["error"] == "timeout" and "no result after" in r["message"]
    from compiler.topi.vta import testing

    monkeypatch.setattr(testing.BuiltLayer, "matches", lambda self, packed: False)
    r = measure_one(TINY.to_json(), TINY.default_config().index)
    assert r["error"] == "mismatch" and "outputs differ" in r["message"]


def test_pool_and_dask_give_the_same_records(tmp_path):
    distributed = pytest.importorskip("distributed")
    with LocalRunner(workers=2) as pool:
        a = ModelTuner(TINY, seed=5, min_train=4).tune(pool, 12, batch_size=4)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:  # fmt: skip
        from runtime.measure import DaskRunner

        with DaskRunner(cluster.scheduler_address) as dask:
            assert dask.workers == 2
            b = ModelTuner(TINY, seed=5, min_train=4).tune(dask, 12, batch_size=4)
    assert [r.deterministic() for r in a.records] == [r.deterministic() for r in b.records]
    assert all(r.result.ok for r in a.records)


def test_vtac_tune_operator_logs_and_resumes(tmp_path, capsys):
    log = tmp_path / "t.jsonl"
    argv = ["tune", "conv2d", "--h", "4", "--w", "4", "--in-c", "8", "--out-c", "8", "--k", "3",
            "--pad", "1", "--relu", "--tuner", "random", "--trials", "4", "--batch-size", "4",
            "--workers", "2", "--no-progress", "--log", str(log)]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "4 measurements, failures: none" in out and "heuristic" in out
    recs = load_records(log)
    assert len(recs) == 4 and recs[0].config == TINY.default_config()
    argv[argv.index("--trials") + 1] = "6"
    assert main(argv) == 0
    assert len(load_records(log)) == 6
    json.loads(log.read_text().splitlines()[0])


def test_vtac_tune_refuses_what_it_cannot_tune(capsys):
    assert main(["tune", "resnet18-layers", "--target", "cpu"]) != 0
    assert "--target cpu tunes operators and models" in capsys.readouterr().err
    assert main(["tune", "matmul"]) != 0
    assert "CPU only" in capsys.readouterr().err
    assert main(["tune", "vgg"]) != 0
    assert "neither an operator" in capsys.readouterr().err
    assert main(["tune", "resnet18-layers", "--layers", "C13"]) != 0
    assert "unknown layers ['C13']" in capsys.readouterr().err


def test_random_tuner_on_the_pool_never_repeats():
    with LocalRunner(workers=1) as pool:
        st = RandomTuner(TINY, seed=0).tune(pool, 5, batch_size=5)
    assert len({r.config.index for r in st.records}) == 5


def test_a_killed_worker_loses_nothing():
    # kill one pool process while a batch is in flight: its candidates are measured again
    import os
    import signal
    import threading
    import time

    task = conv2d_task(8, 8, 16, 16, 3, 1, 1)
    idx = [int(i) for i in task.space().valid_indices()[:8]]
    with LocalRunner(workers=2) as pool:
        pool.measure(task, idx[:2])  # workers started
        pids = [p.pid for p in pool._executor()._processes.values()]
        out: list = []
        th = threading.Thread(target=lambda: out.extend(pool.measure(task, idx)))
        th.start()
        time.sleep(0.5)
        os.kill(pids[0], signal.SIGKILL)
        th.join(timeout=300)
    assert len(out) == 8
    assert all(r.ok for r in out), [r.message for r in out if not r.ok]
    assert [r.cost for r in out[:2]] == [measure_one(task.to_json(), i)["cost"] for i in idx[:2]]


@pytest.mark.parametrize(
    "sizes",
    [dict(kind="matmul", m=16, k=32, n=32), dict(kind="dense", batch=2, in_features=32,
     out_features=16), dict(kind="conv2d", h=6, w=6, in_c=16, out_c=32, k=3, pad=1)],
    ids=lambda d: d["kind"],
)  # fmt: skip
def test_cpu_tasks_are_timed_and_checked(sizes):
    from compiler.tune.task import cpu_task

    sizes = dict(sizes)
    task = cpu_task(sizes.pop("kind"), **sizes)
    for i in task.space().valid_indices()[:2]:
        r = measure_one(task.to_json(), int(i))
        assert "error" not in r, r
        assert 0 < r["cost"] < 1 and r["extra"]["runs"] >= 5


def test_vtac_explore_prints_the_pareto_front(tmp_path, capsys):
    plot = tmp_path / "front.png"
    argv = ["explore", "conv2d", "--h", "4", "--w", "4", "--in-c", "16", "--out-c", "16",
            "--pad", "1", "--trials", "3", "--batch-size", "3", "--workers", "2",
            "--gemm", "1x8x8,1x16x16", "--buffers", "0.5,1", "--bus", "8",
            "--plot", str(plot)]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.startswith("1x") and ":" not in ln]
    assert "area mm2" in out and "energy uJ" in out  # the front is over cycles, energy, area
    assert len(rows) == 4, out
    # the cheaper buffers compute the same tiles here: each GEMM shape's cheaper one is on it
    assert [ln.split()[0] for ln in rows if ln.endswith("*")] == [
        "1x8x8-buf0.5-bus8", "1x16x16-buf0.5-bus8"]  # fmt: skip
    assert plot.stat().st_size > 0
    assert main(["explore", "conv2d", "--gemm", "1x8"]) != 0
    assert "--gemm" in capsys.readouterr().err


def test_explore_checks_what_it_will_write_and_sweep_before_measuring(tmp_path, capsys):
    base = ["explore", "conv2d", "--h", "4", "--w", "4", "--in-c", "16", "--out-c", "16",
            "--pad", "1", "--trials", "3", "--workers", "1"]  # fmt: skip
    for extra, what in [
        (["--plot", str(tmp_path / "front.xyz")], "unknown image format 'xyz'"),
        (["--plot", str(tmp_path)], "is a directory"),
        (["--log", str(tmp_path)], "a directory, not a tuning log"),
        (["--gemm", "1x3x3"], "every configuration of the sweep was left out"),
    ]:
        assert main(base + extra) == 1
        captured = capsys.readouterr()
        assert what in captured.err and captured.err.count("\n") == 1, captured.err
        assert "cycles" not in captured.out  # nothing was measured
