"""An onnxruntime-like session: compile a whole model once, then run it many times.

``InferenceSession(model)`` takes a zoo name (``"resnet18"``), a path to an ONNX file or to a
compiled artifact (``vtac compile -o model.vtac``), the bytes of either, or an
``onnx.ModelProto``. An ONNX model is imported into the graph IR, optimized by the graph pass
pipeline (constant and batch-norm folding, fusion, layout packing, static memory planning), and
every fused group is turned into tensor expressions, scheduled for the target and compiled (for
the CPU by LLVM); an artifact already holds all of that.

``run(output_names, feeds)`` checks every feed's name, shape and dtype (an error names the input
and what was expected), runs the groups in order and returns the outputs as a list, in the order
asked for; :meth:`InferenceSession.profile` gives the last run's per-group records. A session
has one activation arena, so runs from several threads take turns.

Example:
    >>> import numpy as np
    >>> sess = InferenceSession("digits")                          # doctest: +SKIP
    >>> [(i.name, i.shape, i.type) for i in sess.get_inputs()]     # doctest: +SKIP
    [('data', (1, 1, 28, 28), 'tensor(float)')]
    >>> x = np.zeros((1, 1, 28, 28), np.float32)
    >>> (logits,) = sess.run(None, {"data": x})                    # doctest: +SKIP
    >>> logits.shape, sess.profile().groups[0].target              # doctest: +SKIP
    ((1, 10), 'cpu')
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from compiler.model.program import MemoryStats, Program, TensorSpec
from runtime.artifact import is_artifact, load_artifact, save_artifact
from runtime.errors import FeedError, ModelLoadError, SessionError
from runtime.executor import Executor
from runtime.profile import Profile

#: Targets whose groups this module's executor runs (``vta``: :mod:`runtime.vta_session`).
TARGETS = ("cpu", "gpu")
#: Every target a session can compile whole models for.
ALL_TARGETS = (*TARGETS, "vta")
#: Options of the vta target (:class:`runtime.vta_session.VtaInferenceSession`).
VTA_OPTIONS = (
    "config",
    "device",
    "simulator",
    "calibration",
    "calibrator",
    "requant",
    "sensitivity",
)

ModelSource = str | bytes | os.PathLike | Any  # Any: an onnx.ModelProto


def check_feeds(inputs: Sequence[TensorSpec], feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Check ``feeds`` against the model's inputs (the compiler's one feed checker,
    :func:`compiler.graph.reference.match_feeds`); return them as C-contiguous arrays.

    Every input must be fed exactly once, as a numpy array of the input's shape and dtype.

    Example:
        >>> spec = [TensorSpec("data", (1, 4), "float32")]
        >>> check_feeds(spec, {"data": np.zeros((1, 4), np.float32)})["data"].shape
        (1, 4)
        >>> check_feeds(spec, {"data": np.zeros((1, 5), np.float32)})
        Traceback (most recent call last):
        ...
        runtime.errors.FeedError: input 'data' has shape (1, 5), expected (1, 4) (float32)
    """
    from compiler.graph.reference import match_feeds

    specs = [(s.name, tuple(s.shape), s.dtype) for s in inputs]
    checked = match_feeds(specs, feeds, error=FeedError)
    return {name: np.asarray(arr, order="C") for name, arr in checked.items()}


def _zoo_names() -> tuple[str, ...]:
    from compiler.frontend.zoo import zoo_names

    return zoo_names()


def load_onnx(
    model: ModelSource, *, image_size: int | None = None, batch: int | None = None
) -> Any:
    """The ``onnx.ModelProto`` of a zoo name, a path, the file's bytes or a ModelProto.

    A file that is not a protobuf (empty, truncated, another format) is refused naming the
    file; a string that is neither an existing path nor a zoo name lists the zoo names.

    Example:
        >>> load_onnx(b"\\x00not onnx")
        Traceback (most recent call last):
        ...
        runtime.errors.ModelLoadError: model: not a valid ONNX protobuf (truncated or corrupted?)
    """
    import onnx

    from compiler.errors import FrontendError
    from compiler.frontend.onnx_import import read_model

    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray, memoryview)):
        source: Any = bytes(model)
    elif isinstance(model, (str, os.PathLike)):
        if not Path(model).exists():
            if isinstance(model, str) and model in _zoo_names():
                from compiler.frontend.zoo import load_zoo

                kwargs: dict[str, int] = {}
                if image_size is not None:
                    kwargs["image_size"] = image_size
                if batch is not None:
                    kwargs["batch"] = batch
                return load_zoo(model, **kwargs)
            raise ModelLoadError(
                f"model {os.fspath(model)}: no such file, and not a zoo model "
                f"({', '.join(_zoo_names())})"
            )
        source = os.fspath(model)
    else:
        raise ModelLoadError(
            f"a model is a zoo name, a path, bytes or an onnx.ModelProto, "
            f"not {type(model).__name__}"
        )
    try:  # the one ONNX reader: a regular file within protobuf's limit, parsed, with a graph
        return read_model(source)
    except FrontendError as e:
        text = str(e)
        raise ModelLoadError(text if text.startswith("model") else f"model {text}") from None


