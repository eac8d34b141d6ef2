"""Scalar and vector element types of the loop IR.

A ``DType`` is a kind (``int``, ``uint``, ``float`` or ``bool``), a bit width and a lane count
(1 for scalars; vectorization produces more lanes).

Example:
    >>> as_dtype("int8")
    DType('int8')
    >>> as_dtype("float32").with_lanes(8)
    DType('float32x8')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from compiler.errors import DTypeError

_KINDS = ("int", "uint", "float", "bool")
_SUPPORTED = {
    ("int", 8),
    ("int", 16),
    ("int", 32),
    ("int", 64),
    ("uint", 8),
    ("uint", 16),
    ("uint", 32),
    ("uint", 64),
    ("float", 32),
    ("float", 64),
    ("bool", 1),
}


#: the dtypes :meth:`DType.with_lanes` made, by (kind, bits, lanes): expressions ask for theirs
#: again and again (a comparison's bool, a vector's element type)
_WITH_LANES: dict[tuple[str, int, int], DType] = {}


@dataclass(frozen=True, slots=True)
class DType:
    """An element type. Build one with :func:`as_dtype`.

    Example:
        >>> DType("int", 32).name
        'int32'
    """

    kind: str
    bits: int
    lanes: int = 1
    # derived once (every index expression's hash and linearity check asks): neither compared
    # nor pickled (a string's hash differs between processes)
    _hash: int = field(init=False, repr=False, compare=False)
    _name: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if (self.kind, self.bits) not in _SUPPORTED:
            raise DTypeError(f"unsupported dtype {self.kind}{self.bits}")
        if self.lanes < 1:
            raise DTypeError(
                f"dtype {self.kind}{self.bits} needs at least one lane, got {self.lanes}"
            )
        base = "bool" if self.kind == "bool" else f"{self.kind}{self.bits}"
        object.__setattr__(self, "_name", base if self.lanes == 1 else f"{base}x{self.lanes}")
        object.__setattr__(self, "_hash", hash((self.kind, self.bits, self.lanes)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, tuple[str, int, int]]:
        return (DType, (self.kind, self.bits, self.lanes))

    @property
    def name(self) -> str:
        return self._name

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"DType({self.name!r})"

    @property
    def is_int(self) -> bool:
        """True for signed and unsigned integers (not bool)."""
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind == "int"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_scalar(self) -> bool:
        return self.lanes == 1

    @property
    def element(self) -> DType:
        """The scalar type of one lane."""
        return self if self.lanes == 1 else DType(self.kind, self.bits, 1)

    def with_lanes(self, lanes: int) -> DType:
        if lanes == self.lanes:
            return self
        key = (self.kind, self.bits, lanes)
        hit = _WITH_LANES.get(key)
        if hit is None:
            hit = _WITH_LANES[key] = DType(self.kind, self.bits, lanes)
        return hit

    @property
    def bytes(self) -> int:
        """Storage size of one lane in bytes (bool is stored as one byte)."""
        return max(self.bits, 8) // 8

    @property
    def min_value(self) -> int | float:
        if self.is_float:
            return float("-inf")
        if self.kind == "bool" or self.kind == "uint":
            return 0
        return -(1 << (self.bits - 1))

    @property
    def max_value(self) -> int | float:
        if self.is_float:
            return float("inf")
        if self.kind == "bool":
            return 1
        if self.kind == "uint":
            return (1 << self.bits) - 1
        return (1 << (self.bits - 1)) - 1

    def to_numpy(self) -> np.dtype:
        """The numpy dtype of one lane.

        Example:
            >>> as_dtype("int8").to_numpy()
            dtype('int8')
        """
        return np.dtype("bool" if self.kind == "bool" else f"{self.kind}{self.bits}")


_NAME_RE = re.compile(r"^(int|uint|float|bool)(\d*)(?:x(\d+))?$")


def as_dtype(value: DType | str | np.dtype | type) -> DType:
    """Convert a name, numpy dtype or ``DType`` to a ``DType``.

    Example:
        >>> as_dtype("float32x4").lanes
        4
        >>> as_dtype(np.int8)
        DType('int8')
    """
    if isinstance(value, DType):
        return value
    if not isinstance(value, str):
        try:
            value = np.dtype(value).name
        except TypeError as exc:
            raise DTypeError(f"cannot interpret {value!r} as a dtype") from exc
    match = _NAME_RE.match(value)
    if match is None:
        raise DTypeError(f"unknown dtype {value!r}; use e.g. 'int8', 'int32', 'float32'")
    kind, bits, lanes = match.groups()
    if kind == "bool":
        if bits:
            raise DTypeError(f"unknown dtype {value!r}")
        return DType("bool", 1, int(lanes or 1))
    if not bits:
        raise DTypeError(f"dtype {value!r} needs a bit width, e.g. '{kind}32'")
    return DType(kind, int(bits), int(lanes or 1))


int8 = DType("int", 8)
int16 = DType("int", 16)
int32 = DType("int", 32)
int64 = DType("int", 64)
uint8 = DType("uint", 8)
float32 = DType("float", 32)
float64 = DType("float", 64)
bool_ = DType("bool", 1)

#: dtype of loop variables and buffer indices.
INDEX = int32
