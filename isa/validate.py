"""The one validator of an instruction stream: the faults an instruction's fields alone reveal.

ISA.md §3 makes these instructions errors, whatever the machine state: an opcode, a memory type
or an ALU opcode outside the ISA; a memory type its instruction may not use (LOAD OUT, STORE of
anything but OUT, when it moves data); STORE padding; a dependency flag naming a queue its module
does not have. (Range faults, an index past a buffer, depend on the state and are found by the
kernels of :mod:`isa.semantics` as the instruction executes.)

The simulator marks every instruction's fault from :func:`stream_faults` and raises it when the
instruction reaches the head of its queue; the compiler's static checker and ``vtac asm --check``
refuse a stream through :func:`check_stream`; the reference :class:`~isa.semantics.Machine`
checks each instruction with :func:`insn_fault`. When an instruction has several faults, one is
reported, by this precedence (highest first): opcode, memory type outside the ISA, ALU opcode,
misplaced memory type, STORE padding, dependency flag (in field order).

Example:
    >>> from isa.config import load_config
    >>> from isa.insn import Finish, Gemm, Store
    >>> from isa.encoding import encode_stream
    >>> cfg = load_config("default")
    >>> raw = encode_stream([Gemm(), Store(x_size=1, y_pad_1=2), Finish()], cfg)
    >>> check_stream(raw, cfg)
    Traceback (most recent call last):
    ...
    isa.errors.ExecutionError: instruction 1 (y_pad_1): STORE padding must be zero
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .encoding import all_field_names, decode_fields
from .errors import ExecutionError
from .insn import DEP_FLAGS, AluOp, Insn, MemType, Opcode, module_of_fields, queue_of
from .semantics import (
    ERR_ALU_OP,
    ERR_DEP_FLAG,
    ERR_MEM_TYPE,
    ERR_OPCODE,
    ERR_STORE_PAD,
    ERRORS,
)

if TYPE_CHECKING:
    from .config import HwConfig

#: Field names in the order :func:`stream_faults` numbers them (those of every format).
FIELD_NAMES: tuple[str, ...] = all_field_names()
_PADS = ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")


def stream_faults(fields: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per instruction of a batch-decoded stream (:func:`isa.decode_fields`): the fault's code
    (an ``isa.semantics`` error code, 0 for none) and the index in :data:`FIELD_NAMES` of the
    field at fault (-1 for none).

    >>> import numpy as np
    >>> f = {n: np.zeros(2, np.int64) for n in FIELD_NAMES}
    >>> f["opcode"][:] = [3, 7]
    >>> codes, where = stream_faults(f)
    >>> codes.tolist(), [FIELD_NAMES[w] if w >= 0 else None for w in where]
    ([0, 10], [None, 'opcode'])
    """
    op = np.asarray(fields["opcode"], np.int64)
    n = op.shape[0]
    mt = np.asarray(fields["memory_type"], np.int64)
    x = np.asarray(fields["x_size"], np.int64)
    codes = np.zeros(n, np.int64)
    where = np.full(n, -1, np.int64)

    def mark(sel: np.ndarray, code: int, field: np.ndarray | int) -> None:
        codes[sel] = code
        where[sel] = field[sel] if isinstance(field, np.ndarray) else field

    # a flag on a queue the module lacks: the first such flag in field order
    bad_flag = np.full(n, -1, np.int64)
    # one 1-D key per (opcode, memory type) pair: numpy's row-wise unique is far slower
    lo = int(mt.min()) if n else 0
    span = int(mt.max()) - lo + 1 if n else 1
    keys = np.unique(op * span + (mt - lo)) if n else np.zeros(0, np.int64)
    for o, m in zip((keys // span).tolist(), (keys % span + lo).tolist(), strict=True):
        sel = (op == o) & (mt == m)
        module = module_of_fields(int(o), int(m))
        for flag in reversed(DEP_FLAGS):
            if queue_of(module, flag) is None:
                bad_flag[sel & (np.asarray(fields[flag]) != 0)] = FIELD_NAMES.index(flag)
    mem = (op == Opcode.LOAD) | (op == Opcode.STORE)
    mark(bad_flag >= 0, ERR_DEP_FLAG, bad_flag)
    pads = [np.asarray(fields[p]) for p in _PADS]
    first_pad = np.select([p != 0 for p in pads], [FIELD_NAMES.index(p) for p in _PADS], -1)
    mark((op == Opcode.STORE) & (x != 0) & (first_pad >= 0), ERR_STORE_PAD, first_pad)
    misplaced = ((op == Opcode.LOAD) & (mt == MemType.OUT)) | (
        (op == Opcode.STORE) & (mt != MemType.OUT)
    )
    mark(misplaced & (x != 0), ERR_MEM_TYPE, FIELD_NAMES.index("memory_type"))
    mark(
        (op == Opcode.ALU) & ~np.isin(fields["alu_opcode"], list(AluOp)),
        ERR_ALU_OP,
        FIELD_NAMES.index("alu_opcode"),
    )
    mark(mem & ~np.isin(mt, list(MemType)), ERR_MEM_TYPE, FIELD_NAMES.index("memory_type"))
    mark(~np.isin(op, list(Opcode)), ERR_OPCODE, FIELD_NAMES.index("opcode"))
    return codes, where


def fault_error(
    code: int, field: str | None, index: int | None = None, module: str | None = None
) -> ExecutionError:
    """The :class:`ExecutionError` of a fault found by :func:`stream_faults` (``module``: the
    instruction's module, named in a dependency flag's message)."""
    what = ERRORS[code][1]
    if code == ERR_DEP_FLAG and field is not None:
        what = f"{field} names a queue the {module or 'its'} module does not have"
    return ExecutionError(what, index=index, field=field)


def check_stream(raw: np.ndarray, cfg: HwConfig) -> None:
    """Raise :class:`ExecutionError` for the first instruction of ``raw`` (n×16 bytes) that has
    a fault, naming its index and field."""
    fields = decode_fields(raw, cfg)
    codes, where = stream_faults(fields)
    bad = np.flatnonzero(codes)
    if bad.size:
        i = int(bad[0])
        field = FIELD_NAMES[int(where[i])] if where[i] >= 0 else None
        module = module_of_fields(int(fields["opcode"][i]), int(fields["memory_type"][i]))
        raise fault_error(int(codes[i]), field, i, module)


def insn_fault(insn: Insn, index: int | None = None) -> ExecutionError | None:
    """The fault of one instruction object, or None.

    >>> from isa.insn import Load
    >>> str(insn_fault(Load(memory_type=MemType.INP, pop_prev_dep=True), index=4))
    'instruction 4 (pop_prev_dep): pop_prev_dep names a queue the load module does not have'
    """
    values = insn.field_values()
    fields = {n: np.array([values.get(n, 0)], np.int64) for n in FIELD_NAMES}
    codes, where = stream_faults(fields)
    if not codes[0]:
        return None
    module = module_of_fields(values["opcode"], values.get("memory_type", 0))
    return fault_error(int(codes[0]), FIELD_NAMES[int(where[0])], index, module)


__all__ = ["FIELD_NAMES", "stream_faults", "check_stream", "insn_fault", "fault_error"]