class InferenceSession:
    """A compiled model and its executor (see the module docstring).

    ``target``: where the groups run (``"cpu"``, the default; ``"gpu"``: CUDA kernels through
    numba, on numba's CUDA simulator when ``NUMBA_ENABLE_CUDASIM=1``; a GPU program is not
    saved; ``"vta"``: int8 on the accelerator with host fallback, and the options ``config``,
    ``device``, ``calibration`` and ``requant``, see :mod:`runtime.vta_session`; an artifact of
    an accelerator network runs there when no target is given).
    ``image_size``/``batch``: for zoo names only. ``input_shapes``: static shapes (by input
    name) for inputs with free (symbolic) dimensions; checked against the declared dims. Without
    them a model with free dimensions is compiled at the first ``run``, for its feeds' shapes
    (and again, once per new shape, when a later run's shapes differ); until then
    :meth:`get_inputs` shows the free dimensions as ``-1``.
    ``num_threads``: threads of the CPU kernels' parallel loops (default: ``VTAC_NUM_THREADS``,
    else every CPU this process may use). ``progress``: a progress bar on stderr while groups
    compile, and of each run's kernels on numba's CUDA simulator, where a run takes seconds
    (``None``: only when stderr is a terminal).
    """

    def __new__(cls, model: ModelSource, target: str | None = None, **kwargs: Any) -> Any:
        """A :class:`runtime.vta_session.VtaInferenceSession` for target ``vta`` or a vta
        artifact, else a session of this class."""
        if cls is InferenceSession and (target == "vta" or _is_vta_artifact(model, target)):
            from runtime.vta_session import VtaInferenceSession

            return super().__new__(VtaInferenceSession)
        return super().__new__(cls)

    def __init__(
        self,
        model: ModelSource,
        target: str | None = None,
        *,
        image_size: int | None = None,
        batch: int | None = None,
        num_threads: int | None = None,
        progress: bool | None = None,
        tuning_log: str | os.PathLike | None = None,
        input_shapes: Mapping[str, Sequence[int]] | None = None,
        **vta_options: Any,
    ) -> None:
        target = target or "cpu"
        if target not in TARGETS:
            raise SessionError(f"unknown target {target!r} (known: {', '.join(ALL_TARGETS)})")
        _refuse_vta_options(target, vta_options)
        t0 = time.perf_counter()
        self._program: Program | None = None
        self._source: tuple[Any, ...] | None = None  # what _build compiles from
        self._declared: list[Any] = []
        self._from_feeds = False  # free dimensions taken from each run's feeds
        self._built: dict[Any, tuple[Any, Program, Executor]] = {}  # by input shapes
        zoo = isinstance(model, str) and not os.path.exists(model) and model in _zoo_names()
        if (image_size is not None or batch is not None) and not zoo:
            raise SessionError(
                "image_size and batch apply to zoo models only; give an ONNX file's free "
                "dimensions with input_shapes"
            )
        if is_artifact_source(model):
            program = load_artifact(model if isinstance(model, bytes) else os.fspath(model))
            if program.target != target:
                raise SessionError(
                    f"the artifact was compiled for target {program.target!r}, not {target!r}"
                )
            if num_threads is not None and num_threads != program.num_threads:
                raise SessionError(
                    f"the artifact's kernels were compiled for {program.num_threads} thread(s), "
                    f"not {num_threads}: compile the model again with that many"
                )
            if tuning_log is not None:
                raise SessionError(
                    "a tuning log applies when a model is compiled, not to a compiled artifact"
                )
            _check_artifact_shapes(program, input_shapes)
            self.graph = None
        else:
            from compiler.frontend.shapes import declared_inputs, resolve_input_shapes

            best = _apply_best(tuning_log, target)
            proto = load_onnx(model, image_size=image_size, batch=batch)
            self._source = (proto, target, num_threads, progress, _model_name(model, proto), best)
            self._declared = declared_inputs(proto)
            if input_shapes is not None or all(d.is_static for d in self._declared):
                self._build(resolve_input_shapes(proto, input_shapes))
            else:
                self._from_feeds = True
        #: the tuning records applied (``report()`` says which tasks fell back), or None
        self.tuning = best if not is_artifact_source(model) else None
        if is_artifact_source(model):
            self._program = program
            self._executor = Executor(program)
        self.compile_seconds = time.perf_counter() - t0
        self._profile: Profile | None = None
        # one arena per session: concurrent runs take turns
        self._lock = threading.Lock()

    def _build(self, shapes: Mapping[str, tuple[int, ...]]) -> None:
        """Compile the ONNX model for static input ``shapes`` (once per distinct shapes)."""
        from compiler.model.cpu import BLOCK_C, compile_graph, optimize

        assert self._source is not None
        key = tuple(sorted(shapes.items()))
        built = self._built
        if key not in built:
            proto, target, num_threads, progress, name, best = self._source
            graph = optimize(proto, block_c=BLOCK_C[target], input_shapes=shapes,
                             dense_as_matmul=target == "cpu")  # fmt: skip
            with best if best is not None else contextlib.nullcontext():
                program = compile_graph(
                    graph,
                    target=target,
                    num_threads=num_threads,
                    progress=progress,
                    name=name,
                    output_names=tuple(o.name for o in proto.graph.output),
                )
            built[key] = (graph, program, Executor(program))
        self.graph, self._program, self._executor = built[key]

    @property
    def program(self) -> Program:
        """The compiled model; a model with free input dimensions has none until its first run
        (or ``input_shapes``)."""
        if self._program is None:
            from compiler.frontend.shapes import resolve_input_shapes

            assert self._source is not None  # only a model with free dims has no program yet
            resolve_input_shapes(
                self._source[0], None, hint="input_shapes (or run it: the feeds give them)"
            )
        assert self._program is not None
        return self._program

    def get_inputs(self) -> list[TensorSpec]:
        """The model's inputs (name, shape, dtype; ``type`` as onnxruntime prints it); before a
        model with free dimensions is compiled, those dimensions are ``-1``."""
        if self._program is None:
            return [_spec(d) for d in self._declared]
        return list(self._program.inputs)

    def get_outputs(self) -> list[TensorSpec]:
        """The model's outputs, in the model's order (before a model with free dimensions is
        compiled: as declared, free dimensions ``-1``)."""
        if self._program is None:
            from compiler.frontend.shapes import declared_outputs

            assert self._source is not None
            return [_spec(d) for d in declared_outputs(self._source[0])]
        return list(self._program.outputs)

    @property
    def memory(self) -> MemoryStats:
        """The static memory plan: peak arena bytes against one buffer per tensor."""
        return self.program.memory

    def run(self, output_names: Sequence[str] | None, feeds: Mapping[str, Any]) -> list[np.ndarray]:
        """Run the model on ``feeds``; return the outputs named (all when ``None``), in order."""
        known = [s.name for s in self.get_outputs()]
        names = known if output_names is None else list(output_names)
        for name in names:
            if name not in known:
                raise SessionError(
                    f"unknown output {name!r} (the model's outputs: {', '.join(known)})"
                )
        shapes = None
        if self._from_feeds:
            # free dimensions: the feeds give them (compiled once per distinct shapes)
            from compiler.errors import FrontendError
            from compiler.frontend.shapes import resolve_input_shapes
            from runtime.inputs import feed_shapes

            assert self._source is not None
            try:
                shapes = resolve_input_shapes(
                    self._source[0], feed_shapes(self._declared, feeds), hint="the feeds"
                )
            except FrontendError as e:
                raise FeedError(str(e)) from None
        with self._lock:
            if shapes is not None:
                t0 = time.perf_counter()
                self._build(shapes)
                self.compile_seconds += time.perf_counter() - t0
            checked = check_feeds(self.program.inputs, feeds)
            bar = self._run_bar()
            try:
                outs, self._profile = self._executor.run(
                    checked, None if bar is None else bar.update
                )
            finally:
                if bar is not None:
                    bar.close()
        return [outs[n] for n in names]

    def _run_bar(self) -> Any:
        """A tqdm bar of one run's kernels where a run takes seconds (a gpu program on numba's
        CUDA simulator): with ``progress``, or on a terminal when it is None; else None."""
        if self._source is None or self.program.target != "gpu":
            return None
        progress = self._source[3]
        if not (sys.stderr.isatty() if progress is None else progress):
            return None
        from compiler.targets.gpu.module import cuda_backend

        if cuda_backend() != "cuda-simulator":
            return None
        from tqdm import tqdm

        desc = f"{self._source[4]} on the CUDA simulator"
        return tqdm(
            total=len(self.program.kernels), desc=desc, unit="kernel", file=sys.stderr, leave=False
        )

    def profile(self) -> Profile:
        """The last run's per-group records (name, fused ops, target, time in µs)."""
        if self._profile is None:
            raise SessionError("no profile yet: call run() first")
        return self._profile

    def save(self, path: str | os.PathLike) -> None:
        """Write the compiled model as an artifact (see :mod:`runtime.artifact`)."""
        if any(k.target == "gpu" for k in self.program.kernels):
            raise SessionError(
                f"a {self.program.target} program cannot be saved as an artifact (its kernels "
                "are compiled for the device in the session that runs them)"
            )
        save_artifact(self.program, path)


