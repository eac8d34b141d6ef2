"""The pass pipeline: an explicit, named list of functions ``PrimFunc -> PrimFunc``.

:class:`Pass` and :class:`Pipeline` are generic in the IR they transform: the loop level's
are ``Pass[PrimFunc]``, the graph level (:mod:`compiler.graph.pipeline`) holds
``Graph -> Graph`` passes in a ``Pipeline[Graph]`` run by the same runner.

Targets extend the pipeline by inserting their passes relative to named ones. A debug switch
verifies the IR after every pass and dumps it by pass name:

* ``PassOptions(verify=True)`` or the environment variable ``VTAC_VERIFY_IR=1``;
* ``PassOptions(dump={"flatten_buffers"})`` / ``VTAC_DUMP_IR=flatten_buffers,vectorize_loops``
  (``all`` dumps after every pass) with ``dump_dir`` / ``VTAC_DUMP_DIR`` to write
  ``NN_<pass>.txt`` files instead of printing to stderr.

Example:
    >>> p = default_pipeline()
    >>> p.names()[:3]
    ['lower_tensorize', 'simplify', 'flatten_buffers']
    >>> p2 = p.insert_after("flatten_buffers", Pass("my_pass", lambda f: f))
    >>> p2.names()[3]
    'my_pass'
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from compiler.errors import CompilerError
from compiler.ir.printer import to_text
from compiler.ir.stmt import PrimFunc

#: The IR a pass transforms (``PrimFunc`` for the loop level, ``Graph`` for the graph level).
IR = TypeVar("IR")

PassFn = Callable[[PrimFunc], PrimFunc]


@dataclass(frozen=True)
class Pass(Generic[IR]):
    """A named pass. The name is how pipelines refer to it and how dumps are labelled.

    Example:
        >>> from compiler.passes.simplify import simplify_func
        >>> Pass("simplify", simplify_func).name
        'simplify'
    """

    name: str
    fn: Callable[[IR], IR]

    def __call__(self, func: IR) -> IR:
        return self.fn(func)


def _env_dump() -> frozenset[str]:
    raw = os.environ.get("VTAC_DUMP_IR", "")
    return frozenset(x.strip() for x in raw.split(",") if x.strip())


@dataclass(frozen=True)
class PassOptions:
    """Debug options of a pipeline run (defaults come from the environment)."""

    verify: bool = field(
        default_factory=lambda: os.environ.get("VTAC_VERIFY_IR", "") not in ("", "0")
    )
    dump: frozenset[str] = field(default_factory=_env_dump)
    dump_dir: Path | None = field(
        default_factory=lambda: (
            Path(os.environ["VTAC_DUMP_DIR"]) if os.environ.get("VTAC_DUMP_DIR") else None
        )
    )
    on_dump: Callable[[str, str], None] | None = None

    def wants_dump(self, name: str) -> bool:
        return "all" in self.dump or name in self.dump


@dataclass(frozen=True)
class Pipeline(Generic[IR]):
    """An ordered, immutable list of passes with unique names."""

    passes: tuple[Pass[IR], ...]

    def __post_init__(self) -> None:
        names = [p.name for p in self.passes]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise CompilerError(f"pipeline has duplicate pass names: {sorted(dup)}")

    def names(self) -> list[str]:
        return [p.name for p in self.passes]

    def _index(self, name: str) -> int:
        for k, p in enumerate(self.passes):
            if p.name == name:
                return k
        raise CompilerError(f"no pass named {name!r} in the pipeline {self.names()}")

    def insert_before(self, name: str, *passes: Pass[IR]) -> Pipeline[IR]:
        k = self._index(name)
        return Pipeline(self.passes[:k] + tuple(passes) + self.passes[k:])

    def insert_after(self, name: str, *passes: Pass[IR]) -> Pipeline[IR]:
        k = self._index(name) + 1
        return Pipeline(self.passes[:k] + tuple(passes) + self.passes[k:])

    def append(self, *passes: Pass[IR]) -> Pipeline[IR]:
        return Pipeline(self.passes + tuple(passes))

    def replace(self, name: str, new: Pass[IR]) -> Pipeline[IR]:
        k = self._index(name)
        return Pipeline(self.passes[:k] + (new,) + self.passes[k + 1 :])

    def remove(self, name: str) -> Pipeline[IR]:
        k = self._index(name)
        return Pipeline(self.passes[:k] + self.passes[k + 1 :])

    def run(
        self,
        func: IR,
        options: PassOptions | None = None,
        *,
        verifier: Callable[[IR], None] | None = None,
        printer: Callable[[IR], str] | None = None,
        dump_prefix: str = "",
    ) -> IR:
        """Run every pass in order; verify and dump according to ``options``.

        ``verifier`` and ``printer`` default to the loop IR's; another IR level (the graph
        level) passes its own, and a ``dump_prefix`` that keeps its dump files apart.
        """
        from compiler.passes.verify import verify

        # The defaults are the loop IR's; a pipeline of another IR passes its own.
        check: Callable[[Any], None] = verifier if verifier is not None else verify
        show: Callable[[Any], str] = printer if printer is not None else to_text
        opts = options if options is not None else PassOptions()
        _dump(opts, 0, "input", func, show, dump_prefix)
        if opts.verify:
            _verify_labelled(check, func, "input", show)
        for k, p in enumerate(self.passes, start=1):
            func = p(func)
            if opts.verify:
                _verify_labelled(check, func, p.name, show)
            _dump(opts, k, p.name, func, show, dump_prefix)
        return func


def _verify_labelled(
    verify: Callable[[Any], None], func: Any, name: str, show: Callable[[Any], str]
) -> None:
    try:
        verify(func)
    except CompilerError as exc:
        raise type(exc)(f"after pass {name}: {exc}\n{show(func)}") from None


def _dump(
    opts: PassOptions, k: int, name: str, func: Any, show: Callable[[Any], str], prefix: str
) -> None:
    if not opts.wants_dump(name):
        return
    text = show(func)
    if opts.on_dump is not None:
        opts.on_dump(name, text)
    elif opts.dump_dir is not None:
        opts.dump_dir.mkdir(parents=True, exist_ok=True)
        (opts.dump_dir / f"{prefix}{k:02d}_{name}.txt").write_text(text)
    else:
        sys.stderr.write(f"# ---- after {name} ----\n{text}")


def default_pipeline() -> Pipeline[PrimFunc]:
    """The target-independent pipeline, read top to bottom."""
    from compiler.passes.flatten_buffers import flatten_buffers
    from compiler.passes.lower_tensorize import lower_tensorize
    from compiler.passes.remove_no_op import remove_no_op
    from compiler.passes.simplify import simplify_func
    from compiler.passes.unroll import unroll_loops
    from compiler.passes.vectorize import vectorize_loops

    return Pipeline(
        (
            Pass("lower_tensorize", lower_tensorize),
            Pass("simplify", simplify_func),
            Pass("flatten_buffers", flatten_buffers),
            Pass("simplify_flat", simplify_func),
            Pass("unroll_loops", unroll_loops),
            Pass("vectorize_loops", vectorize_loops),
            Pass("simplify_final", simplify_func),
            Pass("remove_no_op", remove_no_op),
        )
    )
