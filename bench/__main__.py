"""``python -m bench``: list the benchmark modules, or run them (each in its own process, so
each can pin its threads and BLAS before numpy loads).

    python -m bench            # run every bench_*.py
    python -m bench --list     # list them
    python -m bench cpu -- --layers C2,C9   # run bench_cpu.py with arguments
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def modules() -> list[str]:
    return sorted(p.stem for p in HERE.glob("bench_*.py"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    argv = list(sys.argv[1:] if argv is None else argv)
    rest: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, rest = argv[:cut], argv[cut + 1 :]
    args = parser.parse_args(argv)
    available = modules()
    if args.list:
        print("\n".join(available))
        return 0
    wanted = [n if n.startswith("bench_") else f"bench_{n}" for n in args.names] or available
    unknown = [n for n in wanted if n not in available]
    if unknown:
        print(f"unknown benchmarks {unknown}; available: {available}", file=sys.stderr)
        return 2
    status = 0
    for name in wanted:
        print(f"==> bench.{name}", flush=True)
        rc = subprocess.call([sys.executable, "-m", f"bench.{name}", *rest], cwd=HERE.parent)
        status = status or rc
    return status


if __name__ == "__main__":
    sys.exit(main())
