"""The pass pipeline: an explicit, named list of functions ``PrimFunc -> PrimFunc``.

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
from typing import Any

from compiler.errors import CompilerError
from compiler.ir.printer import to_text
from compiler.ir.stmt import PrimFunc

PassFn = Callable[[PrimFunc], PrimFunc]


@dataclass(frozen=True)
class Pass:
    """A named pass. The name is how pipelines refer to it and how dumps are labelled."""

    name: str
    fn: PassFn

    def __call__(self, func: PrimFunc) -> PrimFunc:
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
class Pipeline:
    """An ordered, immutable list of passes with unique names."""

    passes: tuple[Pass, ...]

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

    def insert_before(self, name: str, *passes: Pass) -> Pipeline:
        k = self._index(name)
        return Pipeline(self.passes[:k] + tuple(passes) + self.passes[k:])

    def insert_after(self, name: str, *passes: Pass) -> Pipeline:
        k = self._index(name) + 1
        return Pipeline(self.passes[:k] + tuple(passes) + self.passes[k:])

    def append(self, *passes: Pass) -> Pipeline:
        return Pipeline(self.passes + tuple(passes))

    def replace(self, name: str, new: Pass) -> Pipeline:
        k = self._index(name)
        return Pipeline(self.passes[:k] + (new,) + self.passes[k + 1 :])

    def remove(self, name: str) -> Pipeline:
        k = self._index(name)
        return Pipeline(self.passes[:k] + self.passes[k + 1 :])

    def run(
        self,
        func: PrimFunc,
        options: PassOptions | None = None,
        *,
        verifier: Callable[[Any], None] | None = None,
        printer: Callable[[Any], str] | None = None,
        dump_prefix: str = "",
    ) -> PrimFunc:
        """Run every pass in order; verify and dump according to ``options``.

        ``verifier`` and ``printer`` default to the loop IR's; another IR level (the graph
        level) passes its own, and a ``dump_prefix`` that keeps its dump files apart.
        """
        from compiler.passes.verify import verify

        check = verifier if verifier is not None else verify
        show = printer if printer is not None else to_text
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


def default_pipeline() -> Pipeline:
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
