"""The sticky interrupt request that every long loop can ask (isa.interrupt)."""

from __future__ import annotations

import doctest

import pytest

from isa import interrupt


def test_docstring_example():
    assert doctest.testmod(interrupt).failed == 0


def test_check_raises_only_after_a_request():
    interrupt.clear()
    interrupt.check()
    interrupt.request()
    try:
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()
    finally:
        interrupt.clear()
