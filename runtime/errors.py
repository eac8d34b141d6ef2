"""Errors raised by the runtime: a model that cannot be loaded, a feed that does not match the
model's inputs, an artifact that is corrupted or of another format version.

They subclass :class:`compiler.errors.ModelError` (a whole model that cannot be built as asked,
what the model build in :mod:`compiler.model` raises), so the ``vtac`` dispatcher prints them as
one line (``vtac run: error: ...``) without a traceback.

Example:
    >>> from compiler.errors import CompilerError, ModelError
    >>> issubclass(FeedError, ModelError) and issubclass(FeedError, CompilerError)
    True
"""

from __future__ import annotations

from compiler.errors import ModelError


class SessionError(ModelError):
    """Base class of the runtime's errors."""


class ModelLoadError(SessionError):
    """A model that cannot be read: missing file, not ONNX, truncated, malformed graph."""


class FeedError(SessionError, ValueError):
    """A feed at ``run`` that does not match the model: unknown name, missing input, wrong
    shape or dtype. The message names the input and what was expected."""


class ArtifactError(SessionError):
    """A compiled artifact that is corrupted, incomplete or of another format version."""
