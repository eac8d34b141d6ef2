"""``vtac rtl``: run a program file on the RTL and compare it with the simulator.

Example:
    $ vtac rtl program.npz --json
    {"match": true, "rtl_cycles": 327, "sim_cycles": 327, "cycle_ratio": 1.0, ...}
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vta_sim.cli import max_cycles_arg


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "rtl",
        help="run a program on the Verilog RTL and compare with the simulator",
        description="Run PROG.npz on the RTL (cocotb + Icarus Verilog or Verilator), compare "
        "the final DRAM image byte for byte with the simulator's, and report both cycle counts.",
    )
    p.add_argument("program", metavar="PROG.npz", help="program file")
    p.add_argument(
        "--simulator",
        choices=("icarus", "verilator"),
        default="icarus",
        help="HDL simulator (default: icarus)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument(
        "--max-cycles",
        type=max_cycles_arg,
        default=None,
        help="hang limit in cycles (default: derived from the program)",
    )
    p.add_argument(
        "--build-dir",
        type=Path,
        default=None,
        help="where to keep simulator builds (default: $VTA_RTL_BUILD_DIR or a temp dir)",
    )
    p.add_argument(
        "--progress",
        action="store_true",
        help="show the elapsed time while the RTL runs (default: when stderr is a terminal)",
    )
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from hw.coverify import coverify
    from isa.errors import OutputError
    from vta_sim.progress import elapsed

    if args.build_dir is not None and args.build_dir.exists() and not args.build_dir.is_dir():
        raise OutputError(f"--build-dir {args.build_dir}: not a directory")

    with elapsed(f"running {Path(args.program).name} on {args.simulator}",
                 True if args.progress else None):  # fmt: skip
        result = coverify(
            args.program,
            simulator=args.simulator,
            max_cycles=args.max_cycles,
            build_root=args.build_dir,
        )
    d = result.to_dict()
    if args.json:
        print(json.dumps(d, allow_nan=False))
    else:
        sim = "n/a" if d["sim_cycles"] is None else d["sim_cycles"]
        ratio = "n/a" if d["cycle_ratio"] is None else f"{d['cycle_ratio']:.4f}"
        print(f"match        {'yes' if d['match'] else 'NO'}")
        print(f"rtl_cycles   {d['rtl_cycles']}  ({d['simulator']})")
        print(f"sim_cycles   {sim}  ({d['reference']})")
        print(f"cycle_ratio  {ratio}")
        if "mismatch" in d:
            print(f"mismatch     {d['mismatch']}")
        if d["events_match"] is not None:
            events = "equal to count_events" if d["events_match"] else d["events_diff"]
            print(f"events       {events}")
    return 0 if result.match else 1
