"""The hardware configuration: one frozen object, loaded from the presets file.

Every number about the hardware (GEMM shape, buffer sizes, bus width, latencies, queue depths)
lives here. The compiler, the simulator, the RTL parameter header and the testbenches all derive
their numbers from a :class:`HwConfig`.

Example:
    >>> cfg = load_config("default")
    >>> cfg.inp_depth, cfg.wgt_depth, cfg.acc_depth, cfg.log_uop_depth
    (2048, 1024, 2048, 13)
"""

from __future__ import annotations

import dataclasses
import json
import math
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import ConfigError

#: Memory types of LOAD/STORE (ISA.md §2). Repeated here as plain ints to keep this module free
#: of the instruction layer; :mod:`isa.insn` defines the enum with the same values.
_MEM_UOP, _MEM_WGT, _MEM_INP, _MEM_ACC, _MEM_OUT, _MEM_ACC8 = range(6)

_INT_FIELDS = (
    "batch",
    "block_in",
    "block_out",
    "inp_bits",
    "wgt_bits",
    "out_bits",
    "acc_bits",
    "uop_buf_bytes",
    "inp_buf_bytes",
    "wgt_buf_bytes",
    "acc_buf_bytes",
    "bus_bytes",
    "dram_latency",
    "cmd_queue_depth",
    "dep_queue_depth",
    "gemm_ii",
    "alu_ii",
    "alu_imm_ii",
)


#: Largest value of each integer knob. Far above any real core, low enough that every product the
#: tools form from knobs (buffer allocations, ``micro-ops x ii`` cycle counts, queue rings) stays
#: well inside 64 bits and inside memory.
MAX_KNOB = {
    "batch": 256,
    "block_in": 256,
    "block_out": 256,
    "uop_buf_bytes": 1 << 27,
    "inp_buf_bytes": 1 << 27,
    "wgt_buf_bytes": 1 << 27,
    "acc_buf_bytes": 1 << 27,
    "bus_bytes": 4096,
    "dram_latency": 4096,
    "cmd_queue_depth": 4096,
    "dep_queue_depth": 4096,
    "gemm_ii": 1024,
    "alu_ii": 1024,
    "alu_imm_ii": 1024,
}
#: Largest ``clock_mhz`` (a THz clock: any figure past it is a typo).
MAX_CLOCK_MHZ = 1e6


def _is_pow2(v: int) -> bool:
    return v > 0 and (v & (v - 1)) == 0


