"""The examples in the simulator's docstrings run and print what they show."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import vta_sim

MODULES = ["vta_sim"] + [f"vta_sim.{m.name}" for m in pkgutil.iter_modules(vta_sim.__path__)]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
