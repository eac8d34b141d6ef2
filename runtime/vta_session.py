"""The ``vta`` target of :class:`runtime.session.InferenceSession`: a whole model quantized to
int8, partitioned, and compiled once into a :class:`~compiler.model.program.Program` with
accelerator groups (:mod:`runtime.vta_plan`: accelerator programs laid out in one DRAM image,
host kernels compiled for the CPU), or loaded
from an artifact (:mod:`runtime.vta_artifact`) without quantizing or compiling anything.

``InferenceSession(model, target="vta", config=..., device="sim"|"rtl", calibration=...,
calibrator="percentile"|"minmax"|"kl"|"mse", requant="multiplier"|"shift"|"vta",
sensitivity=X|"off"|"auto")``
has the ``run`` / ``get_inputs`` / ``get_outputs`` / ``profile`` of the cpu and gpu targets;
the profile has one record per step: ``vta`` (cycles, utilization, DRAM bytes, limiter),
``cpu`` (a host group's wall time) and ``copy`` (the host packing a group's inputs into the
DRAM image and unpacking its output). :attr:`VtaInferenceSession.last_run` keeps the last
run's :class:`~runtime.vta_target.NetworkRun` (the per-layer table, rooflines, traces).

``device="rtl"`` (``simulator="icarus"|"verilator"``, Icarus by default) runs every
accelerator group on the RTL and on the simulator (:mod:`runtime.vta_rtl`); the session's one
testbench build serves every run, and a run where the two differ raises, naming the group.

``calibration``: a float array (a single-input model: a multiple of the batch along axis 0),
a mapping of input name to such arrays (every input, the same number of batches), or None:
seeded standard normal data, which gives scales unrelated to real inputs (calibrate on real
data for real accuracy).

Example:
    >>> import numpy as np
    >>> sess = InferenceSession("digits", target="vta")                 # doctest: +SKIP
    >>> x = np.zeros((1, 1, 28, 28), np.float32)
    >>> (logits,) = sess.run(None, {"data": x})                         # doctest: +SKIP
    >>> [g.device for g in sess.profile().groups][:3]                   # doctest: +SKIP
    ['cpu', 'vta', 'copy']
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from compiler.model.calibration import calibration_feeds
from compiler.model.program import (
    AccelKernel,
    AccelModule,
    InPlaceCopy,
    MemoryStats,
    Program,
    TensorSpec,
)
from compiler.model.vta_program import plan_network, with_fields
from runtime.errors import SessionError
from runtime.profile import GroupRecord, Profile
from runtime.session import InferenceSession, ModelSource, check_feeds, load_onnx
from runtime.vta_plan import VtaExecutor

#: Devices the accelerator groups run on.
DEVICES = ("sim", "rtl")


def compile_plan(
    model: ModelSource,
    config: Any = "default",
    *,
    calibration: Any = None,
    requant: str | None = None,
    image_size: int | None = None,
    batch: int | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    sensitivity: str | float | None = None,
    calibrator: str | None = None,
    jobs: int = 1,
    cache: bool = True,
    tuning: Any = None,
    progress: bool | None = False,
) -> Program:
    """Import ``model`` (free input dimensions from ``input_shapes``), quantize it (calibrated
    on ``calibration`` with ``calibrator``, ``percentile`` when None, requantized by
    ``requant``: ``multiplier`` when None; a node whose own
    int8 error exceeds ``sensitivity`` kept fp32, docs/quantization.md), partition it,
    compile every group (with ``tuning``'s knobs, a :class:`compiler.model.tuning.NetworkTuning`,
    where it has them; ``jobs`` processes, through the compile cache unless ``cache`` is False)
    and lay the network out: the program a session runs (:mod:`runtime.vta_plan`)."""
    from compiler.frontend.onnx_import import from_onnx
    from runtime.vta_target import compile_network

    t0 = time.perf_counter()
    proto = load_onnx(model, image_size=image_size, batch=batch)
    name = _name(model, proto)
    graph = from_onnx(proto, name=name, input_shapes=input_shapes)
    specs = [TensorSpec(v.name, tuple(v.type.shape), str(v.type.dtype)) for v in graph.inputs]
    net = compile_network(graph, config, calibration=calibration_feeds(specs, calibration),
                          calibrator=calibrator or "percentile",
                          requant=requant or "multiplier", sensitivity=sensitivity,
                          jobs=jobs, cache=cache,
                          tuning=tuning, progress=progress)  # fmt: skip
    # the model's own output names, as onnxruntime and the cpu target give them
    names = tuple(o.name for o in proto.graph.output)
    return with_fields(plan_network(net, names), name=name,
                     compile_seconds=time.perf_counter() - t0)  # fmt: skip


def _name(model: ModelSource, proto: Any) -> str:
    if isinstance(model, (str, os.PathLike)):
        from pathlib import Path

        path = Path(model)
        return path.stem if path.exists() else str(model)
    return proto.graph.name or "model"


class VtaInferenceSession(InferenceSession):
    """An :class:`InferenceSession` whose model runs on the accelerator (module docstring).

    ``InferenceSession(..., target="vta")`` and ``InferenceSession(artifact)`` of a vta
    artifact construct one.
    """

    def __init__(
        self,
        model: ModelSource,
        target: str | None = "vta",
        *,
        config: Any = None,
        device: str | None = None,
        simulator: str | None = None,
        calibration: Any = None,
        calibrator: str | None = None,
        requant: str | None = None,
        sensitivity: str | float | None = None,
        image_size: int | None = None,
        batch: int | None = None,
        num_threads: int | None = None,
        progress: bool | None = None,
        tuning_log: str | os.PathLike | None = None,
        input_shapes: Mapping[str, Sequence[int]] | None = None,
        jobs: int = 1,
        cache: bool = True,
        **others: Any,
    ) -> None:
        from runtime.session import is_artifact_source

        if target not in (None, "vta"):
            raise SessionError(f"the artifact holds an accelerator network: target vta, not "
                               f"{target!r}")  # fmt: skip
        for key, v in others.items():
            if v is not None:
                raise SessionError(f"{key} does not apply to target vta")
        if num_threads is not None:
            raise SessionError("num_threads applies to the cpu and gpu targets, not to vta")
        if tuning_log is not None and is_artifact_source(model):
            raise SessionError(
                "a tuning log applies when a model is compiled, not to a compiled artifact "
                "(it keeps the knobs it was compiled with)"
            )
        if calibrator is not None:
            from compiler.quantize import CALIBRATORS

            if calibrator not in CALIBRATORS:
                raise SessionError(f"calibrator {calibrator!r}: one of {', '.join(CALIBRATORS)}")
        self.device = device or "sim"
        if self.device not in DEVICES:
            raise SessionError(f"device {self.device!r}: one of {', '.join(DEVICES)}")
        self.rtl: Any = None
        if simulator is not None or self.device == "rtl":
            from runtime.vta_target import rtl_device

            # one RTL device per session: its testbench build is reused by every run
            self.rtl = rtl_device(self.device, simulator, False)
        t0 = time.perf_counter()
        if is_artifact_source(model):
            from runtime.vta_artifact import load_vta_artifact

            if image_size is not None or batch is not None:
                raise SessionError("image_size and batch apply to zoo models only; an artifact "
                                   "has fixed input shapes")  # fmt: skip
            for key, given in (("calibration", calibration), ("calibrator", calibrator),
                               ("requant", requant), ("sensitivity", sensitivity)):  # fmt: skip
                if given is not None:
                    raise SessionError(f"{key} applies when a model is compiled, not to a "
                                       "compiled artifact")  # fmt: skip
            plan = load_vta_artifact(model if isinstance(model, bytes) else os.fspath(model))
            for spec in plan.inputs:
                given = (input_shapes or {}).get(spec.name)
                if given is not None and tuple(given) != tuple(spec.shape):
                    raise SessionError(
                        f"input_shapes: input {spec.name!r} is {tuple(given)}, but the artifact "
                        f"was compiled for {tuple(spec.shape)}"
                    )
            unknown = sorted(set(input_shapes or {}) - {spec.name for spec in plan.inputs})
            if unknown:
                raise SessionError(f"input_shapes names unknown inputs {unknown}")
            if config is not None:
                wanted = config if isinstance(config, str) else getattr(config, "name", config)
                have = plan.accel.config.name if plan.accel is not None else "?"
                if wanted != have:
                    raise SessionError(f"config {wanted!r}: the artifact was compiled for "
                                       f"{have!r}")  # fmt: skip
        tuning = None
        if not is_artifact_source(model):
            if tuning_log is not None:
                from compiler.model.tuning import load_network_tuning

                tuning = load_network_tuning(tuning_log, config or "default")
            plan = compile_plan(model, config or "default", calibration=calibration,
                                calibrator=calibrator, requant=requant,
                                sensitivity=sensitivity,
                                image_size=image_size, batch=batch,
                                input_shapes=input_shapes, jobs=jobs,
                                cache=cache, tuning=tuning, progress=progress)  # fmt: skip
        #: the compiled model (a :class:`~compiler.model.program.Program` with accelerator
        #: groups) and its executor
        self.plan = plan
        self.executor = VtaExecutor(plan)
        self.graph = None
        #: the tuning log's records the groups compiled with (``report()``: which groups were
        #: tuned, which fell back to the heuristic and why), or None
        self.tuning = tuning
        #: the last run's per-layer records (:class:`runtime.vta_target.NetworkRun`)
        self.last_run: Any = None
        self.compile_seconds = time.perf_counter() - t0
        self._profile: Profile | None = None
        self._lock = threading.Lock()

    @property
    def config(self) -> Any:
        """The accelerator config (an ``isa.HwConfig``)."""
        return self.accel.config

    @property
    def accel(self) -> AccelModule:
        """The program's accelerator part (config, DRAM image, what each kernel runs)."""
        assert self.plan.accel is not None
        return self.plan.accel

    @property
    def program(self) -> Program:
        """The compiled model: the program format of every target, with accelerator groups."""
        return self.plan

    def get_inputs(self) -> list[TensorSpec]:
        return list(self.plan.inputs)

    def get_outputs(self) -> list[TensorSpec]:
        return list(self.plan.outputs)

    @property
    def memory(self) -> MemoryStats:
        """The host arena: peak bytes against one buffer per value the host keeps between
        steps (the accelerator's activations lie in the DRAM image:
        ``plan.accel.activation_bytes``)."""
        return self.plan.memory

    def run(self, output_names: Sequence[str] | None, feeds: Mapping[str, Any]) -> list[np.ndarray]:
        """Run the network on ``feeds``; return the outputs named (all when ``None``)."""
        known = [s.name for s in self.plan.outputs]
        names = known if output_names is None else list(output_names)
        for name in names:
            if name not in known:
                raise SessionError(
                    f"unknown output {name!r} (the model's outputs: {', '.join(known)})"
                )
        checked = check_feeds(self.plan.inputs, feeds)
        with self._lock:
            result = self.executor.run(checked, device=self.device, rtl=self.rtl)
            self.last_run = result
            self._profile = network_profile(self.plan, result)
        if not result.rtl_agrees:
            from runtime.vta_rtl import disagreement

            raise SessionError(str(disagreement(result.rtl_checks)))
        outs = dict(zip(known, result.outputs, strict=True))
        return [outs[n] for n in names]


