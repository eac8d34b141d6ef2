"""The docstring examples of the runtime's modules run and hold."""

import doctest
import importlib

import pytest

MODULES = [
    "runtime.errors",
    "runtime.profile",
    "runtime.executor",
    "runtime.artifact",
    "runtime.session",
    "runtime.model_cli",
    "runtime.inputs",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_dispatcher_docstring_examples():
    result = doctest.testmod(importlib.import_module("runtime.cli"), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
