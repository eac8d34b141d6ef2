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
        "--progress",
        action="store_true",
        help="show the elapsed time while the program runs (default: when stderr is a terminal)",
    )
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
        type=max_cycles_arg,
        default=None,
        help="stop with an error if FINISH has not run after N cycles "
        "(default: 1000000000; an instruction that would end past N is not run)",
    )
    p.set_defaults(run=run)
    return p


#: File suffixes the Gantt chart can be written as (matplotlib's vector and raster formats).
PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def max_cycles_arg(text: str) -> int:
    """``--max-cycles``: an integer in [1, 2**60].

    >>> max_cycles_arg("1e3")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: '1e3' is not an integer
    """
    from .simulator import MAX_CYCLES_LIMIT

    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 1 <= value <= MAX_CYCLES_LIMIT:
        raise argparse.ArgumentTypeError(f"{value} is outside [1, {MAX_CYCLES_LIMIT}]")
    return value


def run(args: argparse.Namespace) -> int:
    """Run ``args.program`` and print the summary or JSON; write the optional outputs.

    Every output path is checked before the run, and the outputs are written all or none.
    """
    import numpy as np

    from isa.errors import OutputError
    from isa.outputs import OutputFiles

    from .progress import elapsed
    from .simulator import simulate

    if args.plot and Path(args.plot).suffix.lower() not in PLOT_SUFFIXES:
        raise OutputError(
            f"--plot {args.plot}: unsupported chart format {Path(args.plot).suffix or '(none)'!r}"
            f"; name a file ending in {', '.join(PLOT_SUFFIXES)}"
        )
    with OutputFiles() as out:
        dram_out = out.reserve(args.dram_out, "--dram-out") if args.dram_out else None
        trace_out = out.reserve(args.trace, "--trace") if args.trace else None
        plot_out = out.reserve(args.plot, "--plot") if args.plot else None
        want_trace = args.trace is not None or args.plot is not None
        show = True if args.progress else None
        with elapsed(f"simulating {Path(args.program).name}", show):
            result = simulate(args.program, trace=want_trace, max_cycles=args.max_cycles)
        if dram_out is not None:
            if dram_out.suffix == ".npy":
                with open(dram_out, "wb") as f:
                    np.save(f, result.dram)
            else:
                dram_out.write_bytes(result.dram.tobytes())
        if trace_out is not None:
            assert result.trace is not None
            result.trace.save(trace_out)
        if plot_out is not None:
            # matplotlib is imported only when a chart is asked for
            from .plot import save_gantt

            save_gantt(result, plot_out)
        text = result.to_json() if args.json else result.summary()
    print(text)
    return 0