def _spec(d: Any) -> TensorSpec:
    """A declared ONNX value as a :class:`TensorSpec`, free dimensions ``-1``."""
    from onnx.helper import tensor_dtype_to_np_dtype

    dims = tuple(x if isinstance(x, int) else -1 for x in d.dims or ())
    return TensorSpec(d.name, dims, str(tensor_dtype_to_np_dtype(d.elem_type)))


def _check_artifact_shapes(
    program: Program, input_shapes: Mapping[str, Sequence[int]] | None
) -> None:
    """An artifact is compiled for fixed shapes: ``input_shapes`` may only repeat them."""
    known = {s.name: s.shape for s in program.inputs}
    for name, shape in (input_shapes or {}).items():
        if name not in known:
            raise SessionError(
                f"input_shapes names unknown input {name!r} (the artifact's inputs: "
                f"{', '.join(known)})"
            )
        if tuple(shape) != tuple(known[name]):
            raise SessionError(
                f"input {name!r}: the artifact was compiled for shape {list(known[name])}, "
                f"not {list(shape)}; compile the model again for that shape"
            )


def _apply_best(log: str | os.PathLike | None, target: str) -> Any:
    """The best records of a tuning log for compilation (``compiler.tune``), or None."""
    if log is None:
        return None
    if target != "cpu":
        raise SessionError(f"tuning logs apply to the cpu target's groups, not to {target!r}")
    if not os.path.isfile(log):
        raise SessionError(f"tuning log {os.fspath(log)}: no such file")
    from compiler.tune.records import apply_best

    return apply_best(os.fspath(log))