def network_profile(program: Program, result: Any) -> Profile:
    """The :class:`Profile` of one run of ``program``: one record per kernel (a host kernel's
    nodes together), and a ``copy`` record after each accelerator group whose inputs the host
    packed or whose output the host read back."""
    assert program.accel is not None
    records: list[GroupRecord] = []
    layers = iter(result.layers)
    for kernel, step in zip(program.kernels, program.accel.steps, strict=True):
        if isinstance(step, InPlaceCopy):  # nothing ran: no time, no record of its own
            next(layers)
            continue
        if isinstance(step, AccelKernel):
            r = next(layers)
            records.append(GroupRecord(
                r.name, tuple(r.ops.split("+")), "vta", cycles=r.cycles,
                utilization=r.utilization, dram_bytes=r.dram_bytes, limiter=r.limiter,
                device="vta",
            ))  # fmt: skip
            if kernel.name in result.copy_seconds:
                records.append(GroupRecord(f"{kernel.name}:copy", ("copy",), "vta",
                                           result.copy_seconds[kernel.name] * 1e6,
                                           device="copy"))  # fmt: skip
            continue
        rows = [next(layers) for _ in step.nodes]
        seconds = sum(r.host_seconds for r in rows)
        records.append(GroupRecord(kernel.name, tuple(n.op for n in step.nodes), "vta",
                                   seconds * 1e6, device="cpu"))  # fmt: skip
    return Profile(tuple(records))


__all__ = ["VtaInferenceSession", "compile_plan", "network_profile"]
