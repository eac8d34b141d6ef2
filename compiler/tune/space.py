"""Search spaces: named knobs with finite choices, the product of their choices, and a validity
rule that rejects points the target cannot run (buffers that overflow, tiles that do not divide)
before anything is built.

A point of the space is a :class:`Config`: its index in the product (the first knob varies
slowest) and its knob values. Invalid points are never handed out: :meth:`ConfigSpace.sample`,
:meth:`ConfigSpace.valid_indices` and :meth:`ConfigSpace.neighbor` only return valid ones, and
:meth:`ConfigSpace.config` of an invalid index raises naming the broken rule.

Example:
    >>> space = ConfigSpace(
    ...     (Knob("tile", (1, 2, 4, 8)), Knob("order", ("a", "b"))),
    ...     lambda v: "tile 8 overflows" if v["tile"] == 8 else None,
    ... )
    >>> len(space), space.num_valid
    (8, 6)
    >>> space.config(3).values
    {'tile': 2, 'order': 'b'}
    >>> space.index_of({"tile": 4, "order": "a"})
    4
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.errors import ScheduleError

#: Spaces up to this many points are enumerated once to list their valid points.
ENUMERATE_LIMIT = 1 << 20


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: The ``default`` of a knob that every point's values must name.
REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Knob:
    """One schedule decision: a name and its choices (numbers, strings or tuples of them).
    A knob with a ``default`` (one of its choices) may be left out of the values given to
    :meth:`ConfigSpace.index_of`: a knob added to a template keeps the old spellings of points.

    Example:
        >>> Knob("resident", (False, True), default=False).default
        False
    """

    name: str
    choices: tuple[Any, ...]
    default: Any = REQUIRED

    def __post_init__(self) -> None:
        if not self.choices:
            raise ScheduleError(f"knob {self.name!r} has no choices")
        if len(set(self.choices)) != len(self.choices):
            raise ScheduleError(f"knob {self.name!r} repeats a choice: {self.choices}")
        if self.default is not REQUIRED and self.default not in self.choices:
            raise ScheduleError(
                f"knob {self.name!r}: default {self.default!r} is not one of {self.choices}"
            )


@dataclass(frozen=True)
class Config:
    """A point of a space: its index and its knob values."""

    index: int
    values_items: tuple[tuple[str, Any], ...]

    @property
    def values(self) -> dict[str, Any]:
        return dict(self.values_items)

    def __getitem__(self, name: str) -> Any:
        for k, v in self.values_items:
            if k == name:
                return v
        raise KeyError(name)

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.values_items)


Validator = Callable[[Mapping[str, Any]], "str | None"]


class ConfigSpace:
    """The product of ``knobs``' choices, restricted to points where ``validator`` returns
    ``None`` (it returns the reason a point is invalid otherwise)."""

    def __init__(self, knobs: Sequence[Knob], validator: Validator | None = None) -> None:
        names = [k.name for k in knobs]
        if len(set(names)) != len(names):
            raise ScheduleError(f"a space's knobs must have distinct names, got {names}")
        self.knobs = tuple(knobs)
        self._validator = validator
        self._dims = tuple(len(k.choices) for k in self.knobs)
        self._size = math.prod(self._dims)
        self._valid: np.ndarray | None = None
        self._valid_set: frozenset[int] | None = None

    def __len__(self) -> int:
        return self._size

    @property
    def dims(self) -> tuple[int, ...]:
        return self._dims

    # ---- indices and values ---------------------------------------------------------------------
    def unravel(self, index: int) -> tuple[int, ...]:
        """The choice number of every knob at ``index``."""
        if not 0 <= index < self._size:
            raise ScheduleError(f"config index {index} outside the space of {self._size} points")
        return tuple(int(i) for i in np.unravel_index(index, self._dims))

    def ravel(self, choice: Sequence[int]) -> int:
        return int(np.ravel_multi_index(tuple(choice), self._dims))

    def values_at(self, index: int) -> dict[str, Any]:
        return {k.name: k.choices[c] for k, c in zip(self.knobs, self.unravel(index), strict=True)}

    def reason_invalid(self, index: int) -> str | None:
        """Why the point at ``index`` cannot run, or ``None`` when it can."""
        if self._validator is None:
            return None
        return self._validator(self.values_at(index))

    def is_valid(self, index: int) -> bool:
        if self._valid_set is not None:
            return index in self._valid_set
        return self.reason_invalid(index) is None

    def config(self, index: int) -> Config:
        """The valid point at ``index`` (raises :class:`ScheduleError` naming the broken rule)."""
        reason = self.reason_invalid(index)
        if reason is not None:
            raise ScheduleError(f"config {index} ({self._describe(index)}) is invalid: {reason}")
        return Config(index, tuple(self.values_at(index).items()))

    def index_of(self, values: Mapping[str, Any]) -> int:
        """The index of the point with these knob values (every knob without a default named,
        each a choice)."""
        values = {k.name: k.default for k in self.knobs if k.default is not REQUIRED} | dict(values)
        missing = [k.name for k in self.knobs if k.name not in values]
        extra = sorted(set(values) - {k.name for k in self.knobs})
        if missing or extra:
            raise ScheduleError(f"config values: missing knobs {missing}, unknown knobs {extra}")
        choice = []
        for k in self.knobs:
            v = values[k.name]
            if isinstance(v, list):
                v = tuple(v)
            if v not in k.choices:
                raise ScheduleError(f"knob {k.name!r}: {v!r} is not one of {k.choices}")
            choice.append(k.choices.index(v))
        return self.ravel(choice)

    def _describe(self, index: int) -> str:
        return " ".join(f"{k}={v}" for k, v in self.values_at(index).items())

    # ---- the valid points -----------------------------------------------------------------------
    def valid_indices(self) -> np.ndarray:
        """Every valid index in increasing order (the space is enumerated once)."""
        if self._valid is None:
            if self._size > ENUMERATE_LIMIT:
                raise ScheduleError(
                    f"a space of {self._size} points is too large to enumerate "
                    f"(limit {ENUMERATE_LIMIT}); sample it instead"
                )
            valid = [i for i in range(self._size) if self.reason_invalid(i) is None]
            self._valid = np.asarray(valid, dtype=np.int64)
            self._valid_set = frozenset(valid)
        return self._valid

    @property
    def num_valid(self) -> int:
        return len(self.valid_indices())

    def sample(
        self, rng: np.random.Generator, n: int, exclude: set[int] | None = None
    ) -> list[int]:
        """Up to ``n`` distinct valid indices drawn uniformly, none of them in ``exclude``."""
        pool = self.valid_indices()
        if exclude:
            pool = pool[~np.isin(pool, np.fromiter(exclude, np.int64, len(exclude)))]
        if len(pool) == 0:
            return []
        take = min(n, len(pool))
        return [int(i) for i in rng.choice(pool, size=take, replace=False)]

    def neighbor(self, index: int, rng: np.random.Generator, tries: int = 32) -> int:
        """A valid point that differs from ``index`` in one knob (``index`` if none is found)."""
        choice = list(self.unravel(index))
        movable = [d for d, n in enumerate(self._dims) if n > 1]
        if not movable:
            return index
        for _ in range(tries):
            d = movable[int(rng.integers(len(movable)))]
            c = int(rng.integers(self._dims[d] - 1))
            new = list(choice)
            new[d] = c if c < choice[d] else c + 1
            j = self.ravel(new)
            if self.is_valid(j):
                return j
        return index

    def encode(self, index: int) -> np.ndarray:
        """The point's choice numbers scaled to [0, 1] (a distance for diverse batches)."""
        choice = np.asarray(self.unravel(index), dtype=np.float64)
        span = np.maximum(np.asarray(self._dims, dtype=np.float64) - 1, 1)
        return choice / span

    def __repr__(self) -> str:
        knobs = ", ".join(f"{k.name}[{len(k.choices)}]" for k in self.knobs)
        return f"ConfigSpace({knobs}; {self._size} points)"


__all__ = ["ENUMERATE_LIMIT", "REQUIRED", "Config", "ConfigSpace", "Knob"]