def _model_name(model: ModelSource, proto: Any) -> str:
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        return path.stem if path.exists() else str(model)
    return proto.graph.name or "model"


def _refuse_vta_options(target: str, options: Mapping[str, Any]) -> None:
    """Refuse, by name, an accelerator option given to another target (or an unknown one)."""
    for key, value in options.items():
        if key not in VTA_OPTIONS:
            raise TypeError(f"InferenceSession() got an unexpected keyword argument {key!r}")
        if value is not None:
            raise SessionError(f"{key} applies to target vta, not to {target!r}")


def _is_vta_artifact(model: ModelSource, target: str | None) -> bool:
    """Whether ``model`` is an artifact of an accelerator network (and no other target was
    asked for: the session then says which target the artifact holds)."""
    if target is not None or not is_artifact_source(model):
        return False
    from runtime.artifact import artifact_kind
    from runtime.errors import ArtifactError

    try:
        return artifact_kind(model if isinstance(model, bytes) else os.fspath(model)) == "vta"
    except ArtifactError:
        return False  # the cpu loader names the fault


def is_artifact_source(model: ModelSource) -> bool:
    if isinstance(model, bytes):
        return is_artifact(model)
    if isinstance(model, (str, os.PathLike)):
        return os.path.isfile(model) and is_artifact(model)
    return False
