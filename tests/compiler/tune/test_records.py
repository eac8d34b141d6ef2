import pytest

from compiler.errors import CompilerError
from compiler.tune import conv2d_task
from compiler.tune.measure import MeasureResult
from compiler.tune.records import (
    Record,
    RecordLog,
    apply_best,
    best_records,
    current_best,
    load_records,
)

T = conv2d_task(8, 8, 16, 16, 3, 1, 1, name="t")
U = conv2d_task(6, 6, 8, 8, 3, 1, 1, name="u")


def _rec(task, k, cost):
    idx = int(task.space().valid_indices()[k])
    res = MeasureResult(cost) if cost else MeasureResult.failure("mismatch", "3 of 9 differ")
    return Record(task, task.space().config(idx), res, 1.0)


def test_log_round_trip_and_best(tmp_path):
    log = RecordLog(tmp_path / "sub" / "log.jsonl")
    recs = [_rec(T, 0, 500.0), _rec(T, 1, None), _rec(T, 2, 400.0), _rec(U, 0, 100.0)]
    log.append(recs[:2])
    log.append(recs[2:])
    back = load_records(log.path)
    assert [r.deterministic() for r in back] == [r.deterministic() for r in recs]
    assert back[1].result.error == "mismatch" and back[1].result.message == "3 of 9 differ"
    assert len(log.existing(T)) == 3
    best = best_records(back)
    assert best[T.key].result.cost == 400.0 and best[U.key].result.cost == 100.0


def test_bad_line_names_file_and_line(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text(_rec(T, 0, 5.0).to_line() + "\n{not json\n")
    with pytest.raises(CompilerError, match=r"log.jsonl:2"):
        load_records(p)


def test_apply_best_falls_back_per_task_and_says_which():
    ctx = apply_best([_rec(T, 3, 10.0), _rec(T, 4, 20.0)])
    assert current_best() is None
    with ctx:
        assert current_best() is ctx
        assert ctx.config(T).index == int(T.space().valid_indices()[3])
        assert ctx.config(U) == U.default_config()
        assert ctx.knobs(U) == U.knobs(U.default_config())
    assert current_best() is None
    assert ctx.used == ["t"] and ctx.fell_back == ["u"]
    assert "fell back to the heuristic: u" in ctx.report()


def test_measure_result_checks_its_fields():
    with pytest.raises(CompilerError, match="error kind"):
        MeasureResult.failure("segfault", "x")
    with pytest.raises(CompilerError, match="has a cost"):
        MeasureResult()
