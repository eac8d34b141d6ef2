"""Model compilation with a tuning log (``InferenceSession(..., tuning_log=)``, ``vtac run
--tuning-log``): groups whose task has a record are scheduled with its knobs, the others keep the
strategy's choice and are listed."""

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
pytest.importorskip("xgboost", reason="the tune extra is not installed")

from compiler.frontend.zoo import digits_test, load_zoo  # noqa: E402
from compiler.model.cpu import optimize  # noqa: E402
from compiler.tune.extract import extract_tasks  # noqa: E402
from compiler.tune.measure import MeasureResult  # noqa: E402
from compiler.tune.records import Record, RecordLog  # noqa: E402
from runtime.cli import main  # noqa: E402
from runtime.errors import SessionError  # noqa: E402
from runtime.session import InferenceSession  # noqa: E402


@pytest.fixture(scope="module")
def model_and_log(tmp_path_factory):
    """The digits model and a log holding one non-default record of its most frequent conv."""
    proto = load_zoo("digits")
    found = extract_tasks(optimize(proto), target="cpu")
    task = max(found.tasks, key=lambda t: t.weight)
    default = task.default_config()
    other = next(
        int(i) for i in task.space().valid_indices() if task.space().config(int(i)) != default
    )
    log = tmp_path_factory.mktemp("tune") / "digits.jsonl"
    RecordLog(log).append([Record(task, task.space().config(other), MeasureResult(1e-5))])
    return proto.SerializeToString(), log, task


def test_a_tuned_record_changes_the_kernels_and_not_the_results(model_and_log):
    model, log, task = model_and_log
    images, _ = digits_test()
    plain = InferenceSession(model, num_threads=1)
    tuned = InferenceSession(model, num_threads=1, tuning_log=log)
    assert tuned.tuning is not None and len(tuned.tuning.used) == task.weight  # one per group
    assert tuned.tuning.fell_back  # the other convolutions and the classifier
    codes = {k.code for k in plain.program.kernels}
    assert any(k.code not in codes for k in tuned.program.kernels)
    (a,) = tuned.run(None, {"data": images[:1]})
    (b,) = plain.run(None, {"data": images[:1]})
    (ref,) = ort.InferenceSession(model).run(None, {"data": images[:1]})
    assert np.abs(a - ref).max() <= 1e-4 * np.abs(ref).max()
    assert np.abs(a - b).max() <= 1e-4 * np.abs(ref).max()


def test_vtac_run_says_which_tasks_fell_back(model_and_log, tmp_path, capsys):
    model, log, _ = model_and_log
    path = tmp_path / "digits.onnx"
    path.write_bytes(model)
    assert main(["run", str(path), "--threads", "1", "--tuning-log", str(log)]) == 0
    err = capsys.readouterr().err
    assert "vtac run: tuned: " in err and "fell back to the heuristic: " in err


def test_a_missing_log_or_another_target_is_refused(model_and_log, tmp_path):
    model, log, _ = model_and_log
    with pytest.raises(SessionError, match="no such file"):
        InferenceSession(model, tuning_log=tmp_path / "none.jsonl")
    with pytest.raises(SessionError, match="cpu target"):
        InferenceSession(model, target="gpu", tuning_log=log)
