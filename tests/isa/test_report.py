"""isa.report: the one table formatter of every report."""

from __future__ import annotations

import doctest

import pytest

import isa.report as report
from isa.report import Column, format_table


def test_docstring_examples():
    assert doctest.testmod(report).failed == 0


def test_cells_are_aligned_escaped_and_separated():
    cols = [Column("name"), Column("n", "int"), Column("share", "pct"), Column("t", "float")]
    text = format_table(cols, [("a\x1b[31mred", 1234, 0.25, 3.14159), ("b", 7, None, None)])
    lines = text.splitlines()
    assert "\x1b" not in text and "a\\x1b[31mred" in lines[2]
    assert lines[2].endswith("1,234  25.0%  3.14") and lines[3].endswith("7")
    assert len({len(line) for line in lines[:3]}) == 1  # header, rule and full row align


def test_a_row_of_the_wrong_width_and_an_unknown_kind_are_refused():
    with pytest.raises(ValueError, match="row 0 has 1 cells for 2 columns"):
        format_table([Column("a"), Column("b")], [("x",)])
    with pytest.raises(ValueError, match="kind 'money'"):
        Column("c", "money")


def test_ratios_digits_and_markers():
    cols = [Column("x", "ratio"), Column("ms", "float", digits=3), Column("p", "pct", digits=2)]
    line = format_table(cols, [(1.0196, 0.5, 0.12345), ("n/a", "-", None)]).splitlines()
    assert line[2].split() == ["1.020x", "0.500", "12.35%"] and line[3].split() == ["n/a", "-"]
    with pytest.raises(ValueError, match="column 'c': digits 2 needs a kind of"):
        Column("c", "int", digits=2)
