"""Check the CPU target's vector ``exp`` and ``tanh`` (``compiler.targets.cpu.vmath``) on every
one of the 2**32 float32 inputs against numpy in float64.

Prints, per function, the largest error in units in the last place of the float32-rounded
result (where that result is finite and nonzero), the input where it occurs, and how many
inputs whose rounded result is 0, an infinity or a NaN came out different from it. About a
minute per function on one core (chunks of 2**24 inputs, a compiled 16-lane kernel).

    python -m tools.vmath_exhaustive [--functions exp,tanh]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from compiler import te
from compiler.build import build
from compiler.schedule import create_schedule

CHUNK = 1 << 24
REFERENCE = {"exp": np.exp, "tanh": np.tanh}


def check(name: str) -> tuple[float, float, int]:
    """(largest ulp error, its input, mismatches where the rounded result is 0/inf/NaN)."""
    x_t = te.placeholder((CHUNK,), "float32", name="x")
    y_t = te.compute((CHUNK,), lambda i: getattr(te, name)(x_t[i]), name="y")
    s = create_schedule(y_t)
    _, inner = s[y_t].split(y_t.op.axis[0], factor=16)
    s[y_t].vectorize(inner)
    f = build(s, [x_t, y_t])
    out = np.empty(CHUNK, np.float32)
    worst, worst_x, special = 0.0, float("nan"), 0
    for c in range((1 << 32) // CHUNK):
        x = np.arange(c * CHUNK, (c + 1) * CHUNK, dtype=np.uint64).astype(np.uint32)
        x = x.view(np.float32)
        f(x, out)
        with np.errstate(all="ignore"):
            exact = REFERENCE[name](x.astype(np.float64))
            rounded = exact.astype(np.float32)
        normal = np.isfinite(rounded) & (rounded != 0) & np.isfinite(x)
        odd_out, odd_want = out[~normal], rounded[~normal]
        nan = np.isnan(odd_want)
        special += int(np.sum(~nan & (odd_out != odd_want)) + np.sum(nan & ~np.isnan(odd_out)))
        if not normal.any():
            continue
        spacing = np.spacing(np.abs(rounded[normal])).astype(np.float64)
        ulps = np.abs(out[normal].astype(np.float64) - exact[normal]) / spacing
        k = int(np.argmax(ulps))
        if ulps[k] > worst:
            worst, worst_x = float(ulps[k]), float(x[normal][k])
    return worst, worst_x, special


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--functions", default="exp,tanh", help="comma-separated: exp, tanh")
    args = ap.parse_args(argv)
    names = [n for n in args.functions.split(",") if n]
    unknown = [n for n in names if n not in REFERENCE]
    if unknown:
        ap.error(f"unknown function(s) {unknown}; choose from {sorted(REFERENCE)}")
    for name in names:
        t0 = time.perf_counter()
        worst, at, special = check(name)
        print(f"{name}: at most {worst:.4f} ulp (at x = {at!r}), {special} special-value "
              f"mismatches, {time.perf_counter() - t0:.0f} s", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
