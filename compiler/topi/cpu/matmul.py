"""CPU schedule of ``topi.matmul``: a register-blocked micro-kernel over a packed B panel.

Per ``(j.outer, i.outer)`` tile the accumulators ``C.local[rows, cols]`` stay in vector
registers (rows unrolled, columns vectorized by ``lanes``) while ``k`` runs innermost; the
``cols``-wide panel of B is copied once per ``j.outer`` so its rows are contiguous.

Example:
    >>> from compiler import te, topi
    >>> A = te.placeholder((32, 32), name="A")
    >>> B = te.placeholder((32, 32), name="B")
    >>> s = schedule_matmul(topi.matmul(A, B), rows=4, cols=16)
    >>> [a.name for a in s["matmul"].leaf_iter_vars]
    ['j.outer', 'i.outer', 'i.inner', 'j.inner.outer', 'j.inner.inner']
"""

from __future__ import annotations

from compiler.errors import ScheduleError
from compiler.schedule import Schedule, create_schedule
from compiler.te.tensor import Tensor


def schedule_matmul(
    out: Tensor, rows: int = 6, cols: int = 32, lanes: int = 16, parallel: bool = True
) -> Schedule:
    """Schedule ``out = topi.matmul(A, B)`` (``rows x cols`` accumulator tile)."""
    if out.op.tag != "matmul":
        raise ScheduleError(f"schedule_matmul: {out.name} is not a topi.matmul output")
    s = create_schedule(out)
    apply_matmul(s, out, rows, cols, lanes, parallel)
    return s


def apply_matmul(
    s: Schedule,
    out: Tensor,
    rows: int = 6,
    cols: int = 32,
    lanes: int = 16,
    parallel: bool = True,
) -> dict[str, object]:
    """Schedule the ``topi.matmul`` stage ``out`` of ``s`` in place (it may be an
    intermediate that its consumers read from memory); returns the knobs used.

    Example:
        >>> from compiler import te, topi
        >>> from compiler.schedule import create_schedule
        >>> C = topi.matmul(te.placeholder((8, 16), name="A"), te.placeholder((16, 32), name="B"))
        >>> apply_matmul(create_schedule(C), C)
        {'rows': 6, 'cols': 32, 'lanes': 16, 'parallel': True}
    """
    if out.op.tag != "matmul":
        raise ScheduleError(f"schedule_matmul: {out.name} is not a topi.matmul output")
    if cols % lanes:
        raise ScheduleError(f"schedule_matmul: cols={cols} must be a multiple of lanes={lanes}")
    b = out.op.input_tensors()[1]
    cl = s.cache_write(out, "local")
    i, j = s[out].leaf_iter_vars
    jo, ji = s[out].split(j, factor=cols)
    io, ii = s[out].split(i, factor=rows)
    s[out].reorder(jo, io, ii, ji)
    _, jii = s[out].split(ji, factor=lanes)
    s[out].vectorize(jii)
    if parallel:
        s[out].parallel(jo)
    s[cl].compute_at(s[out], io)
    ci, cj, ck = s[cl].leaf_iter_vars
    cjo, cji = s[cl].split(cj, factor=lanes)
    s[cl].reorder(ck, ci, cjo, cji)
    s[cl].unroll(ci)
    s[cl].unroll(cjo)
    s[cl].vectorize(cji)
    panel = s.cache_read(b, "local", [s[cl]])
    s[panel].compute_at(s[out], jo)
    _, cols_axis = s[panel].leaf_iter_vars
    s[panel].vectorize(cols_axis)
    return {"rows": rows, "cols": cols, "lanes": lanes, "parallel": parallel}
