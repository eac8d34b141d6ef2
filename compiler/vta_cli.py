"""``vtac demo``: the main job on the built-in defaults.

The demo assembles the example matrix product in ``isa/examples/matmul16.vasm``, runs it on the
cycle-approximate simulator, checks the result against numpy and prints the simulator's summary;
it ends by drawing the run's pipeline Gantt chart to ``out/demo_gantt.png`` under the current
directory.
"""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path
from typing import Any

#: Where the demo draws its Gantt chart, relative to the current directory (``/out/`` is ignored
#: by git, so running the demo in a checkout leaves the tree clean).
GANTT_PATH = Path("out") / "demo_gantt.png"


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("demo", help="run the main job on the built-in defaults")
    p.set_defaults(run=_demo)


def _demo(args: argparse.Namespace) -> int:
    import numpy as np

    import vta_sim
    from isa.asm import assemble

    text = resources.files("isa").joinpath("examples/matmul16.vasm").read_text()
    prog = assemble(text, source="isa/examples/matmul16.vasm")
    print("== a 16x16x16 int8 matrix product, assembled by hand (isa/examples/matmul16.vasm)")
    result = vta_sim.simulate(prog)
    a = prog.read("A").astype(np.int64)
    w = prog.read("W").transpose(0, 2, 1, 3).reshape(16, 16).astype(np.int64)
    ref = np.clip((a @ w.T) >> 2, -128, 127).astype(np.int8)
    ok = np.array_equal(result.read("C"), ref)
    print(result.summary())
    print(f"result {'matches' if ok else 'DOES NOT match'} numpy")
    _write_gantt(result)
    return 0 if ok else 1


def _write_gantt(result: Any, path: Path = GANTT_PATH) -> Path:
    """Draw ``result``'s pipeline Gantt chart to ``path`` and say where it is."""
    from vta_sim.plot import save_gantt

    path.parent.mkdir(parents=True, exist_ok=True)
    save_gantt(result, path)
    print(f"pipeline Gantt chart: {path}")
    return path
