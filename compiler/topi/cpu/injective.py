"""CPU schedule of elementwise (injective) stages: outer axes fused and parallel, the
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
    fused: IterVar | None
    if len(outer) > 1:
        fused = st.fuse(*outer)
    else:
        fused = outer[0] if outer else None
    vectorized = inner.extent % lanes == 0
    if vectorized:
        _, vi = st.split(inner, factor=lanes)
        st.vectorize(vi)
    if parallel and fused is not None:
        st.parallel(fused)
    return {"lanes": lanes, "parallel": parallel, "vectorized": vectorized}
