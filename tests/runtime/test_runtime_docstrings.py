"""The docstring examples of the runtime's modules run and hold."""

import doctest
import importlib

import pytest

MODULES = [
    "runtime.errors",
    "runtime.program",
    "runtime.profile",
    "runtime.executor",
    "runtime.artifact",
    "runtime.session",
    "runtime.graph_compile",
    "runtime.model_cli",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


@pytest.mark.xfail(
    strict=True,
    reason="runtime/cli.py one_line's docstring holds a literal newline escape in a non-raw "
    "string, so doctest cannot parse the example (ValueError: line 4 of the docstring)",
)
def test_dispatcher_docstring_examples():
    result = doctest.testmod(importlib.import_module("runtime.cli"), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