@dataclasses.dataclass(frozen=True)
class HwConfig:
    """A hardware configuration (ISA.md §1). Frozen; build one with :func:`load_config`."""

    name: str
    batch: int
    block_in: int
    block_out: int
    inp_bits: int
    wgt_bits: int
    out_bits: int
    acc_bits: int
    uop_buf_bytes: int
    inp_buf_bytes: int
    wgt_buf_bytes: int
    acc_buf_bytes: int
    bus_bytes: int
    dram_latency: int
    cmd_queue_depth: int
    dep_queue_depth: int
    gemm_ii: int
    alu_ii: int
    alu_imm_ii: int
    clock_mhz: float
    #: overrides of the per-event energies and areas of :class:`isa.energy.EnergyTable`
    #: (``"energy": {"dram_pj_per_byte": 80.0}`` in a config file): not a knob of the
    #: hardware, the figures its energy and area are priced with; empty for the presets
    energy: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        self._validate()

    # ---- validation ---------------------------------------------------------------------
    def _validate(self) -> None:
        where = f"config {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError("config field 'name' must be a non-empty string")
        for f in _INT_FIELDS:
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ConfigError(f"{where}: field {f!r} must be an integer, got {v!r}")
            if v <= 0:
                raise ConfigError(f"{where}: field {f!r} must be positive, got {v}")
            top = MAX_KNOB.get(f)
            if top is not None and v > top:
                raise ConfigError(f"{where}: field {f!r} = {v} exceeds its maximum of {top}")
        if self.energy:
            self.energy_table()  # an unknown name or a bad figure is refused here
        clock = self.clock_mhz
        if (
            isinstance(clock, bool)
            or not isinstance(clock, (int, float))
            or not 0 < clock <= MAX_CLOCK_MHZ  # also refuses NaN and infinities
        ):
            raise ConfigError(
                f"{where}: field 'clock_mhz' must be a finite number in (0, {MAX_CLOCK_MHZ:g}], "
                f"got {clock!r}"
            )
        for f in (
            "batch",
            "block_in",
            "block_out",
            "bus_bytes",
            "cmd_queue_depth",
            "dep_queue_depth",
        ):
            if not _is_pow2(getattr(self, f)):
                raise ConfigError(
                    f"{where}: field {f!r} must be a power of two, got {getattr(self, f)}"
                )
        for f in ("inp_bits", "wgt_bits", "out_bits"):
            if getattr(self, f) != 8:
                raise ConfigError(
                    f"{where}: field {f!r} = {getattr(self, f)} is not supported; "
                    "inputs, weights and outputs are int8"
                )
        if self.acc_bits != 32:
            raise ConfigError(
                f"{where}: field 'acc_bits' = {self.acc_bits} is not supported; "
                "accumulators are int32"
            )
        for buf in ("uop", "inp", "wgt", "acc"):
            size = getattr(self, f"{buf}_buf_bytes")
            elem = self.elem_bytes_of(buf)
            if size % elem:
                raise ConfigError(
                    f"{where}: field '{buf}_buf_bytes' = {size} is not a multiple of the "
                    f"{buf} element size ({elem} bytes)"
                )
            depth = size // elem
            if not _is_pow2(depth) or depth < 2:
                raise ConfigError(
                    f"{where}: field '{buf}_buf_bytes' = {size} gives a {buf} depth of {depth} "
                    "entries; depths must be powers of two of at least 2"
                )
        # The formats must fit their words; imported here because formats derive from configs.
        from .formats import check_config_fits

        check_config_fits(self)

    # ---- element sizes and depths (ISA.md §1 "Derived") ---------------------------------
    @property
    def inp_elem_bytes(self) -> int:
        return self.batch * self.block_in * self.inp_bits // 8

    @property
    def wgt_elem_bytes(self) -> int:
        return self.block_out * self.block_in * self.wgt_bits // 8

    @property
    def acc_elem_bytes(self) -> int:
        return self.batch * self.block_out * self.acc_bits // 8

    @property
    def out_elem_bytes(self) -> int:
        return self.batch * self.block_out * self.out_bits // 8

    @property
    def uop_elem_bytes(self) -> int:
        return 4

    def elem_bytes_of(self, buf: str) -> int:
        """Bytes of one element of buffer ``buf`` ('uop', 'inp', 'wgt', 'acc', 'out', 'acc8')."""
        if buf == "acc8":
            return self.out_elem_bytes
        try:
            return getattr(self, f"{buf}_elem_bytes")
        except AttributeError:
            raise ConfigError(f"unknown buffer {buf!r}") from None

    def mem_elem_bytes(self, memory_type: int) -> int:
        """Bytes of one DRAM element of a LOAD/STORE ``memory_type`` (UOP=0 … ACC8=5)."""
        table = {
            _MEM_UOP: self.uop_elem_bytes,
            _MEM_WGT: self.wgt_elem_bytes,
            _MEM_INP: self.inp_elem_bytes,
            _MEM_ACC: self.acc_elem_bytes,
            _MEM_OUT: self.out_elem_bytes,
            _MEM_ACC8: self.out_elem_bytes,
        }
        try:
            return table[int(memory_type)]
        except KeyError:
            raise ConfigError(f"unknown memory_type {memory_type}") from None

    @property
    def uop_depth(self) -> int:
        return self.uop_buf_bytes // self.uop_elem_bytes

    @property
    def inp_depth(self) -> int:
        return self.inp_buf_bytes // self.inp_elem_bytes

    @property
    def wgt_depth(self) -> int:
        return self.wgt_buf_bytes // self.wgt_elem_bytes

    @property
    def acc_depth(self) -> int:
        return self.acc_buf_bytes // self.acc_elem_bytes

    @property
    def out_depth(self) -> int:
        return self.acc_depth

    @property
    def log_uop_depth(self) -> int:
        return int(math.log2(self.uop_depth))

    @property
    def log_inp_depth(self) -> int:
        return int(math.log2(self.inp_depth))

    @property
    def log_wgt_depth(self) -> int:
        return int(math.log2(self.wgt_depth))

    @property
    def log_acc_depth(self) -> int:
        return int(math.log2(self.acc_depth))

    @property
    def macs_per_cycle(self) -> int:
        """MACs of one GEMM micro-op: batch × block_in × block_out."""
        return self.batch * self.block_in * self.block_out

    def depth_of(self, buf: str) -> int:
        """Entries of buffer ``buf`` ('uop', 'inp', 'wgt', 'acc', 'out')."""
        return int(getattr(self, f"{buf}_depth"))

    # ---- serialisation ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        del d["energy"]
        if self.energy:  # presets and configs without overrides keep their exact JSON
            d["energy"] = {k: _thaw(v) for k, v in self.energy}
        return d

    def energy_table(self) -> Any:
        """The :class:`isa.energy.EnergyTable` this config is priced with: the defaults and the
        config's ``energy`` overrides (:class:`ConfigError` naming an unknown or bad figure)."""
        from isa.energy import EnergyTable

        known = {f.name for f in dataclasses.fields(EnergyTable)}
        given = dict(self.energy)
        unknown = sorted(set(given) - known)
        if unknown:
            raise ConfigError(
                f"config {self.name!r}: unknown energy figure(s) {unknown}; known: {sorted(known)}"
            )
        try:
            return EnergyTable(**given)
        except (ValueError, TypeError) as e:
            raise ConfigError(f"config {self.name!r}: {e}") from None

    def to_json(self) -> str:
        """Canonical JSON (sorted keys), as stored in program files."""
        return json.dumps(self.to_dict(), sort_keys=True, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, name: str | None = None) -> HwConfig:
        """Build a config from a mapping of the knobs of ISA.md §1; no unknown field.

        ``name`` is not one of the contract's knobs: when the mapping has none, a config equal
        to a preset takes the preset's name and any other is called ``custom``.

        >>> knobs = load_config("vta-1x16x16").to_dict(); del knobs["name"]
        >>> HwConfig.from_dict(knobs).name
        'vta-1x16x16'
        """
        data = dict(data)
        if name is not None:
            data.setdefault("name", name)
        if "name" not in data:
            data["name"] = _preset_name_of(data)
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ConfigError(f"config {data.get('name', '?')!r}: unknown field(s) {unknown}")
        if "energy" in data:
            data["energy"] = _freeze_energy(data["energy"], data.get("name", "?"))
        missing = sorted(fields - set(data) - {"energy"})
        if missing:
            raise ConfigError(f"config {data.get('name', '?')!r}: missing field(s) {missing}")
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> HwConfig:
        data = parse_json(text, "config", ConfigError)
        if not isinstance(data, dict):
            raise ConfigError("config JSON must be an object")
        return cls.from_dict(data)

    def replace(self, **changes: Any) -> HwConfig:
        """A copy with some fields changed (validated again).

        >>> load_config("default").replace(name="wide-bus", bus_bytes=16).bus_bytes
        16
        """
        return dataclasses.replace(self, **changes)


