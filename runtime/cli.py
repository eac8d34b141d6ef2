"""The ``vtac`` command: one dispatcher, subcommands provided by the packages that own them.

Each subcommand lives in a module exposing ``add_parser(subparsers)`` (which registers the
subcommand's parser with ``set_defaults(run=...)``) and keeps heavy imports inside the run
function, so ``vtac --help`` stays fast. This is the one place that wires the compiler to the
simulator and the RTL; the packages themselves never import each other.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

#: Modules that provide subcommands, in the order ``vtac --help`` lists them.
COMMAND_MODULES = (
    "isa.cli",  # asm, disasm, generate
    "vta_sim.cli",  # sim
    "hw.cli",  # rtl
    "runtime.layer_cli",  # layer, bench, demo
    "runtime.graph_cli",  # graph
    "runtime.model_cli",  # compile, run
    "runtime.tune_cli",  # tune
)


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error: ``vtac <command>: error: <what>``."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {printable(message)} (see {self.prog} --help)\n")


def printable(text: str) -> str:
    """``text`` with control characters escaped, so that a message stays on its line.

    >>> printable("file\\rname\\x1b")
    'file\\\\rname\\\\x1b'
    """
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def one_line(message: str) -> str:
    """A multi-line message as one line (its lines joined by '; ').

    >>> one_line("deadlock at cycle 9\\n  load waits\\n  store idle")
    'deadlock at cycle 9; load waits; store idle'
    """
    return "; ".join(part.strip() for part in message.splitlines() if part.strip())


def version() -> str:
    """The installed distribution's version (the source tree's when run uninstalled)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("vtac")
    except PackageNotFoundError:
        return "0+unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="vtac",
        description="Compiler, simulator and RTL tools for a VTA-style accelerator.",
    )
    parser.add_argument("--version", action="version", version=f"vtac {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            continue
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``vtac`` with ``argv``; returns the exit status (0, 1 for an error, 2 for a usage
    error, 130 when interrupted, 141 when standard output was closed)."""
    from isa import interrupt

    restore = interrupt.install("vtac")
    try:
        return _main(argv)
    except KeyboardInterrupt:  # before a command was chosen (imports, parsing)
        print("vtac: interrupted", file=sys.stderr)
        interrupt.reported()
        return 130
    finally:
        restore()


def _main(argv: Sequence[str] | None) -> int:
    # Line by line, also into a pipe (``vtac run ... | tee log``): progress must not arrive
    # all at once at the end.
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        try:
            reconfigure(line_buffering=True)
        except (OSError, ValueError):  # a closed or replaced stream
            pass
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, or a usage error already printed as one line
        return e.code if isinstance(e.code, int) else 2
    if getattr(args, "run", None) is None:
        parser.print_help()
        return 2
    from compiler.errors import CompilerError
    from isa.errors import IsaError

    name = f"vtac {args.command}"
    try:
        code = int(args.run(args) or 0)
        sys.stdout.flush()
        from isa import interrupt

        interrupt.check()  # an interrupt that a library swallowed still ends as one
        return code
    except (IsaError, CompilerError) as e:
        return _fail(name, str(e))
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        from isa import interrupt

        interrupt.reported()
        return 130
    except BrokenPipeError:
        # the reader of standard output went away (``vtac sim ... | head -1``): stop quietly,
        # like any command line tool, and keep Python's exit-time flush from failing again
        _silence_stdout()
        return 141
    except MemoryError:
        return _fail(name, "out of memory")
    except Exception as e:
        if os.environ.get("VTAC_TRACEBACK"):
            raise
        detail = printable(one_line(str(e))) or type(e).__name__
        print(
            f"{name}: internal error: {type(e).__name__}: {detail} (a bug: please report it; "
            "VTAC_TRACEBACK=1 shows where)",
            file=sys.stderr,
        )
        return 70


def _fail(name: str, message: str) -> int:
    print(f"{name}: error: {printable(one_line(message))}", file=sys.stderr)
    return 1


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a real file (captured in tests)
        pass


if __name__ == "__main__":
    sys.exit(main())
