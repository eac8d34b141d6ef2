"""CPU schedule of pooling (``pool_max``, and the ``pool_sum`` of average pooling): the
padding is inlined (a select per window cell), and the innermost axis vectorized: the
channel block in the packed layout, the output width in NCHW.

Example:
    >>> from compiler import te, topi
    >>> from compiler.schedule import create_schedule
    >>> x = te.placeholder((1, 4, 56, 56, 1, 16), name="x")
    >>> y = topi.max_pool2d(x, 3, 2, 1)
    >>> apply_pool(create_schedule(y), y)
    {'vector_axis': 'channel', 'lanes': 16, 'parallel': True}
"""

from __future__ import annotations

from compiler.errors import ScheduleError
from compiler.schedule import Schedule
from compiler.te.tensor import Tensor
from compiler.topi.cpu.conv2d import default_ow_block


def apply_pool(s: Schedule, pool: Tensor, parallel: bool = True) -> dict[str, object]:
    """Schedule the pooling reduction ``pool`` (tag ``pool_max`` or ``pool_sum``) in place."""
    if pool.op.tag not in ("pool_max", "pool_sum"):
        raise ScheduleError(f"apply_pool: {pool.name} is not a pooling reduction")
    for t in pool.op.input_tensors():
        if t.op.tag == "pad":
            s[t].compute_inline()
    st = s[pool]
    axes = list(st.leaf_iter_vars)
    spatial, (ry, rx) = axes[:-2], axes[-2:]
    if len(spatial) > 4:
        # Packed: (n, c, y, x, bn, bc): the channel block is contiguous.
        n, c, y, x, bi, ci = spatial
        st.reorder(n, c, y, x, bi, ry, rx, ci)
        st.vectorize(ci)
        outer = st.fuse(n, c, y)
        knobs: dict[str, object] = {"vector_axis": "channel", "lanes": pool.shape[5]}
    else:
        n, c, y, x = spatial
        lanes = default_ow_block(pool.shape[3], 16)
        xo, xi = st.split(x, factor=lanes)
        st.reorder(n, c, y, xo, ry, rx, xi)
        st.vectorize(xi)
        outer = st.fuse(n, c, y)
        knobs = {"vector_axis": "width", "lanes": lanes}
    if parallel:
        st.parallel(outer)
    knobs["parallel"] = parallel
    return knobs
