"""vtac: a compiler, cycle-approximate simulator and Verilog RTL for a VTA-style accelerator.

This package is the public face of the project; the work is done by the packages the layout
names (``isa``, ``vta_sim``, ``compiler``, ``hw``, ``runtime``). Its names are loaded on first
use, so ``import vtac`` stays cheap.

Example:
    >>> import vtac
    >>> vtac.load_config("vta-1x16x16").macs_per_cycle
    256
    >>> sess = vtac.InferenceSession("digits")            # doctest: +SKIP
    >>> vtac.compile("digits", "digits.vtac")              # doctest: +SKIP
"""

from __future__ import annotations

import os
from importlib import import_module
from typing import Any

#: name -> (module, attribute) of each public name.
_PUBLIC = {
    "InferenceSession": ("runtime.session", "InferenceSession"),
    "load_config": ("isa", "load_config"),
    "HwConfig": ("isa", "HwConfig"),
    "Program": ("isa", "Program"),
    "simulate": ("vta_sim", "simulate"),
}


def __getattr__(name: str) -> Any:
    try:
        module, attr = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'vtac' has no attribute {name!r}") from None
    value = getattr(import_module(module), attr)
    globals()[name] = value
    return value


def compile(  # noqa: A001 - the verb users look for, as in vtac compile
    model: Any, output: str | os.PathLike, target: str = "cpu", **options: Any
) -> Any:
    """Compile ``model`` (an ONNX path, its bytes, a ModelProto or a zoo name) for ``target``
    and write the artifact ``output``, as ``vtac compile`` does; returns the session, ready to
    ``run``. ``options`` are :class:`InferenceSession`'s."""
    from runtime.session import InferenceSession

    session = InferenceSession(model, target, **options)
    session.save(output)
    return session


def __dir__() -> list[str]:
    return sorted({*__all__, "version"})


def version() -> str:
    """The installed distribution's version."""
    from runtime.cli import version as _version

    return _version()


__all__ = [
    "HwConfig",
    "InferenceSession",
    "Program",
    "compile",
    "load_config",
    "simulate",
    "version",
]
