"""The ``vtac`` command: one dispatcher, subcommands provided by the packages that own them.

Each subcommand lives in a module exposing ``add_parser(subparsers)`` (which registers the
subcommand's parser with ``set_defaults(run=...)``) and keeps heavy imports inside the run
function, so ``vtac --help`` stays fast. This is the one place that wires the compiler to the
simulator and the RTL; the packages themselves never import each other.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

#: Modules that provide subcommands, in the order ``vtac --help`` lists them.
COMMAND_MODULES = (
    "isa.cli",  # asm, disasm, generate
    "vta_sim.cli",  # sim
    "hw.cli",  # rtl
    "runtime.layer_cli",  # layer, bench, demo
    "runtime.graph_cli",  # graph
    "runtime.ops_cli",  # ops
    "runtime.model_cli",  # compile, run
    "runtime.tune_cli",  # tune
    "runtime.cache_cli",  # cache
)


#: Two or three typical invocations of each subcommand, printed at the end of its ``--help``.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "asm": (
        "vtac asm isa/examples/matmul16.vasm -o mm.npz",
        "vtac asm prog.vasm --check --config vta-1x16x16 -o prog.npz",
    ),
    "disasm": ("vtac disasm mm.npz", "vtac disasm mm.npz > mm.vasm   # the text asm reads back"),
    "generate": ("vtac generate", "vtac generate --check   # fail if a generated file is stale"),
    "sim": (
        "vtac sim mm.npz",
        "vtac sim mm.npz --json --trace trace.json   # open trace.json in ui.perfetto.dev",
        "vtac sim mm.npz --plot gantt.png",
    ),
    "rtl": ("vtac rtl mm.npz", "vtac rtl mm.npz --simulator verilator --json"),
    "layer": (
        "vtac layer conv2d --h 14 --w 14 --in-c 256 --out-c 256 --k 3 --pad 1 --check",
        "vtac layer dense --in-c 512 --out-c 1000 --config vta-1x16x16 -o fc.npz",
        "vtac layer conv2d --h 14 --w 14 --in-c 64 --out-c 64 --k 3 --pad 1 --target gpu --check",
    ),
    "bench": (
        "vtac bench resnet18-layers",
        "vtac bench resnet18-layers --config vta-1x16x16 --layers C2,C9",
    ),
    "demo": ("vtac demo",),
    "graph": (
        "vtac graph resnet18 --after fuse_ops",
        "vtac graph digits --target vta   # where each node runs, and why",
        "vtac graph model.onnx --dot g.dot",
    ),
    "ops": (
        "vtac ops",
        "vtac ops --key vta   # what the accelerator runs, and why not the rest",
        "vtac ops conv2d softmax",
    ),
    "compile": (
        "vtac compile resnet18 -o r18.vtac",
        "vtac compile model.onnx --threads 2 -o model.vtac",
        "vtac compile resnet18 --target vta --config vta-1x16x16 --tuning-log t.jsonl --jobs 2 "
        "-o r.vtac",
    ),
    "run": (
        "vtac run r18.vtac --input x.npy --output out.npz --repeat 10",
        "vtac run digits --target vta --tuning-log t.jsonl --plot layers.png --trace t.json",
        "vtac run model.onnx --input cat.jpg --preprocess imagenet --resize short:256,crop:224",
    ),
    "tune": (
        "vtac tune conv2d --h 14 --w 14 --in-c 64 --out-c 64 --k 3 --pad 1 --log t.jsonl",
        "vtac tune resnet18 --target cpu --trials 32 --log t.jsonl",
        "vtac tune resnet18 --image-size 64 --target vta --config vta-1x16x16 --log t.jsonl",
    ),
    "cache": ("vtac cache info", "vtac cache clear   # every compile from scratch again"),
    "explore": (
        "vtac explore resnet18-layers --layers C9 --trials 16",
        "vtac explore conv2d --h 14 --w 14 --in-c 64 --out-c 64 --k 3 --pad 1 --plot front.png",
    ),
}


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error: ``vtac <command>: error: <what>``, and the command's
    examples (:data:`EXAMPLES`) at the end of its help, as written."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {printable(message)} (see {self.prog} --help)\n")

    def format_help(self) -> str:
        text = super().format_help()
        examples = EXAMPLES.get(self.prog.removeprefix("vtac").strip())
        if examples:
            text += "\nexamples:\n" + "".join(f"  {e}\n" for e in examples)
        return text


def printable(text: str) -> str:
    """``text`` with control characters escaped, so that a message stays on its line.

    >>> printable("file\\rname\\x1b")
    'file\\\\rname\\\\x1b'
    """
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def one_line(message: str) -> str:
    """A multi-line message as one line (its lines joined by '; ', a line that ends in a colon
    by a space).

    >>> one_line("deadlock at cycle 9\\n  load waits\\n  store idle")
    'deadlock at cycle 9; load waits; store idle'
    >>> one_line("2 unsupported node(s):\\n  a (LSTM)\\n  b (Floor)")
    '2 unsupported node(s): a (LSTM); b (Floor)'
    """
    parts = [part.strip() for part in message.splitlines() if part.strip()]
    out = parts[:1]
    for prev, part in zip(parts, parts[1:], strict=False):
        out.append((" " if prev.endswith(":") else "; ") + part)
    return "".join(out)


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


@contextlib.contextmanager
def _warnings_as_lines(name: str) -> Iterator[None]:
    """The compiler's warnings (:class:`compiler.errors.CompilerWarning`: a model imported all
    the same, an int8 network far from its float one) on stderr as ``vtac CMD: warning:
    ...``, one line each, instead of Python's form with a source line; other warnings as
    Python shows them."""
    from compiler.errors import CompilerWarning

    shown = warnings.showwarning

    def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, CompilerWarning):
            print(f"{name}: warning: {message}", file=sys.stderr)
        else:
            shown(message, category, *args, **kwargs)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


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
        with _warnings_as_lines(name):
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
