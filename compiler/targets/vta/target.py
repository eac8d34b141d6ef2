"""The accelerator target: scopes and the GEMM intrinsic from the config, the pass pipeline,
and code generation to a program file.

The pipeline, read top to bottom (target passes marked *):

====================== ==============================================================
check_thread_bindings * refuse GPU thread bindings (the accelerator has none)
vta_tensorize *        match tensorize regions against the GEMM intrinsic (micro-op calls)
simplify
alu_in_place *         elementwise accumulator stages write into their input's buffer
flatten_buffers
simplify_flat
inject_dma *           ``dma_copy`` nests -> 2-D loads/stores with padding
inject_alu *           ``alu`` nests -> ALU micro-op nests
simplify_dma
coproc_scopes *        which module runs each block (load / compute / store)
reset_at_first_step *  a reduction's reset joins its first step's compute block (peeled)
coproc_sync *          push/pop tokens per thread (VTA's CoProcInstDepDetector)
expand_virtual_threads * interleave cthread copies with private buffers
fold_uop_loops *       micro-op kernels, up to two loops folded into the instruction
check_sram *           every SRAM allocation fits its buffer
unroll_loops ... remove_no_op
====================== ==============================================================

Example:
    >>> t = get_vta_target("default")
    >>> t.name, [s.name for s in t.scopes][1:]
    ('vta', ['local.inp_buffer', 'local.wgt_buffer', 'local.acc_buffer'])
    >>> t.BLOCK_OUT, t.acc_scope is t.sram.acc, t.dma_copy
    (4, True, 'dma_copy')
    >>> t.pipeline().names()[:2]
    ['check_thread_bindings', 'vta_tensorize']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.ir.buffer import GLOBAL, Scope
from compiler.ir.pragma import ALU, DMA_COPY, PragmaKey
from compiler.ir.stmt import PrimFunc
from compiler.passes.pipeline import Pass, Pipeline
from compiler.passes.simplify import simplify_func
from compiler.targets.base import Target, get_target
from isa import HwConfig, Program, load_config

from .codegen import generate_program, plan_sram
from .intrin import gemm_intrinsic, make_scopes
from .passes.coproc import annotate_coproc_scopes, inject_coproc_sync
from .passes.first_step import reset_at_first_step
from .passes.fold_uop import make_fold_uop_loops
from .passes.inject_alu import make_inject_alu
from .passes.inject_dma import make_inject_dma
from .passes.inplace import make_alu_in_place
from .passes.tensorize import make_tensorize_pass
from .passes.virtual_thread import expand_virtual_threads, refuse_gpu_bindings


class VTATarget(Target):
    """The accelerator built from a hardware config (a preset name or an ``HwConfig``)."""

    name = "vta"

    #: TVM's ``env.dma_copy`` / ``env.alu`` pragma keys
    dma_copy: PragmaKey = DMA_COPY
    alu: PragmaKey = ALU
    inp_dtype = "int8"
    wgt_dtype = "int8"
    out_dtype = "int8"
    acc_dtype = "int32"

    def __init__(self, config: HwConfig | str = "default") -> None:
        self.config = load_config(config) if isinstance(config, str) else config
        self.sram = make_scopes(self.config)
        self.scopes = (GLOBAL, *self.sram.all())
        self.gemm = gemm_intrinsic(self.config)
        self.intrinsics = (self.gemm,)

    # TVM's VTA environment (``env = vta.get_env()``) reads these off the target.
    @property
    def BATCH(self) -> int:  # noqa: N802
        return self.config.batch

    @property
    def BLOCK_IN(self) -> int:  # noqa: N802
        return self.config.block_in

    @property
    def BLOCK_OUT(self) -> int:  # noqa: N802
        return self.config.block_out

    @property
    def inp_scope(self) -> Scope:
        return self.sram.inp

    @property
    def wgt_scope(self) -> Scope:
        return self.sram.wgt

    @property
    def acc_scope(self) -> Scope:
        return self.sram.acc

    def __enter__(self) -> VTATarget:
        from .env import enter

        enter(self)
        return self

    def __exit__(self, *exc: object) -> None:
        from .env import leave

        leave(self)

    def register(self) -> None:
        """Nothing to register: the SRAM scopes belong to this target's configuration and
        resolve through :meth:`resolve_scope` when a schedule is lowered for it."""

    def extend_pipeline(self, pipeline: Pipeline) -> Pipeline:
        cfg = self.config

        def check_sram(func: PrimFunc) -> PrimFunc:
            plan_sram(cfg, func)
            return func

        return (
            pipeline.replace(
                "lower_tensorize", Pass("vta_tensorize", make_tensorize_pass(self.gemm))
            )
            .insert_before("vta_tensorize", Pass("check_thread_bindings", refuse_gpu_bindings))
            .insert_before(
                "flatten_buffers", Pass("alu_in_place", make_alu_in_place(self.sram.acc))
            )
            .insert_after(
                "simplify_flat",
                Pass("inject_dma", make_inject_dma(cfg)),
                Pass("inject_alu", make_inject_alu(cfg)),
                Pass("simplify_dma", simplify_func),
                Pass("coproc_scopes", annotate_coproc_scopes),
                Pass("reset_at_first_step", reset_at_first_step),
                Pass("coproc_sync", inject_coproc_sync),
                Pass("expand_virtual_threads", expand_virtual_threads),
                Pass("fold_uop_loops", make_fold_uop_loops(cfg)),
                Pass("check_sram", check_sram),
            )
        )

    def codegen(
        self,
        func: PrimFunc,
        layouts: Mapping[str, str] | None = None,
        roles: Mapping[str, str] | None = None,
    ) -> Program:
        """The program file of ``func`` (tensors zero until written with ``Program.write``)."""
        return generate_program(self.config, func, layouts=layouts, roles=roles)

    def __repr__(self) -> str:
        return f"VTATarget({self.config.name})"


_TARGETS: dict[HwConfig, VTATarget] = {}


def get_vta_target(config: HwConfig | str = "default") -> VTATarget:
    """The accelerator target for ``config`` (one instance per configuration, so schedules
    written against its scopes and intrinsic find the same objects again).

    Example:
        >>> get_vta_target("default") is get_vta_target("default")
        True
        >>> get_vta_target("default").acc_scope is get_vta_target("vta-1x16x16").acc_scope
        False
    """
    tgt = get_target("vta", config=config)
    assert isinstance(tgt, VTATarget)
    return tgt


def _factory(config: HwConfig | str = "default", **_: Any) -> VTATarget:
    cfg = load_config(config) if isinstance(config, str) else config
    tgt = _TARGETS.get(cfg)
    if tgt is None:
        tgt = _TARGETS[cfg] = VTATarget(cfg)
    return tgt
