"""Schedules written with cache_read/cache_write into the accumulator (VTA's style for
elementwise inputs and outputs) run bit-exact."""

import numpy as np

from compiler import te
from compiler.build import lower
from compiler.schedule import create_schedule
from compiler.targets.vta import get_vta_target

from .helpers import run


def test_cache_read_int8_and_int32_inputs_and_cache_write_the_int8_output():
    tgt = get_vta_target("default")
    shape = (6, 4)
    A = te.placeholder(shape, "int32", name="A")
    R = te.placeholder(shape, "int8", name="R")
    out = te.compute(
        shape,
        lambda i, j: te.minimum(te.maximum(A[i, j] + R[i, j].astype("int32"), -128), 127).astype(
            "int8"
        ),
        name="out",
    )
    s = create_schedule(out)
    ol = s.cache_write(out, tgt.sram.acc)
    al = s.cache_read(A, tgt.sram.acc, [ol])
    rl = s.cache_read(R, tgt.sram.acc, [ol])
    for st in (al, rl):
        s[st].pragma(s[st].leaf_iter_vars[0], "dma_copy")
    s[ol].pragma(s[ol].leaf_iter_vars[0], "alu")
    s[out].pragma(s[out].leaf_iter_vars[0], "dma_copy")
    prog = tgt.codegen(lower(s, [A, R, out], target=tgt))
    rng = np.random.default_rng(0)
    a = rng.integers(-300, 300, shape).astype(np.int32)
    r = rng.integers(-128, 128, shape).astype(np.int8)
    prog.write("A", a)
    prog.write("R", r)
    want = np.clip(a.astype(np.int64) + r, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(run(prog).read("out"), want)
    kinds = {i.memory_type.name for i in prog.instructions() if hasattr(i, "memory_type")}
    assert {"ACC", "ACC8", "OUT"} <= kinds
