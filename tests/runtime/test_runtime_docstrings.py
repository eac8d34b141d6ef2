"""The docstring examples of every module of the runtime run and hold."""

import doctest
import importlib
import pkgutil

import pytest

import runtime

MODULES = sorted(m.name for m in pkgutil.walk_packages(runtime.__path__, "runtime."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(importlib.import_module(name), optionflags=flags)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed"


def test_dispatcher_docstring_examples():
    result = doctest.testmod(importlib.import_module("runtime.cli"), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
