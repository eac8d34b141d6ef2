"""Execute every notebook of ``notebooks/`` into ``docs/notebooks/`` with its outputs.

``make notebooks`` runs this. The sources in ``notebooks/`` stay without outputs (a test checks
it); the executed copies are what a reader opens. Each notebook runs in a scratch folder (files
it writes stay there), at full size unless ``VTAC_NOTEBOOK_SIZE=small`` is set, with a progress
line per notebook.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "notebooks")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per cell")
    ap.add_argument("names", nargs="*", help="notebooks to run (default: all)")
    args = ap.parse_args(argv)
    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if args.names:
        paths = [p for p in paths if p.name in args.names or p.stem in args.names]
        if not paths:
            print(f"no notebook named {args.names}", file=sys.stderr)
            return 2
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p
    )
    os.environ.pop("MPLBACKEND", None)  # the kernel picks its inline backend, as in Jupyter
    failed = 0
    for k, path in enumerate(paths, start=1):
        t0 = time.perf_counter()
        print(f"[{k}/{len(paths)}] {path.name} ...", flush=True)
        nb = nbformat.read(path, as_version=4)
        with tempfile.TemporaryDirectory(prefix="vtac-notebook-") as scratch:
            client = NotebookClient(
                nb, timeout=args.timeout, kernel_name="python3",
                resources={"metadata": {"path": scratch}},
            )  # fmt: skip
            try:
                client.execute()
            except CellExecutionError as e:
                failed += 1
                print(f"    failed: {str(e).strip().splitlines()[-1]}", file=sys.stderr)
                continue
        nbformat.write(nb, args.out / path.name)
        print(f"    {time.perf_counter() - t0:.0f} s -> {args.out / path.name}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
