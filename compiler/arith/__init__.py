"""Integer arithmetic analysis: affine forms, constant bounds, simplification, intervals.

Example:
    >>> from compiler.ir import Var, to_text
    >>> from compiler.arith import simplify
    >>> i = Var("i")
    >>> to_text(simplify((i * 8 + 4) // 4))
    'i*2 + 1'
"""

from compiler.arith.bounds import const_bounds, prove
from compiler.arith.interval import Interval, eval_interval
from compiler.arith.linear import LinearForm, detect_linear_equation, from_linear, to_linear
from compiler.arith.simplify import Simplifier, simplify, simplify_cache

__all__ = [
    "Interval",
    "LinearForm",
    "Simplifier",
    "const_bounds",
    "detect_linear_equation",
    "eval_interval",
    "from_linear",
    "prove",
    "simplify",
    "simplify_cache",
    "to_linear",
]
