"""Tuning tasks: one operator workload on one target, with the search space its schedule
template declares and the way to build any point of that space.

A :class:`Task` is plain data (JSON in the records, pickled to measurement workers). For the
accelerator (``target="vta"``) the operators are the packed int8 ``conv2d`` and ``dense`` of
``compiler.topi.vta``; their knobs are those of :class:`~compiler.topi.vta.Conv2dKnobs` and
:class:`~compiler.topi.vta.DenseKnobs`: tile sizes from the divisors of each axis, the virtual
thread split (conv2d: two or four threads on one tile axis, or two on each) and (conv2d) the
loop order, ``gemm_fold`` (which loops each GEMM instruction folds), ``kernel_step`` (with a
kernel of more than one row: a reduction step covers the whole window or one kernel row) and,
where all the weights fit the wgt buffer, ``weights_resident``. The space rejects points whose tiles overflow a
thread's share of the inp/wgt/acc buffers or the micro-op buffer, thread splits that do not
divide the tile loops or overflow the dependency queues, and a ``gemm_fold`` that folds the
same loops as an earlier choice, with the same rules as the heuristic
(``compiler.topi.vta.heuristic``) where they share one, so every point handed out compiles.

Example:
    >>> t = conv2d_task(8, 8, 16, 16, 3, 1, 1, hw="default")
    >>> t.key
    'vta/default/conv2d/b1_h8_w8_ci16_co16_k3_s1_p1'
    >>> len(t.space()), t.space().num_valid
    (41472, 8747)
    >>> t.knobs(t.default_config())
    Conv2dKnobs(tile_h=8, tile_w=8, tile_ci=1, tile_co=1, tile_b=1, oc_nthread=2, h_nthread=1, loop_order='h_co')
"""  # noqa: E501

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from compiler.errors import CompilerError, ScheduleError
from isa import HwConfig, load_config

from .space import Config, ConfigSpace, Knob

KINDS = ("conv2d", "dense", "matmul", "depthwise")
TARGETS = ("vta", "cpu")
#: How many virtual threads the heuristic plans for when it gives a task's default config.
DEFAULT_VTHREADS = 2
#: The conv2d space's ``(oc_nthread, h_nthread)`` splits; the four-thread splits of one axis
#: come last (the points named before they existed keep their values).
VTHREADS = ((1, 1), (2, 1), (1, 2), (2, 2), (4, 1), (1, 4))


