"""CPU schedule of elementwise (injective) stages: leading axes fused and parallel, the
innermost axis vectorized when it divides into whole vectors.

Example:
    >>> from compiler import te, topi
    >>> X = te.placeholder((4, 8, 32), name="X")
    >>> s = schedule_injective(topi.relu(X))
    >>> s["relu"].axis_names()
    ['i0.i1.fused', 'i2.outer', 'i2.inner']
"""

from __future__ import annotations

from compiler.schedule import Schedule, create_schedule
from compiler.te.tensor import IterVar, Tensor

#: Iterations of the parallel loop at which :func:`apply_injective` stops fusing outer axes.
PARALLEL_ITERATIONS = 64


def schedule_injective(out: Tensor, lanes: int = 16, parallel: bool = True) -> Schedule:
    """Schedule an elementwise output (its producers stay at the root)."""
    s = create_schedule(out)
    apply_injective(s, out, lanes, parallel)
    return s


def apply_injective(
    s: Schedule, out: Tensor, lanes: int = 16, parallel: bool = True
) -> dict[str, object]:
    """Schedule the elementwise stage ``out`` of ``s`` in place; returns the knobs used
    (``vectorized`` says whether the innermost axis divided into ``lanes``).

    Example:
        >>> from compiler import te, topi
        >>> from compiler.schedule import create_schedule
        >>> X = te.placeholder((4, 7), name="X")
        >>> Y = topi.relu(X)
        >>> apply_injective(create_schedule(Y), Y)
        {'lanes': 16, 'parallel': True, 'vectorized': False}
    """
    st = s[out]
    axes = list(st.leaf_iter_vars)
    if not axes:  # a rank-0 (scalar) result: one element, nothing to split or spread
        return {"lanes": lanes, "parallel": False, "vectorized": False}
    inner = axes[-1]
    outer = axes[:-1]
    # The leading axes are fused only until they give PARALLEL_ITERATIONS iterations: the
    # axes left inside keep loops of their own, so the inner body indexes its operands
    # without dividing a fused counter (a layout transform to NCHW1n16c at 65x65 ran 1.3x
    # faster, one at 17x17 1.6x, one thread).
    lead = 1
    extent = outer[0].extent if outer else 1
    while lead < len(outer) and extent < PARALLEL_ITERATIONS:
        extent *= outer[lead].extent
        lead += 1
    fused: IterVar | None
    if lead > 1:
        fused = st.fuse(*outer[:lead])
    else:
        fused = outer[0] if outer else None
    vectorized = inner.extent % lanes == 0
    if vectorized:
        _, vi = st.split(inner, factor=lanes)
        st.vectorize(vi)
    if parallel and fused is not None:
        st.parallel(fused)
    return {"lanes": lanes, "parallel": parallel, "vectorized": vectorized}
