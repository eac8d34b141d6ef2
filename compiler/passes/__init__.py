"""Passes over the loop IR, one per module, composed in a named :class:`Pipeline`.

Example:
    >>> from compiler.passes import default_pipeline
    >>> "vectorize_loops" in default_pipeline().names()
    True
"""

from compiler.passes.flatten_buffers import flatten_buffers
from compiler.passes.lower_tensorize import lower_tensorize
from compiler.passes.pipeline import Pass, PassOptions, Pipeline, default_pipeline
from compiler.passes.remove_no_op import remove_no_op
from compiler.passes.simplify import simplify_func, simplify_stmt
from compiler.passes.unroll import unroll_loops
from compiler.passes.vectorize import vectorize_loops
from compiler.passes.verify import verify

__all__ = [
    "Pass",
    "PassOptions",
    "Pipeline",
    "default_pipeline",
    "flatten_buffers",
    "lower_tensorize",
    "remove_no_op",
    "simplify_func",
    "simplify_stmt",
    "unroll_loops",
    "vectorize_loops",
    "verify",
]