@dataclass(frozen=True)
class Task:
    """One workload to tune: ``kind`` with ``shape`` (named sizes) on ``target`` / ``hw``.

    ``weight`` counts how many times a model runs the workload (a tuned task's gain counts that
    many times).

    ``epilogue``: empty for the template's shift-and-clip layer (``relu``: clip at 0), else the
    ALU step structure of a quantized group's epilogue (:mod:`compiler.tune.quantized`), which
    then compiles through ``compile_qconv2d`` / ``compile_qdense``; ``depthwise``: a quantized
    depthwise conv2d group (``in_c == out_c``, one filter per channel).
    """

    kind: str
    shape: tuple[tuple[str, int], ...]
    hw: str = "default"
    target: str = "vta"
    relu: bool = False
    residual: bool = False
    name: str = ""
    weight: int = field(default=1, compare=False)
    epilogue: str = ""
    depthwise: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise CompilerError(f"task {self.name or '?'}: kind must be one of {KINDS}")
        if self.target not in TARGETS:
            raise CompilerError(f"task {self.name or '?'}: target must be one of {TARGETS}")
        if self.kind in ("matmul", "depthwise") and self.target != "cpu":
            raise CompilerError(f"task {self.name or '?'}: {self.kind} is tuned on the CPU only")
        want = _SHAPE_KEYS[self.kind]
        names = tuple(k for k, _ in self.shape)
        extended = self.kind == "conv2d" and self.target == "vta" and names == want + _CONV_EXTRA
        if names != want and not extended:
            raise CompilerError(f"task {self.name or '?'}: a {self.kind} shape names {want}")
        bad = [k for k, v in self.shape if int(v) != v or v < (0 if k.startswith("pad") else 1)]
        if bad:
            raise CompilerError(f"task {self.name or '?'}: sizes {bad} out of range")
        if self.epilogue or self.depthwise:
            self._check_quantized()

    def _check_quantized(self) -> None:
        from compiler.quantize.requant import reads_residual

        from .quantized import structure_steps

        who = f"task {self.name or '?'}"
        if self.target != "vta":
            raise CompilerError(f"{who}: a quantized group's epilogue is an accelerator's")
        if not self.epilogue:
            raise CompilerError(f"{who}: a depthwise task is a quantized group: give its epilogue")
        if self.relu:
            raise CompilerError(f"{who}: a quantized group's clip is in its epilogue, not relu")
        steps = structure_steps(self.epilogue)
        if not steps:
            raise CompilerError(f"{who}: a quantized epilogue has at least its clip")
        if self.residual != reads_residual(steps):
            raise CompilerError(
                f"{who}: residual={self.residual}, but the epilogue {self.epilogue!r} "
                f"{'does not read' if self.residual else 'reads'} the residual"
            )
        if self.depthwise:
            s = self.sizes
            if self.kind != "conv2d" or s["in_c"] != s["out_c"]:
                raise CompilerError(f"{who}: depthwise needs a conv2d with in_c == out_c")

    # ---- identity ------------------------------------------------------------------------------
    @property
    def sizes(self) -> dict[str, int]:
        return dict(self.shape)

    @property
    def kernel(self) -> tuple[int, int]:
        """A conv2d's kernel ``(rows, columns)``."""
        s = self.sizes
        return s["k"], s.get("kw", s["k"])

    @property
    def strides(self) -> tuple[int, int]:
        """A conv2d's strides ``(along rows, along columns)``."""
        s = self.sizes
        return s["stride"], s.get("stride_w", s["stride"])

    @property
    def pads(self) -> tuple[int, int, int, int]:
        """A conv2d's padding ``(top, left, bottom, right)``."""
        s = self.sizes
        p = s["pad"]
        return p, s.get("pad_l", p), s.get("pad_b", p), s.get("pad_r", p)

    @property
    def key(self) -> str:
        """The workload's identity in records (what is built, not what it is called)."""
        parts = "_".join(f"{_ABBREV[k]}{v}" for k, v in self.shape)
        flags = ("_relu" if self.relu else "") + ("_res" if self.residual else "")
        if self.depthwise:
            flags += "_dw"
        if self.epilogue:
            from .quantized import structure_digest

            # the epilogue's ALU step structure (ops, and what each reads), not its values
            flags += f"_q{structure_digest(self.epilogue)}"
        return f"{self.target}/{self.hw_label}/{self.kind}/{parts}{flags}"

    @property
    def hw_label(self) -> str:
        """The preset's name, or for an inline config its name and a digest of its fields."""
        if not self.hw.startswith("{"):
            return self.hw
        import hashlib

        digest = hashlib.sha1(self.hw.encode()).hexdigest()[:8]
        return f"{self.config_obj.name}#{digest}"

    def label(self) -> str:
        return self.name or self.key

    def to_json(self) -> dict[str, Any]:
        d = {
            "kind": self.kind, "shape": dict(self.shape), "hw": self.hw, "target": self.target,
            "relu": self.relu, "residual": self.residual, "name": self.name, "weight": self.weight,
        }  # fmt: skip
        if self.epilogue:  # the template layer's records keep their form
            d["epilogue"] = self.epilogue
        if self.depthwise:
            d["depthwise"] = True
        return d

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Task:
        try:
            kind = d["kind"]
            keys = _SHAPE_KEYS[kind]
            if kind == "conv2d" and any(k in d["shape"] for k in _CONV_EXTRA):
                keys += _CONV_EXTRA
            shape = tuple((k, int(d["shape"][k])) for k in keys)
            epilogue = d.get("epilogue", "")
            if not isinstance(epilogue, str):
                raise TypeError(f"epilogue {epilogue!r} is not a string")
            return Task(kind, shape, d.get("hw", "default"), d.get("target", "vta"),
                        bool(d.get("relu", False)), bool(d.get("residual", False)),
                        d.get("name", ""), int(d.get("weight", 1)), epilogue,
                        bool(d.get("depthwise", False)))  # fmt: skip
        except (KeyError, TypeError, ValueError) as e:
            raise CompilerError(f"task record {dict(d)!r} is malformed: {e!r}") from None

    @property
    def config_obj(self) -> HwConfig:
        """The hardware config: ``hw`` is a preset name or a config as JSON (:func:`hw_spec`)."""
        return _load_hw(self.hw)

    # ---- the space -----------------------------------------------------------------------------
    def space(self) -> ConfigSpace:
        """The schedule template's knobs with the validity rules (cached per task)."""
        return _space(self)

    def knobs(self, config: Config | int) -> Any:
        """The schedule knobs of a point (``Conv2dKnobs`` / ``DenseKnobs``; on the CPU the
        keyword arguments of the strategy's schedule)."""
        cfg = config if isinstance(config, Config) else self.space().config(config)
        v = cfg.values
        if self.target == "cpu":
            return {**v, "parallel": False}
        if self.kind == "conv2d":
            from compiler.topi.vta import Conv2dKnobs

            oc_n, h_n = v["vthreads"]
            return Conv2dKnobs(v["tile_h"], v["tile_w"], v["tile_ci"], v["tile_co"], v["tile_b"],
                               oc_n, h_n, v["loop_order"],
                               bool(v.get("weights_resident", False)),
                               v.get("gemm_fold", "co_h"),
                               v.get("kernel_step", "window"))  # fmt: skip
        from compiler.topi.vta import DenseKnobs

        return DenseKnobs(v["tile_co"], v["tile_ci"], v["tile_b"], v["oc_nthread"])

    def input_fetch(self, config: Config | int) -> str:
        """The point's input fetch (``compiler.topi.vta.conv2d_strided``): ``"window"``, the
        template's, unless the space has the ``inp_fetch`` knob (1x1 conv2d of stride > 1)."""
        cfg = config if isinstance(config, Config) else self.space().config(config)
        return str(cfg.values.get("inp_fetch", "window"))

    def config_of(self, knobs: Any, fetch: str = "window") -> Config:
        """The point of the space that has these schedule knobs (and input ``fetch`` where the
        space has that knob)."""
        if self.target == "cpu":
            values = {k: v for k, v in dict(knobs).items() if k != "parallel"}
        elif self.kind == "conv2d":
            values = {
                "tile_b": knobs.tile_b, "tile_co": knobs.tile_co, "tile_h": knobs.tile_h,
                "tile_w": knobs.tile_w, "tile_ci": knobs.tile_ci,
                "vthreads": (knobs.oc_nthread, knobs.h_nthread),
                "loop_order": str(getattr(knobs.loop_order, "value", knobs.loop_order)),
                "gemm_fold": str(getattr(knobs, "gemm_fold", "co_h")),
            }  # fmt: skip
            names = {k.name for k in self.space().knobs}
            if "inp_fetch" in names:
                values["inp_fetch"] = fetch
            step = str(getattr(knobs, "kernel_step", "window"))
            if "kernel_step" in names:
                values["kernel_step"] = step
            elif step != "window":
                raise ScheduleError(
                    f"task {self.label()}: kernel_step is not a knob of this space (a 1x1 "
                    "kernel has one row)"
                )
            if "weights_resident" in names:
                values["weights_resident"] = bool(getattr(knobs, "weights_resident", False))
            elif getattr(knobs, "weights_resident", False):
                raise ScheduleError(
                    f"task {self.label()}: weights_resident is not a knob of this space (the "
                    "weights of one channel block row never fit the wgt buffer)"
                )
        else:
            values = {"tile_b": knobs.tile_b, "tile_co": knobs.tile_co,
                      "tile_ci": knobs.tile_ci, "oc_nthread": knobs.oc_nthread}  # fmt: skip
        return self.space().config(self.space().index_of(values))

    def default_config(self, nthreads: int = DEFAULT_VTHREADS) -> Config:
        """The heuristic's choice (what compilation uses without tuning records)."""
        from compiler.topi.vta import conv2d_knobs, dense_knobs

        if self.target == "cpu":
            from .cpu import cpu_default

            return self.config_of(cpu_default(self.kind, self.sizes))
        cfg, p = self.config_obj, self._packed()
        knobs: Any
        if self.epilogue:
            return self.config_of(self._quantized_default(nthreads))
        if self.kind == "conv2d":
            knobs = conv2d_knobs(
                cfg, nb=p["nb"], ocb=p["ocb"], icb=p["icb"], oh=p["oh"], ow=p["ow"],
                k=self.kernel, stride=self.strides, nthreads=nthreads, alu_ops=self._alu_ops(),
                alu_imm_ops=3,  # shr, MAX, MIN; the residual's ADD reads an acc tile
                acc_buffers=2 if self.residual else 1,
            )  # fmt: skip
        else:
            knobs = dense_knobs(cfg, nb=p["nb"], mb=p["mb"], kb=p["kb"], nthreads=min(nthreads, 2),
                                acc_buffers=2 if self.residual else 1)  # fmt: skip
        return self.config_of(knobs)

    def _quantized_default(self, nthreads: int) -> Any:
        """The heuristic's knobs of a quantized group, as ``compile_qconv2d`` /
        ``compile_qdense`` choose them without knobs."""
        from compiler.topi.vta.heuristic import quantized_conv2d_knobs, quantized_dense_knobs

        from .quantized import structure_steps

        cfg, p = self.config_obj, self._packed()
        steps = structure_steps(self.epilogue)
        if self.kind == "conv2d":
            return quantized_conv2d_knobs(
                cfg, nb=p["nb"], ocb=p["ocb"], icb=p["icb"], oh=p["oh"], ow=p["ow"],
                k=self.kernel, stride=self.strides, steps=steps, residual=self.residual,
                depthwise=self.depthwise, nthreads=nthreads,
            )  # fmt: skip
        return quantized_dense_knobs(cfg, nb=p["nb"], mb=p["mb"], kb=p["kb"], steps=steps,
                                     residual=self.residual, nthreads=nthreads)  # fmt: skip

    def _layer_shape(self) -> tuple[Any, Any, Any]:
        """The kernel, stride and padding as a :class:`~compiler.topi.vta.Conv2dLayer` takes
        them: ints for a square task (the layer its records were measured on), else tuples."""
        s = self.sizes
        if "kw" not in s:
            return s["k"], s["stride"], s["pad"]
        return self.kernel, self.strides, self.pads

    def _channel_tiles(self) -> int:
        """Per-channel tiles of a quantized epilogue (one acc entry per channel block each)."""
        if not self.epilogue:
            return 0
        from compiler.topi.vta.heuristic import epilogue_channel_tiles

        from .quantized import structure_steps

        return epilogue_channel_tiles(structure_steps(self.epilogue))

    def _second_tile(self) -> bool:
        """Whether a quantized epilogue uses a second accumulator tile (a residual, or the
        copy a fused hard swish takes for its gate)."""
        if not self.epilogue:
            return False
        from compiler.quantize.requant import second_tile

        from .quantized import structure_steps

        return second_tile(structure_steps(self.epilogue))

    def _alu_ops(self) -> int:
        # the epilogue's accumulator stages (shr, optional add, clip as MAX and MIN)
        return 3 + int(self.residual)

    def _packed(self) -> dict[str, int]:
        """The sizes in blocks of the packed layouts."""
        s = self.sizes
        if self.target == "cpu":
            if self.kind not in ("conv2d", "depthwise"):
                return {}
            oh = (s["h"] + 2 * s["pad"] - s["k"]) // s["stride"] + 1
            ow = (s["w"] + 2 * s["pad"] - s["k"]) // s["stride"] + 1
            return {"oh": oh, "ow": ow}
        cfg = self.config_obj
        nb = -(-s["batch"] // cfg.batch)
        if self.kind == "conv2d":
            (kh, kw), (sh, sw), (pt, pl, pb, pr) = self.kernel, self.strides, self.pads
            oh = (s["h"] + pt + pb - kh) // sh + 1
            ow = (s["w"] + pl + pr - kw) // sw + 1
            if oh < 1 or ow < 1:
                raise ScheduleError(f"task {self.label()}: the kernel is larger than the input")
            # a depthwise kernel reduces over the one input block of its group
            icb = 1 if self.depthwise else -(-s["in_c"] // cfg.block_in)
            return {"nb": nb, "icb": icb, "ocb": -(-s["out_c"] // cfg.block_out), "oh": oh,
                    "ow": ow}  # fmt: skip
        return {"nb": nb, "kb": -(-s["in_features"] // cfg.block_in),
                "mb": -(-s["out_features"] // cfg.block_out)}  # fmt: skip

    @property
    def macs(self) -> int:
        s = self.sizes
        if self.kind == "dense":
            return s["batch"] * s["in_features"] * s["out_features"]
        if self.kind == "matmul":
            return s["m"] * s["k"] * s["n"]
        p = self._packed()
        if self.kind == "depthwise":
            return s["batch"] * p["oh"] * p["ow"] * s["channels"] * s["k"] ** 2
        window = self.kernel[0] * self.kernel[1]
        if self.depthwise:
            return s["batch"] * p["oh"] * p["ow"] * s["out_c"] * window
        return s["batch"] * p["oh"] * p["ow"] * s["in_c"] * s["out_c"] * window

    # ---- building ------------------------------------------------------------------------------
    def build(self, config: Config | int, *, seed: int = 0) -> Any:
        """Compile the point with seeded data: a :class:`~compiler.topi.vta.testing.BuiltLayer`."""
        from compiler.topi.vta import Conv2dLayer, DenseLayer, compile_conv2d, compile_dense

        knobs = self.knobs(config)
        if self.target == "cpu":
            from .cpu import cpu_build

            return cpu_build(self.kind, self.shape, knobs, seed)
        if self.epilogue:
            from .quantized import build_group

            return build_group(self, knobs, seed)
        s = self.sizes
        compiled: Any
        if self.kind == "conv2d":
            layer = Conv2dLayer(self.name or "conv2d", s["h"], s["w"], s["in_c"], s["out_c"],
                                *self._layer_shape(), s["batch"])  # fmt: skip
            fetch = self.input_fetch(config)
            if fetch != "window":
                from compiler.topi.vta.conv2d_strided import compile_conv2d_strided

                compiled = compile_conv2d_strided(
                    layer, self.config_obj, knobs, fetch=fetch, relu=self.relu,
                    residual=self.residual,
                )  # fmt: skip
            else:
                compiled = compile_conv2d(layer, self.config_obj, knobs, relu=self.relu,
                                          residual=self.residual)  # fmt: skip
        else:
            compiled = compile_dense(DenseLayer(s["batch"], s["in_features"], s["out_features"]),
                                     self.config_obj, knobs, relu=self.relu,
                                     residual=self.residual)  # fmt: skip
        return bind_reference(compiled, seed)

    def loop_program(self, config: Config | int) -> Any:
        """The point's schedule lowered to the loop IR (before the target's passes): the
        program the cost model's features describe."""
        from compiler.lower.nest import schedule_to_primfunc
        from compiler.targets.vta import get_vta_target
        from compiler.topi.vta import schedule_conv2d_packed, schedule_dense_packed

        knobs = self.knobs(config)
        if self.target == "cpu":
            from compiler.targets.base import get_target

            from .cpu import cpu_schedule

            sched, args = cpu_schedule(self.kind, self.shape, knobs)
            return schedule_to_primfunc(sched, args, "main", get_target("cpu").resolve_scope)
        if self.epilogue:
            from .quantized import quantized_operator

            args, out = quantized_operator(self)
        else:
            fetch = self.input_fetch(config) if self.kind == "conv2d" else ""
            args, out = _operator(self, fetch)
        cfg = self.config_obj
        if self.kind == "conv2d":
            s = schedule_conv2d_packed(out, knobs, cfg)
        else:
            s = schedule_dense_packed(out, knobs, cfg)
        return schedule_to_primfunc(s, args, "main", get_vta_target(cfg).resolve_scope)


def bind_reference(compiled: Any, seed: int = 0) -> Any:
    """``compiled`` (a ``CompiledLayer``) with seeded data written into a copy of its program
    and its expected output: ``compiler.topi.vta.testing.build``, with the data and the numpy
    reference shared by every point of one workload (the candidates of a task differ only in
    their schedule, and the reference convolution costs as much as building a point).

    Example:
        >>> from compiler.topi.vta import DenseLayer, compile_dense
        >>> c = compile_dense(DenseLayer(1, 16, 8), "default")
        >>> a, b = bind_reference(c, seed=2), bind_reference(c, seed=2)
        >>> a.expected is b.expected, a.program is b.program
        (True, False)
    """
    from compiler.topi.vta.testing import BuiltLayer, bind, expected, layer_data

    # everything ``layer_data`` and ``expected`` read: the layer, the config, the epilogue's
    # shift, relu and residual, and the seed (nothing of the schedule or the program)
    key = (compiled.layer, compiled.config, compiled.shift, compiled.relu, compiled.residual,
           seed)  # fmt: skip
    hit = _REFERENCES.get(key)
    if hit is None:
        data = layer_data(compiled.layer, compiled.config, seed, residual=compiled.residual)
        want = expected(compiled, data)
        # every point of the workload shares these arrays: none may change them
        for arr in (*data.natural.values(), *data.packed.values(), want):
            arr.setflags(write=False)
        while len(_REFERENCES) >= _MAX_REFERENCES:
            del _REFERENCES[next(iter(_REFERENCES))]
        hit = _REFERENCES[key] = (data, want)
    data, want = hit
    return BuiltLayer(compiled, bind(compiled, data), data, want, dict(data.packed))


#: Seeded data and numpy reference outputs of the last few workloads built in this process.
_REFERENCES: dict[tuple[Any, ...], tuple[Any, Any]] = {}
_MAX_REFERENCES = 4


@cache
def _load_hw(hw: str) -> HwConfig:
    if hw.startswith("{"):
        try:
            spec = json.loads(hw)
        except ValueError as e:
            raise CompilerError(f"task hardware config {hw[:60]!r}...: not JSON ({e})") from None
        return load_config(spec)
    return load_config(hw)


def hw_config(hw: str) -> HwConfig:
    """The config a task's ``hw`` names: a preset's name or a config as JSON (:func:`hw_spec`).

    Example:
        >>> hw_config("vta-1x16x16").block_in
        16
    """
    return _load_hw(hw)


def hw_spec(cfg: HwConfig) -> str:
    """A config as the ``hw`` of a task: its preset name when it is one, else its JSON.

    Example:
        >>> import isa
        >>> hw_spec(isa.load_config("vta-1x16x16"))
        'vta-1x16x16'
        >>> hw_spec(isa.load_config("default").replace(name="big", bus_bytes=16))[:9]
        '{"acc_bit'
    """
    from isa.errors import ConfigError

    try:
        if load_config(cfg.name) == cfg:
            return cfg.name
    except ConfigError:  # not a preset's name
        pass
    return cfg.to_json()


_SHAPE_KEYS = {
    "conv2d": ("batch", "h", "w", "in_c", "out_c", "k", "stride", "pad"),
    "dense": ("batch", "in_features", "out_features"),
    "matmul": ("m", "k", "n"),
    "depthwise": ("batch", "h", "w", "channels", "k", "stride", "pad"),
}
#: What an accelerator conv2d task's shape adds when its kernel is not square, its strides
#: differ or its padding differs between sides: ``k``, ``stride`` and ``pad`` are then the
#: kernel's rows, the stride along rows and the top padding (a square task keeps the key and
#: the records it always had).
_CONV_EXTRA = ("kw", "stride_w", "pad_l", "pad_b", "pad_r")
_ABBREV = {"batch": "b", "h": "h", "w": "w", "in_c": "ci", "out_c": "co", "k": "k",
           "stride": "s", "pad": "p", "in_features": "i", "out_features": "o", "m": "m",
           "n": "n", "channels": "c", "kw": "kw", "stride_w": "sw", "pad_l": "pl",
           "pad_b": "pb", "pad_r": "pr"}  # fmt: skip


def conv2d_task(
    h: int, w: int, in_c: int, out_c: int, k: int | tuple[int, int],
    stride: int | tuple[int, int] = 1, pad: int | tuple[int, int, int, int] = 0, *,
    batch: int = 1, hw: str = "default", relu: bool = False, residual: bool = False,
    name: str = "", weight: int = 1, epilogue: str = "", depthwise: bool = False,
) -> Task:  # fmt: skip
    """A conv2d task in the argument order of :class:`~compiler.topi.vta.Conv2dLayer`
    (``epilogue``, ``depthwise``: a quantized group's, :class:`Task`): ``k`` one size or
    ``(rows, columns)``, ``stride`` one or ``(rows, columns)``, ``pad`` one or ``(top, left,
    bottom, right)``.

    Example:
        >>> conv2d_task(14, 14, 256, 256, 3, 1, 1, hw="vta-1x16x16", name="C9").label()
        'C9'
        >>> conv2d_task(8, 32, 16, 16, (3, 1), (2, 1), (1, 0, 1, 0)).key
        'vta/default/conv2d/b1_h8_w32_ci16_co16_k3_s2_p1_kw1_sw1_pl0_pb1_pr0'
    """
    from compiler.topi.utils import padding4, pair

    (kh, kw), (sh, sw) = pair(k, "conv2d task kernel"), pair(stride, "conv2d task stride")
    pt, pl, pb, pr = padding4(pad, "conv2d task padding")
    shape: tuple[tuple[str, int], ...] = (
        ("batch", batch), ("h", h), ("w", w), ("in_c", in_c), ("out_c", out_c), ("k", kh),
        ("stride", sh), ("pad", pt),
    )  # fmt: skip
    if kh != kw or sh != sw or len({pt, pl, pb, pr}) != 1:
        shape += (("kw", kw), ("stride_w", sw), ("pad_l", pl), ("pad_b", pb), ("pad_r", pr))
    return Task("conv2d", shape, hw, "vta", relu, residual, name, weight, epilogue, depthwise)


def dense_task(
    batch: int, in_features: int, out_features: int, *, hw: str = "default", relu: bool = False,
    residual: bool = False, name: str = "", weight: int = 1, epilogue: str = "",
) -> Task:  # fmt: skip
    """A dense task ``(batch, in) x (out, in)^T`` (``epilogue``: a quantized group's).

    Example:
        >>> dense_task(1, 512, 1000).key
        'vta/default/dense/b1_i512_o1000'
    """
    shape = (("batch", batch), ("in_features", in_features), ("out_features", out_features))
    return Task("dense", shape, hw, "vta", relu, residual, name, weight, epilogue)


def cpu_task(kind: str, *, name: str = "", weight: int = 1, **sizes: int) -> Task:
    """A CPU task (one thread, float32): ``conv2d`` with the sizes of :func:`conv2d_task`
    (``batch``, ``stride`` and ``pad`` default to 1, 1, 0), ``depthwise`` (the same with
    ``channels`` for ``in_c``/``out_c``), ``dense`` (``batch``, ``in_features``,
    ``out_features``) or ``matmul`` (``m``, ``k``, ``n``).

    Example:
        >>> cpu_task("matmul", m=1024, k=1024, n=1024).key
        'cpu/cpu/matmul/m1024_k1024_n1024'
    """
    conv = {"batch": 1, "stride": 1, "pad": 0}
    defaults = {"conv2d": conv, "depthwise": conv, "dense": {"batch": 1}}
    full = {**defaults.get(kind, {}), **sizes}
    if kind not in _SHAPE_KEYS:
        raise CompilerError(f"cpu task: kind must be one of {KINDS}, got {kind!r}")
    missing = [k for k in _SHAPE_KEYS[kind] if k not in full]
    extra = sorted(set(full) - set(_SHAPE_KEYS[kind]))
    if missing or extra:
        raise CompilerError(f"cpu task {kind}: missing sizes {missing}, unknown sizes {extra}")
    shape = tuple((k, int(full[k])) for k in _SHAPE_KEYS[kind])
    return Task(kind, shape, "cpu", "cpu", False, False, name, weight)


def tasks_from_layers(layers: Iterable[Any], hw: str = "default", relu: bool = True) -> list[Task]:
    """One task per unique workload among conv2d layers (``Conv2dLayer`` objects or dicts with
    ``h, w, in_c, out_c, k, stride, pad``), each weighted by how many layers share it.

    Example:
        >>> from compiler.topi.vta import RESNET18_LAYERS
        >>> ts = tasks_from_layers(RESNET18_LAYERS, "vta-1x16x16")
        >>> len(ts), ts[0].name, ts[0].weight
        (12, 'C1', 1)
    """
    found: dict[str, Task] = {}
    for layer in layers:
        d = layer if isinstance(layer, Mapping) else layer.__dict__
        t = conv2d_task(d["h"], d["w"], d["in_c"], d["out_c"], d["k"], d.get("stride", 1),
                        d.get("pad", 0), batch=d.get("batch", 1), hw=hw, relu=relu,
                        name=d.get("name", ""))  # fmt: skip
        if t.key in found:
            old = found[t.key]
            found[t.key] = replace(old, weight=old.weight + 1)
        else:
            found[t.key] = t
    return list(found.values())


def tasks_from_workload_file(path: str | Path, hw: str = "default") -> list[Task]:
    """The tasks of a workload list (``{"layers": [{name, h, w, in_c, out_c, k, stride, pad}]}``,
    the form of ``bench/workloads/resnet18_conv2d.json``)."""
    try:
        data = json.loads(Path(path).read_text())
        layers = data["layers"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CompilerError(f"workload file {path}: {e}") from None
    return tasks_from_layers(layers, hw)


def resnet18_tasks(hw: str = "vta-1x16x16") -> list[Task]:
    """ResNet-18's conv2d layers C1..C12 as tasks (with relu, as in the network)."""
    from compiler.topi.vta import RESNET18_LAYERS

    return tasks_from_layers(RESNET18_LAYERS, hw)


# ---- spaces --------------------------------------------------------------------------------------
def _divisors(n: int) -> tuple[int, ...]:
    return tuple(d for d in range(1, n + 1) if n % d == 0)


@cache
def _space(task: Task) -> ConfigSpace:
    if task.target == "cpu":
        from .cpu import cpu_space

        return cpu_space(task.kind, task.sizes)
    cfg, p = task.config_obj, task._packed()
    acc_buffers = 2 if task.residual or task._second_tile() else 1
    # a quantized epilogue's per-channel tiles: one acc entry per channel block of a tile each
    channel_tiles = task._channel_tiles()
    depthwise = task.depthwise
    uop_budget = cfg.uop_depth * 3 // 4
    knobs: tuple[Knob, ...]
    if task.kind == "conv2d":
        from compiler.topi.vta.conv2d import GEMM_FOLDS, KERNEL_STEPS, max_vthreads
        from compiler.topi.vta.conv2d_strided import fetch_choices, fetched_window

        # k and stride: the kernel's rows and the stride along them; kw and sw: the columns'
        (k, kw), (stride, sw) = task.kernel, task.strides
        # a quantized group's convolution loads its input window (compile_qconv2d); the
        # strided fetches take a square 1x1 kernel of one stride without padding
        square = "kw" not in task.sizes
        fetches = (
            fetch_choices(k, stride, task.sizes["pad"]) if square and not task.epilogue
            else ("window",)
        )  # fmt: skip
        max_threads = max_vthreads(cfg)
        knobs = (
            Knob("tile_b", _divisors(p["nb"])),
            Knob("tile_co", _divisors(p["ocb"])),
            Knob("tile_h", _divisors(p["oh"])),
            Knob("tile_w", _divisors(p["ow"])),
            Knob("tile_ci", _divisors(p["icb"])),
            Knob("vthreads", VTHREADS),
            Knob("loop_order", ("h_co", "co_h")),
        )
        if len(fetches) > 1:
            # 1x1 of stride > 1: load the step's whole input window or only the rows / pixels
            # the convolution reads (the spaces of other layers keep their knobs)
            knobs += (Knob("inp_fetch", fetches),)
        if p["ocb"] * p["icb"] * k * kw <= cfg.wgt_depth:
            # all the weights fit the wgt buffer: each thread may load its channel tile's
            # weights once (the spaces of layers whose weights never fit keep their knobs)
            knobs += (Knob("weights_resident", (False, True), default=False),)
        # which two output axes a step's GEMM instruction folds (the third is unrolled into
        # micro-ops); co_h, the template's, is the default that points named before it keep
        knobs += (Knob("gemm_fold", GEMM_FOLDS, default=GEMM_FOLDS[0]),)
        if k > 1:
            # a reduction step covers the kernel's whole window (the template's) or one of its
            # rows: smaller input and weight tiles per step, kh times the steps and DMAs
            knobs += (Knob("kernel_step", KERNEL_STEPS, default=KERNEL_STEPS[0]),)

        def conv_rule(v: Mapping[str, Any]) -> str | None:
            oc_n, h_n = v["vthreads"]
            n = oc_n * h_n
            tb, tco, th, tw, tci = v["tile_b"], v["tile_co"], v["tile_h"], v["tile_w"], v["tile_ci"]
            if n > max_threads:
                return f"{n} virtual threads overflow the dependency queues (at most {max_threads})"
            if (p["ocb"] // tco) % oc_n:
                return f"{p['ocb'] // tco} channel tiles do not split between {oc_n} threads"
            if (p["oh"] // th) % h_n:
                return f"{p['oh'] // th} row tiles do not split between {h_n} threads"
            if acc_buffers * tb * tco * th * tw + channel_tiles * tco > cfg.acc_depth // n:
                return f"the accumulator tile overflows a thread's {cfg.acc_depth // n} rows"
            # the kernel rows a step covers (kernel_step)
            ky = 1 if v.get("kernel_step", "window") == "row" else k
            if tco * tci * ky * kw > cfg.wgt_depth // n:
                return f"the weight tile overflows a thread's {cfg.wgt_depth // n} rows"
            if v.get("weights_resident", False):
                reason = _resident_rule(v, p, k * kw, cfg.wgt_depth // n)
                if reason is not None:
                    return reason
            if square:
                in_h, in_w = fetched_window(v.get("inp_fetch", "window"), th, tw, k, stride)
            else:
                in_h, in_w = (th - 1) * stride + k, (tw - 1) * sw + kw
            in_h -= k - ky  # one kernel row's window: (th - 1) * stride + 1 rows
            # a depthwise step loads one input block per output block of the tile
            if tb * (tco if depthwise else tci) * in_h * in_w > cfg.inp_depth // n:
                return f"the input window overflows a thread's {cfg.inp_depth // n} rows"
            # the GEMM kernel unrolls every loop the instruction does not fold, the reset
            # kernel the output axes among them (with co_h: tci*k*k*tw and tw)
            fold = v.get("gemm_fold", "co_h")
            ext = {"co": tco, "h": th, "w": tw, "ci": tci}
            gemm_uops = ky * kw * math.prod(e for a, e in ext.items() if a not in fold.split("_"))
            reset_uops = math.prod(e for a, e in ext.items() if a not in (*fold.split("_"), "ci"))
            if n * (gemm_uops + reset_uops + 8) > uop_budget:
                return f"the micro-op kernels overflow the uop buffer ({uop_budget} usable)"
            if fold != "co_h":
                return _fold_rule(v, kw, ky)
            return None

        return ConfigSpace(knobs, conv_rule)
    knobs = (
        Knob("tile_b", _divisors(p["nb"])),
        Knob("tile_co", _divisors(p["mb"])),
        Knob("tile_ci", _divisors(p["kb"])),
        Knob("oc_nthread", (1, 2)),
    )

    if task.epilogue:  # the quantized dense group's tiles and residual take acc tiles
        acc_buffers = 1 + channel_tiles + int(task.residual or task._second_tile())

    def dense_rule(v: Mapping[str, Any]) -> str | None:
        n, tb, tco, tci = v["oc_nthread"], v["tile_b"], v["tile_co"], v["tile_ci"]
        if (p["mb"] // tco) % n:
            return f"{p['mb'] // tco} output tiles do not split between {n} threads"
        if acc_buffers * tb * tco > cfg.acc_depth // n:
            return f"the accumulator tile overflows a thread's {cfg.acc_depth // n} rows"
        if tb * tci > cfg.inp_depth // n:
            return f"the input tile overflows a thread's {cfg.inp_depth // n} rows"
        if tco * tci > cfg.wgt_depth // n:
            return f"the weight tile overflows a thread's {cfg.wgt_depth // n} rows"
        if n * (tci + 8) > uop_budget:
            return f"the micro-op kernels overflow the uop buffer ({uop_budget} usable)"
        return None

    return ConfigSpace(knobs, dense_rule)


def _resident_rule(
    v: Mapping[str, Any], p: Mapping[str, int], window: int, rows: int
) -> str | None:
    """Why a conv2d point cannot keep its weights resident (``Conv2dKnobs.weights_resident``),
    or ``None``; ``window`` is the kernel's taps, ``rows`` a thread's share of the wgt
    buffer."""
    oc_n, _ = v["vthreads"]
    if v["loop_order"] != "co_h":
        return "weights_resident needs loop_order co_h"
    if v["tile_b"] != p["nb"] or v["tile_co"] * oc_n != p["ocb"]:
        return "weights_resident needs one channel tile and one batch tile per thread"
    if v["tile_co"] * p["icb"] * window > rows:
        return f"the resident weights overflow a thread's {rows} rows"
    return None


def _fold_rule(v: Mapping[str, Any], kw: int, ky: int) -> str | None:
    """Why a conv2d point's ``gemm_fold`` is not a choice of its own, or ``None``: the GEMM
    instruction folds the first two loops of extent > 1 (``compiler.topi.vta.conv2d.gemm_loops``),
    so where an axis has one block or pixel per tile two choices can fold the same loops (the
    same stream up to the order of the instruction's two loops); the first choice keeps it."""
    from compiler.topi.vta.conv2d import GEMM_FOLDS, gemm_loops

    ext = {"b": v["tile_b"], "co": v["tile_co"], "h": v["tile_h"], "w": v["tile_w"],
           "ci": v["tile_ci"], "ky": ky, "kx": kw}  # fmt: skip
    fold = v["gemm_fold"]
    folded = set(gemm_loops(fold, ext)[:2])
    for other in GEMM_FOLDS[: GEMM_FOLDS.index(fold)]:
        if set(gemm_loops(other, ext)[:2]) == folded:
            loops = ", ".join(a for a in gemm_loops(fold, ext)[:2]) or "none"
            return (
                f"gemm_fold {fold} folds the same loops ({loops}) as gemm_fold {other} with "
                "these tiles"
            )
    return None


@cache
def _operator(task: Task, fetch: str = "window") -> tuple[list[Any], Any]:
    """The task's tensor expressions (placeholders and output) for an input ``fetch``, built
    once per process."""
    from compiler import te
    from compiler.topi.vta import dense_packed
    from compiler.topi.vta.conv2d import conv2d_shapes
    from compiler.topi.vta.conv2d_strided import conv2d_packed_strided

    cfg, s, p = task.config_obj, task.sizes, task._packed()
    if task.kind == "conv2d":
        dshape, kshape = conv2d_shapes(cfg, s["batch"], s["in_c"], s["out_c"], s["h"], s["w"],
                                       task.kernel)  # fmt: skip
        data = te.placeholder(dshape, "int8", name="data")
        kernel = te.placeholder(kshape, "int8", name="kernel")
        oshape: tuple[int, ...] = (dshape[0], kshape[0], p["oh"], p["ow"], cfg.batch,
                                   cfg.block_out)  # fmt: skip
        res = te.placeholder(oshape, "int8", name="residual") if task.residual else None
        if fetch == "window":
            from compiler.topi.vta import conv2d_packed

            out = conv2d_packed(data, kernel, task.strides, task.pads, shift=8, relu=task.relu,
                                residual=res)  # fmt: skip
        else:
            out = conv2d_packed_strided(data, kernel, s["stride"], fetch, shift=8,
                                        relu=task.relu, residual=res)  # fmt: skip
        return [data, kernel] + ([res] if res is not None else []) + [out], out
    data = te.placeholder((p["nb"], p["kb"], cfg.batch, cfg.block_in), "int8", name="data")
    weight = te.placeholder((p["mb"], p["kb"], cfg.block_out, cfg.block_in), "int8",
                            name="weight")  # fmt: skip
    oshape = (p["nb"], p["mb"], cfg.batch, cfg.block_out)
    res = te.placeholder(oshape, "int8", name="residual") if task.residual else None
    out = dense_packed(data, weight, shift=8, relu=task.relu, residual=res)
    return [data, weight] + ([res] if res is not None else []) + [out], out


__all__ = [
    "DEFAULT_VTHREADS",
    "KINDS",
    "Task",
    "bind_reference",
    "conv2d_task",
    "cpu_task",
    "dense_task",
    "hw_config",
    "hw_spec",
    "resnet18_tasks",
    "tasks_from_layers",
    "tasks_from_workload_file",
]
