"""The examples in the compiler's docstrings run and print what they claim."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import compiler

MODULES = sorted(m.name for m in pkgutil.walk_packages(compiler.__path__, "compiler."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.IGNORE_EXCEPTION_DETAIL | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags, report=True)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed"
