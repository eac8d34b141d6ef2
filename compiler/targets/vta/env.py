"""TVM's VTA entry points over target instances: ``get_env``, ``build`` and ``lower``.

A TVM program written for VTA reads its hardware parameters, scopes, pragmas and the GEMM
intrinsic off ``env = vta.get_env()`` and compiles with ``vta.build(s, args, "ext_dev")``. Here
the environment *is* a :class:`VTATarget`, an instance bound to one hardware config, so
several configurations compile side by side in one process; ``with env:`` makes a target the
one that ``get_env()`` and ``build(..., "ext_dev")`` use inside the block (as TVM's
``with vta.Environment(...)``).

Example:
    >>> env = get_env()
    >>> env.BATCH, env.BLOCK_IN, env.BLOCK_OUT, env.inp_scope.name, env.dma_copy
    (1, 4, 4, 'local.inp_buffer', 'dma_copy')
    >>> with get_env("vta-1x16x16"):
    ...     get_env().BLOCK_IN
    16
    >>> get_env().BLOCK_IN
    4
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from compiler.build import build as _build
from compiler.build import lower as _lower
from compiler.ir.stmt import PrimFunc
from compiler.schedule.schedule import Schedule
from compiler.te.tensor import Tensor
from isa import HwConfig, Program

from .errors import VTATargetError
from .target import VTATarget, get_vta_target

_CURRENT: ContextVar[tuple[VTATarget, ...]] = ContextVar("vta_env", default=())

#: target names that TVM programs give ``vta.build`` for the accelerator
_DEVICE_NAMES = ("ext_dev", "vta")


def get_env(config: HwConfig | str | None = None) -> VTATarget:
    """The accelerator target of ``config``; without one, the target of the innermost
    ``with target:`` block, else the ``default`` preset's."""
    if config is not None:
        return get_vta_target(config)
    stack = _CURRENT.get()
    return stack[-1] if stack else get_vta_target("default")


def enter(target: VTATarget) -> None:
    """Make ``target`` current (``VTATarget.__enter__``)."""
    _CURRENT.set((*_CURRENT.get(), target))


def leave(target: VTATarget) -> None:
    """Undo :func:`enter` (``VTATarget.__exit__``)."""
    stack = _CURRENT.get()
    if not stack or stack[-1] is not target:
        raise VTATargetError(f"leaving {target!r}, which is not the current target")
    _CURRENT.set(stack[:-1])


def _resolve(target: VTATarget | str | None) -> VTATarget:
    if isinstance(target, VTATarget):
        return target
    if target is None or target in _DEVICE_NAMES:
        return get_env()
    raise VTATargetError(
        f"vta.build compiles for the accelerator: give a VTATarget or one of {_DEVICE_NAMES}, "
        f"not {target!r}"
    )


def lower(
    schedule: Schedule,
    args: Sequence[Tensor],
    name: str = "main",
    simple_mode: bool = False,
    target: VTATarget | str | None = None,
    **_: Any,
) -> PrimFunc:
    """The loop IR of ``schedule`` after the accelerator's passes (TVM's ``vta.lower``;
    ``simple_mode`` is accepted and changes nothing, the IR always prints readably)."""
    return _lower(schedule, args, name, _resolve(target))


def build(
    schedule: Schedule,
    args: Sequence[Tensor],
    target: VTATarget | str | None = "ext_dev",
    target_host: object = None,
    name: str = "main",
    **_: Any,
) -> Program:
    """The program file of ``schedule`` for the accelerator (TVM's ``vta.build``).

    ``target`` is a :class:`VTATarget` or ``"ext_dev"`` for the current environment;
    ``target_host`` is accepted for TVM's signature (the host part runs in the compiler).
    """
    return _build(schedule, args, _resolve(target), name)
