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


def test_a_record_written_before_gemm_fold_and_four_threads_loads_re_indexed():
    import json

    # the values a log wrote before gemm_fold and the (4, 1)/(1, 4) splits existed, under an
    # index of that older, smaller space
    space = T.space()
    point = next(
        space.config(int(i)).values
        for i in space.valid_indices()
        if space.config(int(i)).values["gemm_fold"] == "co_h"
        and space.config(int(i)).values["vthreads"] == (2, 1)
    )
    old = {k: list(v) if isinstance(v, tuple) else v for k, v in point.items() if k != "gemm_fold"}
    line = json.dumps(
        {"task": T.to_json(), "config": {"index": 7, "values": old},
         "result": MeasureResult(900.0).to_json(), "time": 0.0}
    )  # fmt: skip
    record = Record.from_line(line)
    assert record.config.values == point and record.config.index == space.index_of(point)
    assert T.knobs(record.config) == T.knobs(space.index_of(point))
    # values that name no point are refused, naming the record
    bad = line.replace('"loop_order"', '"loop_orders"')
    with pytest.raises(CompilerError, match="line 3.*different space version"):
        Record.from_line(bad, "line 3")


@pytest.mark.parametrize("cost", ["-5.0", "NaN", "Infinity", "-Infinity", "1e999"])
def test_a_cost_that_could_win_unfairly_is_refused(tmp_path, cost):
    good = _rec(T, 0, 500.0).to_line()
    forged = good.replace('"cost": 500.0', f'"cost": {cost}')
    assert forged != good
    p = tmp_path / "log.jsonl"
    p.write_text(good + "\n" + forged + "\n")
    with pytest.raises(CompilerError, match=r"log.jsonl:2: "):
        load_records(p)


@pytest.mark.parametrize(
    "content, what",
    [
        (b"\xff\xfe not utf-8\n", "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000 + b"\n", "log.jsonl:1: not a tuning record"),
        (b"[1, 2]\n", "not an object"),
    ],
)
def test_a_log_that_is_not_json_lines_is_refused_by_line(tmp_path, content, what):
    p = tmp_path / "log.jsonl"
    p.write_bytes(content)
    with pytest.raises(CompilerError, match=what):
        load_records(p)


def test_a_directory_is_not_a_log(tmp_path):
    with pytest.raises(CompilerError, match="a directory, not a tuning log"):
        load_records(tmp_path)


def test_a_log_that_cannot_be_written_is_refused_before_any_measurement(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(CompilerError, match="a directory, not a tuning log"):
        RecordLog(tmp_path)
    with pytest.raises(CompilerError, match=r"file is a file, not a directory"):
        RecordLog(tmp_path / "file" / "deeper" / "log.jsonl")
    RecordLog(tmp_path / "new" / "log.jsonl")  # missing directories are made on first write
