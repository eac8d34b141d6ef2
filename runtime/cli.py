"""The ``vtac`` command: one dispatcher, subcommands provided by the packages that own them.

Each subcommand lives in a module exposing ``add_parser(subparsers)`` (which registers the
subcommand's parser with ``set_defaults(run=...)``) and keeps heavy imports inside the run
function, so ``vtac --help`` stays fast. This is the one place that wires the compiler to the
simulator and the RTL; the packages themselves never import each other.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Modules that provide subcommands, in the order ``vtac --help`` lists them.
COMMAND_MODULES = (
    "isa.cli",  # asm, disasm, generate
    "vta_sim.cli",  # sim
    "hw.cli",  # rtl
    "runtime.layer_cli",  # layer, bench, demo
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vtac",
        description="Compiler, simulator and RTL tools for a VTA-style accelerator.",
    )
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
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is None:
        parser.print_help()
        return 2
    from compiler.errors import CompilerError
    from isa.errors import IsaError

    try:
        return int(args.run(args) or 0)
    except (IsaError, CompilerError) as e:
        print(f"vtac {args.command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"vtac {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