#: Largest config file read (bytes); a config is a score of knobs.
MAX_CONFIG_BYTES = 1 << 16
#: Deepest nesting of arrays and objects accepted in a JSON text read from a file.
MAX_JSON_DEPTH = 32


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_json(text: str, what: str, error: type[Exception] = ConfigError) -> Any:
    """Parse ``text``: strict JSON (no NaN/Infinity), nested at most :data:`MAX_JSON_DEPTH` deep.

    Any fault raises ``error`` naming ``what``.

    >>> parse_json('{"a": [1, 2]}', "knobs")
    {'a': [1, 2]}
    >>> parse_json('[' * 100 + ']' * 100, "knobs")
    Traceback (most recent call last):
    ...
    isa.errors.ConfigError: knobs: JSON nested deeper than 32 levels
    """
    depth = 0
    deepest = 0
    in_string = escaped = False
    for ch in text:  # cheap scan: brackets outside strings
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    if deepest > MAX_JSON_DEPTH:
        raise error(f"{what}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as e:
        raise error(f"{what} is not valid JSON: {e}") from None


@cache
def _presets() -> dict[str, dict[str, Any]]:
    text = resources.files(__package__).joinpath("presets.json").read_text()
    return json.loads(text)["presets"]


def _freeze_energy(value: Any, name: str) -> tuple[tuple[str, Any], ...]:
    """A config file's ``energy`` object as the sorted, hashable pairs a config holds."""
    if isinstance(value, tuple):
        value = dict(value)
    if not isinstance(value, dict):
        raise ConfigError(f"config {name!r}: field 'energy' must be an object of figures")

    def freeze(v: Any) -> Any:
        return tuple(freeze(x) for x in v) if isinstance(v, (list, tuple)) else v

    return tuple(sorted((str(k), freeze(v)) for k, v in value.items()))


def _thaw(v: Any) -> Any:
    return [_thaw(x) for x in v] if isinstance(v, tuple) else v


def _preset_name_of(knobs: dict[str, Any]) -> str:
    for pname, pknobs in _presets().items():
        if pknobs == knobs:
            return pname
    return "custom"


def preset_names() -> list[str]:
    """Names of the shipped presets."""
    return list(_presets())


def load_config(spec: str | Path | dict[str, Any] | HwConfig = "default") -> HwConfig:
    """Load a config: a preset name, a path to a JSON file, a mapping, or a config itself.

    >>> load_config("vta-1x16x16").block_in
    16
    """
    if isinstance(spec, HwConfig):
        return spec
    if isinstance(spec, dict):
        return HwConfig.from_dict(spec)
    presets = _presets()
    if isinstance(spec, str) and spec in presets:
        return HwConfig.from_dict(presets[spec], name=spec)
    path = Path(spec)
    if path.suffix == ".json" and path.is_file():
        try:
            if path.stat().st_size > MAX_CONFIG_BYTES:
                raise ConfigError(f"config file {path}: larger than {MAX_CONFIG_BYTES} bytes")
            text = path.read_bytes().decode("utf-8")
        except OSError as e:
            raise ConfigError(f"config file {path}: cannot read it ({e.strerror or e})") from None
        except UnicodeDecodeError as e:
            raise ConfigError(f"config file {path}: not UTF-8 text (byte {e.start})") from None
        try:
            return HwConfig.from_json(text)
        except ConfigError as e:
            raise ConfigError(f"config file {path}: {e}") from None
    raise ConfigError(
        f"unknown config {str(spec)!r}: not a preset ({', '.join(presets)}) nor a JSON file"
    )
