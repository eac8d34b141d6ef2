"""The learned cost model: gradient-boosted trees (XGBoost) with a pairwise rank objective on
the loop-program features of measured points.

Only the order of the points matters to the explorer, so the model learns to rank: each point's
label is its throughput relative to the best measured point of its task (``best / cost``, in
(0, 1]; failed points get 0), and the points of one task form one query group, so pairs are only
compared within a task. That is what makes transfer work: records of other tasks are more
groups of the same kind (:meth:`RankCostModel.fit` takes them as ``groups``).

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.random((40, 3))
    >>> cost = 1.0 + 10 * x[:, 0]                        # the first feature decides
    >>> m = RankCostModel(seed=0).fit([(x, cost)])
    >>> s = m.predict(x)
    >>> bool(np.corrcoef(s, -cost)[0, 1] > 0.9)
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from compiler.errors import CompilerError

#: Boosting rounds and tree depth: small data (hundreds of points), a cheap model to refit.
ROUNDS = 60
MAX_DEPTH = 6


def relevance(costs: np.ndarray) -> np.ndarray:
    """Labels for ranking: best cost over each cost (failures, given as NaN or inf, get 0).

    Example:
        >>> relevance(np.array([100.0, 200.0, np.nan]))
        array([1. , 0.5, 0. ])
    """
    c = np.asarray(costs, dtype=np.float64)
    ok = np.isfinite(c) & (c > 0)
    out = np.zeros_like(c)
    if ok.any():
        out[ok] = c[ok].min() / c[ok]
    return out


class RankCostModel:
    """XGBoost ``rank:pairwise`` over feature rows; higher scores mean faster points."""

    def __init__(self, seed: int = 0, rounds: int = ROUNDS, max_depth: int = MAX_DEPTH) -> None:
        self.seed = seed
        self.rounds = rounds
        self.max_depth = max_depth
        self._booster: object | None = None

    @property
    def trained(self) -> bool:
        return self._booster is not None

    def fit(self, groups: Sequence[tuple[np.ndarray, np.ndarray]]) -> RankCostModel:
        """Train on ``groups`` of (features, costs), one group per task (costs: NaN = failed)."""
        import xgboost as xgb

        xs, ys, sizes = [], [], []
        for x, cost in groups:
            if len(x) == 0:
                continue
            if len(x) != len(cost):
                raise CompilerError(f"cost model: {len(x)} feature rows but {len(cost)} costs")
            xs.append(np.asarray(x, dtype=np.float64))
            ys.append(relevance(cost))
            sizes.append(len(x))
        if not xs:
            raise CompilerError("cost model: nothing to train on")
        dtrain = xgb.DMatrix(np.concatenate(xs), label=np.concatenate(ys))
        dtrain.set_group(sizes)
        params = {
            "objective": "rank:pairwise",
            "eta": 0.3,
            "max_depth": self.max_depth,
            "min_child_weight": 1,
            "subsample": 1.0,
            "nthread": 1,  # deterministic and polite to the measurement workers
            "seed": self.seed,
            "verbosity": 0,
        }
        self._booster = xgb.train(params, dtrain, num_boost_round=self.rounds)
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Scores of feature rows (untrained: zeros)."""
        if self._booster is None or len(x) == 0:
            return np.zeros(len(x))
        import xgboost as xgb

        return np.asarray(self._booster.predict(xgb.DMatrix(np.asarray(x, np.float64))))  # type: ignore[attr-defined]


__all__ = ["RankCostModel", "relevance"]
