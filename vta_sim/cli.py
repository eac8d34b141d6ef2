"""``vtac sim PROG.npz``: run a program on the simulator and print what it cost.

The dispatcher (``runtime/cli.py``) calls :func:`add_parser`; numba is imported only when the
command runs, so ``vtac --help`` stays fast. Errors of the ISA layer (a malformed program, an
instruction that cannot execute, a deadlock) propagate to the dispatcher, which prints them and
exits non-zero.

Example:
    >>> import argparse
    >>> sub = argparse.ArgumentParser(prog="vtac").add_subparsers()
    >>> add_parser(sub).parse_args(["p.npz", "--json"]).json
    True
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``sim`` subcommand."""
    p = subparsers.add_parser(
        "sim",
        help="run a program file on the cycle-approximate simulator",
        description="Run a program file (.npz) to FINISH on the cycle-approximate simulator "
        "and print cycles, time, GOPS, utilization, per-module statistics and DRAM traffic.",
    )
    p.add_argument("program", metavar="PROG.npz", help="program file")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    p.add_argument(
        "--dram-out",
        metavar="FILE",
        help="write the final DRAM image (raw bytes; .npy if FILE ends with .npy)",
    )
    p.add_argument("--trace", metavar="FILE", help="write a Chrome/Perfetto trace (JSON)")
    p.add_argument(
        "--plot",
        metavar="FILE.png",
        help="write a pipeline Gantt chart (PNG; .svg or .pdf by the name)",
    )
    p.add_argument(
        "--max-cycles",
        metavar="N",
        type=int,
        default=None,
        help="stop with an error if FINISH has not run after N cycles",
    )
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``args.program`` and print the summary or JSON; write the optional outputs."""
    import numpy as np

    from .simulator import simulate

    want_trace = args.trace is not None or args.plot is not None
    result = simulate(args.program, trace=want_trace, max_cycles=args.max_cycles)
    if args.dram_out:
        out = Path(args.dram_out)
        if out.suffix == ".npy":
            np.save(out, result.dram)
        else:
            out.write_bytes(result.dram.tobytes())
    if args.trace:
        assert result.trace is not None
        result.trace.save(args.trace)
    if args.plot:
        # matplotlib is imported only when a chart is asked for
        from .plot import save_gantt

        save_gantt(result, args.plot)
    print(result.to_json() if args.json else result.summary())
    return 0
