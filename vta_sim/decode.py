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

from isa import DEP_QUEUES, AluOp, MemType, Opcode, Program
from isa.insn import DEP_FLAGS, module_of_fields, queue_of
from isa.semantics import ERR_ALU_OP, ERR_DEP_FLAG, ERR_MEM_TYPE, ERR_OPCODE, ERR_STORE_PAD

from .engine import COLUMNS, MODULES

_QUEUE_IDS = {name: q for q, name in enumerate(DEP_QUEUES)}
_PADS = ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")


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
    bad_flag = np.full(n, -1, np.int64)
    # Few distinct (opcode, memory type) pairs exist, so route and flag meaning per pair.
    pairs = np.unique(np.stack([opcode, memtype], axis=1), axis=0) if n else np.zeros((0, 2))
    for op, mt in pairs.tolist():
        sel = (opcode == op) & (memtype == mt)
        module = module_of_fields(int(op), int(mt))
        route[sel] = MODULES.index(module)
        # a flag on a queue the module lacks: the first such flag, in field order, is reported
        for flag in reversed(DEP_FLAGS):
            q = queue_of(module, flag)
            on = sel & (fields[flag] != 0)
            if q is None:
                bad_flag[on] = COLUMNS.index(flag)
            else:
                target = pops if flag.startswith("pop") else pushes
                target[on] |= 1 << _QUEUE_IDS[q]
    _static_faults(table, fields, bad_flag)
    return table


def _static_faults(table: np.ndarray, fields: dict[str, np.ndarray], bad_flag: np.ndarray) -> None:
    """Fill the fault columns with what decoding alone shows; later rules take precedence."""
    fault = table[:, COLUMNS.index("fault")]
    where = table[:, COLUMNS.index("fault_field")]

    def mark(sel: np.ndarray, code: int, column: np.ndarray | int) -> None:
        fault[sel] = code
        where[sel] = column[sel] if isinstance(column, np.ndarray) else column

    op, mt, x = fields["opcode"], fields["memory_type"], fields["x_size"]
    mem = (op == Opcode.LOAD) | (op == Opcode.STORE)
    mark(bad_flag >= 0, ERR_DEP_FLAG, bad_flag)
    pads = [fields[p] for p in _PADS]
    first_pad = np.select([p != 0 for p in pads], [COLUMNS.index(p) for p in _PADS], -1)
    mark((op == Opcode.STORE) & (x != 0) & (first_pad >= 0), ERR_STORE_PAD, first_pad)
    misplaced = ((op == Opcode.LOAD) & (mt == MemType.OUT)) | (
        (op == Opcode.STORE) & (mt != MemType.OUT)
    )
    mark(misplaced & (x != 0), ERR_MEM_TYPE, COLUMNS.index("memory_type"))
    mark(
        (op == Opcode.ALU) & ~np.isin(fields["alu_opcode"], list(AluOp)),
        ERR_ALU_OP,
        COLUMNS.index("alu_opcode"),
    )
    mark(mem & ~np.isin(mt, list(MemType)), ERR_MEM_TYPE, COLUMNS.index("memory_type"))
    mark(~np.isin(op, list(Opcode)), ERR_OPCODE, COLUMNS.index("opcode"))
