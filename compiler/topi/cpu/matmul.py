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


#: The local stage's loops: the k tile's steps outside the rows, or inside each row.
K_ORDERS = ("k_rows", "rows_k")
#: The column-panel widths (``cols``) a matmul is scheduled with: the tuner's choices, the
#: strategy's default (32) among them.
COLUMN_PANELS = (16, 32, 48)
#: The output's tile loops: column panels outside row blocks, or inside.
OUTER_ORDERS = ("cols_rows", "rows_cols")


def default_matmul_rows(m: int) -> int:
    """The register tile's rows for an output of ``m`` rows: 6, or 8 for 8 to 64 rows.

    With few rows each column panel of B serves few row blocks, and each B vector loaded feeds
    ``rows`` FMAs: measured one thread with 32-column panels, 8 rows ran 5-18% faster than 6
    at m = 20, 32, 48 and 64 (ddddocr CRNN's LSTM input product 32x512x2048 0.48 -> 0.42 ms,
    its classifier 32x1024x8224 4.41 -> 4.15 ms), 4-5% faster at m = 16 in two of three runs
    (12% slower in the first), level at m = 8, 12, 24, 100 and 1024, and 12% slower at 256.

    Example:
        >>> default_matmul_rows(32), default_matmul_rows(1024), default_matmul_rows(4)
        (8, 6, 6)
    """
    return 8 if 8 <= m <= 64 else 6


def apply_matmul(
    s: Schedule,
    out: Tensor,
    rows: int = 6,
    cols: int = 32,
    lanes: int = 16,
    parallel: bool = True,
    *,
    k_block: int | None = None,
    k_order: str = "k_rows",
    unroll_k: bool = False,
    pack_b: bool = True,
    outer_order: str = "cols_rows",
) -> dict[str, object]:
    """Schedule the ``topi.matmul`` stage ``out`` of ``s`` in place (it may be an
    intermediate that its consumers read from memory); returns the knobs used.

    ``k`` is split by ``k_block`` (``None``: unsplit); ``k_order`` runs a k tile's steps
    outside the tile's rows (every step updates all ``rows x cols/lanes`` accumulators) or
    inside each row (a row's ``cols/lanes`` accumulators take the tile's steps in turn);
    ``unroll_k`` unrolls the k tile. ``pack_b`` copies B's ``cols``-wide panel once per
    column tile (contiguous rows) or reads B in place; ``outer_order`` runs column panels
    outside the row blocks (a panel reused by every row block) or inside. The defaults give::

        for j.outer (panels), i.outer (row blocks):
          for k: for i.inner (unrolled), j.inner.outer (unrolled):
            acc[i.inner, j.inner.outer, 0:lanes] += A[i, k] * panel[k, j]

    Example:
        >>> from compiler import te, topi
        >>> from compiler.schedule import create_schedule
        >>> C = topi.matmul(te.placeholder((8, 16), name="A"), te.placeholder((16, 32), name="B"))
        >>> apply_matmul(create_schedule(C), C)["rows"]
        6
    """
    if out.op.tag != "matmul":
        raise ScheduleError(f"schedule_matmul: {out.name} is not a topi.matmul output")
    if cols % lanes:
        raise ScheduleError(f"schedule_matmul: cols={cols} must be a multiple of lanes={lanes}")
    a, b = out.op.input_tensors()[:2]
    k_extent = a.shape[1]
    k_block = k_extent if k_block is None else k_block
    if not isinstance(k_block, int) or k_block < 1 or k_extent % k_block:
        raise ScheduleError(
            f"schedule_matmul: k_block={k_block!r} does not divide the reduction k={k_extent}"
        )
    for knob, value, choices in (("k_order", k_order, K_ORDERS),
                                 ("outer_order", outer_order, OUTER_ORDERS)):  # fmt: skip
        if value not in choices:
            raise ScheduleError(f"schedule_matmul: {knob}={value!r} is not one of {choices}")
    cl = s.cache_write(out, "local")
    i, j = s[out].leaf_iter_vars
    jo, ji = s[out].split(j, factor=cols)
    io, ii = s[out].split(i, factor=rows)
    outer, inner = (jo, io) if outer_order == "cols_rows" else (io, jo)
    s[out].reorder(outer, inner, ii, ji)
    _, jii = s[out].split(ji, factor=lanes)
    s[out].vectorize(jii)
    if parallel:
        s[out].parallel(outer)
    s[cl].compute_at(s[out], inner)
    ci, cj, ck = s[cl].leaf_iter_vars
    cjo, cji = s[cl].split(cj, factor=lanes)
    k_loops = [ck]
    if k_block != k_extent:
        k_loops = list(s[cl].split(ck, factor=k_block))
    if k_order == "k_rows":
        s[cl].reorder(*k_loops, ci, cjo, cji)
    else:
        s[cl].reorder(*k_loops[:-1], ci, k_loops[-1], cjo, cji)
    s[cl].unroll(ci)
    s[cl].unroll(cjo)
    s[cl].vectorize(cji)
    if unroll_k:
        s[cl].unroll(k_loops[-1])
    if pack_b:
        panel = s.cache_read(b, "local", [s[cl]])
        s[panel].compute_at(s[out], jo)
        _, cols_axis = s[panel].leaf_iter_vars
        s[panel].vectorize(cols_axis)
    return {
        "rows": rows, "cols": cols, "lanes": lanes, "parallel": parallel, "k_block": k_block,
        "k_order": k_order, "unroll_k": bool(unroll_k), "pack_b": bool(pack_b),
        "outer_order": outer_order,
    }  # fmt: skip
