"""Input shapes of an ONNX model: what it declares, and the static shapes it is compiled for.

Exporters leave dimensions free: ``x: [batch, 3, height, width]`` (named, ``dim_param``) or
``[-1, 3, ?, ?]`` (no value at all). The compiler needs static shapes, so every free dimension
comes from outside the model, as onnxruntime takes it from the arrays fed: a shape given by the
user (``input_shapes=``, ``--input-shape NAME=D0,D1,...``) or the shape of a feed.
:func:`resolve_input_shapes` merges the two with what the model declares and refuses whatever
contradicts it (a name that is not an input, another rank, a fixed dimension that differs, one
named dimension given two values), naming the input and the dimension.

Example:
    >>> from onnx import TensorProto, helper
    >>> x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, None, None])
    >>> g = helper.make_graph([], "m", [x], [x])
    >>> model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    >>> [(d.name, d.dims) for d in declared_inputs(model)]
    [('x', ('N', 3, None, None))]
    >>> resolve_input_shapes(model, {"x": (2, 3, 32, 48)})
    {'x': (2, 3, 32, 48)}
    >>> resolve_input_shapes(model, {"x": (2, 1, 32, 48)})
    Traceback (most recent call last):
    ...
    compiler.errors.FrontendError: input 'x': dimension 1 is 3 in the model, given 1 (shape ...)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compiler.errors import FrontendError

#: A declared dimension: a fixed size, a name (``dim_param``) or ``None`` (no value).
Dim = int | str | None


@dataclass(frozen=True)
class DeclaredInput:
    """A graph input as the model declares it; ``dims`` is None when it has no shape at all."""

    name: str
    elem_type: int
    dims: tuple[Dim, ...] | None

    @property
    def is_static(self) -> bool:
        """Every dimension is a fixed size."""
        return self.dims is not None and all(isinstance(d, int) for d in self.dims)

    def text(self) -> str:
        """The declared shape as users read it: ``[N, 3, ?, ?]``."""
        if self.dims is None:
            return "(no shape)"
        return "[" + ", ".join("?" if d is None else str(d) for d in self.dims) + "]"


def declared_inputs(model: Any) -> list[DeclaredInput]:
    """The graph inputs of ``model`` (an ``onnx.ModelProto``) that are not initializers."""
    init = {t.name for t in model.graph.initializer}
    return [_declared(vi) for vi in model.graph.input if vi.name not in init]


def declared_outputs(model: Any) -> list[DeclaredInput]:
    """The graph outputs of ``model`` as declared (free dimensions as for inputs)."""
    return [_declared(vo) for vo in model.graph.output]


def _declared(vi: Any) -> DeclaredInput:
    tt = vi.type.tensor_type
    dims: tuple[Dim, ...] | None = None
    if tt.HasField("shape"):
        dims = tuple(_dim(d) for d in tt.shape.dim)
    return DeclaredInput(vi.name, tt.elem_type, dims)


#: ``dim_param`` spellings that mean "unknown", not a name shared by dimensions: Paddle's
#: exporter writes ``?`` for every free dimension (``x: [-1, 3, ?, ?]`` of a height and a width
#: that differ), and onnxruntime binds none of them to another.
ANONYMOUS_DIMS = frozenset({"?"})


def _dim(d: Any) -> Dim:
    if d.HasField("dim_value") and d.dim_value > 0:
        return int(d.dim_value)
    if d.HasField("dim_param") and d.dim_param and d.dim_param not in ANONYMOUS_DIMS:
        return str(d.dim_param)
    return None


def resolve_input_shapes(
    model: Any,
    given: Mapping[str, Sequence[int]] | None = None,
    *,
    hint: str = "input_shapes",
    partial: bool = False,
) -> dict[str, tuple[int, ...]]:
    """The static shape of every input of ``model``: its declared dims, free ones taken from
    ``given`` (an input's whole shape, by name).

    Refused with :class:`FrontendError` naming the input (and the dimension): a name that is
    not an input, a dimension that is not a positive integer, another rank than declared, a
    fixed dimension that differs, a named dimension (``batch``) given two values across inputs,
    and a free dimension that nothing gives (``hint`` says how to give it); with ``partial``,
    such a dimension is ``-1`` instead (the shapes known before the feeds are read).
    """
    inputs = declared_inputs(model)
    names = [d.name for d in inputs]
    # how to give a shape: the API's keyword also names the command line's option
    how = f"{hint} (vtac: --input-shape NAME=D0,D1,...)" if hint == "input_shapes" else hint
    given = dict(given or {})
    for name in given:
        if name not in names:
            raise FrontendError(
                f"{hint} names unknown input {name!r} (the model's inputs: "
                f"{', '.join(names) or 'none'})"
            )
    bound: dict[str, tuple[int, str]] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    for decl in inputs:
        if decl.name in given:
            shape = _checked(decl, given[decl.name], bound)
        elif decl.dims is None:
            raise FrontendError(
                f"input {decl.name!r}: the model gives it no shape; give one with {how}"
            )
        elif partial:
            shape = tuple(d if isinstance(d, int) else -1 for d in decl.dims)
        else:
            for k, d in enumerate(decl.dims):
                if not isinstance(d, int):
                    raise FrontendError(
                        f"input {decl.name!r}: dimension {k} is symbolic ({d or '?'}) in "
                        f"{decl.text()}; give a static shape with {how}"
                    )
            shape = tuple(int(d) for d in decl.dims)  # type: ignore[arg-type]
        shapes[decl.name] = shape
    return shapes


def _checked(
    decl: DeclaredInput, shape: Sequence[int], bound: dict[str, tuple[int, str]]
) -> tuple[int, ...]:
    try:
        dims = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise FrontendError(
            f"input {decl.name!r}: shape {shape!r} is not a list of integers"
        ) from None
    for k, s in enumerate(dims):
        if s < 1:
            raise FrontendError(
                f"input {decl.name!r}: dimension {k} must be positive, given {s} "
                f"(shape {list(dims)})"
            )
    if decl.dims is None:
        return dims
    if len(dims) != len(decl.dims):
        raise FrontendError(
            f"input {decl.name!r}: the model declares rank {len(decl.dims)} {decl.text()}, "
            f"given rank {len(dims)} (shape {list(dims)})"
        )
    for k, (want, s) in enumerate(zip(decl.dims, dims, strict=True)):
        if isinstance(want, int) and want != s:
            raise FrontendError(
                f"input {decl.name!r}: dimension {k} is {want} in the model, given {s} "
                f"(shape {list(dims)})"
            )
        if isinstance(want, str):
            prev = bound.setdefault(want, (s, decl.name))
            if prev[0] != s:
                raise FrontendError(
                    f"input {decl.name!r}: dimension {k} ({want}) is {s}, but input "
                    f"{prev[1]!r} gives {want} = {prev[0]}"
                )
    return dims


__all__ = [
    "ANONYMOUS_DIMS",
    "DeclaredInput",
    "declared_inputs",
    "declared_outputs",
    "resolve_input_shapes",
]
