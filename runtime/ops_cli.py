"""``vtac ops [OP ...] [--key KEY]``: which operators each target implements, and why not.

Prints the operator registry (:mod:`compiler.registry`): per operator, for the reference, the
quantizer and each target (cpu, gpu, vta), ``yes`` with the schedule family or accelerator
group kind, or ``no`` with the registered reason. ``--key`` keeps one column and prints the
reasons in full; naming operators keeps their rows. An unknown operator or key is refused in
one line.

Example:
    >>> import argparse
    >>> sub = argparse.ArgumentParser(prog="vtac").add_subparsers()
    >>> add_parser(sub)
    >>> args = sub.choices["ops"].parse_args(["conv2d", "--key", "vta"])
    >>> args.ops, args.key
    (['conv2d'], 'vta')
"""

from __future__ import annotations

from typing import Any


def add_parser(subparsers: Any) -> None:
    """Register ``ops``."""
    from compiler.registry import KEYS

    p = subparsers.add_parser(
        "ops",
        help="list the operators and what each target implements (or why not)",
        description="Print the operator registry: per operator, per target (and the reference "
        "and the quantizer), whether it is implemented, or the reason it is not.",
    )
    p.add_argument("ops", nargs="*", metavar="OP", help="operators to show (default: all)")
    p.add_argument("--key", choices=list(KEYS), default=None,
                   help="one column: a target, 'reference' or 'quantize'")  # fmt: skip
    p.set_defaults(run=run)


def _short(cell: str, width: int = 28) -> str:
    return cell if len(cell) <= width else cell[: width - 1] + "…"


def run(args: Any) -> int:
    from compiler import registry
    from runtime.errors import SessionError

    known = registry.operators()
    unknown = [op for op in args.ops if op not in known]
    if unknown:
        raise SessionError(
            f"unknown operator(s) {', '.join(map(repr, unknown))}: `vtac ops` lists them all"
        )
    from isa.report import Column, format_table

    keys = (args.key,) if args.key else tuple(registry.KEYS)
    rows = [(op, cells) for op, cells in registry.table(keys) if not args.ops or op in args.ops]
    full = args.key is not None or len(rows) == 1
    columns = [Column("operator"), *(Column(k) for k in keys)]
    body = [(op, *[c if full else _short(c) for c in cells.values()]) for op, cells in rows]
    print(format_table(columns, body))
    return 0
