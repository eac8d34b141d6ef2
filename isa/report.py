"""One table formatter for every report the tools print.

Columns are aligned (text left, numbers right), integers carry thousands separators, fractions
print as percentages with a ``%``, missing values stay blank, control characters in cells are
escaped (a node name from a model file cannot move the terminal's cursor), and a legend under
the table says what each column means.

Example:
    >>> cols = [Column("layer"), Column("cycles", "int", "accelerator cycles"),
    ...         Column("util", "pct", "MACs per cycle over the GEMM core's peak")]
    >>> print(format_table(cols, [("conv1", 1234567, 0.5), ("pool", 890, None)],
    ...                    total=("total", 1235457, None)))
    layer     cycles   util
    -----  ---------  -----
    conv1  1,234,567  50.0%
    pool         890
    -----  ---------  -----
    total  1,235,457
    <BLANKLINE>
      cycles: accelerator cycles
      util: MACs per cycle over the GEMM core's peak
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: How a column's values print: ``ratio`` is a speedup or a quotient of two figures, ``1.020x``.
KINDS = ("text", "int", "pct", "float", "float1", "float3", "ratio")

#: Decimals of a ``pct``, ``float`` and ``ratio`` column unless it says its own.
DIGITS = {"pct": 1, "float": 2, "ratio": 3}


@dataclass(frozen=True)
class Column:
    """A column: its ``title``, how its values print (:data:`KINDS`) and what it means;
    ``digits`` sets the decimals of a ``pct``, ``float`` or ``ratio`` column (a benchmark's
    milliseconds want 3, a cycle ratio that is 1 when equal wants 4).

    >>> Column("speedup", "ratio").cell(1.0196), Column("ms", "float", digits=3).cell(0.5)
    ('1.020x', '0.500')
    """

    title: str
    kind: str = "text"
    legend: str = ""
    digits: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"column {self.title!r}: kind {self.kind!r} is not one of {KINDS}")
        if self.digits is not None and (self.kind not in DIGITS or self.digits < 0):
            raise ValueError(
                f"column {self.title!r}: digits {self.digits} needs a kind of {tuple(DIGITS)} "
                "and a count >= 0"
            )

    def cell(self, value: Any) -> str:
        if value is None or value == "":
            return ""
        if isinstance(value, str) and self.kind != "text":
            return printable(value)  # a marker in a numeric column: "n/a", "-"
        d = DIGITS.get(self.kind, 0) if self.digits is None else self.digits
        if self.kind == "int":
            return f"{int(value):,}"
        if self.kind == "pct":
            return f"{float(value):.{d}%}"
        if self.kind == "float":
            return f"{float(value):,.{d}f}"
        if self.kind == "ratio":
            return f"{float(value):,.{d}f}x"
        if self.kind == "float1":
            return f"{float(value):,.1f}"
        if self.kind == "float3":  # three significant digits, never in e-notation
            v = float(value)
            return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
        return printable(str(value))


def printable(text: str) -> str:
    """``text`` with control characters escaped.

    >>> printable("n\\x1b[2Jclear")
    'n\\\\x1b[2Jclear'
    """
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def format_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Any]],
    *,
    total: Sequence[Any] | None = None,
    legend: bool = True,
) -> str:
    """The rows under a header, an optional total row, and the columns' legend."""
    for k, row in enumerate([*rows, *([total] if total is not None else [])]):
        if len(row) != len(columns):
            raise ValueError(f"row {k} has {len(row)} cells for {len(columns)} columns")
    body = [[c.cell(v) for c, v in zip(columns, row, strict=True)] for row in rows]
    foot = [c.cell(v) for c, v in zip(columns, total, strict=True)] if total is not None else None
    every = [[c.title for c in columns], *body, *([foot] if foot is not None else [])]
    widths = [max(len(r[i]) for r in every) for i in range(len(columns))]

    def line(cells: Sequence[str]) -> str:
        out = [
            cell.ljust(w) if col.kind == "text" else cell.rjust(w)
            for col, cell, w in zip(columns, cells, widths, strict=True)
        ]
        return "  ".join(out).rstrip()

    rule = "  ".join("-" * w for w in widths)
    lines = [line([c.title for c in columns]), rule, *(line(r) for r in body)]
    if foot is not None:
        lines += [rule, line(foot)]
    if legend and any(c.legend for c in columns):
        lines += ["", format_legend(columns)]
    return "\n".join(lines)


def format_legend(columns: Sequence[Column]) -> str:
    """What each column means, one line per column that says."""
    return "\n".join(f"  {c.title}: {c.legend}" for c in columns if c.legend)


__all__ = ["DIGITS", "KINDS", "Column", "format_legend", "format_table", "printable"]
