import math

import numpy as np
import pytest

from compiler.errors import CompilerError
from compiler.tune import conv2d_task
from compiler.tune.cost_model import RankCostModel
from compiler.tune.features import FEATURE_NAMES, batch_features
from compiler.tune.records import load_records
from compiler.tune.tuner import GridTuner, ModelTuner, RandomTuner, make_tuner

from .conftest import ModelRunner

# a space small enough to enumerate (every point scored by the stand-in runner)
SMALL = conv2d_task(4, 4, 16, 16, 3, 1, 1, relu=True)


def _exhaustive_best(task):
    idx = [int(i) for i in task.space().valid_indices()]
    return min(r.cost for r in ModelRunner().measure(task, idx))


def test_features_tell_schedules_apart():
    idx = [int(i) for i in SMALL.space().valid_indices()[::7][:40]]
    f = batch_features(SMALL, idx)
    assert f.shape == (40, len(FEATURE_NAMES))
    assert np.isfinite(f).all()
    assert len({row.tobytes() for row in f}) > 30


def test_rank_model_orders_real_schedules():
    runner = ModelRunner()
    idx = [int(i) for i in SMALL.space().valid_indices()]
    rng = np.random.default_rng(0)
    train = [int(i) for i in rng.choice(idx, 80, replace=False)]
    # unseen points from across the space (not a slice of consecutive indices, which share
    # every knob but the last ones)
    unseen = [i for i in idx if i not in set(train)]
    test = [int(i) for i in rng.choice(unseen, 80, replace=False)]
    cost = lambda ii: np.asarray([r.cost for r in runner.measure(SMALL, ii)])  # noqa: E731
    model = RankCostModel(seed=0).fit([(batch_features(SMALL, train), cost(train))])
    pred = model.predict(batch_features(SMALL, test))
    truth = -cost(test)
    # rank correlation of predictions with the true order on unseen points
    rho = np.corrcoef(np.argsort(np.argsort(pred)), np.argsort(np.argsort(truth)))[0, 1]
    assert rho > 0.3, rho  # an untrained model scores everything alike (0)


@pytest.mark.parametrize("name", ["random", "grid", "model"])
def test_same_seed_same_records(name):
    a = make_tuner(name, SMALL, seed=3).tune(ModelRunner(), 24, batch_size=8)
    b = make_tuner(name, SMALL, seed=3).tune(ModelRunner(), 24, batch_size=8)
    assert [r.deterministic() for r in a.records] == [r.deterministic() for r in b.records]
    assert len({r.config.index for r in a.records}) == 24  # never a point twice


def test_model_tuner_reaches_exhaustive_best(model_runner):
    best = _exhaustive_best(SMALL)
    state = ModelTuner(SMALL, seed=0).tune(model_runner, 64, batch_size=8)
    assert best / state.best_cost >= 0.98, (best, state.best_cost)


def test_failures_are_records_and_initial_points_go_first(tmp_path):
    default = SMALL.default_config().index
    bad = [int(i) for i in SMALL.space().valid_indices()[:200]]
    runner = ModelRunner(fail=bad)
    state = RandomTuner(SMALL, seed=0).tune(runner, 16, batch_size=8, initial=[default])
    assert runner.calls[0][0] == default
    assert state.failures.get("compile", 0) > 0
    assert state.best is not None and math.isfinite(state.best_cost)


def test_resume_from_log_continues_without_repeats(tmp_path):
    log = str(tmp_path / "log.jsonl")
    first = GridTuner(SMALL).tune(ModelRunner(), 8, batch_size=4, log=log)
    runner = ModelRunner()
    second = GridTuner(SMALL).tune(runner, 12, batch_size=4, log=log)
    assert second.trials == 12 and sum(len(c) for c in runner.calls) == 4
    recs = load_records(log)
    assert len(recs) == 12 and len({r.config.index for r in recs}) == 12
    assert [r.config.index for r in recs[:8]] == [r.config.index for r in first.records]


def test_early_stopping_stops():
    state = GridTuner(SMALL).tune(ModelRunner(), 200, batch_size=4, early_stopping=8)
    assert state.trials < 200


def test_transfer_trains_before_any_measurement():
    other = conv2d_task(4, 4, 8, 16, 3, 1, 1, relu=True)
    src = RandomTuner(other, seed=0).tune(ModelRunner(), 40, batch_size=8)
    tuner = ModelTuner(SMALL, seed=0, transfer=src.records)
    assert tuner._fit() and tuner.model.trained
    state = tuner.tune(ModelRunner(), 16, batch_size=8)
    assert state.trials == 16


def test_unknown_tuner_and_bad_trials():
    with pytest.raises(CompilerError, match="unknown tuner"):
        make_tuner("bayes", SMALL)
    with pytest.raises(CompilerError, match="n_trials"):
        RandomTuner(SMALL).tune(ModelRunner(), 0)
