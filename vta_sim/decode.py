"""The program's instruction stream as the event loop's table: one int64 row per instruction.

Fields come from :func:`isa.decode_fields`; the columns the loop derives once, rather than per
cycle, are the executing module (ISA.md §3 routing), bit masks of the dependency queues each
instruction pops and pushes, and the faults decoding alone reveals (an opcode, memory type or ALU
opcode outside the ISA, a memory type its instruction may not use, STORE padding, a flag that
names a queue its module lacks), with the field at fault. The loop raises them when the
instruction reaches the head of its queue; range faults need the machine state and are found
by the ISA kernels at issue.
Instructions are decoded from the initial DRAM image: a program that stores over its own
instruction stream is outside the model.

Example:
    >>> import isa
    >>> cfg = isa.load_config("default")
    >>> prog = isa.Program.build(cfg, [isa.Load(memory_type=isa.MemType.INP, x_size=1,
    ...                                        push_next_dep=True), isa.Finish()])
    >>> table = instruction_table(prog)
    >>> table[:, COLUMNS.index("route")].tolist(), table[:, COLUMNS.index("pushes")].tolist()
    ([1, 2], [1, 0])
"""

from __future__ import annotations

import numpy as np

from isa import DEP_QUEUES, Program
from isa.insn import DEP_FLAGS, module_of_fields, queue_of
from isa.validate import FIELD_NAMES, stream_faults

from .engine import COLUMNS, MODULES

_QUEUE_IDS = {name: q for q, name in enumerate(DEP_QUEUES)}


def instruction_table(prog: Program) -> np.ndarray:
    """The (insn_count, len(COLUMNS)) int64 table the event loop runs on."""
    fields = prog.fields()
    n = prog.insn_count
    table = np.zeros((n, len(COLUMNS)), np.int64)
    for c, name in enumerate(COLUMNS):
        if name in fields:
            table[:, c] = fields[name]
    opcode = fields["opcode"]
    memtype = fields["memory_type"]
    route = table[:, COLUMNS.index("route")]
    pops = table[:, COLUMNS.index("pops")]
    pushes = table[:, COLUMNS.index("pushes")]
    # Few distinct (opcode, memory type) pairs exist, so route and flag meaning per pair, then
    # each row takes its pair's values (a 1-D unique of one key per pair: numpy's row-wise
    # unique sorts a structured view and costs more than the rest of the decoding together)
    if n:
        lo = int(memtype.min())
        span = int(memtype.max()) - lo + 1
        keys, pair = np.unique(opcode.astype(np.int64) * span + (memtype - lo), return_inverse=True)
        pair = pair.reshape(-1)
        ops, mts = (keys // span).tolist(), (keys % span + lo).tolist()
        modules = [module_of_fields(int(op), int(mt)) for op, mt in zip(ops, mts, strict=True)]
        route[:] = np.array([MODULES.index(m) for m in modules], np.int64)[pair]
        for flag in DEP_FLAGS:
            bits = [queue_of(m, flag) for m in modules]
            if all(q is None for q in bits):
                continue
            bit = np.array([0 if q is None else 1 << _QUEUE_IDS[q] for q in bits], np.int64)
            target = pops if flag.startswith("pop") else pushes
            target |= np.where(fields[flag] != 0, bit[pair], 0)
    # the faults the fields alone show, from the ISA's one stream validator
    codes, where = stream_faults(fields)
    table[:, COLUMNS.index("fault")] = codes
    column_of = np.array([COLUMNS.index(name) for name in FIELD_NAMES] + [-1], np.int64)
    table[:, COLUMNS.index("fault_field")] = column_of[where]
    return table
