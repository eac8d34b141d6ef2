"""Exceptions raised by the compiler.

Every error names what is at fault: the stage, axis, tensor, buffer, dtype or shape. Catch
``CompilerError`` to handle them all.

Example:
    >>> from compiler.errors import ScheduleError
    >>> issubclass(ScheduleError, CompilerError)
    True
"""

from __future__ import annotations


class CompilerError(Exception):
    """Base class of every error raised by the compiler."""


class TEError(CompilerError):
    """An invalid tensor expression (bad shape, dtype, index or reduction)."""


class ShapeError(TEError, ValueError):
    """Shapes of operands do not agree."""


class DTypeError(TEError, TypeError):
    """Dtypes of operands do not agree or a dtype is not supported."""


class ScheduleError(CompilerError):
    """An illegal scheduling primitive; the message names the stage and axis."""


class LoweringError(CompilerError):
    """A schedule that cannot be lowered to loop IR."""


class IRVerifyError(CompilerError):
    """The loop IR is malformed; raised by the verifier after a pass."""


class CodegenError(CompilerError):
    """A target cannot generate code for a construct in the loop IR."""


class GraphError(CompilerError):
    """A malformed operator graph: unknown operator, bad attribute, broken topology, a pass's
    output that fails the graph verifier. The message names the node and the input at fault."""


class FrontendError(CompilerError):
    """A model file the frontend refuses: unreadable, malformed, or using unsupported
    operators (every one is listed with its node name, op type and opset)."""


class CompilerWarning(UserWarning):
    """Base class of the compiler's warnings: the work is done, and something about it needs
    the user's eye (``vtac`` prints each as one ``warning:`` line)."""


class FrontendWarning(CompilerWarning):
    """A model the frontend imports all the same, as onnxruntime runs it, with something its
    file states wrongly (a graph output declared with another rank than it has)."""


class QuantizeWarning(CompilerWarning):
    """An int8 network whose outputs are far from the float network's on its own calibration
    data (``compiler.quantize.INT8_COSINE_TARGET``;
    ``compiler.model.vta.warn_if_far_from_fp32``)."""


class ModelError(CompilerError):
    """A whole model that cannot be built as asked: an unknown target, a float graph without
    calibration data, a tuning log that does not apply, an option out of its range."""
