"""The single source of truth: hardware config, instruction formats, semantics, program files.

This package imports only numpy.

Example:
    >>> import isa
    >>> cfg = isa.load_config("default")
    >>> prog = isa.Program.build(cfg, [isa.Finish()])
    >>> prog.instructions()[0].opcode.name
    'FINISH'
"""

from . import timing
from .config import HwConfig, load_config, preset_names
from .encoding import (
    INSN_BYTES,
    InsnBlock,
    decode,
    decode_fields,
    decode_stream,
    decode_uops,
    encode,
    encode_int,
    encode_stream,
    encode_uops,
    stream_length,
)
from .errors import (
    AsmError,
    ConfigError,
    EncodingError,
    ExecutionError,
    IsaError,
    OutputError,
    ProgramError,
)
from .formats import FORMATS, Field, Layout, Limits, layout, limits
from .insn import (
    DEP_QUEUES,
    MODULES,
    Alu,
    AluOp,
    Finish,
    Gemm,
    Insn,
    Load,
    MemType,
    Opcode,
    Store,
    Uop,
    module_of,
    queue_of,
)
from .program import ISA_VERSION, Program, Symbol, as_program, load_program
from .semantics import Machine

__all__ = [
    "HwConfig",
    "load_config",
    "preset_names",
    "INSN_BYTES",
    "InsnBlock",
    "stream_length",
    "encode",
    "encode_int",
    "decode",
    "encode_stream",
    "decode_stream",
    "decode_fields",
    "encode_uops",
    "decode_uops",
    "IsaError",
    "ConfigError",
    "EncodingError",
    "ProgramError",
    "AsmError",
    "ExecutionError",
    "OutputError",
    "FORMATS",
    "Field",
    "Layout",
    "layout",
    "Limits",
    "limits",
    "Opcode",
    "MemType",
    "AluOp",
    "Insn",
    "Load",
    "Store",
    "Gemm",
    "Alu",
    "Finish",
    "Uop",
    "MODULES",
    "DEP_QUEUES",
    "module_of",
    "queue_of",
    "ISA_VERSION",
    "Program",
    "Symbol",
    "load_program",
    "as_program",
    "Machine",
    "timing",
]
